"""Noise, JPEG artefacts, temporal subsampling and box sanitizing (torchvision v2 functional).

``gaussian_noise``, ``jpeg``, ``uniform_temporal_subsample`` and
``sanitize_bounding_boxes`` with torchvision's arguments and results. ``jpeg`` goes
through Trivium's own codec (:func:`trivium.vision.io.encode_jpeg` /
:func:`~trivium.vision.io.decode_jpeg`), so it takes uint16 images too (as 12-bit
JPEGs); ``gaussian_noise`` takes uint16 as it takes uint8.

Example:
    >>> import torch
    >>> video = torch.arange(8).view(8, 1, 1, 1)
    >>> uniform_temporal_subsample(video, 3).flatten().tolist()
    [0, 3, 7]
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import check_image
from trivium.vision.transforms.functional.geometry import _convert
from trivium.vision.tv_tensors import BoundingBoxFormat, _as_canvas_size, _as_format

__all__ = [
    "gaussian_noise",
    "gaussian_noise_image",
    "gaussian_noise_video",
    "jpeg",
    "jpeg_image",
    "jpeg_video",
    "sanitize_bounding_boxes",
    "uniform_temporal_subsample",
    "uniform_temporal_subsample_video",
]


# Gaussian noise.


def check_noise_args(owner: str, mean: Any, sigma: Any) -> tuple[float, float]:
    """``mean`` and ``sigma`` as floats; a negative ``sigma`` is an error.

    Example:
        >>> check_noise_args("GaussianNoise", 0, 0.5)
        (0.0, 0.5)
    """
    for name, value in (("mean", mean), ("sigma", sigma)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
    if sigma < 0:
        raise ValueError(f"{owner}: sigma must be >= 0, got {sigma}")
    return float(mean), float(sigma)


def noise_dtype(image: torch.Tensor) -> torch.dtype:
    """The dtype of the standard normal draws for ``image`` (as torchvision draws them)."""
    return image.dtype if image.is_floating_point() else torch.float32


def add_noise(
    image: torch.Tensor, noise: torch.Tensor, mean: float, sigma: float, clip: bool
) -> torch.Tensor:
    """``image + mean + sigma * noise`` on the image's scale, clipped to its range if ``clip``.

    ``noise`` holds standard normal values shaped like ``image`` (of
    :func:`noise_dtype`). Integer images get the noise scaled by their max value and
    truncated to integers, in a wider integer dtype (torchvision's arithmetic);
    without ``clip`` they wrap around.
    """
    if image.is_floating_point():
        out = image + (mean + noise * sigma)
        return out.clamp_(0, 1) if clip else out
    top = 255 if image.dtype == torch.uint8 else 65535
    wide = torch.int16 if image.dtype == torch.uint8 else torch.int32
    out = image.to(wide) + ((mean * top) + noise * (sigma * top)).to(wide)
    if clip:
        out = out.clamp_(0, top)
    return out.to(image.dtype)


def gaussian_noise_image(
    image: torch.Tensor, mean: float = 0.0, sigma: float = 0.1, clip: bool = True
) -> torch.Tensor:
    """Add Gaussian noise (``mean``, ``sigma`` on the [0, 1] scale) to images ``[..., C, H, W]``.

    Every value gets its own draw from torch's default generator (as torchvision's);
    uint8 and uint16 images get the noise times 255 / 65535. ``clip`` keeps values in
    the image's range.

    Example:
        >>> import torch
        >>> out = gaussian_noise_image(torch.full((1, 64, 64), 0.5), sigma=0.1)
        >>> round(out.std().item(), 1)
        0.1
    """
    check_image("gaussian_noise", image)
    mean, sigma = check_noise_args("gaussian_noise", mean, sigma)
    return add_noise(image, torch.randn_like(image, dtype=noise_dtype(image)), mean, sigma, clip)


def gaussian_noise_video(
    video: torch.Tensor, mean: float = 0.0, sigma: float = 0.1, clip: bool = True
) -> torch.Tensor:
    """:func:`gaussian_noise_image` on a video ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> gaussian_noise_video(torch.zeros(2, 3, 4, 4), sigma=0.0).abs().max().item()
        0.0
    """
    return gaussian_noise_image(video, mean=mean, sigma=sigma, clip=clip)


def gaussian_noise(
    inpt: torch.Tensor, mean: float = 0.0, sigma: float = 0.1, clip: bool = True
) -> torch.Tensor:
    """Add Gaussian noise to an image or video (see :func:`gaussian_noise_image`).

    Example:
        >>> import torch
        >>> gaussian_noise(torch.zeros(3, 4, 4, dtype=torch.uint8), mean=1.0, sigma=0.0).max()
        tensor(255, dtype=torch.uint8)
    """
    return get_kernel(gaussian_noise, type(inpt))(inpt, mean=mean, sigma=sigma, clip=clip)


# JPEG.


def check_quality(owner: str, quality: Any) -> int:
    """``quality`` as an int in 1..100.

    Example:
        >>> check_quality("jpeg", 90)
        90
    """
    if isinstance(quality, bool) or not isinstance(quality, numbers.Integral):
        raise TypeError(f"{owner}: quality must be an int from 1 to 100, got {quality!r}")
    if not 1 <= quality <= 100:
        raise ValueError(f"{owner}: quality must be an int from 1 to 100, got {quality}")
    return int(quality)


def jpeg_image(image: torch.Tensor, quality: int | Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Encode each image of ``[..., C, H, W]`` (C = 1 or 3) as a JPEG and decode it again.

    ``quality`` is libjpeg's 1..100, one for every image or one per image of the
    flattened batch. uint8 images make 8-bit JPEGs and uint16 ones 12-bit JPEGs;
    the codec is Trivium's (libjpeg-turbo), whose bytes are Pillow's at the same
    quality and 4:2:0 chroma.

    Example:
        >>> import torch
        >>> img = torch.full((3, 16, 16), 100, dtype=torch.uint8)
        >>> jpeg_image(img, quality=90).sub(100).abs().max().item() <= 1
        True
    """
    from trivium.vision.io import decode_jpeg, encode_jpeg

    check_image("jpeg", image, channels=(1, 3), allow_float=False)
    flat = image.reshape(-1, *image.shape[-3:])
    qualities = _qualities(quality, flat.shape[0])
    if flat.shape[0] == 0:
        return image.clone()
    frames = [flat[i].contiguous() for i in range(flat.shape[0])]
    if len(set(qualities)) == 1:
        encoded = encode_jpeg(frames, quality=qualities[0])
    else:
        encoded = [encode_jpeg(f, quality=q) for f, q in zip(frames, qualities, strict=True)]
    decoded = decode_jpeg(encoded)
    return torch.stack(decoded).reshape(image.shape)


