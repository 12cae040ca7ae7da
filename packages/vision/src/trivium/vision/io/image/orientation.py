"""EXIF orientation: turning an image as stored into the image as meant to be seen.

Example:
    >>> import torch
    >>> image = torch.arange(6).reshape(1, 2, 3)
    >>> apply_exif_orientation(image, 6).shape  # rotated a quarter turn
    torch.Size([1, 3, 2])
"""

from __future__ import annotations

import torch


def apply_exif_orientation(image: torch.Tensor, orientation: int) -> torch.Tensor:
    """Undo an EXIF orientation (1..8) on a [..., C, H, W] tensor.

    Same result as Pillow's ``ImageOps.exif_transpose``: 2 mirrors, 3 turns 180°,
    4 flips, 5 transposes, 6 turns 90° clockwise, 7 transverses, 8 turns 90°
    counter-clockwise; 0 (absent) and 1 return the image unchanged.

    Example:
        >>> import torch
        >>> image = torch.tensor([[[1, 2], [3, 4]]])
        >>> apply_exif_orientation(image, 2).tolist()
        [[[2, 1], [4, 3]]]
    """
    if orientation in (0, 1):
        return image
    if orientation == 2:
        return image.flip(-1)
    if orientation == 3:
        return image.flip(-2, -1)
    if orientation == 4:
        return image.flip(-2)
    if orientation == 5:
        return image.transpose(-2, -1)
    if orientation == 6:
        return image.rot90(-1, dims=(-2, -1))
    if orientation == 7:
        return image.transpose(-2, -1).flip(-2, -1)
    if orientation == 8:
        return image.rot90(1, dims=(-2, -1))
    raise ValueError(f"apply_exif_orientation: orientation must be in 0..8, got {orientation}")
