"""The detection pipeline's Mask R-CNN and Keypoint R-CNN: their data, training and scores.

On a tiny COCO folder the tests write (4 images of 64-96 pixels; polygon, RLE and
crowd masks; COCO's 17 person keypoints): the targets against pycocotools' own
decoding of the same annotations, the keypoint flip against the left/right pairs
read from the keypoint names, and a one-step run of each model whose evaluation is
pycocotools' COCOeval run directly on the same model's predictions.
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib

import numpy as np
import pytest
import torch

from trivium.pipelines.vision.detection_data import (
    RandomHorizontalFlipWithKeypoints,
    open_split,
    train_transforms,
)
from trivium.vision import tv_tensors

pytest.importorskip("pycocotools")
from pycocotools import mask as mask_util
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from tiny_coco import COCO_PERSON_KEYPOINTS, write_tiny_coco


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return write_tiny_coco(tmp_path_factory.mktemp("tiny_coco"))


def _coco(path: pathlib.Path) -> COCO:
    with contextlib.redirect_stdout(io.StringIO()):
        return COCO(str(path))


def test_masks_and_keypoints_are_the_annotations(tiny: pathlib.Path) -> None:
    """Masks as pycocotools decodes each annotation (polygon, RLE, crowd's uncompressed
    RLE); keypoints as the JSON lists them, in the boxes' order."""
    masks = open_split(tiny, "train", targets="masks")
    gt = _coco(tiny / "annotations" / "instances_train.json")
    kinds = set()
    for i in range(len(masks)):
        _, target = masks[i]
        anns = gt.loadAnns(gt.getAnnIds(imgIds=target["image_id"]))
        assert isinstance(target["masks"], tv_tensors.Mask)
        expected = np.stack([gt.annToMask(a) for a in anns])
        np.testing.assert_array_equal(target["masks"].numpy(), expected)
        kinds |= {(type(a["segmentation"]).__name__, a["iscrowd"]) for a in anns}
    assert kinds == {("list", 0), ("dict", 0), ("dict", 1)}
    keypoints = open_split(tiny, "val", targets="keypoints")
    raw = json.loads((tiny / "annotations" / "person_keypoints_val.json").read_text())
    for i in range(len(keypoints)):
        _, target = keypoints[i]
        anns = [a for a in raw["annotations"] if a["image_id"] == target["image_id"]]
        expected = torch.tensor([a["keypoints"] for a in anns]).reshape(-1, 17, 3)
        assert target["keypoints"].dtype == torch.float32
        torch.testing.assert_close(target["keypoints"], expected, rtol=0, atol=0)
        assert target["boxes"].shape[0] == len(anns)


def _mirrored_name(name: str) -> str:
    for a, b in (("left_", "right_"), ("right_", "left_")):
        if name.startswith(a):
            return b + name[len(a) :]
    return name


def test_keypoint_flip_swaps_left_and_right(tiny: pathlib.Path) -> None:
    """A flipped sample: pixels, masks and boxes mirrored; each keypoint moves to the
    one of the mirrored name, at ``width - x``, unlabelled ones staying (0, 0, 0)."""
    flip = RandomHorizontalFlipWithKeypoints(p=1.0)
    dataset = open_split(tiny, "train", targets="keypoints")
    image, target = dataset[2]
    height, width = image.shape[-2:]
    masks = tv_tensors.Mask(torch.zeros(len(target["boxes"]), height, width, dtype=torch.uint8))
    masks[:, :10, :7] = 1
    out_image, out = flip(image, {**target, "masks": masks})
    torch.testing.assert_close(out_image, image.flip(-1))
    torch.testing.assert_close(out["masks"], masks.flip(-1))
    x0, y0, x1, y1 = target["boxes"].unbind(-1)
    expected_boxes = torch.stack([width - x1, y0, width - x0, y1], dim=-1)
    torch.testing.assert_close(out["boxes"].as_subclass(torch.Tensor), expected_boxes)
    names = list(COCO_PERSON_KEYPOINTS)
    for person, flipped in zip(target["keypoints"], out["keypoints"], strict=True):
        for k, name in enumerate(names):
            x, y, v = person[names.index(_mirrored_name(name))].tolist()
            expected = [width - x, y, v] if v > 0 else [0.0, 0.0, 0.0]
            assert flipped[k].tolist() == pytest.approx(expected), name
    assert out["keypoints"][..., 2].eq(0).any()  # the folder has unlabelled keypoints
    kept_image, kept = RandomHorizontalFlipWithKeypoints(p=0.0)(image, target)
    assert kept_image is image and kept is target


