"""Box and mask kernels against torchvision v2: functional kernels, transforms, invariants."""

from __future__ import annotations

import pytest
import torch
from peers import import_torchvision
from torch.utils.data import DataLoader, Dataset

from trivium.vision import transforms as O
from trivium.vision import tv_tensors as T
from trivium.vision.transforms import functional as K

tv = import_torchvision()
needs_tv = pytest.mark.skipif(tv is None, reason="torchvision is not installed")
if tv is not None:
    from torchvision import tv_tensors as TVT
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional as VF

FORMATS = ["XYXY", "XYWH", "CXCYWH"]
DTYPES = [torch.float32, torch.int64]
H, W = 40, 60
XYXY = [[5, 6, 30, 20], [40, 10, 59, 39], [0, 0, 3, 2], [20, 25, 28, 33]]


def _plain(x: torch.Tensor) -> torch.Tensor:
    return x.as_subclass(torch.Tensor)


def _boxes(fmt: str, dtype: torch.dtype) -> torch.Tensor:
    xyxy = torch.tensor(XYXY, dtype=dtype)
    return K.convert_bounding_box_format(xyxy, "XYXY", fmt)


def _masks() -> torch.Tensor:
    m = torch.zeros(len(XYXY), H, W, dtype=torch.uint8)
    for i, (x1, y1, x2, y2) in enumerate(XYXY):
        m[i, y1:y2, x1:x2] = 1
    return m


def _ours(fmt: str, dtype: torch.dtype) -> tuple:
    img = T.Image(
        torch.randint(
            0, 256, (3, H, W), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
        )
    )
    boxes = T.BoundingBoxes(_boxes(fmt, dtype), format=fmt, canvas_size=(H, W))
    return img, {"boxes": boxes, "masks": T.Mask(_masks()), "labels": torch.arange(len(XYXY))}


def _theirs(sample: tuple) -> tuple:
    img, target = sample
    boxes = target["boxes"]
    ref_boxes = TVT.BoundingBoxes(
        _plain(boxes), format=boxes.format.value, canvas_size=boxes.canvas_size
    )
    return TVT.Image(_plain(img)), {
        "boxes": ref_boxes,
        "masks": TVT.Mask(_plain(target["masks"])),
        "labels": target["labels"],
    }


def _apply(fn, sample: tuple, *args, **kwargs) -> tuple:  # type: ignore[no-untyped-def]
    """torchvision's functional ``fn`` on every tv_tensor of a reference sample."""
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: fn(x, *args, **kwargs) if isinstance(x, TVT.TVTensor) else x, sample)


def _assert_same(ours: tuple, theirs: tuple) -> None:
    assert type(ours[0]) is T.Image
    assert type(ours[1]["boxes"]) is T.BoundingBoxes and type(ours[1]["masks"]) is T.Mask
    assert ours[1]["boxes"].canvas_size == tuple(theirs[1]["boxes"].canvas_size)
    assert ours[1]["boxes"].dtype == theirs[1]["boxes"].dtype
    assert torch.equal(_plain(ours[1]["boxes"]), _plain(theirs[1]["boxes"]))
    assert torch.equal(_plain(ours[1]["masks"]), _plain(theirs[1]["masks"]))
    assert ours[0].shape == theirs[0].shape


