"""``wrap_dataset_for_transforms_v2`` against torchvision's, on a tiny COCO folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from peers import require_torchvision
from tiny_coco import write_tiny_coco

from trivium.vision import datasets, tv_tensors


@pytest.fixture(scope="module")
def coco(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_coco(tmp_path_factory.mktemp("coco"))


def _pair(tv, root: Path, **kwargs):
    args = (str(root / "train"), str(root / "annotations" / "instances_train.json"))
    ours = datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(*args), **kwargs)
    theirs = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.CocoDetection(*args), **kwargs)
    return ours, theirs


@pytest.mark.parametrize("target_keys", [None, ["boxes", "labels", "masks", "image_id"], "all"])
def test_coco_targets_are_torchvisions(coco: Path, target_keys) -> None:
    tv = require_torchvision()
    ours, theirs = _pair(tv, coco, target_keys=target_keys)
    assert len(ours) == len(theirs) == 4
    for i in (0, 2):  # image 3 holds the crowd (uncompressed RLE)
        (image, mine), (pil, want) = ours[i], theirs[i]
        np.testing.assert_array_equal(image.permute(1, 2, 0).numpy(), np.asarray(pil))
        assert sorted(mine) == sorted(want)
        for key, value in want.items():
            if isinstance(value, torch.Tensor):
                assert type(mine[key]).__name__ == type(value).__name__, key
                torch.testing.assert_close(
                    mine[key].as_subclass(torch.Tensor), value.as_subclass(torch.Tensor)
                )
            else:
                assert mine[key] == value, key
        if "boxes" in want:
            assert mine["boxes"].canvas_size == want["boxes"].canvas_size
            assert mine["boxes"].format.value == want["boxes"].format.value


def test_wrapping_leaves_the_dataset_and_its_transforms(coco: Path) -> None:
    base = datasets.CocoDetection(coco / "val", coco / "annotations" / "instances_val.json")
    wrapped = datasets.wrap_dataset_for_transforms_v2(base, target_keys=["masks"])
    assert sorted(base[0][1]) == ["boxes", "image_id", "labels"]
    assert list(wrapped[0][1]) == ["masks"] and isinstance(wrapped[0][1]["masks"], tv_tensors.Mask)


def test_classification_datasets_pass_and_others_are_refused(tmp_path: Path) -> None:
    tv = require_torchvision()
    (tmp_path / "a").mkdir()
    from PIL import Image

    Image.new("RGB", (4, 3)).save(tmp_path / "a" / "x.png")
    folder = datasets.ImageFolder(str(tmp_path))
    assert datasets.wrap_dataset_for_transforms_v2(folder) is folder
    theirs = tv.datasets.wrap_dataset_for_transforms_v2(tv.datasets.ImageFolder(str(tmp_path)))
    assert folder[0][1] == theirs[0][1] == 0
    with pytest.raises(ValueError, match="target_keys is not supported for ImageFolder"):
        datasets.wrap_dataset_for_transforms_v2(folder, target_keys=["boxes"])
    with pytest.raises(TypeError, match="FakeData is not supported"):
        datasets.wrap_dataset_for_transforms_v2(datasets.FakeData(size=1))
    with pytest.raises(ValueError, match="target_keys must be"):
        base = datasets.CocoDetection(
            tmp_path.parent / "none",
            write_tiny_coco(tmp_path / "c") / "annotations" / "instances_val.json",
        )
        datasets.wrap_dataset_for_transforms_v2(base, target_keys=["nope"])
