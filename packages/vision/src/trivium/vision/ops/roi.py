"""RoI pooling, named and computed as in ``torchvision.ops``: RoI Align, RoI Pool and
their position-sensitive versions, as functions and modules.

``boxes`` is a float [K, 5] tensor of ``(batch index, x1, y1, x2, y2)`` or a list of
[L, 4] tensors, one per image of the batch. Results and gradients equal torchvision's
CPU kernels'; the work is done by the custom ops of :mod:`.roi_kernels` (a native
kernel on the CPU, tensor ops elsewhere), which run under ``torch.compile``.

Example:
    >>> import torch
    >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
    >>> roi_align(x, [torch.tensor([[0.0, 0, 4, 4]])], 1, aligned=True).flatten().tolist()
    [7.5]
    >>> roi_pool(x, torch.tensor([[0.0, 0, 0, 1, 1]]), 1).flatten().tolist()
    [5.0]
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from trivium.vision.ops.roi_kernels import (
    ps_roi_align_op,
    ps_roi_pool_op,
    roi_align_op,
    roi_pool_op,
)

__all__ = [
    "PSRoIAlign",
    "PSRoIPool",
    "RoIAlign",
    "RoIPool",
    "ps_roi_align",
    "ps_roi_pool",
    "roi_align",
    "roi_pool",
]


def _pair(output_size: int | tuple[int, int] | list[int]) -> tuple[int, int]:
    if isinstance(output_size, int) and not isinstance(output_size, bool):
        return output_size, output_size
    if (
        isinstance(output_size, (tuple, list))
        and len(output_size) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in output_size)
    ):
        return output_size[0], output_size[1]
    raise TypeError(f"output_size must be an int or a pair of ints, got {output_size!r}")


def _rois(input: Tensor, boxes: Tensor | list[Tensor] | tuple[Tensor, ...], name: str) -> Tensor:
    """``boxes`` as a [K, 5] tensor of the input's dtype, checked as torchvision checks them."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a tensor, got {type(input).__name__}")
    if input.dim() != 4:
        raise ValueError(f"{name}: input must be [N, C, H, W], got shape {list(input.shape)}")
    if not input.is_floating_point():
        raise TypeError(f"{name}: input must be a floating-point tensor, got {input.dtype}")
    if isinstance(boxes, (list, tuple)):
        for i, b in enumerate(boxes):
            if not isinstance(b, Tensor) or b.dim() != 2 or b.shape[1] != 4:
                got = list(b.shape) if isinstance(b, Tensor) else type(b).__name__
                raise ValueError(f"{name}: boxes[{i}] must be a [L, 4] tensor, got {got}")
        rois = _to_roi_format(list(boxes), input)
    elif isinstance(boxes, Tensor):
        if boxes.dim() != 2 or boxes.shape[1] != 5:
            raise ValueError(f"{name}: boxes must be a [K, 5] tensor, got {list(boxes.shape)}")
        rois = boxes
    else:
        raise TypeError(
            f"{name}: boxes must be a [K, 5] tensor or a list of [L, 4] tensors, "
            f"got {type(boxes).__name__}"
        )
    if rois.dtype != input.dtype:
        raise TypeError(
            f"{name}: boxes must have the input's dtype {input.dtype}, got {rois.dtype}"
        )
    return rois


def _to_roi_format(boxes: list[Tensor], input: Tensor) -> Tensor:
    """A list of per-image [L, 4] boxes as one [K, 5] tensor, each row led by its image's index."""
    if not boxes:
        return input.new_empty(0, 5)
    ids = [torch.full_like(b[:, :1], i) for i, b in enumerate(boxes)]
    return torch.cat((torch.cat(ids), torch.cat(boxes)), dim=1)


def _check_sampling_ratio(sampling_ratio: int) -> None:
    if not isinstance(sampling_ratio, int) or isinstance(sampling_ratio, bool):
        raise TypeError(f"sampling_ratio must be an int, got {sampling_ratio!r}")


def _check_output_size(name: str, size: tuple[int, int]) -> None:
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"{name}: output_size must be positive, got {size}")


def _check_ps_channels(name: str, input: Tensor, size: tuple[int, int]) -> None:
    if input.shape[1] % (size[0] * size[1]):
        raise ValueError(
            f"{name}: input channels ({input.shape[1]}) must be a multiple of "
            f"output_size[0] * output_size[1] ({size[0] * size[1]})"
        )


