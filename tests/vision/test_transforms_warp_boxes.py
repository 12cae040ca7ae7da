"""Box and mask kernels of the warps against torchvision v2, and boxes moving with the pixels."""

from __future__ import annotations

import pytest
import torch
from peers import require_torchvision

from trivium.vision.transforms import functional as F
from trivium.vision.transforms import functional as K

FORMATS = ["XYXY", "XYWH", "CXCYWH"]
H, W = 37, 53
CORNERS = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
MOVED = [[3, 2], [W - 5, 1], [W - 2, H - 4], [1, H - 6]]


def random_xyxy(n: int, h: int, w: int, seed: int = 0) -> torch.Tensor:
    """Boxes of up to half the canvas, some reaching past its edges."""
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * torch.tensor([w, h]) * 1.1 - 2
    wh = torch.rand(n, 2, generator=g) * torch.tensor([w, h]) * 0.5 + 1
    return torch.cat((xy, xy + wh), dim=1)


def in_format(xyxy: torch.Tensor, name: str) -> torch.Tensor:
    x1, y1, x2, y2 = xyxy.unbind(-1)
    if name == "XYWH":
        return torch.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    if name == "CXCYWH":
        return torch.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)
    return xyxy


def tv_format(tv, name: str):
    return tv.tv_tensors.BoundingBoxFormat[name]


def box_of_mask(mask: torch.Tensor) -> torch.Tensor:
    """XYXY box (pixel edges) around the nonzero pixels of a 2-D mask."""
    ys, xs = mask.nonzero(as_tuple=True)
    return torch.stack((xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)).float()


def filled(box: list[int], h: int = H, w: int = W) -> torch.Tensor:
    mask = torch.zeros(h, w, dtype=torch.uint8)
    mask[box[1] : box[3], box[0] : box[2]] = 1
    return mask


AFFINE_CASES = [
    (30.0, [3, -4], 1.2, [10.0, 5.0], None),
    (-70.0, [0, 0], 0.7, [0.0, 0.0], [25.0, 18.0]),
    (12, [1.5, 2.5], 1.0, 8.0, None),  # int angle, number shear
    (0.0, [0, 0], 1.0, [0.0, 0.0], None),
]


# Boxes against torchvision.


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize(("angle", "translate", "scale", "shear", "center"), AFFINE_CASES)
def test_affine_boxes_match_torchvision(name, angle, translate, scale, shear, center):
    tv = require_torchvision()
    boxes = in_format(random_xyxy(30, H, W), name)
    theirs = tv.transforms.v2.functional.affine_bounding_boxes(
        boxes, tv_format(tv, name), (H, W), angle, translate, scale, shear, center
    )
    ours = K.affine_bounding_boxes(boxes, name, (H, W), angle, translate, scale, shear, center)
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("angle", [33.0, 90.0, -120.0, 180.0])
@pytest.mark.parametrize("center", [None, [4.0, 7.0]])
def test_rotate_boxes_match_torchvision(name, angle, center):
    tv = require_torchvision()
    boxes = in_format(random_xyxy(30, H, W, seed=1), name)
    theirs, their_size = tv.transforms.v2.functional.rotate_bounding_boxes(
        boxes, tv_format(tv, name), (H, W), angle, expand=False, center=center
    )
    ours, size = K.rotate_bounding_boxes(boxes, name, (H, W), angle, center=center)
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)
    assert size == their_size == (H, W)


