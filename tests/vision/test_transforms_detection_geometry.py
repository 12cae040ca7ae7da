"""RandomZoomOut, RandomIoUCrop, RandomShortestSize: against torchvision v2 and invariants."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from peers import require_torchvision
from PIL import Image

from trivium.vision import tv_tensors
from trivium.vision.transforms import RandomIoUCrop, RandomShortestSize, RandomZoomOut

H, W = 60, 80


def make_sample(seed: int = 0, name: str = "XYXY", n: int = 6, big: bool = False):
    g = torch.Generator().manual_seed(seed)
    image = (torch.rand(3, H, W, generator=g) * 255).to(torch.uint8)
    scale = torch.tensor([W, H])
    if big:  # boxes of 40 to 80 % of each side
        wh = (torch.rand(n, 2, generator=g) * 0.4 + 0.4) * scale
        xy = torch.rand(n, 2, generator=g) * (scale - wh)
    else:
        xy = torch.rand(n, 2, generator=g) * scale * 0.8
        wh = torch.rand(n, 2, generator=g) * scale * 0.4 + 2
    xyxy = torch.cat((xy, xy + wh), dim=1).clamp(max=torch.tensor([W, H, W, H]))
    boxes = tv_tensors.BoundingBoxes(xyxy, format="XYXY", canvas_size=(H, W))
    if name != "XYXY":
        from trivium.vision.transforms.functional import convert_bounding_box_format

        boxes = convert_bounding_box_format(boxes, new_format=name)
    masks = torch.zeros(n, H, W, dtype=torch.uint8)
    for k, (x1, y1, x2, y2) in enumerate(xyxy.round().long().tolist()):
        masks[k, y1:y2, x1:x2] = 1
    return tv_tensors.Image(image), {
        "boxes": boxes,
        "masks": tv_tensors.Mask(masks),
        "labels": torch.arange(n),
    }


def as_tv(tv, sample):
    image, target = sample
    tvt = tv.tv_tensors
    boxes = target["boxes"]
    return tvt.Image(image.as_subclass(torch.Tensor)), {
        "boxes": tvt.BoundingBoxes(
            boxes.as_subclass(torch.Tensor),
            format=boxes.format.value,
            canvas_size=boxes.canvas_size,
        ),
        "masks": tvt.Mask(target["masks"].as_subclass(torch.Tensor)),
        "labels": target["labels"],
    }


def plain(t: torch.Tensor) -> torch.Tensor:
    return t.as_subclass(torch.Tensor)


def box_of_mask(mask: torch.Tensor) -> torch.Tensor:
    ys, xs = mask.nonzero(as_tuple=True)
    return torch.stack((xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)).float()


def pairs(tv):
    """(ours, torchvision's) factories with the same arguments."""
    V = tv.transforms.v2
    return [
        (
            lambda: RandomZoomOut(fill={tv_tensors.Image: (124, 116, 104), "others": 0}, p=0.7),
            lambda: V.RandomZoomOut(
                fill={tv.tv_tensors.Image: (124, 116, 104), "others": 0}, p=0.7
            ),
        ),
        (
            lambda: RandomZoomOut(side_range=(1.0, 2.5)),
            lambda: V.RandomZoomOut(side_range=(1.0, 2.5)),
        ),
        (lambda: RandomIoUCrop(), lambda: V.RandomIoUCrop()),
        (
            lambda: RandomIoUCrop(0.4, 0.9, 0.6, 1.6, [0.1, 0.5], trials=10),
            lambda: V.RandomIoUCrop(0.4, 0.9, 0.6, 1.6, [0.1, 0.5], trials=10),
        ),
        (
            lambda: RandomShortestSize([40, 50, 70], max_size=100),
            lambda: V.RandomShortestSize([40, 50, 70], max_size=100),
        ),
        (
            lambda: RandomShortestSize(90, interpolation="nearest"),
            lambda: V.RandomShortestSize(
                90, interpolation=tv.transforms.v2.InterpolationMode.NEAREST
            ),
        ),
    ]


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("name", ["XYXY", "CXCYWH"])
def test_same_draws_and_outputs_as_torchvision(case, name):
    """From the same global seed, the same choices, pixels, boxes and masks as torchvision."""
    tv = require_torchvision()
    ours_t, theirs_t = pairs(tv)[case]
    for seed in range(12):
        sample = make_sample(seed, name)
        torch.manual_seed(seed)
        image, target = ours_t()(sample)
        torch.manual_seed(seed)
        their_image, theirs = theirs_t()(as_tv(tv, sample))
        assert type(image) is tv_tensors.Image
        assert torch.equal(plain(image), plain(their_image)), seed
        assert target["boxes"].canvas_size == tuple(theirs["boxes"].canvas_size)
        assert target["boxes"].canvas_size == tuple(image.shape[-2:])
        assert target["boxes"].format.value == theirs["boxes"].format.value
        torch.testing.assert_close(
            plain(target["boxes"]), plain(theirs["boxes"]), atol=1e-4, rtol=0
        )
        assert torch.equal(plain(target["masks"]), plain(theirs["masks"]))
        assert torch.equal(target["labels"], theirs["labels"])


# RandomIoUCrop.


def coordinate_image() -> torch.Tensor:
    """A float64 image whose pixel (y, x) holds y * W + x: the crop's corner reads off it."""
    return torch.arange(H * W, dtype=torch.float64).view(1, H, W)


@pytest.mark.parametrize("min_iou", [0.0, 0.3, 0.5, 0.7])
def test_iou_crop_meets_the_drawn_iou_and_marks_outside_boxes(min_iou):
    g = torch.Generator().manual_seed(int(min_iou * 10))
    t = RandomIoUCrop(sampler_options=[min_iou], generator=g)
    for seed in range(15):
        _, target = make_sample(seed, n=3, big=True)
        boxes = plain(target["boxes"])
        image, out = t(coordinate_image(), {"boxes": target["boxes"]})
        top, left = divmod(int(image[0, 0, 0]), W)
        h, w = image.shape[-2:]
        crop = torch.tensor([left, top, left + w, top + h], dtype=torch.float32)
        centre = (boxes[:, :2] + boxes[:, 2:]) / 2
        inside = (
            (crop[0] < centre[:, 0])
            & (centre[:, 0] < crop[2])
            & (crop[1] < centre[:, 1])
            & (centre[:, 1] < crop[3])
        )
        assert inside.any()
        lt = torch.maximum(boxes[inside, :2], crop[:2])
        rb = torch.minimum(boxes[inside, 2:], crop[2:])
        inter = (rb - lt).clamp(min=0).prod(dim=1)
        areas = (boxes[inside, 2:] - boxes[inside, :2]).prod(dim=1)
        iou = inter / (areas + (crop[2:] - crop[:2]).prod() - inter)
        assert iou.max() >= min_iou
        kept = plain(out["boxes"])
        assert (kept[~inside] == 0).all()  # degenerate, for SanitizeBoundingBoxes
        expected = (boxes[inside] - crop[:2].repeat(2)).clamp(min=0)
        expected = torch.minimum(expected, torch.tensor([w, h, w, h], dtype=torch.float32))
        torch.testing.assert_close(kept[inside], expected)
        assert out["boxes"].canvas_size == (h, w)


def test_iou_crop_option_one_leaves_the_sample():
    image, target = make_sample()
    out_image, out = RandomIoUCrop(sampler_options=[1.0])((image, target))
    assert torch.equal(plain(out_image), plain(image))
    assert torch.equal(plain(out["boxes"]), plain(target["boxes"]))


def test_iou_crop_without_boxes_raises_a_clear_error():
    image, target = make_sample()
    with pytest.raises(
        TypeError, match=r"needs a sample with an image and tv_tensors\.BoundingBoxes"
    ):
        RandomIoUCrop()(image, {"labels": target["labels"]})
    with pytest.raises(TypeError, match="BoundingBoxes"):
        RandomIoUCrop()(target["boxes"])  # no image


def test_iou_crop_refuses_boxes_of_another_canvas():
    image, target = make_sample()
    boxes = tv_tensors.wrap(target["boxes"], like=target["boxes"], canvas_size=(H + 1, W))
    with pytest.raises(ValueError, match="canvas_size"):
        RandomIoUCrop()(image, {"boxes": boxes})


def test_iou_crop_gives_up_on_boxes_no_crop_can_hold():
    """torchvision loops for ever here (no option >= 1, no box to hold): left as is."""
    image = torch.zeros(3, H, W)
    boxes = tv_tensors.BoundingBoxes(torch.zeros(0, 4), format="XYXY", canvas_size=(H, W))
    out, target = RandomIoUCrop(sampler_options=[0.5], trials=2)(image, {"boxes": boxes})
    assert out.shape == image.shape and target["boxes"].shape == (0, 4)


# Boxes move with their pixels; seeded runs repeat.


@pytest.mark.parametrize(
    "make",
    [
        lambda g: RandomZoomOut(p=1.0, generator=g),
        lambda g: RandomIoUCrop(sampler_options=[0.0], generator=g),
        lambda g: RandomShortestSize([30, 45, 100], generator=g),
    ],
)
def test_boxes_move_with_their_masks_and_stay_on_the_canvas(make):
    t = make(torch.Generator().manual_seed(1))
    for seed in range(8):
        sample = make_sample(seed)
        xyxy = plain(sample[1]["boxes"]).round()
        sample[1]["boxes"] = tv_tensors.wrap(xyxy, like=sample[1]["boxes"])
        image, target = t(sample)
        h, w = image.shape[-2:]
        boxes = plain(target["boxes"])
        assert (boxes[:, 0::2] >= 0).all() and (boxes[:, 0::2] <= w).all()
        assert (boxes[:, 1::2] >= 0).all() and (boxes[:, 1::2] <= h).all()
        assert target["masks"].shape[-2:] == (h, w)
        for box, mask in zip(boxes, target["masks"], strict=True):
            if mask.any() and (box[2:] > box[:2]).all():
                torch.testing.assert_close(box, box_of_mask(mask), atol=1.0, rtol=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda g: RandomZoomOut(generator=g),
        lambda g: RandomIoUCrop(generator=g),
        lambda g: RandomShortestSize([30, 45, 100], max_size=120, generator=g),
    ],
)
def test_seeded_runs_repeat(make):
    def run():
        t = make(torch.Generator().manual_seed(3))
        return [t(make_sample(seed)) for seed in range(6)]

    for (a_img, a), (b_img, b) in zip(run(), run(), strict=True):
        assert torch.equal(plain(a_img), plain(b_img))
        assert torch.equal(plain(a["boxes"]), plain(b["boxes"]))
        assert torch.equal(plain(a["masks"]), plain(b["masks"]))


