"""CocoEvaluator against pycocotools' COCOeval run directly: boxes on the detection corpus,
masks and keypoints on a tiny COCO folder written by the tests."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from trivium.vision.corpora import build_detection_corpus
from trivium.vision.detection_eval import (
    COCO_METRICS,
    KEYPOINT_METRICS,
    CocoEvaluator,
    coco_backend,
)

pytest.importorskip("pycocotools", reason="pycocotools is not installed")
from pycocotools import mask as mask_util
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

BACKENDS = ["pycocotools", "faster-coco-eval"]


def _backend(name: str) -> str:
    try:
        return coco_backend(name)
    except ImportError:
        pytest.skip(f"{name} is not installed")


@pytest.fixture(scope="module")
def ann_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_detection_corpus(
        tmp_path_factory.mktemp("eval"), num_train=0, num_val=16, progress_bar=False
    )
    return root / "annotations" / "instances_val.json"


def _by_image(ann_file: Path) -> tuple[dict, list[int]]:
    coco = json.loads(ann_file.read_text())
    by_image: dict[int, list[dict]] = {im["id"]: [] for im in coco["images"]}
    for ann in coco["annotations"]:
        by_image[ann["image_id"]].append(ann)
    return by_image, [c["id"] for c in coco["categories"]]


def _perfect(ann_file: Path) -> dict:
    by_image, _ = _by_image(ann_file)
    predictions = {}
    for image_id, anns in by_image.items():
        xywh = torch.tensor([a["bbox"] for a in anns], dtype=torch.float64).reshape(-1, 4)
        predictions[image_id] = {
            "boxes": torch.cat([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], dim=1),
            "scores": torch.ones(len(anns)),
            "labels": torch.tensor([a["category_id"] for a in anns]),
        }
    return predictions


def _jittered(ann_file: Path, seed: int = 0) -> tuple[dict, list[dict]]:
    """Ground truth moved at random, wrong labels and stray boxes; also as COCO results."""
    by_image, categories = _by_image(ann_file)
    rng = np.random.default_rng(seed)
    predictions, results = {}, []
    for image_id, anns in by_image.items():
        rows = []
        for ann in anns:
            x, y, w, h = ann["bbox"]
            for _ in range(3):
                dx0, dy0, dx1, dy1 = rng.normal(0, 0.1 * max(w, h), 4)
                label = ann["category_id"] if rng.random() < 0.8 else int(rng.choice(categories))
                rows.append([x + dx0, y + dy0, x + w + dx1, y + h + dy1, rng.random(), label])
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.uniform(0, 100, 2)
            w, h = rng.uniform(4, 60, 2)
            rows.append([x, y, x + w, y + h, rng.random() * 0.5, int(rng.choice(categories))])
        array = np.array(rows, dtype=np.float64).reshape(-1, 6)
        predictions[image_id] = {
            "boxes": torch.from_numpy(array[:, :4]).float(),
            "scores": torch.from_numpy(array[:, 4]).float(),
            "labels": torch.from_numpy(array[:, 5]).long(),
        }
        # What the evaluator hands COCOeval: the float32 values, as XYWH.
        boxes = predictions[image_id]["boxes"].double().numpy()
        scores = predictions[image_id]["scores"].double().numpy()
        for (x0, y0, x1, y1), score, label in zip(boxes, scores, array[:, 5], strict=True):
            results.append(
                {
                    "image_id": image_id,
                    "category_id": int(label),
                    "bbox": [x0, y0, x1 - x0, y1 - y0],
                    "score": score,
                }
            )
    return predictions, results


@pytest.mark.parametrize("backend", BACKENDS)
def test_perfect_predictions_score_one(ann_file: Path, backend: str) -> None:
    evaluator = CocoEvaluator(str(ann_file), backend=_backend(backend))
    evaluator.update(_perfect(ann_file))
    stats = evaluator.summarize()
    assert list(stats) == list(COCO_METRICS)
    for name in ("AP", "AP50", "AP75", "AR10", "AR100"):  # AR1: one box per image
        assert stats[name] == pytest.approx(1.0), name
    assert 0 < stats["AR1"] < 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_jittered_predictions_match_cocoeval_run_directly(ann_file: Path, backend: str) -> None:
    predictions, results = _jittered(ann_file)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(ann_file))
        reference = COCOeval(gt, gt.loadRes(results), "bbox")
        reference.evaluate()
        reference.accumulate()
        reference.summarize()
    evaluator = CocoEvaluator(gt, backend=_backend(backend))
    half = len(predictions) // 2
    evaluator.update(dict(list(predictions.items())[:half]))
    evaluator.update(dict(list(predictions.items())[half:]))
    stats = evaluator.summarize()
    assert 0.2 < stats["AP"] < 0.95  # a real evaluation, not a degenerate one
    np.testing.assert_allclose(list(stats.values()), reference.stats, rtol=0, atol=1e-12)


def test_backends_agree(ann_file: Path) -> None:
    for name in BACKENDS:
        _backend(name)
    predictions, _ = _jittered(ann_file, seed=1)
    figures = []
    for name in BACKENDS:
        evaluator = CocoEvaluator(ann_file, backend=name)
        evaluator.update(predictions)
        figures.append(list(evaluator.summarize().values()))
    np.testing.assert_allclose(figures[0], figures[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_predictions_score_zero(ann_file: Path, backend: str) -> None:
    by_image, _ = _by_image(ann_file)
    empty = {
        "boxes": torch.zeros(0, 4),
        "scores": torch.zeros(0),
        "labels": torch.zeros(0, dtype=torch.int64),
    }
    given = CocoEvaluator(ann_file, backend=_backend(backend))
    given.update(dict.fromkeys(by_image, empty))
    never = CocoEvaluator(ann_file, backend=backend)  # no update at all: every image
    for evaluator in (given, never):
        stats = evaluator.summarize()
        assert stats["AP"] == stats["AR100"] == 0.0
        assert all(v in (0.0, -1.0) for v in stats.values())


def test_quiet_unless_verbose(ann_file: Path, capsys: pytest.CaptureFixture) -> None:
    evaluator = CocoEvaluator(ann_file, backend=_backend("pycocotools"))
    evaluator.update(_perfect(ann_file))
    evaluator.summarize()
    assert capsys.readouterr().out == ""
    loud = CocoEvaluator(ann_file, backend="pycocotools", verbose=True)
    loud.summarize()
    assert "Average Precision" in capsys.readouterr().out


def test_bad_predictions_are_named(ann_file: Path) -> None:
    evaluator = CocoEvaluator(ann_file)
    one = {"boxes": [[0, 0, 5, 5]], "scores": [0.5], "labels": [1]}
    with pytest.raises(ValueError, match="image_id 12345 is not an image"):
        evaluator.update({12345: one})
    with pytest.raises(ValueError, match=r"labels \[0\] that are not category ids"):
        evaluator.update({1: {**one, "labels": [0]}})
    with pytest.raises(ValueError, match="1 boxes, 2 scores"):
        evaluator.update({1: {**one, "scores": [0.5, 0.1]}})
    with pytest.raises(ValueError, match="lacks"):
        evaluator.update({1: {"boxes": one["boxes"]}})
    evaluator.update({1: one})
    with pytest.raises(ValueError, match="already given"):
        evaluator.update({1: one})
    with pytest.raises(ValueError, match="backend"):
        CocoEvaluator(ann_file, backend="detectron")
    with pytest.raises(ValueError, match="iou_type"):
        CocoEvaluator(ann_file, iou_type="mask")
    with pytest.raises(TypeError, match="coco_gt_or_annFile"):
        CocoEvaluator(42)


# ---------------------------------------------------------------- masks and keypoints


@pytest.fixture(scope="module")
def tiny_coco(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_coco import write_tiny_coco

    return write_tiny_coco(tmp_path_factory.mktemp("tiny_coco"))


def _gt_file(root: Path, iou_type: str) -> Path:
    kind = "person_keypoints" if iou_type == "keypoints" else "instances"
    return root / "annotations" / f"{kind}_train.json"


def _jittered_masks(gt: COCO, rng: np.random.Generator) -> tuple[dict, list[dict]]:
    """Probability masks of shifted ground truth and stray blobs, wrong labels at
    times; also as COCO results, thresholded and encoded as torchvision's reference does."""
    predictions, results = {}, []
    for image_id, image in gt.imgs.items():
        height, width = image["height"], image["width"]
        rows = []
        for ann in gt.imgToAnns[image_id]:
            if ann["iscrowd"]:
                continue
            for _ in range(2):
                dy, dx = rng.integers(-4, 5, 2)
                shifted = np.roll(gt.annToMask(ann), (dy, dx), axis=(0, 1))
                label = ann["category_id"] if rng.random() < 0.8 else 3 - ann["category_id"]
                rows.append((shifted, rng.random(), label))
        blob = np.zeros((height, width), np.uint8)
        y, x = rng.integers(0, height // 2), rng.integers(0, width // 2)
        blob[y : y + 20, x : x + 16] = 1
        rows.append((blob, rng.random() * 0.5, int(rng.integers(1, 3))))
        inside = rng.uniform(0.55, 1.0, (len(rows), 1, height, width))
        outside = rng.uniform(0.0, 0.45, (len(rows), 1, height, width))
        binary = np.stack([m for m, _, _ in rows])[:, None].astype(bool)
        masks = torch.from_numpy(np.where(binary, inside, outside)).float()
        predictions[image_id] = {
            "masks": masks,
            "scores": torch.tensor([s for _, s, _ in rows]).float(),
            "labels": torch.tensor([c for _, _, c in rows]),
        }
        found = predictions[image_id]
        for mask, score, label in zip(masks > 0.5, found["scores"], found["labels"], strict=True):
            rle = mask_util.encode(
                np.array(mask[0, :, :, None].numpy(), dtype=np.uint8, order="F")
            )[0]
            rle["counts"] = rle["counts"].decode("utf-8")
            results.append(
                {
                    "image_id": image_id,
                    "category_id": int(label),
                    "segmentation": rle,
                    "score": float(score),
                }
            )
    return predictions, results


def _jittered_keypoints(gt: COCO, rng: np.random.Generator) -> tuple[dict, list[dict]]:
    """Ground-truth keypoints moved by noise of 1-6 pixels, and a stray person per image."""
    predictions, results = {}, []
    for image_id, image in gt.imgs.items():
        people = []
        for ann in gt.imgToAnns[image_id]:
            truth = np.array(ann["keypoints"], np.float64).reshape(17, 3)
            for sigma in (1.0, 3.0, 6.0):
                points = truth.copy()
                points[:, :2] += rng.normal(0, sigma, (17, 2))
                points[:, 2] = 1
                people.append((points, rng.random()))
        stray = np.ones((17, 3))
        stray[:, 0] = rng.uniform(0, image["width"], 17)
        stray[:, 1] = rng.uniform(0, image["height"], 17)
        people.append((stray, rng.random() * 0.5))
        keypoints = torch.from_numpy(np.stack([p for p, _ in people])).float()
        scores = torch.tensor([s for _, s in people]).float()
        predictions[image_id] = {
            "keypoints": keypoints,
            "scores": scores,
            "labels": torch.ones(len(people), dtype=torch.int64),
        }
        for points, score in zip(keypoints, scores, strict=True):
            results.append(
                {
                    "image_id": image_id,
                    "category_id": 1,
                    "keypoints": points.flatten().tolist(),
                    "score": float(score),
                }
            )
    return predictions, results


def _perfect_masks_or_keypoints(gt: COCO, iou_type: str) -> dict:
    predictions = {}
    for image_id in gt.imgs:
        anns = [a for a in gt.imgToAnns[image_id] if not a["iscrowd"]]
        if iou_type == "segm":
            found = {"masks": torch.from_numpy(np.stack([gt.annToMask(a) for a in anns]))}
        else:
            points = [np.array(a["keypoints"], np.float32).reshape(17, 3) for a in anns]
            found = {"keypoints": torch.from_numpy(np.stack(points))}
        predictions[image_id] = {
            **found,
            "scores": torch.ones(len(anns)),
            "labels": torch.tensor([a["category_id"] for a in anns]),
        }
    return predictions


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("iou_type", ["segm", "keypoints"])
def test_masks_and_keypoints_match_cocoeval_run_directly(
    tiny_coco: Path, iou_type: str, backend: str
) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(_gt_file(tiny_coco, iou_type)))
    jitter = _jittered_masks if iou_type == "segm" else _jittered_keypoints
    predictions, results = jitter(gt, np.random.default_rng(0))
    with contextlib.redirect_stdout(io.StringIO()):
        reference = COCOeval(gt, gt.loadRes(results), iou_type)
        reference.evaluate()
        reference.accumulate()
        reference.summarize()
    evaluator = CocoEvaluator(gt, iou_type, backend=_backend(backend))
    items = list(predictions.items())
    evaluator.update(dict(items[:2]))
    evaluator.update(dict(items[2:]))
    stats = evaluator.summarize()
    names = KEYPOINT_METRICS if iou_type == "keypoints" else COCO_METRICS
    assert list(stats) == list(names) == list(evaluator.metric_names)
    assert 0.1 < stats["AP"] < 0.95  # a real evaluation, not a degenerate one
    np.testing.assert_allclose(list(stats.values()), reference.stats, rtol=0, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("iou_type", ["segm", "keypoints"])
def test_perfect_masks_and_keypoints_score_one(
    tiny_coco: Path, iou_type: str, backend: str
) -> None:
    ann_file = _gt_file(tiny_coco, iou_type)
    evaluator = CocoEvaluator(ann_file, iou_type, backend=_backend(backend))
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator.update(_perfect_masks_or_keypoints(COCO(str(ann_file)), iou_type))
    stats = evaluator.summarize()
    for name in ("AP", "AP50", "AP75"):
        assert stats[name] == pytest.approx(1.0), name


def test_bad_masks_and_keypoints_are_named(tiny_coco: Path) -> None:
    segm = CocoEvaluator(_gt_file(tiny_coco, "segm"), "segm")
    one = {"scores": [0.5], "labels": [1]}
    with pytest.raises(ValueError, match=r"lacks \['masks'\]"):
        segm.update({1: {"boxes": [[0, 0, 4, 4]], **one}})
    with pytest.raises(ValueError, match=r"\x27masks\x27\] are 28x28 but the image is 64x80"):
        segm.update({1: {"masks": torch.ones(1, 1, 28, 28), **one}})
    with pytest.raises(ValueError, match=r"\[N, 1, H, W\] or \[N, H, W\]"):
        segm.update({1: {"masks": torch.ones(64, 80), **one}})
    with pytest.raises(ValueError, match="2 masks, 1 scores"):
        segm.update({1: {"masks": torch.ones(2, 64, 80), **one}})
    with pytest.raises(TypeError, match="must be a tensor"):
        segm.update({1: {"masks": [[0]], **one}})
    keypoints = CocoEvaluator(_gt_file(tiny_coco, "keypoints"), "keypoints")
    with pytest.raises(ValueError, match=r"\[N, 17, 3\].*got shape \(1, 14, 3\)"):
        keypoints.update({1: {"keypoints": torch.ones(1, 14, 3), **one}})
    with pytest.raises(ValueError, match="iou_type must be one of"):
        CocoEvaluator(_gt_file(tiny_coco, "segm"), "boundary")