@pytest.mark.parametrize("name", FORMATS)
def test_perspective_boxes_match_torchvision(name):
    tv = require_torchvision()
    boxes = in_format(random_xyxy(30, H, W, seed=2), name)
    fn = tv.transforms.v2.functional.perspective_bounding_boxes
    theirs = fn(boxes, tv_format(tv, name), (H, W), CORNERS, MOVED)
    ours = K.perspective_bounding_boxes(boxes, name, (H, W), CORNERS, MOVED)
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)
    coeffs = F.warp.perspective_coefficients(
        torch.tensor([CORNERS], dtype=torch.float64), torch.tensor([MOVED], dtype=torch.float64)
    )[0].tolist()
    by_coeffs = K.perspective_bounding_boxes(boxes, name, (H, W), None, None, coeffs)
    torch.testing.assert_close(by_coeffs, ours, atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", FORMATS)
def test_elastic_boxes_match_torchvision(name):
    tv = require_torchvision()
    boxes = in_format(random_xyxy(30, H, W, seed=3), name)
    g = torch.Generator().manual_seed(3)
    displacement = torch.randn(1, H, W, 2, generator=g) * 0.05
    fn = tv.transforms.v2.functional.elastic_bounding_boxes
    theirs = fn(boxes, tv_format(tv, name), (H, W), displacement)
    ours = K.elastic_bounding_boxes(boxes, name, (H, W), displacement)
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_integer_boxes_match_torchvision():
    tv = require_torchvision()
    TF, fmt = tv.transforms.v2.functional, tv_format(tv, "XYXY")
    boxes = random_xyxy(30, H, W, seed=4).round().long()
    args = (30.0, [3, -4], 1.2, [10.0, 5.0])
    ours = K.affine_bounding_boxes(boxes, "XYXY", (H, W), *args)
    assert ours.dtype == torch.int64
    assert torch.equal(ours, TF.affine_bounding_boxes(boxes, fmt, (H, W), *args))
    theirs = TF.perspective_bounding_boxes(boxes, fmt, (H, W), CORNERS, MOVED)
    assert torch.equal(K.perspective_bounding_boxes(boxes, "XYXY", (H, W), CORNERS, MOVED), theirs)


def test_no_clamp_keeps_boxes_outside_and_clamp_keeps_them_inside():
    boxes = random_xyxy(50, H, W, seed=5)
    args = ((H, W), 40.0, [10, -8], 1.5, [5.0, 0.0])
    clamped = K.affine_bounding_boxes(boxes, "XYXY", *args)
    assert (clamped[:, 0::2] >= 0).all() and (clamped[:, 0::2] <= W).all()
    assert (clamped[:, 1::2] >= 0).all() and (clamped[:, 1::2] <= H).all()
    free = K.affine_bounding_boxes(boxes, "XYXY", *args, clamping_mode=None)
    assert (free < 0).any() or (free[:, 0::2] > W).any()
    assert torch.equal(free.clamp(min=0).clamp(max=torch.tensor([W, H, W, H])), clamped)


def test_empty_boxes_and_batch_shapes():
    empty = torch.zeros(0, 4)
    assert K.affine_bounding_boxes(empty, "XYXY", (H, W), 10.0, [0, 0], 1.0, 0.0).shape == (0, 4)
    batch = random_xyxy(12, H, W).view(3, 4, 4)
    out = K.perspective_bounding_boxes(batch, "XYXY", (H, W), CORNERS, MOVED)
    flat = K.perspective_bounding_boxes(batch.view(12, 4), "XYXY", (H, W), CORNERS, MOVED)
    assert torch.equal(out.view(12, 4), flat)


# Rotation with expand: on the rotated image's canvas, where its pixels go.


@pytest.mark.parametrize("angle", [0.0, 90.0, 270.0, 180.0, 33.0, -57.0, 138.0])
@pytest.mark.parametrize("center", [None, [10.0, 20.0]])
def test_rotate_expand_canvas_is_the_image_size(angle, center):
    boxes = random_xyxy(5, H, W)
    _, size = K.rotate_bounding_boxes(boxes, "XYXY", (H, W), angle, expand=True, center=center)
    image = F.rotate(torch.zeros(1, H, W), angle, expand=True, center=center)
    assert size == tuple(image.shape[-2:])


@pytest.mark.parametrize("angle", [90.0, 33.0, -57.0, 138.0, 251.0])
@pytest.mark.parametrize("center", [None, [20.0, 10.0]])
def test_rotate_expand_boxes_move_with_the_pixels(angle, center):
    # torchvision's boxes land ~8 px off its rotated image with this center (not tested there).
    box = [12, 8, 30, 21]
    mask = K.rotate_mask(filled(box), angle, expand=True, center=center)
    moved, size = K.rotate_bounding_boxes(
        torch.tensor([box], dtype=torch.float32),
        "XYXY",
        (H, W),
        angle,
        expand=True,
        center=center,
    )
    assert size == tuple(mask.shape)
    torch.testing.assert_close(moved[0], box_of_mask(mask), atol=1.0, rtol=0)


def test_rotate_expand_is_near_torchvision():
    """torchvision's box canvas can differ from its rotated image's; its boxes by < 1 px."""
    tv = require_torchvision()
    boxes = random_xyxy(30, H, W, seed=6)
    theirs, _ = tv.transforms.v2.functional.rotate_bounding_boxes(
        boxes, tv_format(tv, "XYXY"), (H, W), 33.0, expand=True
    )
    ours, _ = K.rotate_bounding_boxes(boxes, "XYXY", (H, W), 33.0, expand=True)
    torch.testing.assert_close(ours, theirs, atol=1.0, rtol=0)


# Boxes drawn as masks move with the masks.


@pytest.mark.parametrize(("angle", "translate", "scale", "shear", "center"), AFFINE_CASES)
def test_affine_boxes_move_with_the_pixels(angle, translate, scale, shear, center):
    box = [14, 9, 33, 24]
    mask = K.affine_mask(filled(box), angle, translate, scale, shear, center=center)
    moved = K.affine_bounding_boxes(
        torch.tensor([box], dtype=torch.float32),
        "XYXY",
        (H, W),
        angle,
        translate,
        scale,
        shear,
        center,
    )
    torch.testing.assert_close(moved[0], box_of_mask(mask), atol=1.0, rtol=0)


def test_perspective_boxes_move_with_the_pixels():
    box = [14, 9, 33, 24]
    mask = K.perspective_mask(filled(box), CORNERS, MOVED)
    moved = K.perspective_bounding_boxes(
        torch.tensor([box], dtype=torch.float32), "XYXY", (H, W), CORNERS, MOVED
    )
    torch.testing.assert_close(moved[0], box_of_mask(mask), atol=1.0, rtol=0)


def test_elastic_boxes_move_with_the_pixels():
    box = [14, 9, 33, 24]
    displacement = torch.zeros(1, H, W, 2)
    displacement[..., 0] = 6 / W  # the content moves 3 px left: sampled 3 px to the right
    displacement[..., 1] = -4 / H  # and 2 px down
    mask = K.elastic_mask(filled(box), displacement)
    moved = K.elastic_bounding_boxes(
        torch.tensor([box], dtype=torch.float32), "XYXY", (H, W), displacement
    )
    torch.testing.assert_close(moved[0], box_of_mask(mask), atol=1.0, rtol=0)
    torch.testing.assert_close(moved[0], torch.tensor([11.0, 11.0, 30.0, 26.0]), atol=1.0, rtol=0)


# Masks against torchvision.


def mask_cases(tv):
    TF = tv.transforms.v2.functional
    d = torch.randn(1, H, W, 2, generator=torch.Generator().manual_seed(7)) * 0.05
    return [
        (
            lambda m: K.affine_mask(m, 30.0, [3, -4], 1.2, [10.0, 5.0]),
            lambda m: TF.affine_mask(m, 30.0, [3, -4], 1.2, [10.0, 5.0]),
        ),
        (
            lambda m: K.rotate_mask(m, 33.0, expand=True, fill=2),
            lambda m: TF.rotate_mask(m, 33.0, expand=True, fill=2),
        ),
        (lambda m: K.rotate_mask(m, 90.0), lambda m: TF.rotate_mask(m, 90.0)),
        (
            lambda m: K.perspective_mask(m, CORNERS, MOVED),
            lambda m: TF.perspective_mask(m, CORNERS, MOVED),
        ),
        (lambda m: K.elastic_mask(m, d), lambda m: TF.elastic_mask(m, d)),
    ]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.bool, torch.float32])
