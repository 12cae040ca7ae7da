"""Operators and small layers for vision models, named as in ``torchvision.ops``.

Example:
    >>> import torch
    >>> from trivium.vision.ops import FrozenBatchNorm2d
    >>> FrozenBatchNorm2d(8)(torch.zeros(1, 8, 4, 4)).shape
    torch.Size([1, 8, 4, 4])
"""

from trivium.vision.ops.misc import FrozenBatchNorm2d

__all__ = [
    "FrozenBatchNorm2d",
]