# RandomZoomOut details.


def test_zoom_out_fills_image_and_masks():
    image, target = make_sample()
    t = RandomZoomOut(fill=(10, 20, 30), side_range=(2.0, 2.0), p=1.0, generator=torch.Generator())
    out, out_target = t((image, target))
    assert out.shape[-2:] == (2 * H, 2 * W)
    corners = plain(out)[:, [0, 0, -1, -1], [0, -1, 0, -1]].T.tolist()
    assert all(c == [10, 20, 30] for c in corners)  # the canvas at least one corner away
    assert plain(out_target["masks"]).sum() == plain(target["masks"]).sum()
    t = RandomZoomOut(fill={tv_tensors.Mask: 255, "others": 7}, side_range=(2.0, 2.0), p=1.0)
    out, out_target = t((image, target))
    assert plain(out)[:, 0, 0].tolist() in ([7, 7, 7], plain(image)[:, 0, 0].tolist())
    assert int(plain(out_target["masks"]).max()) == 255


def test_zoom_out_p_zero_and_pil():
    image, target = make_sample()
    out, out_target = RandomZoomOut(p=0.0)((image, target))
    assert torch.equal(plain(out), plain(image))
    assert out_target["boxes"] is target["boxes"]
    pil = Image.fromarray(np.ascontiguousarray(plain(image).permute(1, 2, 0).numpy()))
    t = RandomZoomOut(side_range=(1.5, 1.5), p=1.0, generator=torch.Generator())
    out_pil, out_target = t(pil, {"boxes": target["boxes"]})
    assert isinstance(out_pil, Image.Image)
    assert (out_pil.height, out_pil.width) == out_target["boxes"].canvas_size == (90, 120)


