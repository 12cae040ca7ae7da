"""tv_tensors: types, metadata, return-type rules, pickling, compile; against torchvision's."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from peers import import_torchvision

from trivium.vision import tv_tensors as T


def _boxes() -> T.BoundingBoxes:
    return T.BoundingBoxes([[1, 2, 5, 8]], format="xyxy", canvas_size=(10, 12))


def test_boxes_metadata_and_format_names() -> None:
    b = _boxes()
    assert b.format is T.BoundingBoxFormat.XYXY and b.canvas_size == (10, 12)
    assert b.clamping_mode == "soft"
    assert T.BoundingBoxes([1, 2, 3, 4], format="CXCYWH", canvas_size=(4, 4)).shape == (1, 4)
    with pytest.raises(ValueError, match="format"):
        T.BoundingBoxes([[0, 0, 1, 1]], format="XYZ", canvas_size=(4, 4))
    with pytest.raises(ValueError, match="4 numbers"):
        T.BoundingBoxes([[0, 0, 1]], format="XYXY", canvas_size=(4, 4))
    with pytest.raises(TypeError, match="canvas_size"):
        T.BoundingBoxes([[0, 0, 1, 1]], format="XYXY", canvas_size=4)


def test_ops_return_plain_tensors_except_the_documented_ones() -> None:
    b, img = _boxes(), T.Image(torch.zeros(3, 2, 2))
    assert type(b + 1) is torch.Tensor and type(img * 2) is torch.Tensor
    assert type(img.add_(1)) is torch.Tensor
    for op in (lambda x: x.clone(), lambda x: x.to(torch.float64), lambda x: x.detach()):
        out = op(b)
        assert type(out) is T.BoundingBoxes and out.canvas_size == (10, 12)
    assert type(torch.zeros(1).to(b)) is torch.Tensor
    with T.set_return_type("TVTensor"):
        assert type(b + 1) is T.BoundingBoxes and (b + 1).canvas_size == (10, 12)
    assert type(b + 1) is torch.Tensor
    with pytest.raises(ValueError, match="return_type"):
        T.set_return_type("array")


def test_wrap_keeps_type_and_overrides_metadata() -> None:
    b = _boxes()
    out = T.wrap(torch.zeros(2, 4), like=b, canvas_size=(3, 3))
    assert type(out) is T.BoundingBoxes and out.canvas_size == (3, 3) and out.format == b.format
    assert type(T.wrap(torch.zeros(1, 2, 2), like=T.Mask(torch.zeros(2, 2)))) is T.Mask
    with pytest.raises(TypeError, match="like"):
        T.wrap(torch.zeros(1), like=torch.zeros(1))


def test_image_video_mask_constructors() -> None:
    assert T.Image(torch.zeros(4, 5)).shape == (1, 4, 5)
    with pytest.raises(ValueError):
        T.Image(torch.zeros(3))
    with pytest.raises(ValueError):
        T.Video(torch.zeros(3, 4, 4))
    from PIL import Image as PILImage

    pil = PILImage.new("RGB", (5, 4), (10, 20, 30))
    assert T.Image(pil).shape == (3, 4, 5) and T.Mask(pil.convert("L")).shape == (1, 4, 5)


def test_pickle_and_deepcopy_keep_type_and_metadata() -> None:
    for x in (
        _boxes(),
        T.Image(torch.ones(3, 2, 2)),
        T.Mask(torch.ones(2, 2)),
        T.Video(torch.ones(1, 1, 2, 2)),
    ):
        for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
            assert type(y) is type(x) and torch.equal(
                y.as_subclass(torch.Tensor), x.as_subclass(torch.Tensor)
            )
    y = pickle.loads(pickle.dumps(_boxes()))
    assert y.canvas_size == (10, 12) and y.format is T.BoundingBoxFormat.XYXY


def test_compile_on_a_function_taking_tv_tensors() -> None:
    f = torch.compile(lambda x, b: x * 2 + b.sum(), backend="eager")
    img, b = T.Image(torch.ones(3, 2, 2)), _boxes()
    out = f(img, b)
    assert torch.equal(out, torch.full((3, 2, 2), 2.0 + 16))


def test_same_behaviour_as_torchvision() -> None:
    tv = import_torchvision()
    if tv is None:
        pytest.skip("torchvision is not installed")
    ref = tv.tv_tensors.BoundingBoxes([[1, 2, 5, 8]], format="XYXY", canvas_size=(10, 12))
    ours = _boxes()
    for op in (lambda x: x + 1, lambda x: x.clone(), lambda x: x[0], lambda x: x.float()):
        r, o = op(ref), op(ours)
        assert (type(r) is torch.Tensor) == (type(o) is torch.Tensor)
        assert torch.equal(r.as_subclass(torch.Tensor), o.as_subclass(torch.Tensor))
    theirs = [f.name for f in tv.tv_tensors.BoundingBoxFormat]
    assert [f.name for f in T.BoundingBoxFormat] == theirs
