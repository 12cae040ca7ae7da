"""Scriptable forms of the deterministic transforms (what ``torch.jit.script`` compiles).

``torch.jit.script`` cannot compile ``ImageTransform.forward(*inputs)``; each
deterministic transform's ``__prepare_scriptable__`` returns one of these modules,
which call the same kernels. (No ``from __future__ import annotations`` here:
TorchScript needs the class attribute annotations as real types.)

Example:
    >>> import torch
    >>> torch.jit.script(ResizeModule([4], "bilinear", None, True))(torch.zeros(3, 8, 16)).shape
    torch.Size([3, 4, 8])
"""

import torch
from torch import nn

from trivium.vision.transforms.functional.conversion import _normalize_image, _to_dtype_image
from trivium.vision.transforms.functional.geometry import (
    _center_crop_image,
    _pad_image,
    _resize_image,
    compute_resized_output_size,
)

__all__ = [
    "CenterCropModule",
    "NormalizeModule",
    "PadModule",
    "ResizeModule",
    "SequentialModule",
    "ToDtypeModule",
]


class ResizeModule(nn.Module):
    """Scriptable ``Resize``.

    Example:
        >>> import torch
        >>> ResizeModule([2, 3], "nearest", None, False)(torch.zeros(1, 4, 6)).shape
        torch.Size([1, 2, 3])
    """

    size: list[int] | None
    max_size: int | None

    def __init__(self, size: list[int] | None, mode: str, max_size: int | None, antialias: bool):
        super().__init__()
        self.size = size
        self.mode = mode
        self.max_size = max_size
        self.antialias = antialias

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        hw = compute_resized_output_size(img.shape[-2], img.shape[-1], self.size, self.max_size)
        return _resize_image(img, hw[0], hw[1], self.mode, self.antialias)


class CenterCropModule(nn.Module):
    """Scriptable ``CenterCrop``.

    Example:
        >>> import torch
        >>> CenterCropModule([2, 2])(torch.zeros(1, 4, 6)).shape
        torch.Size([1, 2, 2])
    """

    def __init__(self, size: list[int]):
        super().__init__()
        self.size = size

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return _center_crop_image(img, self.size[0], self.size[1])


class PadModule(nn.Module):
    """Scriptable ``Pad`` (``padding`` as [left, right, top, bottom]).

    Example:
        >>> import torch
        >>> PadModule([1, 1, 0, 0], None, "edge")(torch.zeros(1, 2, 2)).shape
        torch.Size([1, 2, 4])
    """

    fill: list[float] | None

    def __init__(self, padding: list[int], fill: list[float] | None, padding_mode: str):
        super().__init__()
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return _pad_image(img, self.padding, self.fill, self.padding_mode)


class ToDtypeModule(nn.Module):
    """Scriptable ``ToDtype``.

    Example:
        >>> import torch
        >>> ToDtypeModule(torch.float32, True)(torch.zeros(1, 1, 1, dtype=torch.uint8)).dtype
        torch.float32
    """

    def __init__(self, dtype: torch.dtype, scale: bool):
        super().__init__()
        self.dtype = dtype
        self.scale = scale

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return _to_dtype_image(img, self.dtype, self.scale)


class NormalizeModule(nn.Module):
    """Scriptable ``Normalize``.

    Example:
        >>> import torch
        >>> NormalizeModule([1.0], [2.0], False)(torch.ones(1, 1, 1)).item()
        0.0
    """

    def __init__(self, mean: list[float], std: list[float], inplace: bool):
        super().__init__()
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return _normalize_image(img, self.mean, self.std, self.inplace)


class SequentialModule(nn.Sequential):
    """``nn.Sequential`` over one image tensor (the scriptable form of a preset).

    Example:
        >>> import torch
        >>> SequentialModule(CenterCropModule([1, 1]))(torch.zeros(1, 3, 3)).shape
        torch.Size([1, 1, 1])
    """

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        for step in self:
            img = step(img)
        return img
