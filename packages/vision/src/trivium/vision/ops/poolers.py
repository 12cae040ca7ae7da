"""Multi-scale RoI Align over a feature pyramid, as ``torchvision.ops.poolers``.

Each box is pooled from the pyramid level eq. 1 of the FPN paper gives it
(``floor(4 + log2(sqrt(area) / 224))``, clamped to the levels present), at the scale
inferred from that level's size against the largest image.

Example:
    >>> import torch
    >>> pooler = MultiScaleRoIAlign(["p2", "p3"], 3, 2)
    >>> features = {"p2": torch.rand(1, 4, 64, 64), "p3": torch.rand(1, 4, 32, 32)}
    >>> pooler(features, [torch.tensor([[0.0, 0, 100, 100]])], [(256, 256)]).shape
    torch.Size([1, 4, 3, 3])
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from trivium.vision.ops.boxes import box_area
from trivium.vision.ops.roi import roi_align

__all__ = ["LevelMapper", "MultiScaleRoIAlign"]


class LevelMapper:
    """The FPN level of each box (eq. 1 of the FPN paper), as torchvision's.

    ``level = floor(canonical_level + log2(sqrt(area) / canonical_scale) + eps)``,
    clamped to ``[k_min, k_max]``, returned less ``k_min`` (an index into the levels).

    Args:
        k_min: the finest level present (e.g. 2 for a stride-4 map).
        k_max: the coarsest level present.
        canonical_scale: the box size that maps to ``canonical_level``.
        canonical_level: the level of a ``canonical_scale``-sized box.
        eps: added before the floor, so exact powers of two stay on their level.

    Example:
        >>> import torch
        >>> LevelMapper(2, 5)([torch.tensor([[0.0, 0, 224, 224], [0, 0, 20, 20]])]).tolist()
        [2, 0]
    """

    def __init__(
        self,
        k_min: int,
        k_max: int,
        canonical_scale: int = 224,
        canonical_level: int = 4,
        eps: float = 1e-6,
    ) -> None:
        self.k_min = k_min
        self.k_max = k_max
        self.s0 = canonical_scale
        self.lvl0 = canonical_level
        self.eps = eps

    def __call__(self, boxlists: list[Tensor]) -> Tensor:
        """The level index (int64) of every box of ``boxlists``, concatenated."""
        s = torch.sqrt(torch.cat([box_area(boxes) for boxes in boxlists]))
        eps = torch.tensor(self.eps, dtype=s.dtype)
        levels = torch.floor(self.lvl0 + torch.log2(s / self.s0) + eps)
        levels = torch.clamp(levels, min=self.k_min, max=self.k_max)
        return levels.to(torch.int64) - self.k_min


def _infer_scale(feature: Tensor, original_size: tuple[int, int]) -> float:
    """The power of two nearest the feature map's height over the image's (torchvision's)."""
    approx = float(feature.shape[-2]) / float(original_size[0])
    return 2 ** float(torch.tensor(approx).log2().round())


def _setup_scales(
    features: list[Tensor],
    image_shapes: list[tuple[int, int]],
    canonical_scale: int,
    canonical_level: int,
) -> tuple[list[float], LevelMapper]:
    if not image_shapes:
        raise ValueError("image_shapes must not be empty")
    largest = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
    scales = [_infer_scale(f, largest) for f in features]
    lvl_min = int(-math.log2(scales[0]))
    lvl_max = int(-math.log2(scales[-1]))
    mapper = LevelMapper(lvl_min, lvl_max, canonical_scale, canonical_level)
    return scales, mapper


def _to_rois(boxes: list[Tensor]) -> Tensor:
    ids = [torch.full_like(b[:, :1], i) for i, b in enumerate(boxes)]
    return torch.cat((torch.cat(ids), torch.cat(boxes)), dim=1)


class MultiScaleRoIAlign(nn.Module):
    """RoI Align over an FPN, each box from its level, as ``torchvision.ops.MultiScaleRoIAlign``.

    The scales and the level mapper are inferred from the first call's feature and image
    sizes (``scales`` and ``map_levels``, as torchvision).

    Args:
        featmap_names: the keys of the feature maps to pool from, finest first.
        output_size: the bins per box, ``int`` or ``(height, width)``.
        sampling_ratio: samples per bin and axis for RoI Align; ``<= 0``: adaptive.
        canonical_scale: :class:`LevelMapper`'s canonical box size (224).
        canonical_level: :class:`LevelMapper`'s canonical level (4).

    Example:
        >>> import torch
        >>> m = MultiScaleRoIAlign(["feat1", "feat3"], 3, 2)
        >>> x = {"feat1": torch.rand(1, 5, 64, 64), "feat2": torch.rand(1, 5, 32, 32),
        ...      "feat3": torch.rand(1, 5, 16, 16)}
        >>> boxes = torch.rand(6, 4) * 256
        >>> boxes[:, 2:] += boxes[:, :2]
        >>> m(x, [boxes], [(512, 512)]).shape
        torch.Size([6, 5, 3, 3])
    """

    def __init__(
        self,
        featmap_names: list[str],
        output_size: int | tuple[int, int] | list[int],
        sampling_ratio: int,
        *,
        canonical_scale: int = 224,
        canonical_level: int = 4,
    ) -> None:
        super().__init__()
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.scales: list[float] | None = None
        self.map_levels: LevelMapper | None = None
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level

    def forward(
        self, x: dict[str, Tensor], boxes: list[Tensor], image_shapes: list[tuple[int, int]]
    ) -> Tensor:
        """Pool every box from its level.

        Args:
            x: the feature maps by name (the same channels, any sizes).
            boxes: per image, [L, 4] ``x1, y1, x2, y2`` boxes in image coordinates.
            image_shapes: each image's ``(height, width)`` before the backbone.

        Returns:
            [sum of L, C, output_size[0], output_size[1]].
        """
        features = [v for k, v in x.items() if k in self.featmap_names]
        if not features:
            raise ValueError(f"none of featmap_names {self.featmap_names} is among {list(x)}")
        if self.scales is None or self.map_levels is None:
            self.scales, self.map_levels = _setup_scales(
                features, image_shapes, self.canonical_scale, self.canonical_level
            )
        rois = _to_rois(boxes)
        if len(features) == 1:
            return roi_align(
                features[0], rois, self.output_size, self.scales[0], self.sampling_ratio
            )
        levels = self.map_levels(boxes)
        first = features[0]
        result = first.new_zeros((rois.shape[0], first.shape[1], *self.output_size))
        for level, (feature, scale) in enumerate(zip(features, self.scales, strict=False)):
            idx = torch.where(levels == level)[0]
            pooled = roi_align(feature, rois[idx], self.output_size, scale, self.sampling_ratio)
            result[idx] = pooled.to(result.dtype)
        return result

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(featmap_names={self.featmap_names}, "
            f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})"
        )