# Bad arguments.


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="side_range"):
        RandomZoomOut(side_range=(0.5, 2.0))
    with pytest.raises(ValueError, match="side_range"):
        RandomZoomOut(side_range=(3.0, 2.0))
    with pytest.raises(TypeError, match="side_range"):
        RandomZoomOut(side_range=2.0)
    with pytest.raises(ValueError, match="p must be"):
        RandomZoomOut(p=1.5)
    with pytest.raises(TypeError, match="fill"):
        RandomZoomOut(fill="red")
    with pytest.raises(ValueError, match="min_scale"):
        RandomIoUCrop(min_scale=0.9, max_scale=0.5)
    with pytest.raises(ValueError, match="min_aspect_ratio must be a positive"):
        RandomIoUCrop(min_aspect_ratio=0)
    with pytest.raises(TypeError, match="sampler_options"):
        RandomIoUCrop(sampler_options=[])
    with pytest.raises(ValueError, match="trials"):
        RandomIoUCrop(trials=0)
    with pytest.raises(ValueError, match="min_size"):
        RandomShortestSize([])
    with pytest.raises(ValueError, match="min_size"):
        RandomShortestSize(0)
    with pytest.raises(ValueError, match="max_size"):
        RandomShortestSize(10, max_size=-1)
    with pytest.raises(ValueError, match="interpolation"):
        RandomShortestSize(10, interpolation="cubic-ish")