@needs_tv
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_functional_kernels_match_torchvision(fmt: str, dtype: torch.dtype) -> None:
    b = _boxes(fmt, dtype)
    f = getattr(TVT.BoundingBoxFormat, fmt)
    canvas = (H, W)
    pairs = [
        (
            K.horizontal_flip_bounding_boxes(b, fmt, canvas),
            VF.horizontal_flip_bounding_boxes(b, f, canvas),
        ),
        (
            K.vertical_flip_bounding_boxes(b, fmt, canvas),
            VF.vertical_flip_bounding_boxes(b, f, canvas),
        ),
        (
            K.resize_bounding_boxes(b, canvas, [23], format=fmt),
            VF.resize_bounding_boxes(b, canvas, [23], format=f),
        ),
        (
            K.resize_bounding_boxes(b, canvas, [20], max_size=25, format=fmt),
            VF.resize_bounding_boxes(b, canvas, [20], max_size=25, format=f),
        ),
        (K.crop_bounding_boxes(b, fmt, 7, -3, 25, 30), VF.crop_bounding_boxes(b, f, 7, -3, 25, 30)),
        (
            K.pad_bounding_boxes(b, fmt, canvas, [1, 2, 3, 4]),
            VF.pad_bounding_boxes(b, f, canvas, [1, 2, 3, 4]),
        ),
        (
            K.center_crop_bounding_boxes(b, fmt, canvas, [25, 31]),
            VF.center_crop_bounding_boxes(b, f, canvas, [25, 31]),
        ),
        (
            K.center_crop_bounding_boxes(b, fmt, canvas, [45, 61]),
            VF.center_crop_bounding_boxes(b, f, canvas, [45, 61]),
        ),
        (
            K.resized_crop_bounding_boxes(b, fmt, 3, 4, 30, 20, [16, 16]),
            VF.resized_crop_bounding_boxes(b, f, 3, 4, 30, 20, [16, 16]),
        ),
        (
            K.clamp_bounding_boxes(b * 2 - 10, fmt, canvas, "soft"),
            VF.clamp_bounding_boxes(b * 2 - 10, f, canvas, "soft"),
        ),
    ]
    for new in FORMATS:
        new_f = getattr(TVT.BoundingBoxFormat, new)
        pairs.append(
            (
                K.convert_bounding_box_format(b, fmt, new),
                VF.convert_bounding_box_format(b, f, new_f),
            )
        )
    for ours, theirs in pairs:
        if isinstance(theirs, tuple):
            assert tuple(ours[1]) == tuple(theirs[1])
            ours, theirs = ours[0], theirs[0]
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs), (ours, theirs)


def test_functional_kernels_reject_bad_input() -> None:
    with pytest.raises(ValueError, match=r"\[\.\.\., 4\]"):
        K.horizontal_flip_bounding_boxes(torch.zeros(2, 3), "XYXY", (4, 4))
    with pytest.raises(ValueError, match="padding_mode"):
        K.pad_bounding_boxes(torch.zeros(1, 4), "XYXY", (4, 4), 1, padding_mode="reflect")
    with pytest.raises(ValueError, match="old_format"):
        K.convert_bounding_box_format(torch.zeros(1, 4), new_format="XYXY")
    with pytest.raises(ValueError, match="format"):
        K.convert_bounding_box_format(torch.zeros(1, 4), "XYXY", "XYZW")


DETERMINISTIC = [
    ("RandomHorizontalFlip", {"p": 1.0}),
    ("RandomVerticalFlip", {"p": 1.0}),
    ("Resize", {"size": 25}),
    ("Resize", {"size": [30, 17]}),
    ("Resize", {"size": 20, "max_size": 30}),
    ("CenterCrop", {"size": 22}),
    ("CenterCrop", {"size": [50, 70]}),
    ("Pad", {"padding": [3, 4, 5, 6]}),
    ("Pad", {"padding": 2}),
]


@needs_tv
@pytest.mark.parametrize(("name", "kwargs"), DETERMINISTIC)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transforms_match_torchvision(
    name: str, kwargs: dict, fmt: str, dtype: torch.dtype
) -> None:
    sample = _ours(fmt, dtype)
    _assert_same(getattr(O, name)(**kwargs)(sample), getattr(v2, name)(**kwargs)(_theirs(sample)))