def _qualities(quality: Any, n: int) -> list[int]:
    """``jpeg``'s ``quality``: one int per image of the ``n``."""
    if isinstance(quality, torch.Tensor):
        quality = quality.reshape(-1).tolist()
    if isinstance(quality, Sequence):
        if len(quality) != n:
            raise ValueError(f"jpeg: quality has {len(quality)} values for {n} images")
        return [check_quality("jpeg", q) for q in quality]
    return [check_quality("jpeg", quality)] * n


def jpeg_video(video: torch.Tensor, quality: int | Sequence[int] | torch.Tensor) -> torch.Tensor:
    """:func:`jpeg_image` on every frame of a video ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> jpeg_video(torch.zeros(2, 1, 8, 8, dtype=torch.uint8), quality=75).shape
        torch.Size([2, 1, 8, 8])
    """
    return jpeg_image(video, quality)


def jpeg(inpt: torch.Tensor, quality: int) -> torch.Tensor:
    """JPEG compression artefacts: encode at ``quality`` and decode (see :func:`jpeg_image`).

    Example:
        >>> import torch
        >>> jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8), quality=50).dtype
        torch.uint8
    """
    return get_kernel(jpeg, type(inpt))(inpt, quality=quality)


# Temporal subsampling.


def uniform_temporal_subsample_video(video: torch.Tensor, num_samples: int) -> torch.Tensor:
    """``num_samples`` evenly spaced frames of a video ``[..., T, C, H, W]``, first and last kept.

    The frame indices are ``linspace(0, T - 1, num_samples)`` truncated (torchvision's
    and PyTorchVideo's rule); more samples than frames repeat frames.

    Example:
        >>> import torch
        >>> uniform_temporal_subsample_video(torch.arange(5).view(5, 1, 1, 1), 3).flatten().tolist()
        [0, 2, 4]
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
        raise ValueError(
            f"uniform_temporal_subsample: num_samples must be a positive int, got {num_samples!r}"
        )
    if not isinstance(video, torch.Tensor) or video.ndim < 4:
        shape = tuple(video.shape) if isinstance(video, torch.Tensor) else type(video).__name__
        raise ValueError(
            f"uniform_temporal_subsample: expected a video [..., T, C, H, W], got {shape}"
        )
    t_max = video.shape[-4] - 1
    indices = torch.linspace(0, t_max, num_samples, device=video.device).long()
    return torch.index_select(video, -4, indices)


def uniform_temporal_subsample(inpt: torch.Tensor, num_samples: int) -> torch.Tensor:
    """``num_samples`` evenly spaced frames of a video ``[..., T, C, H, W]``, first and last kept.

    Example:
        >>> import torch
        >>> uniform_temporal_subsample(torch.zeros(10, 3, 2, 2), 4).shape
        torch.Size([4, 3, 2, 2])
    """
    kernel = get_kernel(uniform_temporal_subsample, type(inpt))
    return kernel(inpt, num_samples=num_samples)


# Sanitizing boxes.


def valid_boxes_mask(
    boxes: torch.Tensor,
    format: BoundingBoxFormat,
    canvas_size: tuple[int, int],
    min_size: float = 1.0,
    min_area: float = 1.0,
) -> torch.Tensor:
    """Which boxes are ``min_size`` wide and high, of ``min_area``, with every corner on the canvas.

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0, 0, 4, 4], [2, 2, 2, 9], [6, 6, 9, 9]])
        >>> valid_boxes_mask(boxes, BoundingBoxFormat.XYXY, (8, 8)).tolist()
        [True, False, False]
    """
    ws, hs, corners = _sides_and_corners(boxes.as_subclass(torch.Tensor).clone(), format)
    height, width = canvas_size
    return (
        (ws >= min_size)
        & (hs >= min_size)
        & (corners >= 0).all(dim=-1)
        & (ws * hs >= min_area)
        & (corners[..., 0::2] <= width).all(dim=-1)
        & (corners[..., 1::2] <= height).all(dim=-1)
    )


def _sides_and_corners(
    boxes: torch.Tensor, format: BoundingBoxFormat
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Width, height and the corners [N, 4 or 8] (x, y interleaved) of the boxes."""
    if not tv_tensors.is_rotated_bounding_format(format):
        xyxy = _convert(boxes, format, BoundingBoxFormat.XYXY)
        return xyxy[..., 2] - xyxy[..., 0], xyxy[..., 3] - xyxy[..., 1], xyxy
    corners = _convert(boxes, format, BoundingBoxFormat.XYXYXYXY)
    points = corners.reshape(-1, 4, 2)
    # A rotated box's own sides: torchvision 0.28 mixes x and y coordinates for the
    # height here, which drops upright boxes turned 90 degrees.
    ws = (points[:, 0] - points[:, 1]).norm(dim=-1)
    hs = (points[:, 1] - points[:, 2]).norm(dim=-1)
    return ws, hs, corners


