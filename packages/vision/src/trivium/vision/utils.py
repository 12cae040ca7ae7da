"""Image grids and drawing: torchvision.utils' ``make_grid``, ``save_image``,
``draw_bounding_boxes`` and ``draw_segmentation_masks``, with its arguments and pixels.

``make_grid`` and ``draw_segmentation_masks`` are torch code; ``save_image`` encodes
with the native PNG and JPEG encoders; ``draw_bounding_boxes`` draws with Pillow's
``ImageDraw`` (as torchvision does, for the same lines and text), and colour names
(``"red"``) are read with Pillow's ``ImageColor``: both need Pillow installed.

Example:
    >>> import torch
    >>> images = torch.zeros(5, 3, 8, 8, dtype=torch.uint8)
    >>> make_grid(images, nrow=4, padding=1).shape
    torch.Size([3, 19, 37])
"""

from __future__ import annotations

import math
import os
import pathlib
import warnings
from collections.abc import Sequence
from typing import Any, BinaryIO

import numpy as np
import torch

from trivium.vision.io import encode_jpeg, encode_png

__all__ = ["draw_bounding_boxes", "draw_segmentation_masks", "make_grid", "save_image"]

Color = str | tuple[int, int, int]


def _pillow() -> Any:
    try:
        import PIL.Image
        import PIL.ImageColor
        import PIL.ImageDraw
        import PIL.ImageFont
    except ImportError as e:
        raise ImportError("drawing boxes and colour names need Pillow: pip install pillow") from e
    return PIL