def roi_align(
    input: Tensor,
    boxes: Tensor | list[Tensor],
    output_size: int | tuple[int, int],
    spatial_scale: float = 1.0,
    sampling_ratio: int = -1,
    aligned: bool = False,
) -> Tensor:
    """RoI Align (Mask R-CNN): each box's bins averaged from bilinear samples, as torchvision.

    Each box is cut into ``output_size`` bins; a bin averages ``sampling_ratio`` x
    ``sampling_ratio`` bilinearly interpolated samples (``ceil(box size / bins)`` per
    axis when ``sampling_ratio <= 0``). Samples more than one cell outside the map
    count zero.

    Args:
        input: the feature maps, [N, C, H, W].
        boxes: [K, 5] ``(batch index, x1, y1, x2, y2)``, or a list of N [L, 4] tensors.
        output_size: the bins per box, ``int`` or ``(height, width)``.
        spatial_scale: the scale from box coordinates to ``input``'s (e.g. 1/16).
        sampling_ratio: samples per bin and axis; ``<= 0``: adaptive.
        aligned: shift the boxes by -0.5 cell (Detectron2); False: legacy, boxes at least 1x1.

    Returns:
        The pooled features, [K, C, output_size[0], output_size[1]].

    Example:
        >>> import torch
        >>> x = torch.ones(1, 2, 8, 8)
        >>> roi_align(x, [torch.tensor([[0.0, 0, 4, 4]])], (2, 2), sampling_ratio=2).shape
        torch.Size([1, 2, 2, 2])
    """
    rois = _rois(input, boxes, "roi_align")
    size = _pair(output_size)
    _check_output_size("roi_align", size)
    _check_sampling_ratio(sampling_ratio)
    return roi_align_op(
        input, rois, float(spatial_scale), size[0], size[1], sampling_ratio, bool(aligned)
    )


def roi_pool(
    input: Tensor,
    boxes: Tensor | list[Tensor],
    output_size: int | tuple[int, int],
    spatial_scale: float = 1.0,
) -> Tensor:
    """RoI Pool (Fast R-CNN): the maximum of each box's quantised bins, as torchvision.

    Box corners are scaled and rounded to cells; an empty bin (outside the map) is 0.

    Args:
        input: the feature maps, [N, C, H, W].
        boxes: [K, 5] ``(batch index, x1, y1, x2, y2)``, or a list of N [L, 4] tensors.
        output_size: the bins per box, ``int`` or ``(height, width)``.
        spatial_scale: the scale from box coordinates to ``input``'s.

    Returns:
        The pooled features, [K, C, output_size[0], output_size[1]].

    Example:
        >>> import torch
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> roi_pool(x, torch.tensor([[0.0, 0, 0, 3, 3]]), 2).flatten().tolist()
        [5.0, 7.0, 13.0, 15.0]
    """
    rois = _rois(input, boxes, "roi_pool")
    size = _pair(output_size)
    _check_output_size("roi_pool", size)
    return roi_pool_op(input, rois, float(spatial_scale), size[0], size[1])[0]


def ps_roi_align(
    input: Tensor,
    boxes: Tensor | list[Tensor],
    output_size: int | tuple[int, int],
    spatial_scale: float = 1.0,
    sampling_ratio: int = -1,
) -> Tensor:
    """Position-sensitive RoI Align (R-FCN), as torchvision.

    As :func:`roi_align` with ``aligned=True``, but output channel ``c`` at bin
    ``(i, j)`` reads input channel ``(c * PH + i) * PW + j``, so ``C`` must be a
    multiple of ``PH * PW``. As torchvision, a box with an empty adaptive sampling
    grid (zero width or height) gives NaN.

    Args:
        input: the feature maps, [N, C, H, W].
        boxes: [K, 5] ``(batch index, x1, y1, x2, y2)``, or a list of N [L, 4] tensors.
        output_size: the bins per box ``(PH, PW)``, or an int for both.
        spatial_scale: the scale from box coordinates to ``input``'s.
        sampling_ratio: samples per bin and axis; ``<= 0``: adaptive.

    Returns:
        [K, C / (PH * PW), PH, PW].

    Example:
        >>> import torch
        >>> ps_roi_align(torch.ones(1, 8, 6, 6), [torch.tensor([[0.0, 0, 4, 4]])], 2).shape
        torch.Size([1, 2, 2, 2])
    """
    rois = _rois(input, boxes, "ps_roi_align")
    size = _pair(output_size)
    _check_output_size("ps_roi_align", size)
    _check_ps_channels("ps_roi_align", input, size)
    _check_sampling_ratio(sampling_ratio)
    return ps_roi_align_op(input, rois, float(spatial_scale), size[0], size[1], sampling_ratio)


