"""CocoDetection and detection_collate, checked against torchvision's v2-wrapped
CocoDetection (its pure-Python dataset, images decoded by Pillow) on the embedded
detection corpus plus hand-made annotations (RLE masks, crowds, an empty image)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from peers import import_torchvision

from trivium.core.errors import DecodeError, PathNotFoundError
from trivium.vision import tv_tensors
from trivium.vision.corpora import build_detection_corpus
from trivium.vision.datasets import CocoDetection, SkippedSamplesWarning, detection_collate

mask_api = pytest.importorskip("pycocotools.mask", reason="pycocotools is not installed")
# pycocotools' mask decoding trips NumPy 2's copy-keyword deprecation.
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_detection_corpus(
        tmp_path_factory.mktemp("coco"), num_train=10, num_val=2, progress_bar=False
    )


@pytest.fixture(scope="module")
def ann_file(corpus: Path) -> Path:
    """The train annotations plus an image without boxes, RLE masks and a crowd."""
    coco = json.loads((corpus / "annotations" / "instances_train.json").read_text())
    coco["images"].append({"id": 99, "file_name": "000001.jpg", "height": 128, "width": 128})
    square = np.zeros((128, 128), dtype=np.uint8, order="F")
    square[10:40, 20:70] = 1
    compressed = mask_api.encode(square)
    compressed["counts"] = compressed["counts"].decode("ascii")
    # Column by column: zeros to row 10 of column 20, then 30 ones per column.
    counts = [128 * 20 + 10, *[30, 98] * 49, 30]
    uncompressed = {"size": [128, 128], "counts": [*counts, 128 * 128 - sum(counts)]}
    next_id = max(a["id"] for a in coco["annotations"]) + 1
    for k, (segmentation, crowd) in enumerate(((compressed, 1), (uncompressed, 0))):
        coco["annotations"].append(
            {
                "id": next_id + k,
                "image_id": 2,
                "category_id": 3,
                "bbox": [20.0, 10.0, 50.0, 30.0],
                "area": 1500.0,
                "iscrowd": crowd,
                "segmentation": segmentation,
            }
        )
    path = corpus / "annotations" / "mixed.json"
    path.write_text(json.dumps(coco))
    return path


def _torchvision_dataset(root: Path, ann_file: Path, target_keys):
    tv = import_torchvision()
    if tv is None:
        pytest.skip("torchvision is not installed")
    from torchvision.datasets import CocoDetection as TvCocoDetection
    from torchvision.datasets import wrap_dataset_for_transforms_v2

    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
        base = TvCocoDetection(str(root), str(ann_file))
    return tv, wrap_dataset_for_transforms_v2(base, target_keys=target_keys)


def _assert_same(ours, theirs, tv) -> None:
    image, target = ours
    tv_image, tv_target = theirs
    assert isinstance(image, tv_tensors.Image) and image.dtype == torch.uint8
    assert torch.equal(
        image.as_subclass(torch.Tensor), tv.transforms.v2.functional.pil_to_tensor(tv_image)
    )
    if set(tv_target) == {"image_id"}:  # torchvision's target of an image without boxes
        assert target["image_id"] == tv_target["image_id"]
        return
    assert list(target) == [
        k for k in ("image_id", "boxes", "masks", "labels") if k in tv_target
    ] + sorted(set(tv_target) - {"image_id", "boxes", "masks", "labels"})
    for key, want in tv_target.items():
        got = target[key]
        if key == "boxes":
            assert isinstance(got, tv_tensors.BoundingBoxes)
            assert got.format.value == want.format.value and got.canvas_size == want.canvas_size
            assert got.dtype == want.dtype == torch.float32
            assert torch.equal(got.as_subclass(torch.Tensor), want.as_subclass(torch.Tensor))
        elif key == "masks":
            assert isinstance(got, tv_tensors.Mask) and got.dtype == want.dtype
            assert torch.equal(got.as_subclass(torch.Tensor), want.as_subclass(torch.Tensor))
        elif key == "labels":
            assert got.dtype == want.dtype and torch.equal(got, want)
        else:
            assert got == want, key


@pytest.mark.parametrize(
    "target_keys", [None, ("image_id", "boxes", "labels", "masks"), "all"], ids=str
)
def test_targets_match_torchvision_v2_wrapper(corpus: Path, ann_file: Path, target_keys) -> None:
    tv, theirs = _torchvision_dataset(corpus / "train", ann_file, target_keys)
    keys = ("image_id", "boxes", "labels") if target_keys is None else target_keys
    ours = CocoDetection(corpus / "train", ann_file, target_keys=keys)
    assert ours.ids == theirs._dataset.ids and len(ours) == len(theirs)
    for i in range(len(ours)):
        _assert_same(ours[i], theirs[i], tv)


def test_an_image_without_annotations_has_empty_boxes(corpus: Path, ann_file: Path) -> None:
    ds = CocoDetection(corpus / "train", ann_file, target_keys="all")
    _, target = ds[ds.ids.index(99)]
    assert target["image_id"] == 99
    assert target["boxes"].shape == (0, 4) and target["boxes"].canvas_size == (128, 128)
    assert target["labels"].shape == (0,) and target["labels"].dtype == torch.int64
    assert target["masks"].shape == (0, 128, 128) and target["masks"].dtype == torch.uint8
    assert target["area"] == target["bbox"] == target["iscrowd"] == []


def test_rle_masks_decode(corpus: Path, ann_file: Path) -> None:
    ds = CocoDetection(corpus / "train", ann_file, target_keys=["masks", "iscrowd"])
    _, target = ds[ds.ids.index(2)]
    want = torch.zeros(128, 128, dtype=torch.uint8)
    want[10:40, 20:70] = 1
    assert target["iscrowd"][-2:] == [1, 0]
    assert torch.equal(target["masks"][-2], want) and torch.equal(target["masks"][-1], want)


def test_transforms(corpus: Path) -> None:
    ann = corpus / "annotations" / "instances_val.json"
    seen = []
    joint = CocoDetection(
        corpus / "val", ann, transforms=lambda i, t: seen.append((i, t)) or (1, 2)
    )
    assert joint[0] == (1, 2) and isinstance(seen[0][0], tv_tensors.Image)
    apart = CocoDetection(
        corpus / "val", ann, transform=lambda i: i.shape, target_transform=lambda t: sorted(t)
    )
    assert apart[1] == (torch.Size([3, 128, 128]), ["boxes", "image_id", "labels"])
    with pytest.raises(ValueError, match="Only transforms or transform"):
        CocoDetection(corpus / "val", ann, transform=abs, transforms=abs)


def _write(path: Path, coco: dict) -> Path:
    path.write_text(json.dumps(coco))
    return path


def _val_json(corpus: Path) -> dict:
    return json.loads((corpus / "annotations" / "instances_val.json").read_text())


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("bbox", [1, 2, 3], r"annotation id 1: bbox must be 4 finite numbers"),
        ("bbox", [1, 2, "3", 4], r"annotation id 1: bbox"),
        ("bbox", [1, 2, float("nan"), 4], r"annotation id 1: bbox"),
        ("bbox", [1, 2, -3, 4], r"annotation id 1: bbox width and height"),
        ("category_id", 42, r"annotation id 1: category_id 42 is not one of the categories"),
        ("image_id", 1234, r"annotation id 1: image_id 1234"),
    ],
)
def test_malformed_annotations_are_named(corpus: Path, tmp_path: Path, field, value, match) -> None:
    coco = _val_json(corpus)
    coco["annotations"][0][field] = value
    with pytest.raises(ValueError, match=match):
        CocoDetection(corpus / "val", _write(tmp_path / "bad.json", coco))


def test_bad_arguments_and_files(corpus: Path, tmp_path: Path) -> None:
    ann = corpus / "annotations" / "instances_val.json"
    with pytest.raises(ValueError, match="target_keys"):
        CocoDetection(corpus / "val", ann, target_keys=["boxes", "scores"])
    with pytest.raises(ValueError, match="on_error"):
        CocoDetection(corpus / "val", ann, on_error="ignore")
    with pytest.raises(PathNotFoundError, match=r"nope\.json"):
        CocoDetection(corpus / "val", tmp_path / "nope.json")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(OSError, match=r"broken\.json"):
        CocoDetection(corpus / "val", tmp_path / "broken.json")


def _damaged_copy(corpus: Path, tmp_path: Path) -> CocoDetection:
    """The val split with image 1 missing and a cut copy of image 2 named 3."""
    root = tmp_path / "images"
    root.mkdir()
    shutil.copy(corpus / "val" / "000002.jpg", root / "000002.jpg")
    (root / "000003.jpg").write_bytes((corpus / "val" / "000002.jpg").read_bytes()[:300])
    coco = _val_json(corpus)
    coco["images"].append({"id": 3, "file_name": "000003.jpg", "height": 128, "width": 128})
    return _write(tmp_path / "damaged.json", coco), root


def test_missing_and_damaged_images_raise_naming_them(corpus: Path, tmp_path: Path) -> None:
    ann, root = _damaged_copy(corpus, tmp_path)
    ds = CocoDetection(root, ann)
    with pytest.raises(PathNotFoundError, match=r"000001\.jpg") as missing:
        ds[0]
    assert isinstance(missing.value, FileNotFoundError)
    with pytest.raises(DecodeError, match=r"000003\.jpg"):
        ds[2]


def test_on_error_skip_replaces_by_the_next_readable(corpus: Path, tmp_path: Path) -> None:
    ann, root = _damaged_copy(corpus, tmp_path)
    ds = CocoDetection(root, ann, on_error="skip")
    with pytest.warns(SkippedSamplesWarning) as record:
        first, third = ds[0], ds[2]
    assert first[1]["image_id"] == 2 and third[1]["image_id"] == 2  # wraps around
    assert len(record) == 2 and ds.skipped == 2
    assert [Path(p).name for p in ds.skipped_files] == ["000001.jpg", "000003.jpg"]


def test_detection_collate() -> None:
    batch = [(torch.zeros(3, 4, 5), {"i": 0}), (torch.ones(3, 6, 7), {"i": 1})]
    images, targets = detection_collate(batch)
    assert isinstance(images, list) and [i.shape for i in images] == [(3, 4, 5), (3, 6, 7)]
    assert targets == [{"i": 0}, {"i": 1}]
    assert detection_collate([]) == ([], [])
    with pytest.raises(TypeError, match="pairs"):
        detection_collate([torch.zeros(3)])


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers(corpus: Path, context: str) -> None:
    ds = CocoDetection(
        corpus / "train",
        corpus / "annotations" / "instances_train.json",
        target_keys=["image_id", "boxes", "labels", "masks"],
    )
    loader = torch.utils.data.DataLoader(
        ds,
        batch_size=3,
        num_workers=2,
        collate_fn=detection_collate,
        multiprocessing_context=context,
    )
    seen = 0
    for images, targets in loader:
        for image, target in zip(images, targets, strict=True):
            want_image, want = ds[seen]
            assert isinstance(image, tv_tensors.Image) and torch.equal(image, want_image)
            assert isinstance(target["boxes"], tv_tensors.BoundingBoxes)
            assert target["boxes"].canvas_size == want["boxes"].canvas_size
            assert torch.equal(target["boxes"], want["boxes"])
            assert torch.equal(target["masks"], want["masks"])
            assert target["image_id"] == want["image_id"]
            seen += 1
    assert seen == len(ds)