def _as_batch(tensor: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
    if isinstance(tensor, list):
        for t in tensor:
            if not isinstance(t, torch.Tensor):
                raise TypeError(
                    f"tensor or list of tensors expected, got a list containing {type(t)}"
                )
        tensor = torch.stack(tensor, dim=0)
    elif not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if tensor.dim() == 2:  # one H x W image
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:  # one image
        if tensor.size(0) == 1:
            tensor = torch.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:  # gray images
        tensor = torch.cat((tensor, tensor, tensor), 1)
    if tensor.dim() != 4:
        raise ValueError(
            f"tensor must be [H, W], [C, H, W] or [B, C, H, W], got shape {tuple(tensor.shape)}"
        )
    return tensor


def _normalize(
    tensor: torch.Tensor, value_range: tuple[float, float] | None, scale_each: bool
) -> torch.Tensor:
    if value_range is not None and not isinstance(value_range, tuple):
        raise TypeError(
            "value_range has to be a tuple (min, max) if specified. min and max are numbers"
        )
    tensor = tensor.clone()

    def norm(t: torch.Tensor) -> None:
        low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
        t.clamp_(min=low, max=high)
        t.sub_(low).div_(max(high - low, 1e-5))

    for t in tensor if scale_each else [tensor]:
        norm(t)
    return tensor


def make_grid(
    tensor: torch.Tensor | list[torch.Tensor],
    nrow: int = 8,
    padding: int = 2,
    normalize: bool = False,
    value_range: tuple[float, float] | None = None,
    scale_each: bool = False,
    pad_value: float = 0.0,
) -> torch.Tensor:
    """Images ``[B, C, H, W]`` (or a list of ``[C, H, W]``) laid out in a grid ``[C, H', W']``.

    ``nrow`` images per row, ``padding`` pixels of ``pad_value`` around each.
    ``normalize`` maps ``value_range`` (default: the min and max, of each image
    with ``scale_each``) to [0, 1]. Gray images become 3 channels; one image is
    returned as it is (after those steps). torchvision's semantics.

    Example:
        >>> import torch
        >>> grid = make_grid([torch.ones(3, 2, 2), torch.zeros(3, 2, 2)], padding=1, pad_value=0.5)
        >>> grid.shape, grid[0, 0].tolist()
        (torch.Size([3, 4, 7]), [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    """
    tensor = _as_batch(tensor)
    if normalize is True:
        tensor = _normalize(tensor, value_range, scale_each)
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    count = tensor.size(0)
    columns = min(nrow, count)
    rows = math.ceil(count / columns)
    height, width = tensor.size(2) + padding, tensor.size(3) + padding
    grid = tensor.new_full(
        (tensor.size(1), height * rows + padding, width * columns + padding), pad_value
    )
    for k in range(count):
        y, x = divmod(k, columns)
        top, left = y * height + padding, x * width + padding
        grid[:, top : top + height - padding, left : left + width - padding].copy_(tensor[k])
    return grid


_FORMATS = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg"}


def save_image(
    tensor: torch.Tensor | list[torch.Tensor],
    fp: str | pathlib.Path | BinaryIO,
    format: str | None = None,
    **kwargs: Any,
) -> None:
    """Write images (floats in [0, 1]) to ``fp`` as PNG or JPEG, several as a :func:`make_grid`.

    The format comes from ``format`` (``"png"``, ``"jpeg"``) or else from the file
    name's extension; a file object needs ``format``. ``kwargs`` go to
    :func:`make_grid`. Values are rounded to 8 bits as torchvision's ``save_image``
    (``x * 255 + 0.5``, clamped); JPEGs are written at quality 75 (Pillow's default).

    Example:
        >>> import io, torch
        >>> buffer = io.BytesIO()
        >>> save_image(torch.rand(4, 3, 8, 8), buffer, format="png", nrow=2)
        >>> buffer.getvalue()[:4]
        b'\\x89PNG'
    """
    kind = _image_format(fp, format)
    grid = make_grid(tensor, **kwargs)
    pixels = grid.mul(255).add_(0.5).clamp_(0, 255).to("cpu", torch.uint8)
    data = encode_png(pixels) if kind == "png" else encode_jpeg(pixels, 75)
    payload = data.numpy().tobytes()
    if isinstance(fp, str | os.PathLike):
        pathlib.Path(fp).write_bytes(payload)
    else:
        fp.write(payload)


def _image_format(fp: Any, format: str | None) -> str:
    if format is not None:
        kind = _FORMATS.get("." + format.lower().lstrip("."))
        if kind is None:
            raise ValueError(f"save_image writes PNG or JPEG, got format={format!r}")
        return kind
    if not isinstance(fp, str | os.PathLike):
        raise ValueError("save_image: pass format= ('png' or 'jpeg') when fp is a file object")
    kind = _FORMATS.get(pathlib.Path(fp).suffix.lower())
    if kind is None:
        raise ValueError(f"save_image writes .png or .jpg/.jpeg files, got {os.fspath(fp)!r}")
    return kind


def _palette(count: int) -> list[tuple[int, int, int]]:
    palette = torch.tensor([2**25 - 1, 2**15 - 1, 2**21 - 1])
    return [tuple(int(v) for v in (i * palette) % 255) for i in range(count)]


def _rgb(color: Color) -> tuple[int, int, int]:
    if isinstance(color, str):
        return tuple(_pillow().ImageColor.getrgb(color)[:3])
    return tuple(int(v) for v in color)


def _parse_colors(
    colors: Color | Sequence[Color] | None, count: int, floating: bool = False
) -> list[tuple]:
    if colors is None:
        parsed = _palette(count)
    elif isinstance(colors, list):
        if len(colors) < count:
            raise ValueError(
                "Number of colors must be equal or larger than the number of objects, "
                f"but got {len(colors)} < {count}."
            )
        parsed = [_rgb(c) for c in colors]
    elif not isinstance(colors, tuple | str):
        raise ValueError(
            f"colors must be a tuple or a string, or a list thereof, but got {colors}."
        )
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        parsed = [_rgb(colors)] * count
    if floating:
        return [tuple(v / 255 for v in c) for c in parsed]
    return parsed


def _check_image(image: Any, channels: set[int]) -> None:
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"image must be a tensor, got {type(image).__name__}")
    if not (image.dtype == torch.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError(
            f"Pass individual images [C, H, W], not batches: got shape {tuple(image.shape)}"
        )
    if image.size(0) not in channels:
        raise ValueError(f"image must have {sorted(channels)} channels, got {image.size(0)}")


@torch.no_grad()
def draw_bounding_boxes(
    image: torch.Tensor,
    boxes: torch.Tensor,
    labels: list[str] | None = None,
    colors: Color | list[Color] | None = None,
    fill: bool | None = False,
    width: int = 1,
    font: str | None = None,
    font_size: int | None = None,
    label_colors: Color | list[Color] | None = None,
) -> torch.Tensor:
    """``image`` (``[C, H, W]`` uint8, or float in [0, 1]) with ``boxes`` (XYXY ``[N, 4]``) drawn.

    torchvision's ``draw_bounding_boxes``: box coordinates are truncated to
    integers; ``colors`` are names (``"red"``, ``"#FF00FF"``) or RGB tuples, one for
    all or a list (default: a fixed palette); ``fill`` shades the inside (alpha
    100/255); ``labels`` are written at the top-left corner in ``label_colors``
    (default: the boxes' colours) with ``font`` (a TrueType file, at ``font_size``)
    or Pillow's default font. Gray images come back with 3 channels. Needs Pillow.

    Example:
        >>> import torch
        >>> image = torch.zeros(3, 10, 10, dtype=torch.uint8)
        >>> out = draw_bounding_boxes(image, torch.tensor([[1, 1, 8, 6]]), colors="red")
        >>> out[:, 1, 1].tolist(), out[:, 3, 3].tolist()
        ([255, 0, 0], [0, 0, 0])
    """
    _check_image(image, {1, 3})
    boxes = torch.as_tensor(boxes)
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise ValueError(
            f"boxes must be [N, 4] (xmin, ymin, xmax, ymax), got shape {tuple(boxes.shape)}"
        )
    if (boxes[:, 0] > boxes[:, 2]).any() or (boxes[:, 1] > boxes[:, 3]).any():
        raise ValueError(
            "Boxes need to be in (xmin, ymin, xmax, ymax) format. "
            "Use trivium.vision.ops.box_convert to convert them"
        )
    count = boxes.shape[0]
    if count == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn", stacklevel=2)
        return image
    if labels is None:
        labels = [None] * count
    elif len(labels) != count:
        raise ValueError(
            f"Number of boxes ({count}) and labels ({len(labels)}) mismatch. "
            "Please specify labels for each box."
        )
    box_colors = _parse_colors(colors, count)
    text_colors = _parse_colors(label_colors, count) if label_colors else list(box_colors)
    pil = _pillow()
    if font is None:
        if font_size is not None:
            warnings.warn(
                "Argument 'font_size' will be ignored since 'font' is not set.", stacklevel=2
            )
        text_font = pil.ImageFont.load_default()
    else:
        text_font = pil.ImageFont.truetype(font=font, size=font_size or 10)
    if image.size(0) == 1:
        image = torch.tile(image, (3, 1, 1))
    dtype = image.dtype
    pixels = image.mul(256 - 1e-3).to(torch.uint8) if dtype.is_floating_point else image
    canvas = pil.Image.fromarray(pixels.permute(1, 2, 0).cpu().contiguous().numpy())
    draw = pil.ImageDraw.Draw(canvas, "RGBA") if fill else pil.ImageDraw.Draw(canvas)
    for box, color, label, text_color in zip(
        boxes.to(torch.int64).tolist(), box_colors, labels, text_colors, strict=True
    ):
        draw.rectangle(box, width=width, outline=color, fill=(*color, 100) if fill else None)
        if label is not None:
            margin = width + 1
            draw.text((box[0] + margin, box[1] + margin), label, fill=text_color, font=text_font)
    out = torch.from_numpy(np.asarray(canvas).copy()).permute(2, 0, 1).to(image.device)
    return out.to(dtype).mul_(1.0 / 255) if dtype.is_floating_point else out


@torch.no_grad()
def draw_segmentation_masks(
    image: torch.Tensor,
    masks: torch.Tensor,
    alpha: float = 0.8,
    colors: Color | list[Color] | None = None,
) -> torch.Tensor:
    """``image`` (``[3, H, W]``, uint8 or float) with boolean ``masks`` ``[N, H, W]`` blended in.

    torchvision's ``draw_segmentation_masks``: ``masks`` may also be one ``[H, W]``
    mask. Each mask is painted in its colour
    (where masks overlap, black), then blended with weight ``alpha``. ``colors`` as
    in :func:`draw_bounding_boxes`.

    Example:
        >>> import torch
        >>> image = torch.zeros(3, 2, 2, dtype=torch.uint8)
        >>> masks = torch.tensor([[[True, False], [False, False]]])
        >>> draw_segmentation_masks(image, masks, alpha=0.5, colors=(200, 100, 0))[:, 0, 0].tolist()
        [100, 50, 0]
    """
    _check_image(image, {3})
    if not isinstance(masks, torch.Tensor):
        raise TypeError(f"masks must be a tensor, got {type(masks).__name__}")
    if masks.ndim == 2:
        masks = masks[None]
    if masks.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != torch.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if masks.shape[-2:] != image.shape[-2:]:
        raise ValueError("The image and the masks must have the same height and width")
    if masks.size(0) == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn", stacklevel=2)
        return image
    dtype = image.dtype
    parsed = _parse_colors(colors, masks.size(0), floating=dtype.is_floating_point)
    painted = image.detach().clone()
    for mask, color in zip(masks, parsed, strict=False):
        painted[:, mask] = torch.tensor(color, dtype=dtype, device=image.device)[:, None]
    painted[:, masks.sum(dim=0) > 1] = 0
    return (image * (1 - alpha) + painted * alpha).to(dtype)