def ps_roi_pool(
    input: Tensor,
    boxes: Tensor | list[Tensor],
    output_size: int | tuple[int, int],
    spatial_scale: float = 1.0,
) -> Tensor:
    """Position-sensitive RoI Pool (R-FCN): each bin's average over its own channels.

    Bins are quantised as torchvision's (rounded corners, clipped to the map less its
    last row and column); output channel ``c`` at bin ``(i, j)`` averages input
    channel ``(c * PH + i) * PW + j``; an empty bin is 0.

    Args:
        input: the feature maps, [N, C, H, W].
        boxes: [K, 5] ``(batch index, x1, y1, x2, y2)``, or a list of N [L, 4] tensors.
        output_size: the bins per box ``(PH, PW)``, or an int for both.
        spatial_scale: the scale from box coordinates to ``input``'s.

    Returns:
        [K, C / (PH * PW), PH, PW].

    Example:
        >>> import torch
        >>> ps_roi_pool(torch.ones(1, 4, 6, 6), torch.tensor([[0.0, 0, 0, 4, 4]]), 2).flatten()
        tensor([1., 1., 1., 1.])
    """
    rois = _rois(input, boxes, "ps_roi_pool")
    size = _pair(output_size)
    _check_output_size("ps_roi_pool", size)
    _check_ps_channels("ps_roi_pool", input, size)
    return ps_roi_pool_op(input, rois, float(spatial_scale), size[0], size[1])


class _RoIModule(nn.Module):
    """The options of a RoI module, shown by its ``repr`` as torchvision's are."""

    _fields: tuple[str, ...] = ("output_size", "spatial_scale")

    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float) -> None:
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in self._fields)
        return f"{self.__class__.__name__}({fields})"


class RoIAlign(_RoIModule):
    """:func:`roi_align` as a module, as ``torchvision.ops.RoIAlign``.

    Args:
        output_size: the bins per box, ``int`` or ``(height, width)``.
        spatial_scale: the scale from box coordinates to the input's.
        sampling_ratio: samples per bin and axis; ``<= 0``: adaptive.
        aligned: shift the boxes by -0.5 cell.

    Example:
        >>> import torch
        >>> RoIAlign(7, 0.25, 2)(torch.ones(1, 3, 16, 16), [torch.tensor([[0.0, 0, 32, 32]])]).shape
        torch.Size([1, 3, 7, 7])
    """

    _fields = ("output_size", "spatial_scale", "sampling_ratio", "aligned")

    def __init__(
        self,
        output_size: int | tuple[int, int],
        spatial_scale: float,
        sampling_ratio: int,
        aligned: bool = False,
    ) -> None:
        super().__init__(output_size, spatial_scale)
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        """Pool ``rois`` from ``input`` (see :func:`roi_align`)."""
        return roi_align(
            input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned
        )


class RoIPool(_RoIModule):
    """:func:`roi_pool` as a module, as ``torchvision.ops.RoIPool``.

    Args:
        output_size: the bins per box, ``int`` or ``(height, width)``.
        spatial_scale: the scale from box coordinates to the input's.

    Example:
        >>> import torch
        >>> RoIPool(2, 1.0)(torch.ones(1, 1, 4, 4), torch.tensor([[0.0, 0, 0, 3, 3]])).shape
        torch.Size([1, 1, 2, 2])
    """

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        """Pool ``rois`` from ``input`` (see :func:`roi_pool`)."""
        return roi_pool(input, rois, self.output_size, self.spatial_scale)


class PSRoIAlign(_RoIModule):
    """:func:`ps_roi_align` as a module, as ``torchvision.ops.PSRoIAlign``.

    Args:
        output_size: the bins per box ``(PH, PW)``, or an int for both.
        spatial_scale: the scale from box coordinates to the input's.
        sampling_ratio: samples per bin and axis; ``<= 0``: adaptive.

    Example:
        >>> import torch
        >>> PSRoIAlign(2, 1.0, 2)(torch.ones(1, 4, 6, 6), [torch.tensor([[0.0, 0, 4, 4]])]).shape
        torch.Size([1, 1, 2, 2])
    """

    _fields = ("output_size", "spatial_scale", "sampling_ratio")

    def __init__(
        self, output_size: int | tuple[int, int], spatial_scale: float, sampling_ratio: int
    ) -> None:
        super().__init__(output_size, spatial_scale)
        self.sampling_ratio = sampling_ratio

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        """Pool ``rois`` from ``input`` (see :func:`ps_roi_align`)."""
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio)


class PSRoIPool(_RoIModule):
    """:func:`ps_roi_pool` as a module, as ``torchvision.ops.PSRoIPool``.

    Args:
        output_size: the bins per box ``(PH, PW)``, or an int for both.
        spatial_scale: the scale from box coordinates to the input's.

    Example:
        >>> import torch
        >>> PSRoIPool(2, 1.0)(torch.ones(1, 4, 6, 6), torch.tensor([[0.0, 0, 0, 4, 4]])).shape
        torch.Size([1, 1, 2, 2])
    """

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        """Pool ``rois`` from ``input`` (see :func:`ps_roi_pool`)."""
        return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)