def test_ssd_recipe_matches_torchvision():
    """torchvision's SSD training augmentation, ending in SanitizeBoundingBoxes."""
    tv = require_torchvision()
    from trivium.vision import transforms as T

    V = tv.transforms.v2
    ours = T.Compose(
        [
            T.RandomZoomOut(fill={tv_tensors.Image: (123, 117, 104), "others": 0}),
            T.RandomIoUCrop(),
            T.RandomHorizontalFlip(p=0.5),
            T.SanitizeBoundingBoxes(),
        ]
    )
    theirs = V.Compose(
        [
            V.RandomZoomOut(fill={tv.tv_tensors.Image: (123, 117, 104), "others": 0}),
            V.RandomIoUCrop(),
            V.RandomHorizontalFlip(p=0.5),
            V.SanitizeBoundingBoxes(),
        ]
    )
    for seed in range(10):
        sample = make_sample(seed)
        torch.manual_seed(seed)
        image, target = ours(sample)
        torch.manual_seed(seed)
        their_image, their_target = theirs(as_tv(tv, sample))
        assert torch.equal(plain(image), plain(their_image))
        torch.testing.assert_close(
            plain(target["boxes"]), plain(their_target["boxes"]), atol=1e-4, rtol=0
        )
        assert torch.equal(target["labels"], their_target["labels"])
        assert torch.equal(plain(target["masks"]), plain(their_target["masks"]))
        boxes = plain(target["boxes"])
        assert ((boxes[:, 2:] - boxes[:, :2]) >= 1).all()  # the degenerate ones are gone
