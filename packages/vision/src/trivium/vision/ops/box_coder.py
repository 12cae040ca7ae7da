"""Box regression targets and anchor-to-object matching, as ``torchvision.models.detection._utils``.

Example:
    >>> import torch
    >>> coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
    >>> anchors = torch.tensor([[0.0, 0.0, 10.0, 10.0]])
    >>> target = torch.tensor([[1.0, 2.0, 11.0, 14.0]])
    >>> coder.decode_single(coder.encode_single(target, anchors), anchors).tolist()
    [[1.0, 2.0, 11.0, 14.0]]
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["BoxCoder", "BoxLinearCoder", "Matcher", "SSDMatcher", "encode_boxes"]


def encode_boxes(reference_boxes: Tensor, proposals: Tensor, weights: Tensor) -> Tensor:
    """The deltas ``(dx, dy, dw, dh)`` ``[N, 4]`` taking ``proposals`` to ``reference_boxes``.

    Scaled by ``weights`` ``(wx, wy, ww, wh)``.

    ``dx = wx * (gt_cx - cx) / w``, ``dw = ww * log(gt_w / w)`` and the same for y, h.

    Example:
        >>> import torch
        >>> ones = torch.ones(4)
        >>> encode_boxes(torch.tensor([[2.0, 0, 12, 10]]), torch.tensor([[0.0, 0, 10, 10]]), ones)
        tensor([[0.2000, 0.0000, 0.0000, 0.0000]])
    """
    wx, wy, ww, wh = weights[0], weights[1], weights[2], weights[3]
    proposals_x1 = proposals[:, 0].unsqueeze(1)
    proposals_y1 = proposals[:, 1].unsqueeze(1)
    proposals_x2 = proposals[:, 2].unsqueeze(1)
    proposals_y2 = proposals[:, 3].unsqueeze(1)
    reference_boxes_x1 = reference_boxes[:, 0].unsqueeze(1)
    reference_boxes_y1 = reference_boxes[:, 1].unsqueeze(1)
    reference_boxes_x2 = reference_boxes[:, 2].unsqueeze(1)
    reference_boxes_y2 = reference_boxes[:, 3].unsqueeze(1)

    ex_widths = proposals_x2 - proposals_x1
    ex_heights = proposals_y2 - proposals_y1
    ex_ctr_x = proposals_x1 + 0.5 * ex_widths
    ex_ctr_y = proposals_y1 + 0.5 * ex_heights
    gt_widths = reference_boxes_x2 - reference_boxes_x1
    gt_heights = reference_boxes_y2 - reference_boxes_y1
    gt_ctr_x = reference_boxes_x1 + 0.5 * gt_widths
    gt_ctr_y = reference_boxes_y1 + 0.5 * gt_heights

    targets_dx = wx * (gt_ctr_x - ex_ctr_x) / ex_widths
    targets_dy = wy * (gt_ctr_y - ex_ctr_y) / ex_heights
    targets_dw = ww * torch.log(gt_widths / ex_widths)
    targets_dh = wh * torch.log(gt_heights / ex_heights)
    return torch.cat((targets_dx, targets_dy, targets_dw, targets_dh), dim=1)


class BoxCoder:
    """Encodes ``"xyxy"`` boxes as deltas from reference boxes (anchors) and decodes them back.

    ``weights`` ``(wx, wy, ww, wh)`` scale the deltas; decoded ``dw`` and ``dh`` are
    clamped at ``bbox_xform_clip`` before ``exp``. The same arithmetic as
    torchvision's ``BoxCoder``, in the same order.

    Example:
        >>> import torch
        >>> coder = BoxCoder((10.0, 10.0, 5.0, 5.0))
        >>> anchors = [torch.tensor([[0.0, 0, 10, 10]])]
        >>> codes = coder.encode([torch.tensor([[2.0, 0, 12, 10]])], anchors)
        >>> codes[0].tolist()
        [[2.0, 0.0, 0.0, 0.0]]
        >>> coder.decode(codes[0], anchors).shape
        torch.Size([1, 1, 4])
    """

    def __init__(
        self,
        weights: tuple[float, float, float, float],
        bbox_xform_clip: float = math.log(1000.0 / 16),
    ) -> None:
        if len(weights) != 4:
            raise ValueError(f"weights must be 4 numbers (wx, wy, ww, wh), got {weights!r}")
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes: list[Tensor], proposals: list[Tensor]) -> tuple[Tensor, ...]:
        """:meth:`encode_single` on lists of per-image boxes; one ``[N_i, 4]`` tensor per image.

        Example:
            >>> import torch
            >>> boxes = [torch.tensor([[0.0, 0, 4, 4]]), torch.tensor([[1.0, 1, 3, 3]])]
            >>> [t.shape[0] for t in BoxCoder((1.0, 1.0, 1.0, 1.0)).encode(boxes, boxes)]
            [1, 1]
        """
        boxes_per_image = [len(b) for b in reference_boxes]
        targets = self.encode_single(torch.cat(reference_boxes, dim=0), torch.cat(proposals, dim=0))
        return targets.split(boxes_per_image, 0)

    def encode_single(self, reference_boxes: Tensor, proposals: Tensor) -> Tensor:
        """The deltas ``[N, 4]`` taking ``proposals`` to ``reference_boxes`` (both ``[N, 4]``).

        Example:
            >>> import torch
            >>> box = torch.tensor([[0.0, 0, 10, 10]])
            >>> BoxCoder((1.0, 1.0, 1.0, 1.0)).encode_single(box, box).tolist()
            [[0.0, 0.0, 0.0, 0.0]]
        """
        if reference_boxes.shape != proposals.shape:
            raise ValueError(
                "reference_boxes and proposals must have the same shape [N, 4], got "
                f"{list(reference_boxes.shape)} and {list(proposals.shape)}"
            )
        weights = torch.as_tensor(
            self.weights, dtype=reference_boxes.dtype, device=reference_boxes.device
        )
        return encode_boxes(reference_boxes, proposals, weights)

    def decode(self, rel_codes: Tensor, boxes: list[Tensor]) -> Tensor:
        """Decode ``rel_codes`` against the per-image reference ``boxes``: ``[sum N_i, K, 4]``.

        Example:
            >>> import torch
            >>> anchors = [torch.tensor([[0.0, 0, 10, 10], [5.0, 5, 9, 9]])]
            >>> BoxCoder((1.0, 1.0, 1.0, 1.0)).decode(torch.zeros(2, 8), anchors).shape
            torch.Size([2, 2, 4])
        """
        if not isinstance(boxes, (list, tuple)):
            raise TypeError(f"boxes must be a list or tuple of tensors, got {type(boxes).__name__}")
        if not isinstance(rel_codes, Tensor):
            raise TypeError(f"rel_codes must be a tensor, got {type(rel_codes).__name__}")
        boxes_per_image = [b.size(0) for b in boxes]
        concat_boxes = torch.cat(boxes, dim=0)
        box_sum = sum(boxes_per_image)
        if box_sum > 0:
            rel_codes = rel_codes.reshape(box_sum, -1)
        pred_boxes = self.decode_single(rel_codes, concat_boxes)
        if box_sum > 0:
            pred_boxes = pred_boxes.reshape(box_sum, -1, 4)
        return pred_boxes

    def decode_single(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        """Decode ``rel_codes`` ``[N, 4 * K]`` against ``boxes`` ``[N, 4]``: boxes ``[N, 4 * K]``.

        Example:
            >>> import torch
            >>> coder = BoxCoder((1.0, 1.0, 1.0, 1.0))
            >>> deltas = torch.tensor([[0.5, 0.0, 0.0, 0.0]])
            >>> coder.decode_single(deltas, torch.tensor([[0.0, 0, 4, 4]]))
            tensor([[2., 0., 6., 4.]])
        """
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights

        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = rel_codes[:, 2::4] / ww
        dh = rel_codes[:, 3::4] / wh
        # Keeps exp() finite for wild predictions.
        dw = torch.clamp(dw, max=self.bbox_xform_clip)
        dh = torch.clamp(dh, max=self.bbox_xform_clip)

        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        pred_w = torch.exp(dw) * widths[:, None]
        pred_h = torch.exp(dh) * heights[:, None]
        c_to_c_h = torch.tensor(0.5, dtype=pred_ctr_y.dtype, device=pred_h.device) * pred_h
        c_to_c_w = torch.tensor(0.5, dtype=pred_ctr_x.dtype, device=pred_w.device) * pred_w
        pred_boxes1 = pred_ctr_x - c_to_c_w
        pred_boxes2 = pred_ctr_y - c_to_c_h
        pred_boxes3 = pred_ctr_x + c_to_c_w
        pred_boxes4 = pred_ctr_y + c_to_c_h
        return torch.stack((pred_boxes1, pred_boxes2, pred_boxes3, pred_boxes4), dim=2).flatten(1)


class Matcher:
    """Assigns each prediction (column) the ground truth (row) it overlaps most, or a negative code.

    Called on a quality matrix ``[M ground truths, N predictions]`` (e.g. their IoU),
    it returns ``[N]`` int64: the matched row where the best quality is at least
    ``high_threshold``, ``BETWEEN_THRESHOLDS`` (-2) where it is in ``[low_threshold,
    high_threshold)``, ``BELOW_LOW_THRESHOLD`` (-1) below. With
    ``allow_low_quality_matches``, every prediction that is the best match of some
    ground truth (ties included) keeps its best row even below the thresholds.
    As torchvision's ``Matcher``.

    Example:
        >>> import torch
        >>> iou = torch.tensor([[0.9, 0.45, 0.1], [0.2, 0.3, 0.35]])
        >>> Matcher(0.5, 0.4)(iou).tolist()
        [0, -2, -1]
        >>> Matcher(0.5, 0.4, allow_low_quality_matches=True)(iou).tolist()
        [0, -2, 1]
    """

    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(
        self, high_threshold: float, low_threshold: float, allow_low_quality_matches: bool = False
    ) -> None:
        if low_threshold > high_threshold:
            raise ValueError(
                f"low_threshold ({low_threshold}) must be <= high_threshold ({high_threshold})"
            )
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix: Tensor) -> Tensor:
        """The matched row (or a negative code) of each column of ``match_quality_matrix``.

        Example:
            >>> import torch
            >>> Matcher(0.5, 0.5)(torch.tensor([[0.6], [0.7]])).tolist()
            [1]
        """
        if match_quality_matrix.dim() != 2:
            raise ValueError(
                "match_quality_matrix must be [ground truths, predictions], got shape "
                f"{list(match_quality_matrix.shape)}"
            )
        if match_quality_matrix.numel() == 0:
            if match_quality_matrix.shape[0] == 0:
                raise ValueError(
                    "No ground-truth boxes available for one of the images during training"
                )
            raise ValueError("No proposal boxes available for one of the images during training")

        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below_low_threshold = matched_vals < self.low_threshold
        between_thresholds = (matched_vals >= self.low_threshold) & (
            matched_vals < self.high_threshold
        )
        matches[below_low_threshold] = self.BELOW_LOW_THRESHOLD
        matches[between_thresholds] = self.BETWEEN_THRESHOLDS
        if all_matches is not None:
            self.set_low_quality_matches_(matches, all_matches, match_quality_matrix)
        return matches

    def set_low_quality_matches_(
        self, matches: Tensor, all_matches: Tensor, match_quality_matrix: Tensor
    ) -> None:
        """Give predictions that are some ground truth's best match their best row (in place).

        Example:
            >>> import torch
            >>> quality = torch.tensor([[0.1, 0.3]])
            >>> matches = torch.tensor([-1, -1])
            >>> Matcher(0.5, 0.4).set_low_quality_matches_(matches, torch.tensor([0, 0]), quality)
            >>> matches.tolist()
            [-1, 0]
        """
        highest_quality_foreach_gt, _ = match_quality_matrix.max(dim=1)
        # Ties count: every prediction reaching a ground truth's best quality.
        pairs = torch.where(match_quality_matrix == highest_quality_foreach_gt[:, None])
        pred_inds_to_update = pairs[1]
        matches[pred_inds_to_update] = all_matches[pred_inds_to_update]


class BoxLinearCoder:
    """FCOS's box coding: the distances from a reference box's centre to the four edges.

    As ``torchvision.models.detection._utils.BoxLinearCoder``: ``encode`` gives
    ``(left, top, right, bottom)`` from the reference centre, divided by the reference's
    width and height when ``normalize_by_size``; ``decode`` inverts it. Both work on
    any leading shape (``[..., 4]``).

    Args:
        normalize_by_size: divide the distances by the reference box's size.

    Example:
        >>> import torch
        >>> coder = BoxLinearCoder()
        >>> ref = torch.tensor([[0.0, 0.0, 8.0, 8.0]])
        >>> codes = coder.encode(ref, torch.tensor([[2.0, 1.0, 10.0, 6.0]]))
        >>> codes.tolist(), coder.decode(codes, ref).tolist()
        ([[0.25, 0.375, 0.75, 0.25]], [[2.0, 1.0, 10.0, 6.0]])
    """

    def __init__(self, normalize_by_size: bool = True) -> None:
        self.normalize_by_size = normalize_by_size

    def encode(self, reference_boxes: Tensor, proposals: Tensor) -> Tensor:
        """The distances from the centres of ``reference_boxes`` to the edges of ``proposals``.

        Example:
            >>> import torch
            >>> ref, box = torch.tensor([0.0, 0, 4, 4]), torch.tensor([1.0, 1, 3, 5])
            >>> BoxLinearCoder(False).encode(ref, box)
            tensor([1., 1., 1., 3.])
        """
        ctr_x = 0.5 * (reference_boxes[..., 0] + reference_boxes[..., 2])
        ctr_y = 0.5 * (reference_boxes[..., 1] + reference_boxes[..., 3])
        targets = torch.stack(
            (
                ctr_x - proposals[..., 0],
                ctr_y - proposals[..., 1],
                proposals[..., 2] - ctr_x,
                proposals[..., 3] - ctr_y,
            ),
            dim=-1,
        )
        if self.normalize_by_size:
            targets = targets / _sizes(reference_boxes)
        return targets

    def decode(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        """The boxes at distances ``rel_codes`` from the centres of ``boxes`` (same length).

        Example:
            >>> import torch
            >>> codes, ref = torch.tensor([1.0, 1, 1, 3]), torch.tensor([0.0, 0, 4, 4])
            >>> BoxLinearCoder(False).decode(codes, ref)
            tensor([1., 1., 3., 5.])
        """
        boxes = boxes.to(dtype=rel_codes.dtype)
        ctr_x = 0.5 * (boxes[..., 0] + boxes[..., 2])
        ctr_y = 0.5 * (boxes[..., 1] + boxes[..., 3])
        if self.normalize_by_size:
            rel_codes = rel_codes * _sizes(boxes)
        return torch.stack(
            (
                ctr_x - rel_codes[..., 0],
                ctr_y - rel_codes[..., 1],
                ctr_x + rel_codes[..., 2],
                ctr_y + rel_codes[..., 3],
            ),
            dim=-1,
        )


def _sizes(boxes: Tensor) -> Tensor:
    # (w, h, w, h) of each box, to scale its four distances.
    w = boxes[..., 2] - boxes[..., 0]
    h = boxes[..., 3] - boxes[..., 1]
    return torch.stack((w, h, w, h), dim=-1)


class SSDMatcher(Matcher):
    """SSD's matching: IoU at least ``threshold``, and every ground truth keeps its best box.

    A :class:`Matcher` with both thresholds at ``threshold`` and no low-quality rule,
    after which the prediction each ground truth overlaps most is matched to it
    (whatever its IoU), as torchvision's ``SSDMatcher``.

    Args:
        threshold: the IoU from which a prediction is foreground.

    Example:
        >>> import torch
        >>> iou = torch.tensor([[0.9, 0.3, 0.1], [0.2, 0.35, 0.3]])
        >>> SSDMatcher(0.5)(iou).tolist()
        [0, 1, -1]
    """

    def __init__(self, threshold: float) -> None:
        super().__init__(threshold, threshold, allow_low_quality_matches=False)

    def __call__(self, match_quality_matrix: Tensor) -> Tensor:
        """The matched ground truth of each prediction, or -1.

        Example:
            >>> import torch
            >>> SSDMatcher(0.5)(torch.tensor([[0.1, 0.2]])).tolist()
            [-1, 0]
        """
        matches = super().__call__(match_quality_matrix)
        _, best_pred_of_each_gt = match_quality_matrix.max(dim=1)
        matches[best_pred_of_each_gt] = torch.arange(
            best_pred_of_each_gt.size(0), dtype=torch.int64, device=best_pred_of_each_gt.device
        )
        return matches
