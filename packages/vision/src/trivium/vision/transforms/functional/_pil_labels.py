"""Labels read from a palette ("P") or bilevel ("1") PIL image, and their resize kernels.

A geometry transform moves such an image as a mask (PIL forces NEAREST for these
modes); ``_base.py`` wraps its indices in :class:`PilLabels`. Every functional takes
the ``Mask`` kernel, except resizing: PIL's nearest resize samples where its own
stepping lands, not where ``interpolate(mode="nearest")`` does, so the pixels match
torchvision's (which calls PIL) only with PIL's sampling.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal
from trivium.vision.transforms.functional.geometry import (
    _size_list,
    compute_resized_output_size,
    crop_mask,
    resize,
    resized_crop,
)

__all__ = ["PilLabels"]


class PilLabels(tv_tensors.Mask):
    """The indices of a "P" or "1" PIL image, ``[1, H, W]`` uint8, on their way back to PIL.

    Example:
        >>> import torch
        >>> labels = PilLabels(torch.arange(4, dtype=torch.uint8).view(1, 1, 4))
        >>> resize(labels, [1, 2]).tolist()  # PIL samples the centres: 1 and 3
        [[[1, 3]]]
    """


def _pil_nearest_rows(n_in: int, n_out: int) -> torch.Tensor:
    """The source index of each of ``n_out`` outputs, as PIL's nearest resize steps to it.

    PIL starts at half a step and adds the step once per output in double precision
    (``ImagingScaleAffine``); a cumulative sum repeats those additions exactly.
    """
    steps = np.full(n_out, n_in / n_out)
    steps[0] *= 0.5
    rows = np.minimum(np.floor(np.cumsum(steps)), n_in - 1).astype(np.int64)
    return torch.from_numpy(rows)


def _resize_labels(labels: torch.Tensor, height: int, width: int) -> torch.Tensor:
    rows = _pil_nearest_rows(labels.shape[-2], height).to(labels.device)
    cols = _pil_nearest_rows(labels.shape[-1], width).to(labels.device)
    return labels.index_select(-2, rows).index_select(-1, cols)


@_register_kernel_internal(resize, PilLabels)
def _resize_pil_labels(
    labels: torch.Tensor,
    size: int | Sequence[int] | None,
    interpolation: object = None,
    max_size: int | None = None,
    antialias: object = None,
) -> torch.Tensor:
    height, width = compute_resized_output_size(
        labels.shape[-2], labels.shape[-1], _size_list(size), max_size
    )
    return _resize_labels(labels, height, width)


@_register_kernel_internal(resized_crop, PilLabels)
def _resized_crop_pil_labels(
    labels: torch.Tensor,
    top: int,
    left: int,
    height: int,
    width: int,
    size: Sequence[int],
    interpolation: object = None,
    antialias: object = None,
) -> torch.Tensor:
    return _resize_pil_labels(crop_mask(labels, top, left, height, width), list(size))