def sanitize_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: BoundingBoxFormat | str | None = None,
    canvas_size: tuple[int, int] | None = None,
    min_size: float = 1.0,
    min_area: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The valid boxes and the mask that selects them (for the labels that go with them).

    A box is dropped when it is narrower or lower than ``min_size``, smaller than
    ``min_area`` or not on the canvas. ``BoundingBoxes`` carry their ``format`` and
    ``canvas_size`` (leave both None); a plain tensor ``[N, 4]`` needs both.

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0.0, 4.0, 4.0], [1.0, 1.0, 1.5, 3.0]])
        >>> kept, valid = sanitize_bounding_boxes(boxes, format="XYXY", canvas_size=(8, 8))
        >>> kept.tolist(), valid.tolist()
        ([[0.0, 0.0, 4.0, 4.0]], [True, False])
    """
    for name, value in (("min_size", min_size), ("min_area", min_area)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"sanitize_bounding_boxes: {name} must be a number, got {value!r}")
    if isinstance(bounding_boxes, tv_tensors.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError(
                "sanitize_bounding_boxes: format and canvas_size must be None for "
                f"BoundingBoxes, which carry their own; got format={format!r}, "
                f"canvas_size={canvas_size!r}"
            )
        valid = valid_boxes_mask(
            bounding_boxes, bounding_boxes.format, bounding_boxes.canvas_size, min_size, min_area
        )
        kept = bounding_boxes.as_subclass(torch.Tensor)[valid]
        return tv_tensors.wrap(kept, like=bounding_boxes), valid
    if not isinstance(bounding_boxes, torch.Tensor) or isinstance(
        bounding_boxes, tv_tensors.TVTensor
    ):
        raise TypeError(
            "sanitize_bounding_boxes: bounding_boxes must be BoundingBoxes or a plain tensor, "
            f"got {type(bounding_boxes).__name__}"
        )
    if format is None or canvas_size is None:
        raise ValueError(
            "sanitize_bounding_boxes: format and canvas_size are needed for a plain tensor, "
            f"got format={format!r}, canvas_size={canvas_size!r}"
        )
    valid = valid_boxes_mask(
        bounding_boxes, _as_format(format), _as_canvas_size(canvas_size), min_size, min_area
    )
    return bounding_boxes[valid], valid


def _register_misc_kernels() -> None:
    table: list[tuple[Any, Any, Any]] = [
        (gaussian_noise, gaussian_noise_image, gaussian_noise_video),
        (jpeg, jpeg_image, jpeg_video),
    ]
    for functional, image_kernel, video_kernel in table:
        for input_type in (torch.Tensor, tv_tensors.Image):
            _register_kernel_internal(functional, input_type)(image_kernel)
        _register_kernel_internal(functional, tv_tensors.Video)(video_kernel)
    for input_type in (torch.Tensor, tv_tensors.Video):
        _register_kernel_internal(uniform_temporal_subsample, input_type)(
            uniform_temporal_subsample_video
        )


_register_misc_kernels()
