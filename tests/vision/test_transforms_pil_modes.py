"""PIL palette ("P") and bilevel ("1") images through the transforms, against torchvision v2.

torchvision keeps a PIL input PIL and runs PIL's own ops, which force NEAREST for these
modes: the palette indices survive. Each case draws from one seed on both sides.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from peers import require_torchvision
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.transforms import functional as F


def _palette_mask(mode: str = "P") -> Image.Image:
    rng = np.random.default_rng(0)
    labels = np.zeros((48, 64), dtype=np.uint8)
    labels[8:40, 10:30] = 3
    labels[20:44, 34:60] = 7
    labels[rng.random(labels.shape) < 0.02] = 255  # VOC's "void" border label
    if mode == "1":
        return Image.fromarray(labels > 0)
    image = Image.fromarray(labels).convert("P")
    image.putpalette(list(rng.integers(0, 256, 768, dtype=np.uint8)))
    return image


# (name, our transform, torchvision's, from the same arguments)
_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("Resize", "Resize", {"size": [30, 40]}),
    ("RandomResizedCrop", "RandomResizedCrop", {"size": [32, 32]}),
    ("RandomCrop", "RandomCrop", {"size": [40, 50], "padding": 4}),
    ("CenterCrop", "CenterCrop", {"size": [20, 30]}),
    ("Pad", "Pad", {"padding": [3, 5], "fill": 0}),
    ("RandomHorizontalFlip", "RandomHorizontalFlip", {"p": 1.0}),
    ("RandomVerticalFlip", "RandomVerticalFlip", {"p": 1.0}),
    ("RandomRotation", "RandomRotation", {"degrees": 90}),
    ("RandomAffine", "RandomAffine", {"degrees": 30, "translate": (0.1, 0.1)}),
    ("RandomZoomOut", "RandomZoomOut", {"p": 1.0}),
    ("RandomShortestSize", "RandomShortestSize", {"min_size": [30]}),
]


def _same(ours: Image.Image, theirs: Image.Image) -> None:
    assert ours.mode == theirs.mode
    assert ours.size == theirs.size
    assert ours.getpalette() == theirs.getpalette()
    np.testing.assert_array_equal(np.array(ours), np.array(theirs))


@pytest.mark.parametrize("mode", ["P", "1"])
@pytest.mark.parametrize(("ours_name", "theirs_name", "kwargs"), _CASES)
def test_geometry_keeps_labels(mode: str, ours_name: str, theirs_name: str, kwargs: dict) -> None:
    tv = require_torchvision()
    image = _palette_mask(mode)
    torch.manual_seed(3)
    theirs = getattr(tv.transforms.v2, theirs_name)(**kwargs)(image)
    torch.manual_seed(3)
    ours = getattr(T, ours_name)(**kwargs)(image)
    _same(ours, theirs)


@pytest.mark.parametrize("name", ["FiveCrop", "TenCrop"])
def test_multi_crops_keep_labels(name: str) -> None:
    tv = require_torchvision()
    image = _palette_mask()
    theirs = getattr(tv.transforms.v2, name)(20)(image)
    ours = getattr(T, name)(20)(image)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        _same(o, t)


def test_pil_to_tensor_bilevel_is_bool() -> None:
    tv = require_torchvision()
    image = _palette_mask("1")
    expected = tv.transforms.v2.functional.pil_to_tensor(image)
    for got in (F.pil_to_tensor(image), T.PILToTensor()(image), T.ToImage()(image)):
        assert got.dtype == torch.bool
        assert torch.equal(got.as_subclass(torch.Tensor), expected)
