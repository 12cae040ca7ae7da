"""The functionals dispatch on the input's type as torchvision v2's do (``F.resize(boxes)``...).

Every functional is compared with torchvision's on the same Image / Video / Mask /
BoundingBoxes, and a user's own tv_tensor type is registered and sent through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from peers import require_torchvision

from trivium.vision import transforms as T
from trivium.vision import tv_tensors
from trivium.vision.transforms import functional as F

H, W = 23, 31
TYPES = ("image", "video", "mask", "boxes", "keypoints")


def _inputs(kind: str, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if kind == "image":
        return torch.randint(0, 256, (3, H, W), dtype=torch.uint8, generator=g)
    if kind == "video":
        return torch.randint(0, 256, (2, 3, H, W), dtype=torch.uint8, generator=g)
    if kind == "mask":
        return torch.randint(0, 4, (H, W), dtype=torch.uint8, generator=g)
    if kind == "keypoints":  # polygons of 3 points, some on the edges
        return torch.rand(4, 3, 2, generator=g) * torch.tensor([W - 1.0, H - 1.0])
    xy = torch.rand(5, 2, generator=g) * torch.tensor([W - 8.0, H - 8.0])
    return torch.cat((xy, xy + 1 + torch.rand(5, 2, generator=g) * 6), dim=1)


def _typed(ns: Any, kind: str, data: torch.Tensor) -> Any:
    """``data`` as ``ns.tv_tensors``' type for ``kind`` (ours or torchvision's)."""
    if kind == "boxes":
        return ns.tv_tensors.BoundingBoxes(data, format="XYXY", canvas_size=(H, W))
    if kind == "keypoints":
        return ns.tv_tensors.KeyPoints(data, canvas_size=(H, W))
    return {"image": ns.tv_tensors.Image, "video": ns.tv_tensors.Video, "mask": ns.tv_tensors.Mask}[
        kind
    ](data)


class _Ours:
    tv_tensors = tv_tensors


DISPLACEMENT = (torch.rand(1, H, W, 2, generator=torch.Generator().manual_seed(3)) - 0.5) * 0.2
GEOMETRY: list[tuple[str, dict[str, Any]]] = [
    ("resize", {"size": [17, 40]}),
    ("resize", {"size": 15, "max_size": 30}),
    ("crop", {"top": 3, "left": -2, "height": 12, "width": 20}),
    ("center_crop", {"output_size": [11, 35]}),
    ("resized_crop", {"top": 2, "left": 4, "height": 15, "width": 20, "size": [30, 24]}),
    ("pad", {"padding": [2, 3, 4, 1]}),
    ("horizontal_flip", {}),
    ("vertical_flip", {}),
    ("rotate", {"angle": 30.0}),
    ("rotate", {"angle": -50.0, "expand": True}),
    ("affine", {"angle": 20.0, "translate": [3, -2], "scale": 0.9, "shear": [8.0, 0.0]}),
    (
        "perspective",
        {
            "startpoints": [[0, 0], [30, 0], [30, 22], [0, 22]],
            "endpoints": [[2, 1], [28, 0], [30, 20], [1, 22]],
        },
    ),
    ("elastic", {"displacement": DISPLACEMENT}),
]


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize(
    ("name", "kwargs"), GEOMETRY, ids=lambda v: v if isinstance(v, str) else ""
)
def test_geometry_functionals_match_torchvision(name: str, kwargs: dict, kind: str) -> None:
    tv = require_torchvision()
    data = _inputs(kind)
    expected = getattr(tv.transforms.v2.functional, name)(_typed(tv, kind, data), **kwargs)
    out = getattr(F, name)(_typed(_Ours, kind, data), **kwargs)
    assert type(out).__name__ == type(expected).__name__
    assert isinstance(out, tv_tensors.TVTensor)
    plain_out, plain_expected = out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor)
    assert plain_out.shape == plain_expected.shape and plain_out.dtype == plain_expected.dtype
    if kind in ("boxes", "keypoints") and kwargs.get("expand"):
        # Our canvas is the rotated image's (torchvision's box canvas can differ from its
        # image's by a pixel); the boxes within a pixel of torchvision's.
        assert out.canvas_size == F.rotate(torch.zeros(1, H, W), **kwargs).shape[-2:]
        torch.testing.assert_close(plain_out, plain_expected, atol=1.0, rtol=0)
    elif kind in ("boxes", "keypoints"):
        assert out.canvas_size == tuple(expected.canvas_size)
        torch.testing.assert_close(plain_out, plain_expected, atol=1e-4, rtol=0)
    elif kind == "mask" or name not in ("rotate", "affine", "perspective", "elastic"):
        assert torch.equal(plain_out, plain_expected)
    else:  # bilinear warps of uint8: off by one at rounding ties at most
        assert (plain_out.int() - plain_expected.int()).abs().max() <= 1


COLOUR: list[tuple[str, dict[str, Any]]] = [
    ("adjust_brightness", {"brightness_factor": 1.3}),
    ("adjust_contrast", {"contrast_factor": 0.6}),
    ("adjust_saturation", {"saturation_factor": 1.7}),
    ("adjust_hue", {"hue_factor": 0.2}),
    ("adjust_gamma", {"gamma": 0.8}),
    ("adjust_sharpness", {"sharpness_factor": 2.0}),
    ("invert", {}),
    ("posterize", {"bits": 3}),
    ("solarize", {"threshold": 100}),
    ("autocontrast", {}),
    ("equalize", {}),
    ("gaussian_blur", {"kernel_size": [3, 5], "sigma": [1.0, 0.7]}),
    ("to_dtype", {"dtype": torch.float32, "scale": True}),
    ("erase", {"i": 2, "j": 3, "h": 5, "w": 6, "v": torch.tensor(7, dtype=torch.uint8)}),
]


@pytest.mark.parametrize("kind", ["image", "video"])
@pytest.mark.parametrize(("name", "kwargs"), COLOUR, ids=lambda v: v if isinstance(v, str) else "")
def test_image_functionals_match_torchvision(name: str, kwargs: dict, kind: str) -> None:
    tv = require_torchvision()
    data = _inputs(kind)
    expected = getattr(tv.transforms.v2.functional, name)(_typed(tv, kind, data), **kwargs)
    out = getattr(F, name)(_typed(_Ours, kind, data), **kwargs)
    assert type(out).__name__ == type(expected).__name__
    plain_out, plain_expected = out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor)
    assert plain_out.dtype == plain_expected.dtype
    torch.testing.assert_close(plain_out, plain_expected, atol=1, rtol=0)
    # A plain tensor is an image: the same kernel, untyped.
    plain = getattr(F, name)(data, **kwargs)
    assert type(plain) is torch.Tensor and torch.equal(plain, plain_out)


def test_normalize_and_to_dtype_of_masks_and_boxes_as_torchvision() -> None:
    tv = require_torchvision()
    img = _inputs("image").float() / 255
    expected = tv.transforms.v2.functional.normalize(tv.tv_tensors.Image(img), [0.5] * 3, [0.2] * 3)
    out = F.normalize(tv_tensors.Image(img), [0.5] * 3, [0.2] * 3)
    assert type(out) is tv_tensors.Image
    torch.testing.assert_close(out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    for kind in ("mask", "boxes"):
        data = _inputs(kind)
        ours = F.to_dtype(_typed(_Ours, kind, data), torch.int64, scale=True)
        theirs = tv.transforms.v2.functional.to_dtype(_typed(tv, kind, data), torch.int64, True)
        assert torch.equal(ours.as_subclass(torch.Tensor), theirs.as_subclass(torch.Tensor))


def _kernel_names(namespace: Any) -> set[str]:
    suffixes = ("_image", "_video", "_mask", "_bounding_boxes", "_keypoints")
    return {n for n in dir(namespace) if n.endswith(suffixes) and not n.startswith("_")}


def test_kernel_names_are_torchvisions() -> None:
    tvF = require_torchvision().transforms.v2.functional
    ours = _kernel_names(F) - {"rgb_to_grayscale_video"}  # the image kernel, as a video kernel
    assert ours <= _kernel_names(tvF), sorted(ours - _kernel_names(tvF))
    # Every functional with a kernel here has torchvision's kernel names for the same types.
    for name in ("resize", "crop", "center_crop", "resized_crop", "pad", "rotate", "affine"):
        for suffix in ("image", "video", "mask", "bounding_boxes", "keypoints"):
            assert f"{name}_{suffix}" in ours


class Points(tv_tensors.TVTensor):
    """A user's type: [N, 2] (x, y) points on a canvas of ``canvas_width`` columns."""