@pytest.mark.parametrize("shape", [(H, W), (3, H, W), (2, 3, H, W)])
def test_masks_match_torchvision(dtype, shape):
    tv = require_torchvision()
    g = torch.Generator().manual_seed(8)
    mask = (torch.rand(shape, generator=g) * (2 if dtype == torch.bool else 7)).to(dtype)
    for ours_fn, theirs_fn in mask_cases(tv):
        ours = ours_fn(mask)
        theirs = theirs_fn(mask.to(torch.uint8) if dtype == torch.bool else mask)
        if dtype == torch.bool:
            theirs = theirs.bool()
        assert ours.dtype == dtype and ours.shape == theirs.shape
        # Nearest-neighbour ties on a grid computed in another order flip a few pixels.
        assert (ours != theirs).float().mean() <= 0.005


def test_masks_keep_large_labels_exactly():
    mask = torch.full((1, 8, 8), 2**40 + 3, dtype=torch.int64)
    assert torch.equal(K.rotate_mask(mask, 180.0), mask)
    out = K.affine_mask(mask, 0.0, [2, 0], 1.0, 0.0)
    assert set(out.unique().tolist()) == {0, 2**40 + 3}


# Bad input.


def test_bad_boxes_raise_clear_errors():
    boxes = torch.zeros(2, 4)
    args = (10.0, [0, 0], 1.0, 0.0)
    with pytest.raises(ValueError, match="format"):
        K.affine_bounding_boxes(boxes, "XYZ", (H, W), *args)
    with pytest.raises(ValueError, match=r"CXCYWHR bounding_boxes must have shape \[\.\.\., 5\]"):
        K.affine_bounding_boxes(boxes, "CXCYWHR", (H, W), *args)
    with pytest.raises(ValueError, match=r"\[\.\.\., 4\]"):
        K.affine_bounding_boxes(torch.zeros(2, 5), "XYXY", (H, W), *args)
    with pytest.raises(TypeError, match="bounding_boxes must be a tensor"):
        K.affine_bounding_boxes([[0, 0, 1, 1]], "XYXY", (H, W), *args)
    with pytest.raises(ValueError, match="canvas_size"):
        K.affine_bounding_boxes(boxes, "XYXY", (H,), *args)
    with pytest.raises(ValueError, match="clamping_mode"):
        K.affine_bounding_boxes(boxes, "XYXY", (H, W), *args, clamping_mode="tight")
    with pytest.raises(ValueError, match="scale"):
        K.affine_bounding_boxes(boxes, "XYXY", (H, W), 10.0, [0, 0], 0.0, 0.0)
    with pytest.raises(ValueError, match="displacement"):
        K.elastic_bounding_boxes(boxes, "XYXY", (H, W), torch.zeros(1, H, W + 1, 2))
    with pytest.raises(ValueError, match="coefficients"):
        K.perspective_bounding_boxes(boxes, "XYXY", (H, W), None, None, [1.0, 0.0])
    with pytest.raises(ValueError, match="cannot be inverted"):
        K.perspective_bounding_boxes(boxes, "XYXY", (H, W), None, None, [0.0] * 8)
    with pytest.raises(ValueError, match=r"\[\.\.\., H, W\]"):
        K.rotate_mask(torch.zeros(5), 10.0)


