"""The embedded detection corpus: deterministic bytes, valid COCO read by pycocotools."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from trivium.core.errors import DatasetError
from trivium.vision.corpora import (
    DETECTION_SHAPES,
    build_detection_corpus,
    plan_detection_corpus,
    render_detection_image,
)
from trivium.vision.io import ImageReadMode, decode_image, read_file

coco_api = pytest.importorskip("pycocotools.coco", reason="pycocotools is not installed")
# pycocotools' mask decoding trips NumPy 2's copy-keyword deprecation.
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_detection_corpus(
        tmp_path_factory.mktemp("det"), num_train=12, num_val=6, progress_bar=False
    )


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "corpus.json"
    }


def test_same_seed_same_bytes_other_seed_other_bytes(corpus: Path, tmp_path: Path) -> None:
    again = build_detection_corpus(tmp_path / "a", num_train=12, num_val=6, progress_bar=False)
    assert _files(again) == _files(corpus)
    other = build_detection_corpus(
        tmp_path / "b", num_train=12, num_val=6, seed=1, progress_bar=False
    )
    assert _files(other)["train/000001.jpg"] != _files(corpus)["train/000001.jpg"]


def test_layout_and_coco_fields(corpus: Path) -> None:
    for split, count in (("train", 12), ("val", 6)):
        coco = json.loads((corpus / "annotations" / f"instances_{split}.json").read_text())
        assert [c["id"] for c in coco["categories"]] == [1, 2, 3, 4, 5, 6]
        assert [c["name"] for c in coco["categories"]] == list(DETECTION_SHAPES)
        assert [im["id"] for im in coco["images"]] == list(range(1, count + 1))
        for im in coco["images"]:
            assert (corpus / split / im["file_name"]).is_file()
            assert (im["height"], im["width"]) == (128, 128)
        ids = [a["id"] for a in coco["annotations"]]
        assert len(set(ids)) == len(ids)
        per_image = np.bincount([a["image_id"] for a in coco["annotations"]], minlength=count + 1)
        assert per_image[1:].min() >= 1 and per_image.max() <= 8
        for a in coco["annotations"]:
            x, y, w, h = a["bbox"]
            assert all(isinstance(v, float) for v in a["bbox"])
            assert a["iscrowd"] == 0 and 1 <= a["category_id"] <= 6
            assert min(x, y) >= 0 and max(x + w, y + h) <= 128
            # The larger side spans 12-60 % of the image's side.
            assert 0.12 * 128 - 1e-3 <= max(w, h) <= 0.6 * 128 + 1e-3
            assert 0 < a["area"] <= w * h
            assert len(a["segmentation"]) == 1 and len(a["segmentation"][0]) % 2 == 0


def test_pycocotools_masks_match_boxes_and_areas(corpus: Path) -> None:
    coco = coco_api.COCO(str(corpus / "annotations" / "instances_train.json"))
    for ann in coco.loadAnns(coco.getAnnIds()):
        mask = coco.annToMask(ann)
        ys, xs = np.nonzero(mask)
        x, y, w, h = ann["bbox"]
        # pycocotools rasterises polygons to within a pixel or two of the outline.
        box = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
        np.testing.assert_allclose(box, [x, y, x + w, y + h], atol=2)
        assert mask.sum() == pytest.approx(ann["area"], rel=0.08)
        if ann["category_id"] == DETECTION_SHAPES.index("ring") + 1:  # the hole is no mask
            assert mask[round(y + h / 2), round(x + w / 2)] == 0


def test_objects_stand_out_from_the_background(corpus: Path) -> None:
    # The object drawn last is wholly visible: inside its mask the pixels differ
    # from the background around its box.
    coco = coco_api.COCO(str(corpus / "annotations" / "instances_val.json"))
    for image_id in coco.getImgIds():
        info = coco.loadImgs(image_id)[0]
        path = corpus / "val" / info["file_name"]
        image = decode_image(read_file(path), ImageReadMode.RGB).float() / 255
        top = coco.loadAnns(coco.getAnnIds(imgIds=image_id))[-1]
        mask = torch.from_numpy(coco.annToMask(top)).bool()
        inner = (
            mask
            & ~torch.nn.functional.max_pool2d((~mask)[None, None].float(), 5, 1, 2)[0, 0].bool()
        )
        if inner.sum() < 20:
            continue
        x, y, w, h = (round(v) for v in top["bbox"])
        around = torch.zeros_like(mask)
        around[max(0, y - 4) : y + h + 4, max(0, x - 4) : x + w + 4] = True
        around[y : y + h, x : x + w] = False
        if around.sum() < 20:
            continue
        inside = image[:, inner]
        # Most object pixels lie far (in RGB) from the median colour around the box.
        distance = (inside - image[:, around].median(dim=1).values[:, None]).norm(dim=0)
        assert float(distance.median()) > 0.15, (image_id, top)


def test_render_is_deterministic_and_respects_settings() -> None:
    plan = plan_detection_corpus(3, 0, image_size=(96, 144), shapes=["ring"], max_objects=2)
    for spec in plan:
        image, annotations = render_detection_image(spec)
        assert image.shape == (3, 96, 144)
        assert 1 <= len(annotations) <= 2
        assert {a["category_id"] for a in annotations} == {6}
        assert torch.equal(image, render_detection_image(spec)[0])


def test_reused_when_finished_rebuilt_when_settings_change(corpus: Path, tmp_path: Path) -> None:
    root = build_detection_corpus(tmp_path / "c", num_train=2, num_val=1, progress_bar=False)
    stamp = (root / "train" / "000001.jpg").stat().st_mtime_ns
    build_detection_corpus(root, num_train=2, num_val=1, progress_bar=False)
    assert (root / "train" / "000001.jpg").stat().st_mtime_ns == stamp
    build_detection_corpus(root, num_train=3, num_val=1, progress_bar=False)
    assert len(list((root / "train").glob("*.jpg"))) == 3


def test_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "annotations").mkdir()
    with pytest.raises(DatasetError, match=r"corpus\.json"):
        build_detection_corpus(tmp_path, num_train=1, num_val=1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"image_size": 8}, "image_size"),
        ({"shapes": ["hexagon"]}, "shapes"),
        ({"max_objects": 0}, "max_objects"),
        ({"object_size": (0.5, 0.2)}, "object_size"),
        ({"min_visible": 1.5}, "min_visible"),
        ({"num_train": -1}, ">= 0"),
    ],
)
def test_bad_settings_are_named(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        plan_detection_corpus(**kwargs)
