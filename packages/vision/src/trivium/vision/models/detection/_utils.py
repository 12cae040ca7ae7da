"""What the two-stage detectors share: the balanced sampler and the builders' weights handling.

``BalancedPositiveNegativeSampler`` is torchvision's (``models.detection._utils``):
the same ``torch.randperm`` calls in the same order, so a run seeded alike samples
alike.

Example:
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> pos, neg = BalancedPositiveNegativeSampler(4, 0.5)([torch.tensor([1, 0, 0, -1, 2, 0])])
    >>> pos[0].tolist(), int(neg[0].sum())
    ([1, 0, 0, 0, 1, 0], 2)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models.weights import Weights, load_weights
from trivium.vision.ops import FrozenBatchNorm2d

__all__ = ["BalancedPositiveNegativeSampler", "overwrite_eps"]


class BalancedPositiveNegativeSampler:
    """Samples up to ``batch_size_per_image`` elements per image, ``positive_fraction`` positive.

    Args:
        batch_size_per_image: elements drawn per image.
        positive_fraction: the largest share of positives among them (the rest, and
            any shortfall of positives, are negatives).

    Example:
        >>> import torch
        >>> sampler = BalancedPositiveNegativeSampler(2, 0.5)
        >>> pos, neg = sampler([torch.tensor([-1, 0, 3])])
        >>> pos[0].tolist(), neg[0].tolist()
        ([0, 0, 1], [0, 1, 0])
    """

    def __init__(self, batch_size_per_image: int, positive_fraction: float) -> None:
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """Per image, uint8 masks of the positives and of the negatives drawn.

        ``matched_idxs`` holds one tensor per image: -1 ignored, 0 negative, >= 1 positive.
        """
        pos_idx, neg_idx = [], []
        for matched in matched_idxs:
            positive = torch.where(matched >= 1)[0]
            negative = torch.where(matched == 0)[0]
            num_pos = min(positive.numel(), int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)
            perm1 = torch.randperm(positive.numel(), device=positive.device)[:num_pos]
            perm2 = torch.randperm(negative.numel(), device=negative.device)[:num_neg]
            pos_mask = torch.zeros_like(matched, dtype=torch.uint8)
            neg_mask = torch.zeros_like(matched, dtype=torch.uint8)
            pos_mask[positive[perm1]] = 1
            neg_mask[negative[perm2]] = 1
            pos_idx.append(pos_mask)
            neg_idx.append(neg_mask)
        return pos_idx, neg_idx


def overwrite_eps(model: nn.Module, eps: float) -> None:
    """Set ``eps`` of every :class:`~trivium.vision.ops.FrozenBatchNorm2d` in ``model``.

    torchvision's published weights of its first detectors were trained with ``eps=0``.

    Example:
        >>> from trivium.vision.ops import FrozenBatchNorm2d
        >>> m = nn.Sequential(FrozenBatchNorm2d(2))
        >>> overwrite_eps(m, 0.0)
        >>> m[0].eps
        0.0
    """
    for module in model.modules():
        if isinstance(module, FrozenBatchNorm2d):
            module.eps = eps


def refuse_legacy_arguments(name: str, kwargs: dict[str, Any]) -> None:
    """Raise ``ValueError`` for torchvision's ``pretrained=True`` / ``pretrained_backbone=True``.

    They would download weights; ``False`` is dropped from ``kwargs``.
    """
    for legacy in ("pretrained", "pretrained_backbone"):
        if kwargs.pop(legacy, False):
            raise ValueError(
                f"{name}: {legacy}=True (torchvision's deprecated argument) would download "
                "weights; pass weights= / weights_backbone= a local file path or a state dict"
            )


def weights_and_classes(
    name: str,
    weights: Weights | None,
    num_classes: int | None,
    class_key: str,
    default_classes: int = 91,
) -> tuple[dict[str, Tensor] | None, int]:
    """The loaded state dict (or None) and the number of classes, which the weights fix.

    A ``num_classes`` that differs from the weights' (rows of ``state[class_key]``)
    raises ``ValueError``, as torchvision's builders do.
    """
    if weights is None:
        return None, default_classes if num_classes is None else num_classes
    state = load_weights(weights, name)
    classes = _rows(state, class_key)
    if classes is None:
        return state, default_classes if num_classes is None else num_classes
    if num_classes is not None and num_classes != classes:
        raise ValueError(
            f"num_classes={num_classes} was given, but the {name} weights have {classes} classes"
        )
    return state, classes


def _rows(state: Mapping[str, Tensor], key: str) -> int | None:
    weight = state.get(key)
    return None if weight is None else int(weight.shape[0])