# The transforms on detection samples.


def detection_sample(seed: int = 0):
    from trivium.vision import tv_tensors

    g = torch.Generator().manual_seed(seed)
    image = tv_tensors.Image((torch.rand(3, H, W, generator=g) * 255).to(torch.uint8))
    xyxy = torch.tensor([[14.0, 9.0, 33.0, 24.0], [3.0, 20.0, 12.0, 35.0]])
    boxes = tv_tensors.BoundingBoxes(xyxy, format="XYXY", canvas_size=(H, W))
    masks = tv_tensors.Mask(torch.stack([filled([14, 9, 33, 24]), filled([3, 20, 12, 35])]))
    return image, {"boxes": boxes, "masks": masks, "labels": torch.tensor([1, 2])}


def as_tv(tv, sample):
    image, target = sample
    tvt = tv.tv_tensors
    boxes = target["boxes"]
    return (
        tvt.Image(image.as_subclass(torch.Tensor)),
        {
            "boxes": tvt.BoundingBoxes(
                boxes.as_subclass(torch.Tensor), format="XYXY", canvas_size=boxes.canvas_size
            ),
            "masks": tvt.Mask(target["masks"].as_subclass(torch.Tensor)),
            "labels": target["labels"],
        },
    )


def fixed_warps(T, V):
    """Pairs (ours, torchvision's) of warps whose ranges hold one value."""
    return [
        (T.RandomRotation((33, 33)), V.RandomRotation((33, 33))),
        (
            T.RandomRotation((-50, -50), expand=True),
            V.RandomRotation((-50, -50), expand=True),
        ),
        (
            T.RandomAffine((25, 25), scale=(0.8, 0.8), shear=(6, 6, -4, -4)),
            V.RandomAffine((25, 25), scale=(0.8, 0.8), shear=(6, 6, -4, -4)),
        ),
        (T.RandomPerspective(0.0, p=1.0), V.RandomPerspective(0.0, p=1.0)),
        (T.ElasticTransform(alpha=0.0), V.ElasticTransform(alpha=0.0)),
    ]


