"""Sizes of inputs: ``get_dimensions``, ``get_size``, ``get_num_channels``, ``get_num_frames``.

torchvision v2 functional's names and results: each dispatches on its input's type
(plain tensors and ``Image`` to the image kernel, ``Video``, ``Mask``,
``BoundingBoxes`` and ``KeyPoints`` to theirs; boxes and key points answer with their
``canvas_size``), and PIL images are read directly. Sizes are ``[height, width]``,
except the old ``get_image_size``, which is ``[width, height]``.

Example:
    >>> import torch
    >>> img = torch.zeros(2, 3, 4, 5)
    >>> get_dimensions(img), get_size(img), get_num_channels(img)
    ([3, 4, 5], [4, 5], 3)
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import is_pil

__all__ = [
    "get_dimensions",
    "get_dimensions_image",
    "get_dimensions_video",
    "get_image_num_channels",
    "get_image_size",
    "get_num_channels",
    "get_num_channels_image",
    "get_num_channels_video",
    "get_num_frames",
    "get_num_frames_video",
    "get_size",
    "get_size_bounding_boxes",
    "get_size_image",
    "get_size_keypoints",
    "get_size_mask",
    "get_size_video",
    "is_pure_tensor",
]


def is_pure_tensor(inpt: Any) -> bool:
    """Whether ``inpt`` is a tensor that is not a tv_tensor (torchvision's rule for images).

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> is_pure_tensor(torch.zeros(1)), is_pure_tensor(tv_tensors.Image(torch.zeros(1, 1, 1)))
        (True, False)
    """
    return isinstance(inpt, torch.Tensor) and not isinstance(inpt, tv_tensors.TVTensor)


def _trailing(owner: str, image: torch.Tensor, n: int) -> list[int]:
    """The last ``n`` sizes of ``image`` (a 2-D image gains a channel of 1 when ``n`` is 3)."""
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"{owner}: expected a tensor, got {type(image).__name__}")
    if image.ndim < 2:
        raise TypeError(
            f"{owner}: expected a tensor with at least two dimensions, got shape "
            f"{tuple(image.shape)}"
        )
    sizes = list(image.shape[-n:])
    return [1, *sizes] if len(sizes) < n else sizes


def get_dimensions_image(image: torch.Tensor) -> list[int]:
    """``[channels, height, width]`` of an image ``[..., C, H, W]`` (``[1, H, W]`` for 2-D).

    Example:
        >>> import torch
        >>> get_dimensions_image(torch.zeros(3, 4, 5)), get_dimensions_image(torch.zeros(4, 5))
        ([3, 4, 5], [1, 4, 5])
    """
    return _trailing("get_dimensions", image, 3)


def get_dimensions_video(video: torch.Tensor) -> list[int]:
    """``[channels, height, width]`` of a video ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> get_dimensions_video(torch.zeros(8, 3, 4, 5))
        [3, 4, 5]
    """
    return get_dimensions_image(video)


def get_num_channels_image(image: torch.Tensor) -> int:
    """The number of channels of an image ``[..., C, H, W]`` (1 for a 2-D tensor).

    Example:
        >>> import torch
        >>> get_num_channels_image(torch.zeros(2, 4, 5))
        2
    """
    return get_dimensions_image(image)[0]


def get_num_channels_video(video: torch.Tensor) -> int:
    """The number of channels of a video ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> get_num_channels_video(torch.zeros(8, 3, 4, 5))
        3
    """
    return get_num_channels_image(video)


def get_size_image(image: torch.Tensor) -> list[int]:
    """``[height, width]`` of an image ``[..., H, W]``.

    Example:
        >>> import torch
        >>> get_size_image(torch.zeros(3, 4, 5))
        [4, 5]
    """
    return _trailing("get_size", image, 2)


def get_size_video(video: torch.Tensor) -> list[int]:
    """``[height, width]`` of a video ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> get_size_video(torch.zeros(8, 3, 4, 5))
        [4, 5]
    """
    return get_size_image(video)


def get_size_mask(mask: torch.Tensor) -> list[int]:
    """``[height, width]`` of a mask ``[..., H, W]``.

    Example:
        >>> import torch
        >>> get_size_mask(torch.zeros(4, 5))
        [4, 5]
    """
    return get_size_image(mask)


def get_size_bounding_boxes(bounding_box: tv_tensors.BoundingBoxes) -> list[int]:
    """``[height, width]`` of the canvas of ``BoundingBoxes``.

    Example:
        >>> from trivium.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 1, 1]], format="XYXY", canvas_size=(4, 5))
        >>> get_size_bounding_boxes(boxes)
        [4, 5]
    """
    return list(bounding_box.canvas_size)


def get_size_keypoints(keypoints: tv_tensors.KeyPoints) -> list[int]:
    """``[height, width]`` of the canvas of ``KeyPoints``.

    Example:
        >>> from trivium.vision import tv_tensors
        >>> get_size_keypoints(tv_tensors.KeyPoints([[0, 1]], canvas_size=(4, 5)))
        [4, 5]
    """
    return list(keypoints.canvas_size)


def get_num_frames_video(video: torch.Tensor) -> int:
    """The number of frames ``T`` of a video ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> get_num_frames_video(torch.zeros(8, 3, 4, 5))
        8
    """
    if not isinstance(video, torch.Tensor):
        raise TypeError(f"get_num_frames: expected a tensor, got {type(video).__name__}")
    if video.ndim < 4:
        raise ValueError(
            f"get_num_frames: expected a video [..., T, C, H, W], got shape {tuple(video.shape)}"
        )
    return video.shape[-4]


# The functionals: PIL images are answered here, every other type by its kernel.


def get_dimensions(inpt: Any) -> list[int]:
    """``[channels, height, width]`` of an image, a video or a PIL image.

    Example:
        >>> import torch
        >>> from PIL import Image
        >>> get_dimensions(torch.zeros(3, 4, 5)), get_dimensions(Image.new("LA", (5, 4)))
        ([3, 4, 5], [2, 4, 5])
    """
    if is_pil(inpt):
        return [len(inpt.getbands()), inpt.height, inpt.width]
    return get_kernel(get_dimensions, type(inpt))(inpt)


def get_num_channels(inpt: Any) -> int:
    """The number of channels of an image, a video or a PIL image.

    Example:
        >>> from PIL import Image
        >>> get_num_channels(Image.new("RGB", (5, 4)))
        3
    """
    if is_pil(inpt):
        return len(inpt.getbands())
    return get_kernel(get_num_channels, type(inpt))(inpt)


#: torchvision's other name of :func:`get_num_channels`.
get_image_num_channels = get_num_channels


def get_size(inpt: Any) -> list[int]:
    """``[height, width]`` of an image, video, mask, PIL image, or of the canvas of boxes.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> points = tv_tensors.KeyPoints([[0, 1]], canvas_size=(4, 5))
        >>> get_size(points), get_size(torch.zeros(2, 3))
        ([4, 5], [2, 3])
    """
    if is_pil(inpt):
        return [inpt.height, inpt.width]
    return get_kernel(get_size, type(inpt))(inpt)


def get_num_frames(inpt: torch.Tensor) -> int:
    """The number of frames ``T`` of a video ``[..., T, C, H, W]`` (a tensor or ``Video``).

    Example:
        >>> import torch
        >>> get_num_frames(torch.zeros(6, 3, 2, 2))
        6
    """
    return get_kernel(get_num_frames, type(inpt))(inpt)


def get_image_size(inpt: Any) -> list[int]:
    """``[width, height]`` of a PIL image or a tensor ``[..., H, W]`` (torchvision v1's).

    Deprecated in torchvision, and warns as it does: :func:`get_size` gives
    ``[height, width]`` and reads the canvas of boxes and key points, where this
    reads the last two sizes of any tensor.

    Example:
        >>> import torch, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     get_image_size(torch.zeros(3, 4, 5))
        [5, 4]
    """
    warnings.warn(
        "get_image_size(...) is deprecated: use get_size(...), which returns [h, w] "
        "instead of [w, h]",
        DeprecationWarning,
        stacklevel=2,
    )
    if is_pil(inpt):
        return [inpt.width, inpt.height]
    height, width = _trailing("get_image_size", inpt, 2)
    return [width, height]


def _register_meta_kernels() -> None:
    image_types = (torch.Tensor, tv_tensors.Image)
    table: list[tuple[Any, tuple[type, ...], Any]] = [
        (get_dimensions, image_types, get_dimensions_image),
        (get_dimensions, (tv_tensors.Video,), get_dimensions_video),
        (get_num_channels, image_types, get_num_channels_image),
        (get_num_channels, (tv_tensors.Video,), get_num_channels_video),
        (get_size, image_types, get_size_image),
        (get_size, (tv_tensors.Video,), get_size_video),
        (get_size, (tv_tensors.Mask,), get_size_mask),
        (get_size, (tv_tensors.BoundingBoxes,), get_size_bounding_boxes),
        (get_size, (tv_tensors.KeyPoints,), get_size_keypoints),
        (get_num_frames, (torch.Tensor, tv_tensors.Video), get_num_frames_video),
    ]
    for functional, types, kernel in table:
        for input_type in types:
            # They return sizes, not tensors: the kernel sees the tv_tensor itself.
            _register_kernel_internal(functional, input_type, tv_tensor_wrapper=False)(kernel)


_register_meta_kernels()
