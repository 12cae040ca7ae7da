"""A batch of padded images and their sizes before padding, as torchvision's ``ImageList``.

Example:
    >>> import torch
    >>> images = ImageList(torch.zeros(2, 3, 32, 32), [(30, 28), (32, 20)])
    >>> images.tensors.shape, images.image_sizes[1]
    (torch.Size([2, 3, 32, 32]), (32, 20))
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["ImageList"]


class ImageList:
    """Images padded to one size in ``tensors`` ``[N, C, H, W]``, with each image's
    ``(height, width)`` before padding in ``image_sizes``.

    Detection models batch images of different sizes this way; anchors and boxes
    are clipped to ``image_sizes``.

    Example:
        >>> import torch
        >>> batch = ImageList(torch.zeros(1, 3, 8, 8), [(6, 8)])
        >>> batch.to("cpu").image_sizes
        [(6, 8)]
    """

    def __init__(self, tensors: Tensor, image_sizes: list[tuple[int, int]]) -> None:
        self.tensors = tensors
        self.image_sizes = image_sizes

    def to(self, device: torch.device | str) -> ImageList:
        """The same images on ``device`` (the sizes are shared).

        Example:
            >>> import torch
            >>> ImageList(torch.zeros(1, 1, 2, 2), [(2, 2)]).to("cpu").tensors.device.type
            'cpu'
        """
        return ImageList(self.tensors.to(device), self.image_sizes)

    def __repr__(self) -> str:
        return f"ImageList(tensors={list(self.tensors.shape)}, image_sizes={self.image_sizes})"
