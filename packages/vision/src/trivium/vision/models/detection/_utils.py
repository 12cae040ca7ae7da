"""What the detectors share: the balanced sampler, the builders' weights handling, the
checks of the targets, the forward's first steps and the one-stage detectors' selection
of detections.

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

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models.weights import Weights, load_weights
from trivium.vision.ops import FrozenBatchNorm2d, batched_nms, clip_boxes_to_image

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


def plain(t: Any) -> Any:
    """``t`` as a plain tensor: tensor subclasses (``tv_tensors.BoundingBoxes``) travel so.

    Example:
        >>> type(plain(nn.Parameter(torch.zeros(1)))).__name__, plain(3)
        ('Tensor', 3)
    """
    return t.as_subclass(Tensor) if isinstance(t, Tensor) and type(t) is not Tensor else t


def checked_targets(
    targets: Any, num_images: int, num_classes: int | None
) -> list[dict[str, Tensor]]:
    """The training targets, one dict per image, checked (``boxes``, ``labels``) and plain.

    Raises ``ValueError`` / ``TypeError`` naming the target at fault.

    Example:
        >>> t = [{"boxes": torch.tensor([[0.0, 0, 4, 4]]), "labels": torch.tensor([1])}]
        >>> sorted(checked_targets(t, 1, 2)[0])
        ['boxes', 'labels']
    """
    if targets is None:
        raise ValueError("targets should not be none when in training mode")
    if not isinstance(targets, Sequence) or len(targets) != num_images:
        n = len(targets) if isinstance(targets, Sequence) else type(targets).__name__
        raise ValueError(
            f"targets must be a list of one dict per image: {num_images} images, got {n}"
        )
    checked = []
    for i, target in enumerate(targets):
        if not isinstance(target, Mapping):
            raise TypeError(f"targets[{i}] must be a dict, got {type(target).__name__}")
        for key in ("boxes", "labels"):
            if key not in target:
                raise ValueError(f"targets[{i}] has no {key!r} (it has {sorted(map(str, target))})")
        target = {k: plain(v) for k, v in target.items()}
        _check_boxes(target["boxes"], i)
        _check_labels(target["labels"], target["boxes"].shape[0], i, num_classes)
        checked.append(target)
    return checked


def _check_boxes(boxes: Any, i: int) -> None:
    if not isinstance(boxes, Tensor):
        raise TypeError(
            f"Expected target boxes to be of type Tensor, got {type(boxes).__name__} "
            f"for target at index {i}"
        )
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise ValueError(
            "Expected target boxes to be a tensor of shape [N, 4], "
            f"got {tuple(boxes.shape)} for target at index {i}"
        )
    if not boxes.is_floating_point():
        raise TypeError(
            f"Expected target boxes to be floating point, got {boxes.dtype} for target at index {i}"
        )
    degenerate = (boxes[:, 2:] <= boxes[:, :2]).any(dim=1)
    if degenerate.any():
        box = boxes[int(torch.where(degenerate)[0][0])].tolist()
        raise ValueError(
            "All bounding boxes should have positive height and width."
            f" Found invalid box {box} for target at index {i}."
        )
    if not torch.isfinite(boxes).all():
        raise ValueError(f"target boxes must be finite, got a NaN or inf for target at index {i}")


def _check_labels(labels: Any, num_boxes: int, i: int, num_classes: int | None) -> None:
    if not isinstance(labels, Tensor) or labels.dtype not in (torch.int64, torch.int32):
        got = labels.dtype if isinstance(labels, Tensor) else type(labels).__name__
        raise TypeError(
            f"Expected target labels to be an int64 tensor, got {got} for target at index {i}"
        )
    if labels.shape != (num_boxes,):
        raise ValueError(
            f"Expected target labels of shape [{num_boxes}] (one per box), "
            f"got {tuple(labels.shape)} for target at index {i}"
        )
    if num_classes is not None and num_boxes and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(
            f"target labels must be in [0, {num_classes}), got {labels.tolist()} "
            f"for target at index {i}"
        )


def resolve_weights(
    name: str,
    weights: Weights | None,
    num_classes: int | None,
    weights_backbone: Weights | None,
    kwargs: dict[str, Any],
    classes_of: Callable[[Mapping[str, Tensor]], int | None],
    default_classes: int = 91,
) -> tuple[dict[str, Tensor] | None, int, Weights | None]:
    """A one-stage builder's ``(state dict or None, num_classes, weights_backbone)``.

    With ``weights`` the backbone's own weights are dropped (the model's state holds
    them) and ``num_classes`` follows the weights (``classes_of`` reads it there);
    a different ``num_classes`` given with them raises ``ValueError``.

    Example:
        >>> state = {"cls.weight": torch.zeros(3, 1)}
        >>> _, classes, backbone = resolve_weights(
        ...     "m", state, None, "backbone.pt", {}, lambda s: s["cls.weight"].shape[0])
        >>> classes, backbone
        (3, None)
    """
    refuse_legacy_arguments(name, kwargs)
    state = None
    if weights is not None:
        state = load_weights(weights, name)
        weights_backbone = None
        classes = classes_of(state)
        if classes is not None:
            if num_classes is not None and num_classes != classes:
                raise ValueError(
                    f"num_classes={num_classes} was given, but the {name} weights have "
                    f"{classes} classes"
                )
            num_classes = classes
    if num_classes is None:
        num_classes = default_classes
    return state, num_classes, weights_backbone


def prepared_batch(
    model: nn.Module, images: list[Tensor], targets: list[dict[str, Tensor]] | None
) -> tuple[Any, list[dict[str, Tensor]] | None, list[tuple[int, int]], dict[str, Tensor]]:
    """A detector's first steps: ``(image_list, targets, original sizes, feature maps)``.

    ``model`` has ``transform``, ``backbone`` and ``_num_classes()`` (or
    ``_checked_targets(targets, num_images)``); a 4-D batch is split into images,
    tensor subclasses become plain, the targets are checked in training (dropped in
    eval), the images resized and batched by ``model.transform`` and the backbone's
    feature maps returned by name (one map becomes level ``"0"``).

    Example:
        >>> from trivium.vision.models.detection.transform import GeneralizedRCNNTransform
        >>> model = nn.Module().eval()
        >>> model.transform = GeneralizedRCNNTransform(32, 32, [0.5] * 3, [0.5] * 3)
        >>> model.backbone = nn.Conv2d(3, 4, 8, stride=8)
        >>> image_list, _, sizes, features = prepared_batch(model, torch.rand(1, 3, 16, 16), None)
        >>> image_list.image_sizes, sizes, [tuple(f.shape) for f in features.values()]
        ([(32, 32)], [(16, 16)], [(1, 4, 4, 4)])
    """
    if isinstance(images, Tensor) and images.dim() == 4:
        images = list(images.unbind(0))
    images = [plain(img) for img in images]
    if model.training and hasattr(model, "_checked_targets"):  # the R-CNNs check more
        targets = model._checked_targets(targets, len(images))
    elif model.training:
        num_classes = model._num_classes() if hasattr(model, "_num_classes") else None
        targets = checked_targets(targets, len(images), num_classes)
    else:
        targets = None
    original_image_sizes = [(int(img.shape[-2]), int(img.shape[-1])) for img in images]
    image_list, targets = model.transform(images, targets)
    features = model.backbone(image_list.tensors)
    if isinstance(features, Tensor):
        features = OrderedDict([("0", features)])
    return image_list, targets, original_image_sizes, features


def nms_detections(
    boxes: list[Tensor],
    scores: list[Tensor],
    labels: list[Tensor],
    nms_thresh: float,
    detections_per_img: int,
) -> dict[str, Tensor]:
    """One image's detections: the candidates joined, per-class NMS, the best kept.

    Example:
        >>> boxes = [torch.tensor([[0.0, 0, 4, 4], [0.0, 0, 4, 5]])]
        >>> det = nms_detections(boxes, [torch.tensor([0.9, 0.8])], [torch.tensor([1, 1])],
        ...                      0.5, 10)
        >>> det["scores"]
        tensor([0.9000])
    """
    image_boxes = torch.cat(boxes, dim=0)
    image_scores = torch.cat(scores, dim=0)
    image_labels = torch.cat(labels, dim=0)
    keep = batched_nms(image_boxes, image_scores, image_labels, nms_thresh)
    keep = keep[:detections_per_img]
    return {"boxes": image_boxes[keep], "scores": image_scores[keep], "labels": image_labels[keep]}


def dense_detections(
    head_outputs: dict[str, list[Tensor]],
    anchors: list[list[Tensor]],
    image_shapes: list[tuple[int, int]],
    score: Callable[[dict[str, Tensor]], Tensor],
    decode: Callable[[Tensor, Tensor], Tensor],
    model: nn.Module,
) -> list[dict[str, Tensor]]:
    """A one-stage detector's detections (RetinaNet's, FCOS's ``postprocess_detections``).

    Per image and level: ``score`` of the level's outputs (``[HWA, C]`` probabilities),
    the best ``model.topk_candidates`` (anchor, class) pairs above ``model.score_thresh``,
    their boxes ``decode(regression, anchors)`` clipped to the image; then per-class
    NMS at ``model.nms_thresh``, at most ``model.detections_per_img``.

    Args:
        head_outputs: per key, one ``[N, HWA, ...]`` tensor per level
            (``bbox_regression`` the boxes' regression).
        anchors: per image, its anchors per level.
        image_shapes: per image, ``(height, width)`` to clip to.
        score: one image's level outputs (by key) to their ``[HWA, C]`` scores.
        decode: ``(regression, anchors)`` to boxes.
        model: holds the thresholds (``score_thresh``, ``topk_candidates``,
            ``nms_thresh``, ``detections_per_img``).

    Example:
        >>> model = nn.Module()
        >>> model.score_thresh, model.topk_candidates = 0.5, 10
        >>> model.nms_thresh, model.detections_per_img = 0.5, 10
        >>> out = {"cls_logits": [torch.tensor([[[-5.0, 3.0]]])],
        ...        "bbox_regression": [torch.tensor([[[0.0, 0, 4, 4]]])]}
        >>> det = dense_detections(out, [[torch.zeros(1, 4)]], [(8, 8)],
        ...     lambda o: torch.sigmoid(o["cls_logits"]), lambda r, a: r + a, model)
        >>> det[0]["boxes"], det[0]["labels"]
        (tensor([[0., 0., 4., 4.]]), tensor([1]))
    """
    num_levels = len(head_outputs["bbox_regression"])
    detections: list[dict[str, Tensor]] = []
    for index, image_shape in enumerate(image_shapes):
        boxes, scores, labels = [], [], []
        for level in range(num_levels):
            outputs = {key: values[level][index] for key, values in head_outputs.items()}
            level_scores = score(outputs)
            num_classes = level_scores.shape[-1]
            candidates, anchor_idxs, level_labels = _top_candidates(
                level_scores.flatten(), num_classes, model.score_thresh, model.topk_candidates
            )
            level_anchors = anchors[index][level]
            regression = outputs["bbox_regression"][anchor_idxs]
            level_boxes = decode(regression, level_anchors[anchor_idxs])
            boxes.append(clip_boxes_to_image(level_boxes, image_shape))
            scores.append(candidates)
            labels.append(level_labels)
        detections.append(
            nms_detections(boxes, scores, labels, model.nms_thresh, model.detections_per_img)
        )
    return detections


def _top_candidates(
    scores: Tensor, num_classes: int, score_thresh: float, topk: int
) -> tuple[Tensor, Tensor, Tensor]:
    # The best topk (anchor, class) pairs of the flat scores above score_thresh.
    keep = scores > score_thresh
    scores = scores[keep]
    topk_idxs = torch.where(keep)[0]
    scores, idxs = scores.topk(min(topk, topk_idxs.size(0)))
    topk_idxs = topk_idxs[idxs]
    anchor_idxs = torch.div(topk_idxs, num_classes, rounding_mode="floor")
    return scores, anchor_idxs, topk_idxs % num_classes


def checked_backbone(backbone: nn.Module) -> nn.Module:
    """``backbone``, which must have ``out_channels`` (the width of every feature level).

    Example:
        >>> checked_backbone(nn.Identity())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: backbone should contain an attribute out_channels ...
    """
    if not hasattr(backbone, "out_channels"):
        raise ValueError(
            "backbone should contain an attribute out_channels "
            "specifying the number of output channels (assumed to be the "
            "same for all the levels)"
        )
    return backbone
