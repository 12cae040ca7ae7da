"""``InterpolationMode``: how geometric transforms sample between pixels (as torchvision's).

Example:
    >>> InterpolationMode("bilinear") is InterpolationMode.BILINEAR
    True
"""

from __future__ import annotations

import enum

__all__ = ["InterpolationMode"]


class InterpolationMode(enum.Enum):
    """Interpolation modes, with torchvision's names and string values.

    Example:
        >>> InterpolationMode.BICUBIC.value
        'bicubic'
    """

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
