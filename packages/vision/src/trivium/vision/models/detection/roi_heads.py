"""The second stage of the R-CNN detectors, as ``torchvision.models.detection.roi_heads``.

:class:`RoIHeads` pools each proposal's features, classifies and refines it (the box
branch), and optionally predicts a mask (Mask R-CNN) or keypoint heatmaps (Keypoint
R-CNN) for the boxes it keeps. In training it samples proposals against the targets
and returns the losses. The functions are torchvision's, with the same arithmetic:
``fastrcnn_loss``, ``maskrcnn_loss`` / ``maskrcnn_inference`` /
``paste_masks_in_image`` and ``keypointrcnn_loss`` / ``keypointrcnn_inference`` /
``keypoints_to_heatmap`` / ``heatmaps_to_keypoints``.

Example:
    >>> import torch
    >>> masks = torch.ones(1, 1, 28, 28)
    >>> pasted = paste_masks_in_image(masks, torch.tensor([[2.0, 3.0, 10.0, 12.0]]), (16, 16))
    >>> pasted.shape, bool(pasted[0, 0, 7, 6] > 0.5), bool(pasted[0, 0, 15, 15] == 0)
    (torch.Size([1, 1, 16, 16]), True, True)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models.detection._utils import BalancedPositiveNegativeSampler
from trivium.vision.ops import (
    BoxCoder,
    Matcher,
    batched_nms,
    box_iou,
    clip_boxes_to_image,
    remove_small_boxes,
    roi_align,
)

__all__ = [
    "RoIHeads",
    "fastrcnn_loss",
    "heatmaps_to_keypoints",
    "keypointrcnn_inference",
    "keypointrcnn_loss",
    "keypoints_to_heatmap",
    "maskrcnn_inference",
    "maskrcnn_loss",
    "paste_masks_in_image",
]


def fastrcnn_loss(
    class_logits: Tensor,
    box_regression: Tensor,
    labels: list[Tensor],
    regression_targets: list[Tensor],
) -> tuple[Tensor, Tensor]:
    """Cross-entropy of the class logits and smooth L1 (beta 1/9) of the positives' class deltas.

    The box loss is summed over the positives and divided by all sampled proposals.

    Example:
        >>> import torch
        >>> cls, box = fastrcnn_loss(torch.zeros(2, 3), torch.zeros(2, 12),
        ...     [torch.tensor([0, 2])], [torch.zeros(2, 4)])
        >>> round(cls.item(), 4), box.item()
        (1.0986, 0.0)
    """
    all_labels = torch.cat(labels, dim=0)
    all_targets = torch.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, all_labels)
    pos = torch.where(all_labels > 0)[0]
    labels_pos = all_labels[pos]
    n = class_logits.shape[0]
    box_regression = box_regression.reshape(n, box_regression.size(-1) // 4, 4)
    box_loss = F.smooth_l1_loss(
        box_regression[pos, labels_pos], all_targets[pos], beta=1 / 9, reduction="sum"
    )
    return classification_loss, box_loss / all_labels.numel()


# ------------------------------------------------------------------------------ masks


def maskrcnn_inference(x: Tensor, labels: list[Tensor]) -> list[Tensor]:
    """Per image, the mask probabilities ``[D, 1, M, M]`` of each detection's class.

    Example:
        >>> import torch
        >>> logits = torch.zeros(2, 3, 4, 4)
        >>> logits[1, 2] = 10.0
        >>> out = maskrcnn_inference(logits, [torch.tensor([1]), torch.tensor([2])])
        >>> [tuple(m.shape) for m in out], round(out[1].min().item(), 4)
        ([(1, 1, 4, 4), (1, 1, 4, 4)], 1.0)
    """
    mask_prob = x.sigmoid()
    boxes_per_image = [label.shape[0] for label in labels]
    all_labels = torch.cat(labels)
    index = torch.arange(x.shape[0], device=all_labels.device)
    return list(mask_prob[index, all_labels][:, None].split(boxes_per_image, dim=0))


def _project_masks_on_boxes(
    gt_masks: Tensor, boxes: Tensor, matched_idxs: Tensor, m: int
) -> Tensor:
    # Each proposal's target mask: its matched object's mask, cropped and resized to m x m.
    rois = torch.cat([matched_idxs.to(boxes)[:, None], boxes], dim=1)
    return roi_align(gt_masks[:, None].to(rois), rois, (m, m), 1.0)[:, 0]


def maskrcnn_loss(
    mask_logits: Tensor,
    proposals: list[Tensor],
    gt_masks: list[Tensor],
    gt_labels: list[Tensor],
    mask_matched_idxs: list[Tensor],
) -> Tensor:
    """Binary cross-entropy of each positive proposal's class mask against its target's mask.

    The target is the matched object's mask cropped to the proposal with RoI Align.

    Example:
        >>> import torch
        >>> loss = maskrcnn_loss(torch.zeros(1, 2, 4, 4), [torch.tensor([[0.0, 0, 8, 8]])],
        ...     [torch.ones(1, 8, 8)], [torch.tensor([1])], [torch.tensor([0])])
        >>> round(loss.item(), 4)
        0.6931
    """
    discretization_size = mask_logits.shape[-1]
    labels = torch.cat(
        [gt_label[idxs] for gt_label, idxs in zip(gt_labels, mask_matched_idxs, strict=True)]
    )
    mask_targets = torch.cat(
        [
            _project_masks_on_boxes(m, p, i, discretization_size)
            for m, p, i in zip(gt_masks, proposals, mask_matched_idxs, strict=True)
        ]
    )
    if mask_targets.numel() == 0:  # the mean of nothing: a zero that keeps the graph
        return mask_logits.sum() * 0
    return F.binary_cross_entropy_with_logits(
        mask_logits[torch.arange(labels.shape[0], device=labels.device), labels], mask_targets
    )


def _expand_boxes(boxes: Tensor, scale: float) -> Tensor:
    w_half = (boxes[:, 2] - boxes[:, 0]) * 0.5 * scale
    h_half = (boxes[:, 3] - boxes[:, 1]) * 0.5 * scale
    x_c = (boxes[:, 2] + boxes[:, 0]) * 0.5
    y_c = (boxes[:, 3] + boxes[:, 1]) * 0.5
    boxes_exp = torch.zeros_like(boxes)
    boxes_exp[:, 0] = x_c - w_half
    boxes_exp[:, 2] = x_c + w_half
    boxes_exp[:, 1] = y_c - h_half
    boxes_exp[:, 3] = y_c + h_half
    return boxes_exp


def _paste_mask_in_image(mask: Tensor, box: list[int], im_h: int, im_w: int) -> Tensor:
    # The mask resized (bilinear) to the integer box, cut to the image, in a zero canvas.
    w = max(box[2] - box[0] + 1, 1)
    h = max(box[3] - box[1] + 1, 1)
    mask = F.interpolate(
        mask.expand((1, 1, -1, -1)), size=(h, w), mode="bilinear", align_corners=False
    )[0][0]
    im_mask = torch.zeros((im_h, im_w), dtype=mask.dtype, device=mask.device)
    x_0, x_1 = max(box[0], 0), min(box[2] + 1, im_w)
    y_0, y_1 = max(box[1], 0), min(box[3] + 1, im_h)
    if x_1 > x_0 and y_1 > y_0:
        im_mask[y_0:y_1, x_0:x_1] = mask[
            (y_0 - box[1]) : (y_1 - box[1]), (x_0 - box[0]) : (x_1 - box[0])
        ]
    return im_mask


def paste_masks_in_image(
    masks: Tensor, boxes: Tensor, img_shape: tuple[int, int], padding: int = 1
) -> Tensor:
    """Box-relative masks ``[N, 1, M, M]`` pasted at their boxes into ``[N, 1, H, W]`` images.

    Each mask is padded by ``padding`` (and its box grown alike), resized to the box
    (bilinear) and placed in a zero image of ``img_shape`` ``(H, W)``, as torchvision's.

    Example:
        >>> import torch
        >>> out = paste_masks_in_image(torch.ones(2, 1, 4, 4),
        ...     torch.tensor([[0.0, 0, 3, 3], [4, 4, 7, 7]]), (8, 8))
        >>> out.shape, out[0, 0, :4, :4].min().item() > 0, out[0, 0, 6, 6].item()
        (torch.Size([2, 1, 8, 8]), True, 0.0)
    """
    m = masks.shape[-1]
    scale = float(m + 2 * padding) / m
    masks = F.pad(masks, (padding,) * 4)
    int_boxes = _expand_boxes(boxes, scale).to(dtype=torch.int64).tolist()
    im_h, im_w = img_shape
    res = [
        _paste_mask_in_image(mask[0], box, im_h, im_w)
        for mask, box in zip(masks, int_boxes, strict=True)
    ]
    if res:
        return torch.stack(res, dim=0)[:, None]
    return masks.new_empty((0, 1, im_h, im_w))


# -------------------------------------------------------------------------- keypoints


def keypoints_to_heatmap(
    keypoints: Tensor, rois: Tensor, heatmap_size: int
) -> tuple[Tensor, Tensor]:
    """Each keypoint's cell index in its RoI's ``heatmap_size`` grid, and whether it counts.

    ``keypoints`` ``[R, K, 3]`` (x, y, visibility); a keypoint counts (``valid`` 1)
    when it is visible and inside its RoI.

    Example:
        >>> import torch
        >>> kp = torch.tensor([[[2.0, 6.0, 1.0], [9.0, 9.0, 0.0]]])
        >>> heatmaps, valid = keypoints_to_heatmap(kp, torch.tensor([[0.0, 0, 8, 8]]), 4)
        >>> heatmaps.tolist(), valid.tolist()
        ([[13, 0]], [[1, 0]])
    """
    offset_x = rois[:, 0][:, None]
    offset_y = rois[:, 1][:, None]
    scale_x = (heatmap_size / (rois[:, 2] - rois[:, 0]))[:, None]
    scale_y = (heatmap_size / (rois[:, 3] - rois[:, 1]))[:, None]
    x = keypoints[..., 0]
    y = keypoints[..., 1]
    x_boundary_inds = x == rois[:, 2][:, None]
    y_boundary_inds = y == rois[:, 3][:, None]
    x = ((x - offset_x) * scale_x).floor().long()
    y = ((y - offset_y) * scale_y).floor().long()
    x[x_boundary_inds] = heatmap_size - 1
    y[y_boundary_inds] = heatmap_size - 1
    valid_loc = (x >= 0) & (y >= 0) & (x < heatmap_size) & (y < heatmap_size)
    valid = (valid_loc & (keypoints[..., 2] > 0)).long()
    return (y * heatmap_size + x) * valid, valid


def heatmaps_to_keypoints(maps: Tensor, rois: Tensor) -> tuple[Tensor, Tensor]:
    """Keypoints ``[R, K, 3]`` (x, y, 1) and their scores ``[R, K]`` from heatmaps ``[R, K, H, W]``.

    Each heatmap is resized (bicubic) to its RoI's size in pixels; the keypoint is the
    centre of its highest cell (Heckbert's ``c = d + 0.5``), in image coordinates.

    Example:
        >>> import torch
        >>> maps = torch.zeros(1, 1, 4, 4)
        >>> maps[0, 0, 1, 2] = 5.0
        >>> xy, scores = heatmaps_to_keypoints(maps, torch.tensor([[10.0, 20.0, 14.0, 24.0]]))
        >>> xy.tolist(), scores.tolist()
        ([[[12.5, 21.5, 1.0]]], [[5.0]])
    """
    offset_x = rois[:, 0]
    offset_y = rois[:, 1]
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    widths_ceil = widths.ceil()
    heights_ceil = heights.ceil()
    num_keypoints = maps.shape[1]
    xy_preds = torch.zeros((len(rois), 3, num_keypoints), dtype=torch.float32, device=maps.device)
    end_scores = torch.zeros((len(rois), num_keypoints), dtype=torch.float32, device=maps.device)
    for i in range(len(rois)):
        roi_map_width = int(widths_ceil[i].item())
        roi_map_height = int(heights_ceil[i].item())
        width_correction = widths[i] / roi_map_width
        height_correction = heights[i] / roi_map_height
        roi_map = F.interpolate(
            maps[i][:, None],
            size=(roi_map_height, roi_map_width),
            mode="bicubic",
            align_corners=False,
        )[:, 0]
        w = roi_map.shape[2]
        pos = roi_map.reshape(num_keypoints, -1).argmax(dim=1)
        x_int = pos % w
        y_int = torch.div(pos - x_int, w, rounding_mode="floor")
        xy_preds[i, 0, :] = (x_int.float() + 0.5) * width_correction + offset_x[i]
        xy_preds[i, 1, :] = (y_int.float() + 0.5) * height_correction + offset_y[i]
        xy_preds[i, 2, :] = 1
        end_scores[i, :] = roi_map[torch.arange(num_keypoints, device=roi_map.device), y_int, x_int]
    return xy_preds.permute(0, 2, 1), end_scores


def keypointrcnn_loss(
    keypoint_logits: Tensor,
    proposals: list[Tensor],
    gt_keypoints: list[Tensor],
    keypoint_matched_idxs: list[Tensor],
) -> Tensor:
    """Cross-entropy over each heatmap's cells at the target keypoint's cell (valid ones only).

    Example:
        >>> import torch
        >>> kp = [torch.tensor([[[2.0, 6.0, 1.0]]])]
        >>> loss = keypointrcnn_loss(torch.zeros(1, 1, 4, 4), [torch.tensor([[0.0, 0, 8, 8]])],
        ...                          kp, [torch.tensor([0])])
        >>> round(loss.item(), 4)  # log(16)
        2.7726
    """
    n, k, h, w = keypoint_logits.shape
    if h != w:
        raise ValueError(
            "keypoint_logits height and width (last two elements of shape) should be equal. "
            f"Instead got H = {h} and W = {w}"
        )
    heatmaps, valid_list = [], []
    for proposals_per_image, gt_kp_in_image, midx in zip(
        proposals, gt_keypoints, keypoint_matched_idxs, strict=True
    ):
        heatmaps_per_image, valid_per_image = keypoints_to_heatmap(
            gt_kp_in_image[midx], proposals_per_image, h
        )
        heatmaps.append(heatmaps_per_image.view(-1))
        valid_list.append(valid_per_image.view(-1))
    keypoint_targets = torch.cat(heatmaps, dim=0)
    valid = torch.where(torch.cat(valid_list, dim=0).to(dtype=torch.uint8))[0]
    if keypoint_targets.numel() == 0 or len(valid) == 0:
        return keypoint_logits.sum() * 0
    keypoint_logits = keypoint_logits.view(n * k, h * w)
    return F.cross_entropy(keypoint_logits[valid], keypoint_targets[valid])


def keypointrcnn_inference(x: Tensor, boxes: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """Per image, the keypoints ``[D, K, 3]`` and scores ``[D, K]`` of its detections' heatmaps.

    Example:
        >>> import torch
        >>> kps, scores = keypointrcnn_inference(torch.zeros(3, 2, 4, 4),
        ...     [torch.tensor([[0.0, 0, 4, 4]]), torch.tensor([[0.0, 0, 8, 8]] * 2)])
        >>> [tuple(k.shape) for k in kps], [tuple(s.shape) for s in scores]
        ([(1, 2, 3), (2, 2, 3)], [(1, 2), (2, 2)])
    """
    kp_probs, kp_scores = [], []
    boxes_per_image = [box.size(0) for box in boxes]
    for xx, bb in zip(x.split(boxes_per_image, dim=0), boxes, strict=True):
        kp_prob, scores = heatmaps_to_keypoints(xx, bb)
        kp_probs.append(kp_prob)
        kp_scores.append(scores)
    return kp_probs, kp_scores


# ---------------------------------------------------------------------------- RoIHeads


class RoIHeads(nn.Module):
    """The box branch (and optional mask and keypoint branches) over the RPN's proposals.

    Args:
        box_roi_pool: pools each proposal's features (``MultiScaleRoIAlign``).
        box_head: the pooled features to a vector per proposal (``TwoMLPHead``).
        box_predictor: class logits and per-class deltas (``FastRCNNPredictor``).
        fg_iou_thresh: the IoU with a target from which a proposal is foreground.
        bg_iou_thresh: the IoU below which a proposal is background.
        batch_size_per_image: proposals sampled per image in training.
        positive_fraction: the largest share of foreground in that sample.
        bbox_reg_weights: the box coder's weights (default ``(10, 10, 5, 5)``).
        score_thresh: detections scoring at most this are dropped.
        nms_thresh: the IoU threshold of the per-class NMS.
        detections_per_img: detections kept per image (best first).
        mask_roi_pool: the mask branch's pooler (Mask R-CNN), or None.
        mask_head: the mask branch's head, or None.
        mask_predictor: the mask branch's predictor, or None.
        keypoint_roi_pool: the keypoint branch's pooler (Keypoint R-CNN), or None.
        keypoint_head: the keypoint branch's head, or None.
        keypoint_predictor: the keypoint branch's predictor, or None.

    Example:
        >>> import torch
        >>> from trivium.vision.ops import MultiScaleRoIAlign
        >>> from trivium.vision.models.detection import FastRCNNPredictor, TwoMLPHead
        >>> heads = RoIHeads(MultiScaleRoIAlign(["0"], 7, 2), TwoMLPHead(4 * 49, 32),
        ...     FastRCNNPredictor(32, 3), 0.5, 0.5, 16, 0.25, None, 0.0, 0.5, 10).eval()
        >>> features = {"0": torch.rand(1, 4, 16, 16)}
        >>> result, losses = heads(features, [torch.tensor([[0.0, 0, 20, 20]])], [(64, 64)])
        >>> sorted(result[0]), losses
        (['boxes', 'labels', 'scores'], {})
    """

    def __init__(
        self,
        box_roi_pool: nn.Module,
        box_head: nn.Module,
        box_predictor: nn.Module,
        fg_iou_thresh: float,
        bg_iou_thresh: float,
        batch_size_per_image: int,
        positive_fraction: float,
        bbox_reg_weights: tuple[float, float, float, float] | None,
        score_thresh: float,
        nms_thresh: float,
        detections_per_img: int,
        mask_roi_pool: nn.Module | None = None,
        mask_head: nn.Module | None = None,
        mask_predictor: nn.Module | None = None,
        keypoint_roi_pool: nn.Module | None = None,
        keypoint_head: nn.Module | None = None,
        keypoint_predictor: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.box_similarity = box_iou
        self.proposal_matcher = Matcher(
            fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=False
        )
        self.fg_bg_sampler = BalancedPositiveNegativeSampler(
            batch_size_per_image, positive_fraction
        )
        if bbox_reg_weights is None:
            bbox_reg_weights = (10.0, 10.0, 5.0, 5.0)
        self.box_coder = BoxCoder(bbox_reg_weights)
        self.box_roi_pool = box_roi_pool
        self.box_head = box_head
        self.box_predictor = box_predictor
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.mask_roi_pool = mask_roi_pool
        self.mask_head = mask_head
        self.mask_predictor = mask_predictor
        self.keypoint_roi_pool = keypoint_roi_pool
        self.keypoint_head = keypoint_head
        self.keypoint_predictor = keypoint_predictor

    def has_mask(self) -> bool:
        """Whether the mask branch is complete (pooler, head and predictor).

        Example:
            >>> RoIHeads(None, None, None, 0.5, 0.5, 4, 0.25, None, 0.05, 0.5, 10).has_mask()
            False
        """
        return (
            self.mask_roi_pool is not None
            and self.mask_head is not None
            and self.mask_predictor is not None
        )

    def has_keypoint(self) -> bool:
        """Whether the keypoint branch is complete (pooler, head and predictor).

        Example:
            >>> RoIHeads(None, None, None, 0.5, 0.5, 4, 0.25, None, 0.05, 0.5, 10).has_keypoint()
            False
        """
        return (
            self.keypoint_roi_pool is not None
            and self.keypoint_head is not None
            and self.keypoint_predictor is not None
        )

    def assign_targets_to_proposals(
        self, proposals: list[Tensor], gt_boxes: list[Tensor], gt_labels: list[Tensor]
    ) -> tuple[list[Tensor], list[Tensor]]:
        """Per image: each proposal's matched target (0 when none) and label (0 bg, -1 ignored).

        Example:
            >>> import torch
            >>> heads = RoIHeads(None, None, None, 0.5, 0.3, 4, 0.25, None, 0.05, 0.5, 10)
            >>> idxs, labels = heads.assign_targets_to_proposals(
            ...     [torch.tensor([[0.0, 0, 10, 10], [0, 0, 10, 4], [20, 20, 30, 30]])],
            ...     [torch.tensor([[0.0, 0, 10, 10]])], [torch.tensor([7])])
            >>> idxs[0].tolist(), labels[0].tolist()
            ([0, 0, 0], [7, -1, 0])
        """
        matched_idxs, labels = [], []
        for proposals_in_image, gt_boxes_in_image, gt_labels_in_image in zip(
            proposals, gt_boxes, gt_labels, strict=True
        ):
            if gt_boxes_in_image.numel() == 0:
                device = proposals_in_image.device
                clamped = torch.zeros(
                    (proposals_in_image.shape[0],), dtype=torch.int64, device=device
                )
                labels_in_image = torch.zeros(
                    (proposals_in_image.shape[0],), dtype=torch.int64, device=device
                )
            else:
                matched = self.proposal_matcher(box_iou(gt_boxes_in_image, proposals_in_image))
                clamped = matched.clamp(min=0)
                labels_in_image = gt_labels_in_image[clamped].to(dtype=torch.int64)
                labels_in_image[matched == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0
                labels_in_image[matched == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1
            matched_idxs.append(clamped)
            labels.append(labels_in_image)
        return matched_idxs, labels

    def subsample(self, labels: list[Tensor]) -> list[Tensor]:
        """Per image, the indices of the proposals the balanced sampler draws.

        Example:
            >>> import torch
            >>> heads = RoIHeads(None, None, None, 0.5, 0.5, 2, 0.5, None, 0.05, 0.5, 10)
            >>> heads.subsample([torch.tensor([3, -1, 0])])[0].tolist()
            [0, 2]
        """
        sampled_pos, sampled_neg = self.fg_bg_sampler(labels)
        return [
            torch.where(pos | neg)[0] for pos, neg in zip(sampled_pos, sampled_neg, strict=True)
        ]

    def add_gt_proposals(self, proposals: list[Tensor], gt_boxes: list[Tensor]) -> list[Tensor]:
        """Each image's proposals with its target boxes appended.

        Example:
            >>> import torch
            >>> heads = RoIHeads(None, None, None, 0.5, 0.5, 2, 0.5, None, 0.05, 0.5, 10)
            >>> heads.add_gt_proposals([torch.zeros(3, 4)], [torch.ones(2, 4)])[0].shape
            torch.Size([5, 4])
        """
        return [torch.cat((p, gt)) for p, gt in zip(proposals, gt_boxes, strict=True)]

    def check_targets(self, targets: list[dict[str, Tensor]] | None) -> None:
        """Raise ``ValueError`` unless every target has ``boxes``, ``labels`` (and ``masks``).

        Example:
            >>> heads = RoIHeads(None, None, None, 0.5, 0.5, 2, 0.5, None, 0.05, 0.5, 10)
            >>> heads.check_targets([{"boxes": None}])
            Traceback (most recent call last):
            ...
            ValueError: Every element of targets should have a labels key
        """
        if targets is None:
            raise ValueError("targets should not be None")
        for key in ("boxes", "labels") + (("masks",) if self.has_mask() else ()):
            if not all(key in t for t in targets):
                raise ValueError(f"Every element of targets should have a {key} key")

    def select_training_samples(
        self, proposals: list[Tensor], targets: list[dict[str, Tensor]] | None
    ) -> tuple[list[Tensor], list[Tensor], list[Tensor], list[Tensor]]:
        """The sampled proposals with their matched targets, labels and regression targets.

        Example:
            >>> import torch
            >>> heads = RoIHeads(None, None, None, 0.5, 0.5, 8, 0.25, None, 0.05, 0.5, 10)
            >>> t = [{"boxes": torch.tensor([[0.0, 0, 10, 10]]), "labels": torch.tensor([2])}]
            >>> p, idxs, labels, reg = heads.select_training_samples(
            ...     [torch.tensor([[20.0, 20, 30, 30]])], t)
            >>> labels[0].tolist(), reg[0].shape
            ([0, 2], torch.Size([2, 4]))
        """
        self.check_targets(targets)
        assert targets is not None
        dtype = proposals[0].dtype
        device = proposals[0].device
        gt_boxes = [t["boxes"].to(dtype) for t in targets]
        gt_labels = [t["labels"] for t in targets]
        proposals = self.add_gt_proposals(proposals, gt_boxes)
        matched_idxs, labels = self.assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
        sampled_inds = self.subsample(labels)
        matched_gt_boxes = []
        for img_id, img_sampled_inds in enumerate(sampled_inds):
            proposals[img_id] = proposals[img_id][img_sampled_inds]
            labels[img_id] = labels[img_id][img_sampled_inds]
            matched_idxs[img_id] = matched_idxs[img_id][img_sampled_inds]
            gt_boxes_in_image = gt_boxes[img_id]
            if gt_boxes_in_image.numel() == 0:
                gt_boxes_in_image = torch.zeros((1, 4), dtype=dtype, device=device)
            matched_gt_boxes.append(gt_boxes_in_image[matched_idxs[img_id]])
        regression_targets = self.box_coder.encode(matched_gt_boxes, proposals)
        return proposals, matched_idxs, labels, list(regression_targets)

    def postprocess_detections(
        self,
        class_logits: Tensor,
        box_regression: Tensor,
        proposals: list[Tensor],
        image_shapes: list[tuple[int, int]],
    ) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
        """Per image: boxes, scores and labels of every (proposal, class) above the threshold.

        Each proposal gives one candidate per non-background class (softmax score, its
        class's box), clipped to the image; empty boxes go, then per-class NMS and the
        best ``detections_per_img``.

        Example:
            >>> import torch
            >>> heads = RoIHeads(None, None, None, 0.5, 0.5, 2, 0.5, None, 0.5, 0.5, 10)
            >>> boxes, scores, labels = heads.postprocess_detections(
            ...     torch.tensor([[0.0, 5.0]]), torch.zeros(1, 8),
            ...     [torch.tensor([[1.0, 2, 5, 6]])], [(8, 8)])
            >>> boxes[0].tolist(), labels[0].tolist()
            ([[1.0, 2.0, 5.0, 6.0]], [1])
        """
        device = class_logits.device
        num_classes = class_logits.shape[-1]
        boxes_per_image = [p.shape[0] for p in proposals]
        pred_boxes_list = self.box_coder.decode(box_regression, proposals).split(boxes_per_image, 0)
        pred_scores_list = F.softmax(class_logits, -1).split(boxes_per_image, 0)
        all_boxes, all_scores, all_labels = [], [], []
        for boxes, scores, image_shape in zip(
            pred_boxes_list, pred_scores_list, image_shapes, strict=True
        ):
            boxes = clip_boxes_to_image(boxes, image_shape)
            labels = torch.arange(num_classes, device=device).view(1, -1).expand_as(scores)
            # Every (proposal, class) but the background is a candidate of its own.
            boxes = boxes[:, 1:].reshape(-1, 4)
            scores = scores[:, 1:].reshape(-1)
            labels = labels[:, 1:].reshape(-1)
            inds = torch.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[inds], scores[inds], labels[inds]
            keep = remove_small_boxes(boxes, min_size=1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = batched_nms(boxes, scores, labels, self.nms_thresh)[: self.detections_per_img]
            all_boxes.append(boxes[keep])
            all_scores.append(scores[keep])
            all_labels.append(labels[keep])
        return all_boxes, all_scores, all_labels

    def forward(
        self,
        features: dict[str, Tensor],
        proposals: list[Tensor],
        image_shapes: list[tuple[int, int]],
        targets: list[dict[str, Tensor]] | None = None,
    ) -> tuple[list[dict[str, Tensor]], dict[str, Tensor]]:
        """Detections (eval) or losses (training) for the proposals of each image.

        Args:
            features: the feature maps by name.
            proposals: per image, ``[P, 4]`` boxes in the (resized) image.
            image_shapes: each image's ``(height, width)``.
            targets: per image, ``boxes``, ``labels`` (and ``masks`` / ``keypoints``
                for those branches); needed in training.

        Returns:
            The detections (one dict per image; empty lists in training) and the losses
            (empty in eval).
        """
        if targets is not None:
            self._check_target_types(targets)
        labels: list[Tensor] | None = None
        regression_targets: list[Tensor] | None = None
        matched_idxs: list[Tensor] | None = None
        if self.training:
            proposals, matched_idxs, labels, regression_targets = self.select_training_samples(
                proposals, targets
            )
        box_features = self.box_head(self.box_roi_pool(features, proposals, image_shapes))
        class_logits, box_regression = self.box_predictor(box_features)

        result: list[dict[str, Tensor]] = []
        losses: dict[str, Tensor] = {}
        if self.training:
            assert labels is not None and regression_targets is not None
            loss_classifier, loss_box_reg = fastrcnn_loss(
                class_logits, box_regression, labels, regression_targets
            )
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
        else:
            boxes, scores, det_labels = self.postprocess_detections(
                class_logits, box_regression, proposals, image_shapes
            )
            result = [
                {"boxes": b, "labels": lab, "scores": s}
                for b, s, lab in zip(boxes, scores, det_labels, strict=True)
            ]
        if self.has_mask():
            losses.update(
                self._mask_branch(
                    features, proposals, image_shapes, targets, labels, matched_idxs, result
                )
            )
        if self.has_keypoint():
            losses.update(
                self._keypoint_branch(
                    features, proposals, image_shapes, targets, labels, matched_idxs, result
                )
            )
        return result, losses

    def _check_target_types(self, targets: list[dict[str, Tensor]]) -> None:
        for t in targets:
            if t["boxes"].dtype not in (torch.float, torch.double, torch.half):
                raise TypeError(f"target boxes must of float type, instead got {t['boxes'].dtype}")
            if t["labels"].dtype != torch.int64:
                raise TypeError(
                    f"target labels must of int64 type, instead got {t['labels'].dtype}"
                )
            if self.has_keypoint() and t["keypoints"].dtype != torch.float32:
                raise TypeError(
                    f"target keypoints must of float type, instead got {t['keypoints'].dtype}"
                )

    def _positive_proposals(
        self, proposals: list[Tensor], labels: list[Tensor], matched_idxs: list[Tensor]
    ) -> tuple[list[Tensor], list[Tensor]]:
        # Training: the mask and keypoint branches learn from the foreground proposals only.
        positives, pos_matched_idxs = [], []
        for props, labs, idxs in zip(proposals, labels, matched_idxs, strict=True):
            pos = torch.where(labs > 0)[0]
            positives.append(props[pos])
            pos_matched_idxs.append(idxs[pos])
        return positives, pos_matched_idxs

    def _branch_logits(
        self,
        branch: tuple[nn.Module, nn.Module, nn.Module],
        features: dict[str, Tensor],
        proposals: list[Tensor],
        image_shapes: list[tuple[int, int]],
        labels: list[Tensor] | None,
        matched_idxs: list[Tensor] | None,
        result: list[dict[str, Tensor]],
    ) -> tuple[Tensor, list[Tensor], list[Tensor] | None]:
        # A mask or keypoint branch (roi pool, head, predictor) over its proposals: the
        # foreground ones in training (with their matched boxes), the detections in eval.
        roi_pool, head, predictor = branch
        pos_matched_idxs = None
        if self.training:
            assert labels is not None and matched_idxs is not None
            branch_proposals, pos_matched_idxs = self._positive_proposals(
                proposals, labels, matched_idxs
            )
        else:
            branch_proposals = [r["boxes"] for r in result]
        logits = predictor(head(roi_pool(features, branch_proposals, image_shapes)))
        return logits, branch_proposals, pos_matched_idxs

    def _mask_branch(
        self,
        features: dict[str, Tensor],
        proposals: list[Tensor],
        image_shapes: list[tuple[int, int]],
        targets: list[dict[str, Tensor]] | None,
        labels: list[Tensor] | None,
        matched_idxs: list[Tensor] | None,
        result: list[dict[str, Tensor]],
    ) -> dict[str, Tensor]:
        assert self.mask_roi_pool is not None and self.mask_head is not None
        assert self.mask_predictor is not None
        mask_logits, mask_proposals, pos_matched_idxs = self._branch_logits(
            (self.mask_roi_pool, self.mask_head, self.mask_predictor),
            features,
            proposals,
            image_shapes,
            labels,
            matched_idxs,
            result,
        )
        if self.training:
            assert targets is not None and pos_matched_idxs is not None
            gt_masks = [t["masks"] for t in targets]
            gt_labels = [t["labels"] for t in targets]
            loss = maskrcnn_loss(mask_logits, mask_proposals, gt_masks, gt_labels, pos_matched_idxs)
            return {"loss_mask": loss}
        probs = maskrcnn_inference(mask_logits, [r["labels"] for r in result])
        for mask_prob, r in zip(probs, result, strict=True):
            r["masks"] = mask_prob
        return {}

    def _keypoint_branch(
        self,
        features: dict[str, Tensor],
        proposals: list[Tensor],
        image_shapes: list[tuple[int, int]],
        targets: list[dict[str, Tensor]] | None,
        labels: list[Tensor] | None,
        matched_idxs: list[Tensor] | None,
        result: list[dict[str, Tensor]],
    ) -> dict[str, Tensor]:
        assert self.keypoint_roi_pool is not None and self.keypoint_head is not None
        assert self.keypoint_predictor is not None
        keypoint_logits, kp_proposals, pos_matched_idxs = self._branch_logits(
            (self.keypoint_roi_pool, self.keypoint_head, self.keypoint_predictor),
            features,
            proposals,
            image_shapes,
            labels,
            matched_idxs,
            result,
        )
        if self.training:
            assert targets is not None and pos_matched_idxs is not None
            gt_keypoints = [t["keypoints"] for t in targets]
            loss = keypointrcnn_loss(keypoint_logits, kp_proposals, gt_keypoints, pos_matched_idxs)
            return {"loss_keypoint": loss}
        keypoints, kp_scores = keypointrcnn_inference(keypoint_logits, kp_proposals)
        for kp, kps, r in zip(keypoints, kp_scores, result, strict=True):
            r["keypoints"] = kp
            r["keypoints_scores"] = kps
        return {}