def test_keypoint_samples_keep_boxes_and_keypoints_together() -> None:
    """SanitizeBoundingBoxes drops a degenerate box with its label and keypoints."""
    transforms = train_transforms(hflip_prob=0.0, targets="keypoints")
    image = tv_tensors.Image(torch.zeros(3, 32, 32, dtype=torch.uint8))
    boxes = tv_tensors.BoundingBoxes(
        [[2.0, 2.0, 20.0, 20.0], [5.0, 5.0, 5.5, 9.0]], format="XYXY", canvas_size=(32, 32)
    )
    keypoints = torch.arange(2 * 17 * 3, dtype=torch.float32).reshape(2, 17, 3)
    target = {"boxes": boxes, "labels": torch.tensor([1, 1]), "keypoints": keypoints}
    _, out = transforms(image, target)
    assert out["labels"].tolist() == [1]
    torch.testing.assert_close(out["keypoints"], keypoints[:1])
    with pytest.raises(ValueError, match="does not move keypoints"):
        train_transforms("multiscale", targets="keypoints")
    with pytest.raises(ValueError, match="targets must be one of"):
        open_split("unused", "train", targets="segm")


def _config(data: pathlib.Path, out: pathlib.Path, model: str):
    from trivium.pipelines.vision.detection import DetectionConfig

    return DetectionConfig(
        data_path=str(data),
        out_dir=str(out),
        model=model,
        min_size=64,
        max_size=96,
        anchor_sizes=8,
        detections_per_img=8,  # the mask and keypoint heads run on each detection
        epochs=1,
        batch_size=4,
        opt="adamw",
        lr=1e-4,
        workers=0,
        device="cpu",
    )


def _cocoeval(gt: COCO, results: list[dict], iou_type: str) -> np.ndarray:
    with contextlib.redirect_stdout(io.StringIO()):
        reference = COCOeval(gt, gt.loadRes(results), iou_type)
        reference.evaluate()
        reference.accumulate()
        reference.summarize()
    return reference.stats


def _reference_results(pipeline, gt: COCO, root: pathlib.Path, iou_type: str) -> list[dict]:
    """The model's predictions on the val images as COCO results, written here as
    torchvision's reference evaluation writes them."""
    results = []
    for image_id, image in gt.imgs.items():
        out = pipeline.predict(str(root / "val" / image["file_name"]))
        for i, (label, score) in enumerate(zip(out["labels"], out["scores"], strict=True)):
            result = {"image_id": image_id, "category_id": int(label), "score": float(score)}
            if iou_type == "segm":
                mask = (out["masks"][i, 0] > 0.5).numpy()
                rle = mask_util.encode(np.array(mask[:, :, None], dtype=np.uint8, order="F"))[0]
                result["segmentation"] = {**rle, "counts": rle["counts"].decode("utf-8")}
            else:
                result["keypoints"] = out["keypoints"][i].flatten().tolist()
            results.append(result)
    return results


@pytest.mark.slow  # a ResNet-50 FPN step and evaluation: over 5 s on a CPU
@pytest.mark.parametrize(
    ("model", "iou_type", "annotations"),
    [
        ("maskrcnn_resnet50_fpn", "segm", "instances_val.json"),
        ("keypointrcnn_resnet50_fpn", "keypoints", "person_keypoints_val.json"),
    ],
)
def test_one_step_run_scores_as_cocoeval(
    tiny: pathlib.Path, tmp_path: pathlib.Path, model: str, iou_type: str, annotations: str
) -> None:
    from trivium.pipelines.vision.detection import evaluate, from_checkpoint, train

    summary = train(_config(tiny, tmp_path, model), show_progress=False)
    records = json.loads((tmp_path / "metrics.json").read_text())["records"]
    names = {name for _, name, _ in records}
    loss = "loss_mask" if iou_type == "segm" else "loss_keypoint"
    assert {"loss", "loss_classifier", "loss_box_reg", loss} <= names
    assert {"val_AP", f"val_{iou_type}_AP", f"val_{iou_type}_AP50"} <= names
    assert (tmp_path / "metrics.png").stat().st_size > 0
    assert (tmp_path / "predictions.png").stat().st_size > 0
    pipeline = from_checkpoint(tmp_path / "checkpoint.pt")
    # One image a batch, as predict() runs them: a batch pads its images to one size.
    metrics = evaluate(pipeline, tiny, batch_size=1, workers=0)
    gt = _coco(tiny / "annotations" / annotations)
    results = _reference_results(pipeline, gt, tiny, iou_type)
    assert results, "the model detected nothing: the comparison would be empty"
    reference = _cocoeval(gt, results, iou_type)
    ours = [v for k, v in metrics.items() if k.startswith(f"{iou_type}_")]
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-12)
    assert 0.0 <= summary[f"{iou_type}_AP"] <= summary[f"{iou_type}_AP50"] <= 1.0