def _register_points() -> None:
    @T.register_kernel(F.resize, Points)
    def _resize_points(points: Points, size: list[int], **kwargs: Any) -> Points:
        scale = torch.tensor([size[1] / 10, size[0] / 10])  # the tests' canvas is 10 x 10
        return tv_tensors.wrap(points.as_subclass(torch.Tensor) * scale, like=points)

    @T.register_kernel("horizontal_flip", Points)
    def _flip_points(points: Points) -> Points:
        out = points.as_subclass(torch.Tensor).clone()
        out[:, 0] = 10 - out[:, 0]
        return tv_tensors.wrap(out, like=points)


def test_a_users_type_goes_to_its_kernel() -> None:
    _register_points()
    pts = torch.tensor([[1.0, 2.0], [5.0, 5.0]]).as_subclass(Points)
    out = F.resize(pts, [20, 30])
    assert type(out) is Points and out.tolist() == [[3.0, 4.0], [15.0, 10.0]]
    flipped = F.horizontal_flip(pts)
    assert type(flipped) is Points and flipped.tolist() == [[9.0, 2.0], [5.0, 5.0]]
    # A subclass of the user's type finds its base's kernel (the MRO).
    sub = type("MorePoints", (Points,), {})
    assert type(F.resize(pts.as_subclass(sub), [10, 10])) is sub


