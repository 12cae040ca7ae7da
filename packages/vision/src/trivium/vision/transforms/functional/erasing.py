"""The ``erase`` kernel: overwrite a box of every image with given values.

With integer box coordinates it writes one slice; with tensors holding one box
per image of the flattened batch it builds a mask and erases all boxes at once.

Example:
    >>> import torch
    >>> out = erase(torch.ones(1, 4, 4), 1, 1, 2, 2, torch.tensor(0.0))
    >>> int(out.sum())
    12
"""

from __future__ import annotations

import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import check_image, eager_cpu, image_where

__all__ = [
    "erase",
    "erase_image",
    "erase_mask",
    "erase_video",
]

Coord = int | torch.Tensor


def erase_mask(
    img: torch.Tensor, i: torch.Tensor, j: torch.Tensor, h: torch.Tensor, w: torch.Tensor
) -> torch.Tensor:
    """Boolean ``[..., 1, H, W]`` mask of the boxes ``(i, j, h, w)``, one per image.

    Example:
        >>> import torch
        >>> one = torch.tensor([1])
        >>> erase_mask(torch.zeros(1, 3, 3, 3), one, one, one, one).sum().item()
        1
    """
    height, width = img.shape[-2:]
    shape = (*img.shape[:-3], 1, 1)
    rows = torch.arange(height, device=img.device).view(1, height, 1)
    cols = torch.arange(width, device=img.device).view(1, 1, width)
    i, j, h, w = (t.to(img.device).reshape(shape) for t in (i, j, h, w))
    inside = (rows >= i) & (rows < i + h) & (cols >= j) & (cols < j + w)
    return inside.unsqueeze(-3)


def erase_image(
    img: torch.Tensor,
    i: Coord,
    j: Coord,
    h: Coord,
    w: Coord,
    v: torch.Tensor,
    inplace: bool = False,
) -> torch.Tensor:
    """The image kernel of :func:`erase`, which documents the arguments.

    Example:
        >>> img = torch.zeros(2, 1, 3, 3)
        >>> out = erase_image(img, torch.tensor([0, 1]), torch.tensor([0, 1]),
        ...             torch.tensor([1, 2]), torch.tensor([1, 2]), torch.tensor(1.0))
        >>> out.sum(dim=(1, 2, 3)).tolist()
        [1.0, 4.0]
    """
    check_image("erase", img)
    if not isinstance(v, torch.Tensor):
        raise TypeError(f"erase: v must be a tensor, got {type(v).__name__}")
    if all(isinstance(c, int) and not isinstance(c, bool) for c in (i, j, h, w)):
        if min(i, j) < 0 or min(h, w) < 0:
            raise ValueError(f"erase: expected i, j, h, w >= 0, got {(i, j, h, w)}")
        out = img if inplace else img.clone()
        out[..., i : i + h, j : j + w] = v.to(img.device)
        return out
    if not all(isinstance(c, torch.Tensor) for c in (i, j, h, w)):
        raise TypeError("erase: i, j, h, w must be all ints or all tensors")
    if i.numel() == 1 and eager_cpu(img):
        # One box on the CPU (a chunk of a per-sample batch): a slice, not a mask.
        i, j, h, w = (int(c) for c in (i, j, h, w))
        if v.shape[-2:] == img.shape[-2:] and v.ndim >= 3:  # noise over the whole image
            v = v[..., i : i + h, j : j + w]
        return erase(img, i, j, h, w, v.to(img.dtype), inplace)
    mask = erase_mask(img, i, j, h, w)
    values = v.to(device=img.device, dtype=img.dtype).expand_as(img)
    erased = image_where(mask, values, img)
    return img.copy_(erased) if inplace else erased


# The functionals: one per operation, dispatching on the type of the input.


def erase(
    inpt: torch.Tensor,
    i: Coord,
    j: Coord,
    h: Coord,
    w: Coord,
    v: torch.Tensor,
    inplace: bool = False,
) -> torch.Tensor:
    """Set ``img[..., i:i + h, j:j + w]`` to ``v`` (as torchvision's ``erase``).

    With ints, ``v`` broadcasts to ``[..., C, h, w]``. With tensors of one box
    per image (shape ``[N]`` for ``N`` images in the flattened batch), ``v``
    broadcasts to the whole ``[..., C, H, W]`` image and only the boxes take it.
    Values are cast to the image's dtype as a slice assignment would.

    Example:
        >>> import torch
        >>> img = torch.zeros(2, 1, 3, 3)
        >>> out = erase(img, torch.tensor([0, 1]), torch.tensor([0, 1]),
        ...             torch.tensor([1, 2]), torch.tensor([1, 2]), torch.tensor(1.0))
        >>> out.sum(dim=(1, 2, 3)).tolist()
        [1.0, 4.0]
    """
    kernel = get_kernel(erase, type(inpt))
    return kernel(inpt, i=i, j=j, h=h, w=w, v=v, inplace=inplace)


# The video kernels are the image kernels: a video is a batch of images [..., T, C, H, W].
erase_video = erase_image


for _functional, _kernel in ((erase, erase_image),):
    for _type in (torch.Tensor, tv_tensors.Image, tv_tensors.Video):
        _register_kernel_internal(_functional, _type)(_kernel)