def test_warp_transforms_match_torchvision_on_detection_samples():
    tv = require_torchvision()
    from trivium.vision import transforms as T

    for ours_t, theirs_t in fixed_warps(T, tv.transforms.v2):
        sample = detection_sample()
        image, target = ours_t(sample)
        their_image, theirs = theirs_t(as_tv(tv, sample))
        name = type(ours_t).__name__
        assert type(target["boxes"]).__name__ == "BoundingBoxes", name
        assert type(target["masks"]).__name__ == "Mask", name
        assert tuple(image.shape) == tuple(their_image.shape), name
        assert target["boxes"].canvas_size == tuple(image.shape[-2:]), name
        atol = 1.0 if getattr(ours_t, "expand", False) else 1e-4  # see the expand tests
        torch.testing.assert_close(
            target["boxes"].as_subclass(torch.Tensor),
            theirs["boxes"].as_subclass(torch.Tensor),
            atol=atol,
            rtol=0,
        )
        differ = target["masks"].as_subclass(torch.Tensor) != theirs["masks"]
        assert differ.float().mean() <= 0.005, name
        assert torch.equal(target["labels"], theirs["labels"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_drawn_warps_move_boxes_as_the_kernels(seed):
    from trivium.vision import transforms as T

    g = torch.Generator().manual_seed(seed)
    transforms = [
        T.RandomRotation(40, generator=g),
        T.RandomAffine(
            20, translate=(0.1, 0.2), scale=(0.7, 1.3), shear=(-5, 5, -5, 5), generator=g
        ),
        T.RandomPerspective(0.4, p=1.0, generator=g),
        T.ElasticTransform(alpha=30.0, sigma=6.0, generator=g),
    ]
    for t in transforms:
        sample = detection_sample(seed)
        _, target = t(sample)
        boxes = target["boxes"].as_subclass(torch.Tensor)
        assert (boxes[:, 0::2] >= 0).all() and (boxes[:, 0::2] <= W).all()
        assert (boxes[:, 1::2] >= 0).all() and (boxes[:, 1::2] <= H).all()
        for box, mask in zip(boxes, target["masks"], strict=True):
            if mask.any():  # the drawn box moved with its mask, within ~1 px
                tol = 2.5 if isinstance(t, T.ElasticTransform) else 1.0  # approximate inverse
                torch.testing.assert_close(box, box_of_mask(mask), atol=tol, rtol=0)


def test_seeded_warps_repeat_on_detection_samples():
    from trivium.vision import transforms as T

    def run():
        g = torch.Generator().manual_seed(5)
        t = T.Compose(
            [
                T.RandomAffine(30, translate=(0.2, 0.2), generator=g),
                T.RandomPerspective(0.5, p=0.7, generator=g),
            ]
        )
        return [t(detection_sample())[1] for _ in range(4)]

    for a, b in zip(run(), run(), strict=True):
        assert torch.equal(a["boxes"], b["boxes"]) and torch.equal(a["masks"], b["masks"])


def test_warps_refuse_per_sample_with_boxes():
    from trivium.vision import transforms as T

    with pytest.raises(ValueError, match="per_sample"):
        T.RandomAffine(10, per_sample=True)(detection_sample())