@needs_tv
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "kwargs", [{"size": 20}, {"size": [30, 50], "padding": 4}, {"size": 50, "pad_if_needed": True}]
)
def test_random_crop_matches_torchvision_for_the_drawn_offsets(fmt: str, kwargs: dict) -> None:
    sample = _ours(fmt, torch.float32)
    for seed in range(5):
        params = O.RandomCrop(**kwargs, generator=torch.Generator().manual_seed(seed)).make_params(
            [_plain(sample[0])]
        )
        ours = O.RandomCrop(**kwargs, generator=torch.Generator().manual_seed(seed))(sample)
        left, right, top, bottom = params["padding"]
        ref = _theirs(sample)
        if any(params["padding"]):
            ref = _apply(VF.pad, ref, [left, top, right, bottom])
        ref = _apply(VF.crop, ref, params["top"], params["left"], *O.RandomCrop(**kwargs).size)
        _assert_same(ours, ref)


@needs_tv
@pytest.mark.parametrize("fmt", FORMATS)
def test_random_resized_crop_matches_torchvision_for_the_drawn_box(fmt: str) -> None:
    sample = _ours(fmt, torch.float32)
    for seed in range(5):
        top, left, h, w = O.RandomResizedCrop(
            24, generator=torch.Generator().manual_seed(seed)
        ).get_params(H, W)
        ours = O.RandomResizedCrop(24, generator=torch.Generator().manual_seed(seed))(sample)
        ref = _apply(
            VF.resized_crop,
            _theirs(sample),
            top,
            left,
            h,
            w,
            [24, 24],
            interpolation=v2.InterpolationMode.NEAREST,
        )
        assert torch.equal(_plain(ours[1]["boxes"]), _plain(ref[1]["boxes"]))
        assert torch.equal(_plain(ours[1]["masks"]), _plain(ref[1]["masks"]))
        assert ours[1]["boxes"].canvas_size == (24, 24)


@needs_tv
@pytest.mark.parametrize("fmt", FORMATS)
def test_box_transforms_match_torchvision(fmt: str) -> None:
    boxes = T.BoundingBoxes(
        [[0, 0, 5, 5], [2, 2, 2.5, 9], [-4, 1, 3, 3], [8, 8, 12, 9]],
        format="XYXY",
        canvas_size=(10, 10),
    )
    boxes = O.ConvertBoundingBoxFormat(fmt)(boxes)
    ref = TVT.BoundingBoxes(_plain(boxes), format=fmt, canvas_size=(10, 10))
    labels = torch.tensor([1, 2, 3, 4])
    masks = torch.zeros(4, 10, 10)
    for kwargs in ({}, {"min_size": 2.0}, {"min_area": 10.0}):
        ours = O.SanitizeBoundingBoxes(**kwargs)(
            {"boxes": boxes, "labels": labels, "masks": T.Mask(masks)}
        )
        theirs = v2.SanitizeBoundingBoxes(**kwargs)(
            {"boxes": ref, "labels": labels, "masks": TVT.Mask(masks)}
        )
        assert torch.equal(_plain(ours["boxes"]), _plain(theirs["boxes"]))
        assert torch.equal(ours["labels"], theirs["labels"])
        assert ours["masks"].shape == theirs["masks"].shape and type(ours["masks"]) is T.Mask
    assert torch.equal(_plain(O.ClampBoundingBoxes()(boxes)), _plain(v2.ClampBoundingBoxes()(ref)))
    for new in FORMATS:
        ours = O.ConvertBoundingBoxFormat(new)(boxes)
        assert ours.format.value == new
        assert torch.equal(_plain(ours), _plain(v2.ConvertBoundingBoxFormat(new)(ref)))


def test_sanitize_finds_labels_in_pairs_and_checks_them() -> None:
    boxes = T.BoundingBoxes([[0, 0, 5, 5], [1, 1, 1, 1]], format="XYXY", canvas_size=(8, 8))
    _, target = O.SanitizeBoundingBoxes()(
        torch.zeros(3, 8, 8), {"boxes": boxes, "class_labels": torch.tensor([7, 8])}
    )
    assert target["class_labels"].tolist() == [7] and target["boxes"].shape == (1, 4)
    with pytest.raises(ValueError, match="labels"):
        O.SanitizeBoundingBoxes()({"boxes": boxes, "labels": torch.tensor([1, 2, 3])})
    with pytest.raises(ValueError, match="no labels key"):
        O.SanitizeBoundingBoxes()({"boxes": boxes})
    assert O.SanitizeBoundingBoxes(labels_getter=None)({"boxes": boxes})["boxes"].shape == (1, 4)
    with pytest.raises(ValueError, match="min_size"):
        O.SanitizeBoundingBoxes(min_size=0.5)