def test_a_type_without_a_kernel_raises() -> None:
    class Other(tv_tensors.TVTensor):
        pass

    x = torch.zeros(3, 4, 4).as_subclass(Other)
    with pytest.raises(TypeError, match=r"F\.resize has no kernel for Other"):
        F.resize(x, [2, 2])  # never the plain-tensor kernel
    with pytest.raises(TypeError, match=r"F\.adjust_hue has no kernel for Mask"):
        F.adjust_hue(tv_tensors.Mask(torch.zeros(4, 4)), 0.1)


@pytest.mark.parametrize(
    ("functional", "cls", "error"),
    [
        (F.resize, tv_tensors.Mask, ValueError),  # the library's own type
        (F.resize, torch.Tensor, TypeError),  # not a TVTensor
        (lambda x: x, Points, ValueError),  # not a functional
        ("no_such_functional", Points, ValueError),
        (len, Points, ValueError),  # a callable that is no functional
    ],
)
def test_register_kernel_rejects_bad_arguments(
    functional: Callable | str, cls: type, error: type
) -> None:
    with pytest.raises(error, match="register_kernel"):
        T.register_kernel(functional, cls)


# Transforms call the functionals: a user's kernel runs inside them too.


def test_a_users_type_goes_through_the_transforms() -> None:
    _register_points()
    img = torch.zeros(3, 10, 10)
    pts = torch.tensor([[1.0, 2.0], [5.0, 5.0]]).as_subclass(Points)
    out_img, out_pts = T.Resize([20, 30])(img, pts)
    assert out_img.shape == (3, 20, 30)
    assert type(out_pts) is Points and out_pts.tolist() == [[3.0, 4.0], [15.0, 10.0]]
    _, flipped = T.RandomHorizontalFlip(p=1.0)(img, {"points": pts})
    assert type(flipped["points"]) is Points and flipped["points"].tolist() == [
        [9.0, 2.0],
        [5.0, 5.0],
    ]
    _, kept = T.RandomHorizontalFlip(p=0.0)(img, pts)
    assert kept.tolist() == pts.tolist()


def test_a_transform_without_a_kernel_for_a_type_raises_or_passes_it_through() -> None:
    _register_points()
    img = torch.zeros(3, 10, 10)
    pts = torch.tensor([[1.0, 2.0]]).as_subclass(Points)
    # Geometry whose functional has no kernel for Points: the points would be left behind.
    with pytest.raises(TypeError, match="CenterCrop has no kernel for Points"):
        T.CenterCrop(4)(img, pts)
    with pytest.raises(TypeError, match="RandomRotation has no kernel for Points"):
        T.RandomRotation(30)(img, pts)
    # Colour and dtype transforms leave them where they are.
    for t in (T.ColorJitter(brightness=0.5), T.Normalize([0.5], [0.5]), T.GaussianBlur(3)):
        _, out = t(img, pts)
        assert out is pts


@pytest.mark.parametrize(
    ("transform", "functional", "args"),
    [
        (T.Resize(15, max_size=40), F.resize, (15,)),
        (T.CenterCrop([9, 40]), F.center_crop, ([9, 40],)),
        (T.Pad([1, 2, 3, 4]), F.pad, ([1, 2, 3, 4],)),
        (T.RandomVerticalFlip(p=1.0), F.vertical_flip, ()),
    ],
)
@pytest.mark.parametrize("kind", ["mask", "boxes"])
def test_transforms_move_boxes_and_masks_as_their_functional(
    transform: torch.nn.Module, functional: Callable, args: tuple, kind: str
) -> None:
    data = _typed(_Ours, kind, _inputs(kind))
    kwargs = {"max_size": 40} if functional is F.resize else {}
    expected = functional(data, *args, **kwargs)
    _, out = transform(tv_tensors.Image(_inputs("image")), data)
    assert type(out) is type(data) and torch.equal(out, expected)
    if kind == "boxes":
        assert out.canvas_size == expected.canvas_size


# KeyPoints: a new type is one file of kernels (functional/keypoints.py).


