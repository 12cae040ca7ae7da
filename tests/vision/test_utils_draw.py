"""make_grid, save_image, draw_bounding_boxes and draw_segmentation_masks, pixel for
pixel against torchvision.utils (pure Python on Pillow), and save_image against Pillow."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from peers import import_torchvision
from PIL import Image

from trivium.vision.utils import (
    draw_bounding_boxes,
    draw_segmentation_masks,
    make_grid,
    save_image,
)


@pytest.fixture(scope="module")
def tvu():
    tv = import_torchvision()
    if tv is None:
        pytest.skip("torchvision is not installed")
    import torchvision.utils

    return torchvision.utils


def _image(seed: int = 0, shape=(3, 40, 56)) -> torch.Tensor:
    return torch.randint(
        0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed)
    )


BOXES = torch.tensor([[2, 3, 30, 20], [10.7, 5.2, 50.9, 38.5], [0, 0, 55, 39], [20, 20, 20, 25]])


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"colors": "red", "width": 3},
        {"colors": ["#ff00ff", (10, 200, 30), "blue", "yellow"], "fill": True},
        {"labels": ["circle", "star", "ring", "x"], "width": 2},
        {"labels": ["a", "b", "c", "d"], "label_colors": "white", "fill": True},
    ],
    ids=["default", "red", "fill", "labels", "label-colors"],
)
def test_draw_bounding_boxes_matches_torchvision(tvu, kwargs: dict) -> None:
    image = _image()
    assert torch.equal(
        draw_bounding_boxes(image, BOXES, **kwargs), tvu.draw_bounding_boxes(image, BOXES, **kwargs)
    )


def test_draw_bounding_boxes_gray_and_float(tvu) -> None:
    gray = _image(1, (1, 40, 56))
    assert torch.equal(draw_bounding_boxes(gray, BOXES), tvu.draw_bounding_boxes(gray, BOXES))
    floats = _image(2).float() / 255
    ours, theirs = (
        draw_bounding_boxes(floats, BOXES, fill=True),
        tvu.draw_bounding_boxes(floats, BOXES, fill=True),
    )
    assert ours.dtype == torch.float32 and torch.equal(ours, theirs)


@pytest.mark.parametrize("alpha", [0.8, 0.3])
@pytest.mark.parametrize("colors", [None, "green", [(255, 0, 0), "#00ffaa", "navy"]])
def test_draw_segmentation_masks_matches_torchvision(tvu, alpha: float, colors) -> None:
    image = _image(3)
    masks = torch.zeros(3, 40, 56, dtype=torch.bool)
    masks[0, 5:20, 5:30] = True
    masks[1, 15:35, 20:50] = True  # overlaps mask 0
    masks[2, 30:, :10] = True
    for img in (image, image.float() / 255):
        ours = draw_segmentation_masks(img, masks, alpha=alpha, colors=colors)
        theirs = tvu.draw_segmentation_masks(img, masks, alpha=alpha, colors=colors)
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs)
    one = draw_segmentation_masks(image, masks[0], colors="red")
    assert torch.equal(one, tvu.draw_segmentation_masks(image, masks[0], colors="red"))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"nrow": 3, "padding": 1, "pad_value": 0.5},
        {"normalize": True},
        {"normalize": True, "value_range": (0.2, 0.7)},
        {"normalize": True, "scale_each": True, "padding": 0},
    ],
)
def test_make_grid_matches_torchvision(tvu, kwargs: dict) -> None:
    batch = torch.rand(7, 3, 9, 11, generator=torch.Generator().manual_seed(4)) * 3 - 1
    assert torch.equal(make_grid(batch, **kwargs), tvu.make_grid(batch, **kwargs))
    as_list = list(batch[:, :1])  # gray images as a list
    assert torch.equal(make_grid(as_list, **kwargs), tvu.make_grid(as_list, **kwargs))
    assert torch.equal(make_grid(batch[0], **kwargs), tvu.make_grid(batch[0], **kwargs))
    uint8 = _image(5, (5, 3, 6, 7))
    assert torch.equal(make_grid(uint8, nrow=2), tvu.make_grid(uint8, nrow=2))


def test_save_image_png_matches_torchvision(tvu, tmp_path) -> None:
    batch = torch.rand(5, 3, 9, 11, generator=torch.Generator().manual_seed(6))
    save_image(batch, tmp_path / "ours.png", nrow=2)
    tvu.save_image(batch, tmp_path / "theirs.png", nrow=2)
    ours = np.asarray(Image.open(tmp_path / "ours.png"))
    np.testing.assert_array_equal(ours, np.asarray(Image.open(tmp_path / "theirs.png")))
    buffer = io.BytesIO()
    save_image(batch[0], buffer, format="PNG")
    np.testing.assert_array_equal(
        np.asarray(Image.open(buffer)), np.asarray(Image.open(tmp_path / "ours.png"))[2:11, 2:13]
    )


def test_save_image_jpeg(tmp_path) -> None:
    image = torch.full((3, 16, 16), 0.5)
    save_image(image, tmp_path / "a.jpg")
    pixels = np.asarray(Image.open(tmp_path / "a.jpg"))
    assert pixels.shape == (16, 16, 3) and abs(int(pixels.mean()) - 128) <= 1


def test_bad_input_is_named(tmp_path) -> None:
    image = _image()
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        draw_bounding_boxes(image, torch.tensor([[10, 0, 5, 5]]))
    with pytest.raises(ValueError, match=r"\[N, 4\]"):
        draw_bounding_boxes(image, torch.zeros(2, 5))
    with pytest.raises(ValueError, match="labels"):
        draw_bounding_boxes(image, BOXES, labels=["a"])
    with pytest.raises(ValueError, match="uint8 or float"):
        draw_bounding_boxes(image.long(), BOXES)
    with pytest.raises(ValueError, match="larger than the number of objects"):
        draw_segmentation_masks(image, torch.ones(2, 40, 56, dtype=torch.bool), colors=["red"])
    with pytest.raises(ValueError, match="dtype bool"):
        draw_segmentation_masks(image, torch.ones(40, 56))
    with pytest.raises(ValueError, match="same height and width"):
        draw_segmentation_masks(image, torch.ones(1, 4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="list of tensors"):
        make_grid([image, "x"])
    with pytest.raises(ValueError, match="format"):
        save_image(image.float(), io.BytesIO())
    with pytest.raises(ValueError, match=r"\.png or \.jpg"):
        save_image(image.float(), tmp_path / "a.gif")
    with pytest.warns(UserWarning, match="No box was drawn"):
        assert draw_bounding_boxes(image, torch.zeros(0, 4)) is image