# Invariants on random draws.


def _mask_extent(mask: torch.Tensor) -> list[float]:
    ys, xs = torch.nonzero(mask, as_tuple=True)
    return [xs.min().item(), ys.min().item(), xs.max().item() + 1, ys.max().item() + 1]


RANDOM = [
    O.RandomHorizontalFlip(),
    O.RandomVerticalFlip(),
    O.RandomCrop(30, padding=3),
    O.RandomCrop([45, 70], pad_if_needed=True),
    O.RandomResizedCrop(32, scale=(0.5, 1.0)),
    O.Compose([O.RandomHorizontalFlip(), O.Resize(30), O.RandomCrop(25)]),
]


@pytest.mark.parametrize("t", RANDOM, ids=lambda t: type(t).__name__)
def test_boxes_stay_on_the_canvas_and_move_with_their_masks(t: torch.nn.Module) -> None:
    torch.manual_seed(0)
    for _ in range(10):
        img, target = t(_ours("XYXY", torch.float32))
        boxes, masks = target["boxes"], target["masks"]
        h, w = boxes.canvas_size
        assert (h, w) == tuple(img.shape[-2:]) == tuple(masks.shape[-2:])
        assert bool((boxes[:, 0::2] >= 0).all() & (boxes[:, 0::2] <= w).all())
        assert bool((boxes[:, 1::2] >= 0).all() & (boxes[:, 1::2] <= h).all())
        for box, mask in zip(boxes, masks, strict=True):
            if mask.any() and (box[2] - box[0]) >= 2 and (box[3] - box[1]) >= 2:
                assert torch.allclose(
                    torch.tensor(_mask_extent(mask), dtype=torch.float32), _plain(box), atol=1.0
                )


@pytest.mark.parametrize("flip", [O.RandomHorizontalFlip(p=1.0), O.RandomVerticalFlip(p=1.0)])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_flip_twice_is_identity(flip: torch.nn.Module, fmt: str) -> None:
    sample = _ours(fmt, torch.float32)
    twice = flip(flip(sample))
    assert torch.equal(_plain(twice[1]["boxes"]), _plain(sample[1]["boxes"]))
    assert torch.equal(_plain(twice[1]["masks"]), _plain(sample[1]["masks"]))


def test_geometry_without_a_box_kernel_raises() -> None:
    with pytest.raises(TypeError, match="FiveCrop has no kernel for BoundingBoxes"):
        O.FiveCrop(10)(_ours("XYXY", torch.float32))
    with pytest.raises(ValueError, match="per_sample"):
        O.RandomHorizontalFlip(per_sample=True)(_ours("XYXY", torch.float32))


class _Detection(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> tuple:
        return _ours("XYXY", torch.float32)


def test_dataloader_workers_return_typed_moved_boxes() -> None:
    t = O.Compose([O.RandomHorizontalFlip(p=1.0), O.Resize([20, 30]), O.SanitizeBoundingBoxes()])

    class Transformed(_Detection):
        def __getitem__(self, i: int) -> tuple:
            return t(super().__getitem__(i))

    loader = DataLoader(Transformed(), batch_size=2, num_workers=2, collate_fn=lambda batch: batch)
    expected = t(_ours("XYXY", torch.float32))[1]["boxes"]
    samples = [s for batch in loader for s in batch]
    assert len(samples) == 4
    for img, target in samples:
        assert (
            type(img) is T.Image
            and type(target["boxes"]) is T.BoundingBoxes
            and type(target["masks"]) is T.Mask
        )
        assert (
            target["boxes"].canvas_size == (20, 30)
            and target["boxes"].format is T.BoundingBoxFormat.XYXY
        )
        assert torch.equal(_plain(target["boxes"]), _plain(expected))