@pytest.mark.parametrize(
    "name", ["horizontal_flip", "vertical_flip", "resize", "crop", "pad", "affine", "rotate"]
)
def test_integer_keypoints_match_torchvision(name: str) -> None:
    tv = require_torchvision()
    data = torch.randint(-3, 40, (6, 2))
    args = {
        "horizontal_flip": {},
        "vertical_flip": {},
        "resize": {"size": [40, 17]},
        "crop": {"top": 2, "left": 5, "height": 10, "width": 12},
        "pad": {"padding": [3, 1]},
        "affine": {"angle": 15.0, "translate": [2, 1], "scale": 1.1, "shear": [3.0, 0.0]},
        "rotate": {"angle": 33.0},
    }[name]
    ours = getattr(F, name)(tv_tensors.KeyPoints(data, canvas_size=(H, W)), **args)
    theirs = getattr(tv.transforms.v2.functional, name)(
        tv.tv_tensors.KeyPoints(data, canvas_size=(H, W)), **args
    )
    assert ours.dtype == theirs.dtype and ours.canvas_size == tuple(theirs.canvas_size)
    assert torch.equal(ours.as_subclass(torch.Tensor), theirs.as_subclass(torch.Tensor))


@pytest.mark.parametrize(
    "make",
    [
        lambda v2: v2.Resize([40, 20]),
        lambda v2: v2.CenterCrop([15, 40]),
        lambda v2: v2.Pad([2, 5]),
        lambda v2: v2.RandomHorizontalFlip(p=1.0),
        lambda v2: v2.RandomVerticalFlip(p=1.0),
        lambda v2: v2.ClampKeyPoints(),
    ],
)
def test_keypoints_through_the_transforms_as_torchvision(make: Callable) -> None:
    tv = require_torchvision()
    data = _inputs("keypoints") * 1.2 - 1  # some off the canvas
    img = _inputs("image")
    _, ours = make(T)(tv_tensors.Image(img), tv_tensors.KeyPoints(data, canvas_size=(H, W)))
    _, theirs = make(tv.transforms.v2)(
        tv.tv_tensors.Image(img), tv.tv_tensors.KeyPoints(data, canvas_size=(H, W))
    )
    assert type(ours) is tv_tensors.KeyPoints and ours.canvas_size == tuple(theirs.canvas_size)
    torch.testing.assert_close(
        ours.as_subclass(torch.Tensor), theirs.as_subclass(torch.Tensor), atol=1e-5, rtol=0
    )


def test_sanitize_keypoints_as_torchvision() -> None:
    tv = require_torchvision()
    data = _inputs("keypoints") * 1.3 - 2  # rows of 3 points, some leaving the canvas
    labels = torch.arange(data.shape[0])
    ours = T.SanitizeKeyPoints(labels_getter="default")(
        {"points": tv_tensors.KeyPoints(data, canvas_size=(H, W)), "labels": labels}
    )
    theirs = tv.transforms.v2.SanitizeKeyPoints(labels_getter="default")(
        {"points": tv.tv_tensors.KeyPoints(data, canvas_size=(H, W)), "labels": labels}
    )
    assert 0 < len(ours["labels"]) < len(labels)
    assert torch.equal(ours["labels"], theirs["labels"])
    assert torch.equal(
        ours["points"].as_subclass(torch.Tensor), theirs["points"].as_subclass(torch.Tensor)
    )
    plain, valid = F.sanitize_keypoints(data, canvas_size=(H, W))
    tv_plain, tv_valid = tv.transforms.v2.functional.sanitize_keypoints(data, canvas_size=(H, W))
    assert torch.equal(plain, tv_plain) and torch.equal(valid, tv_valid)
    with pytest.raises(ValueError, match="canvas_size"):
        F.clamp_keypoints(data)


def test_keypoints_move_with_random_geometry() -> None:
    # A point on a bright pixel lands on the bright pixel of the warped image.
    img = torch.zeros(1, 41, 41)
    img[0, 10, 30] = 1.0
    points = tv_tensors.KeyPoints([[30.0, 10.0]], canvas_size=(41, 41))
    g = torch.Generator().manual_seed(0)
    for t in (
        T.RandomRotation(40, generator=g),
        T.RandomAffine(20, translate=(0.1, 0.1), generator=g),
    ):
        out_img, out_points = t(tv_tensors.Image(img), points)
        y, x = divmod(int(out_img.as_subclass(torch.Tensor).argmax()), 41)
        assert abs(out_points[0, 0].item() - x) <= 1 and abs(out_points[0, 1].item() - y) <= 1


def test_the_functionals_compile_in_one_graph() -> None:
    def chain(x: torch.Tensor) -> torch.Tensor:
        return F.adjust_brightness(F.resize(F.horizontal_flip(x), [8, 8]), 1.2)

    x = torch.rand(3, 16, 12, generator=torch.Generator().manual_seed(0))
    compiled = torch.compile(chain, fullgraph=True, backend="eager")  # the dispatch is traced
    expected = F.adjust_brightness_image(F.resize_image(x.flip(-1), [8, 8]), 1.2)
    torch.testing.assert_close(compiled(x), expected)
