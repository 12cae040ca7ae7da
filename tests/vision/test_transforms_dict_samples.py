"""Samples of any nesting (dicts, lists, (image, target) pairs) through every kind of transform."""

from __future__ import annotations

from collections import namedtuple

import pytest
import torch

from trivium.vision import transforms as O
from trivium.vision import tv_tensors as T

IMG = torch.randint(
    0, 256, (3, 16, 20), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
)


TRANSFORMS = [
    O.RandomHorizontalFlip(p=1.0),
    O.Resize(8),
    O.CenterCrop(10),
    O.Pad(2),
    O.RandomCrop(12, generator=torch.Generator().manual_seed(1)),
    O.RandomResizedCrop(8, generator=torch.Generator().manual_seed(1)),
    O.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=torch.Generator().manual_seed(1)),
    O.RandomGrayscale(p=1.0),
    O.RandomInvert(p=1.0),
    O.GaussianBlur(3),
    O.RandomErasing(p=1.0, generator=torch.Generator().manual_seed(1)),
    O.RandAugment(generator=torch.Generator().manual_seed(1)),
    O.ToDtype(torch.float32, scale=True),
    O.Compose([O.RandomHorizontalFlip(p=1.0), O.Resize(8)]),
    O.RandomApply([O.RandomVerticalFlip(p=1.0)], p=1.0),
    O.RandomChoice([O.Resize(8), O.CenterCrop(8)]),
]


def _ids(t: torch.nn.Module) -> str:
    return type(t).__name__


@pytest.mark.parametrize("t", TRANSFORMS, ids=_ids)
def test_dict_sample_gives_the_image_result_and_keeps_the_label(t: torch.nn.Module) -> None:
    torch.manual_seed(0)
    expected = t(IMG)
    torch.manual_seed(0)
    for g in [getattr(m, "generator", None) for m in t.modules()]:
        if g is not None:
            g.manual_seed(1)
    out = t({"image": IMG, "label": 3})
    assert set(out) == {"image", "label"} and out["label"] == 3
    assert out["image"].shape == expected.shape and out["image"].dtype == expected.dtype


@pytest.mark.parametrize("t", TRANSFORMS, ids=_ids)
def test_nested_samples_keep_their_structure(t: torch.nn.Module) -> None:
    Pair = namedtuple("Pair", ["image", "target"])
    out = t(Pair(IMG, {"labels": [1, 2], "name": "a"}))
    assert type(out) is Pair and out.target == {"labels": [1, 2], "name": "a"}
    a, b = t([IMG, IMG.clone()])
    assert a.shape == b.shape


def test_a_list_of_images_gets_the_same_params() -> None:
    t = O.RandomCrop(8, generator=torch.Generator().manual_seed(3))
    a, b = t([IMG, IMG.clone()])
    assert torch.equal(a, b)
    out = O.Normalize([0.5] * 3, [0.5] * 3)({"images": [IMG.float() / 255, IMG.float() / 255]})
    assert torch.equal(out["images"][0], out["images"][1])


def _detection() -> tuple:
    boxes = T.BoundingBoxes([[2, 3, 10, 12]], format="XYXY", canvas_size=(16, 20))
    masks = T.Mask(torch.ones(1, 16, 20, dtype=torch.bool))
    return T.Image(IMG), {"boxes": boxes, "masks": masks, "labels": torch.tensor([4])}


@pytest.mark.parametrize(
    "t",
    [
        O.ColorJitter(0.4, 0.4, 0.4, 0.1),
        O.RandomGrayscale(p=1.0),
        O.GaussianBlur(3),
        O.Normalize([0.5] * 3, [0.5] * 3),
        O.ToDtype(torch.float32, scale=True),
    ],
    ids=_ids,
)
def test_colour_and_conversion_transforms_leave_boxes_and_masks(t: torch.nn.Module) -> None:
    img, target = _detection()
    if isinstance(t, O.Normalize):
        img = T.Image(img.float() / 255)
    out_img, out = t((img, target))
    assert type(out_img) is T.Image
    for key in ("boxes", "masks", "labels"):
        assert out[key] is target[key]


def test_to_dtype_with_a_dict_of_dtypes() -> None:
    img, target = _detection()
    t = O.ToDtype({T.Image: torch.float32, T.Mask: torch.uint8, "others": None}, scale=True)
    out_img, out = t((img, target))
    assert (
        type(out_img) is T.Image and out_img.dtype == torch.float32 and float(out_img.max()) <= 1.0
    )
    assert type(out["masks"]) is T.Mask and out["masks"].dtype == torch.uint8
    assert out["boxes"] is target["boxes"] and out["labels"] is target["labels"]
    with pytest.raises(ValueError, match="no dtype for BoundingBoxes"):
        O.ToDtype({T.Image: torch.float32})((img, target))
    with pytest.raises(TypeError, match="keys"):
        O.ToDtype({"image": torch.float32})
    plain = O.ToDtype(torch.float64, scale=True)((img, target))
    assert plain[0].dtype == torch.float64 and plain[1]["masks"].dtype == torch.bool


def test_typed_image_makes_plain_tensors_pass_through() -> None:
    img, _ = _detection()
    extra = torch.zeros(3, 16, 20)
    out_img, out_extra = O.Resize(8)(img, extra)
    assert out_img.shape == (3, 8, 10) and out_extra is extra
    plain_a, plain_b = O.Resize(8)(IMG, IMG.clone())
    assert plain_a.shape == plain_b.shape == (3, 8, 10)


def test_auto_augment_refuses_boxes() -> None:
    with pytest.raises(TypeError, match="no kernel for BoundingBoxes"):
        O.RandAugment()(_detection())
