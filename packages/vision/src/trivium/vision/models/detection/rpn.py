"""The Region Proposal Network of Faster R-CNN, as ``torchvision.models.detection.rpn``.

:class:`RPNHead` scores every anchor and regresses its box; :class:`RegionProposalNetwork`
decodes the best anchors per level into proposals (NMS per level) and, in training,
computes the objectness and box losses over a balanced sample of anchors. Module
names, state dict keys and arithmetic are torchvision's.

Example:
    >>> import torch
    >>> from trivium.vision.ops import AnchorGenerator, ImageList
    >>> anchors = AnchorGenerator(((16,),), ((0.5, 1.0, 2.0),))
    >>> rpn = RegionProposalNetwork(anchors, RPNHead(8, 3), 0.7, 0.3, 64, 0.5,
    ...     {"training": 50, "testing": 20}, {"training": 50, "testing": 10}, 0.7).eval()
    >>> images = ImageList(torch.zeros(1, 3, 32, 32), [(32, 32)])
    >>> boxes, losses = rpn(images, {"0": torch.rand(1, 8, 8, 8)})
    >>> boxes[0].shape[1], boxes[0].shape[0] <= 10, losses
    (4, True, {})
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models.detection._utils import BalancedPositiveNegativeSampler
from trivium.vision.ops import (
    AnchorGenerator,
    BoxCoder,
    Conv2dNormActivation,
    ImageList,
    Matcher,
    batched_nms,
    box_iou,
    clip_boxes_to_image,
    remove_small_boxes,
)
from trivium.vision.ops.misc import UpgradesStateDict

__all__ = ["RPNHead", "RegionProposalNetwork", "concat_box_prediction_layers"]


class RPNHead(UpgradesStateDict):
    """Objectness logits and box deltas per anchor: ``conv_depth`` 3x3 conv + ReLU, two 1x1 convs.

    Args:
        in_channels: channels of the feature maps.
        num_anchors: anchors per location.
        conv_depth: 3x3 convolutions before the predictions (2 in the v2 models).

    Example:
        >>> import torch
        >>> logits, deltas = RPNHead(16, 3)([torch.rand(1, 16, 8, 8)])
        >>> logits[0].shape, deltas[0].shape
        (torch.Size([1, 3, 8, 8]), torch.Size([1, 12, 8, 8]))
    """

    _version = 2

    def __init__(self, in_channels: int, num_anchors: int, conv_depth: int = 1) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            *(
                Conv2dNormActivation(in_channels, in_channels, kernel_size=3, norm_layer=None)
                for _ in range(conv_depth)
            )
        )
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, kernel_size=1, stride=1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=1, stride=1)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.constant_(layer.bias, 0)

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        """Version 1 state dicts had one bare ``conv``: ``conv.weight`` -> ``conv.0.0.weight``."""
        if version is None or version < 2:
            for kind in ("weight", "bias"):
                old_key = f"{prefix}conv.{kind}"
                if old_key in state_dict:
                    state_dict[f"{prefix}conv.0.0.{kind}"] = state_dict.pop(old_key)

    def forward(self, x: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """Per level: the logits ``[N, A, H, W]`` and the deltas ``[N, A * 4, H, W]``."""
        logits, bbox_reg = [], []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            bbox_reg.append(self.bbox_pred(t))
        return logits, bbox_reg


def _permute_and_flatten(layer: Tensor, n: int, c: int, h: int, w: int) -> Tensor:
    return layer.view(n, -1, c, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, c)


def concat_box_prediction_layers(
    box_cls: list[Tensor], box_regression: list[Tensor]
) -> tuple[Tensor, Tensor]:
    """The levels' predictions as rows in anchor order: ``[N * sum(HWA), C]`` and ``[..., 4]``.

    Example:
        >>> import torch
        >>> cls, reg = concat_box_prediction_layers([torch.rand(2, 3, 4, 4)],
        ...                                         [torch.rand(2, 12, 4, 4)])
        >>> cls.shape, reg.shape
        (torch.Size([96, 1]), torch.Size([96, 4]))
    """
    cls_flat, reg_flat = [], []
    for cls_level, reg_level in zip(box_cls, box_regression, strict=True):
        n, axc, h, w = cls_level.shape
        a = reg_level.shape[1] // 4
        cls_flat.append(_permute_and_flatten(cls_level, n, axc // a, h, w))
        reg_flat.append(_permute_and_flatten(reg_level, n, 4, h, w))
    return torch.cat(cls_flat, dim=1).flatten(0, -2), torch.cat(reg_flat, dim=1).reshape(-1, 4)


class RegionProposalNetwork(nn.Module):
    """Proposals from anchors scored and refined by a head; its losses in training.

    Args:
        anchor_generator: the anchors of every feature level.
        head: returns per-level objectness logits and box deltas (:class:`RPNHead`).
        fg_iou_thresh: the IoU with a target box from which an anchor is positive.
        bg_iou_thresh: the IoU below which an anchor is negative.
        batch_size_per_image: anchors sampled per image for the losses.
        positive_fraction: the largest share of positives in that sample.
        pre_nms_top_n: proposals kept per level before NMS, ``{"training": n, "testing": n}``.
        post_nms_top_n: proposals kept per image after NMS, the same keys.
        nms_thresh: the IoU threshold of the per-level NMS.
        score_thresh: proposals with a lower objectness probability are dropped.

    Example:
        >>> import torch
        >>> from trivium.vision.ops import AnchorGenerator, ImageList
        >>> rpn = RegionProposalNetwork(AnchorGenerator(((8,),), ((1.0,),)), RPNHead(4, 1),
        ...     0.7, 0.3, 16, 0.5, {"training": 20, "testing": 20},
        ...     {"training": 5, "testing": 5}, 0.7)
        >>> images = ImageList(torch.zeros(1, 3, 16, 16), [(16, 16)])
        >>> t = [{"boxes": torch.tensor([[0.0, 0.0, 8.0, 8.0]])}]
        >>> sorted(rpn(images, {"0": torch.rand(1, 4, 4, 4)}, t)[1])
        ['loss_objectness', 'loss_rpn_box_reg']
    """

    def __init__(
        self,
        anchor_generator: AnchorGenerator,
        head: nn.Module,
        fg_iou_thresh: float,
        bg_iou_thresh: float,
        batch_size_per_image: int,
        positive_fraction: float,
        pre_nms_top_n: dict[str, int],
        post_nms_top_n: dict[str, int],
        nms_thresh: float,
        score_thresh: float = 0.0,
    ) -> None:
        super().__init__()
        self.anchor_generator = anchor_generator
        self.head = head
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.box_similarity = box_iou
        self.proposal_matcher = Matcher(
            fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True
        )
        self.fg_bg_sampler = BalancedPositiveNegativeSampler(
            batch_size_per_image, positive_fraction
        )
        self._pre_nms_top_n = pre_nms_top_n
        self._post_nms_top_n = post_nms_top_n
        self.nms_thresh = nms_thresh
        self.score_thresh = score_thresh
        self.min_size = 1e-3

    def pre_nms_top_n(self) -> int:
        """Proposals kept per level before NMS, in the current mode.

        Example:
            >>> rpn = RegionProposalNetwork(None, None, 0.7, 0.3, 4, 0.5,
            ...     {"training": 9, "testing": 3}, {"training": 2, "testing": 1}, 0.7)
            >>> rpn.pre_nms_top_n(), rpn.eval().pre_nms_top_n()
            (9, 3)
        """
        return self._pre_nms_top_n["training" if self.training else "testing"]

    def post_nms_top_n(self) -> int:
        """Proposals kept per image after NMS, in the current mode.

        Example:
            >>> rpn = RegionProposalNetwork(None, None, 0.7, 0.3, 4, 0.5,
            ...     {"training": 9, "testing": 3}, {"training": 2, "testing": 1}, 0.7)
            >>> rpn.post_nms_top_n(), rpn.eval().post_nms_top_n()
            (2, 1)
        """
        return self._post_nms_top_n["training" if self.training else "testing"]

    def assign_targets_to_anchors(
        self, anchors: list[Tensor], targets: list[dict[str, Tensor]]
    ) -> tuple[list[Tensor], list[Tensor]]:
        """Per image: anchor labels (1 object, 0 background, -1 ignored) and matched boxes.

        Example:
            >>> import torch
            >>> rpn = RegionProposalNetwork(None, None, 0.7, 0.3, 4, 0.5, {}, {}, 0.7)
            >>> anchors = [torch.tensor([[0.0, 0, 10, 10], [0, 0, 6, 10], [20, 20, 30, 30]])]
            >>> labels, boxes = rpn.assign_targets_to_anchors(
            ...     anchors, [{"boxes": torch.tensor([[0.0, 0, 10, 10]])}])
            >>> labels[0].tolist()
            [1.0, -1.0, 0.0]
        """
        labels, matched_gt_boxes = [], []
        for anchors_per_image, targets_per_image in zip(anchors, targets, strict=True):
            gt_boxes = targets_per_image["boxes"]
            if gt_boxes.numel() == 0:
                device = anchors_per_image.device
                matched = torch.zeros(anchors_per_image.shape, dtype=torch.float32, device=device)
                labels_per_image = torch.zeros(
                    (anchors_per_image.shape[0],), dtype=torch.float32, device=device
                )
            else:
                matched_idxs = self.proposal_matcher(
                    self.box_similarity(gt_boxes, anchors_per_image)
                )
                # -1 / -2 (unmatched) index box 0; their labels say they are not objects.
                matched = gt_boxes[matched_idxs.clamp(min=0)]
                labels_per_image = (matched_idxs >= 0).to(dtype=torch.float32)
                labels_per_image[matched_idxs == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0.0
                labels_per_image[matched_idxs == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1.0
            labels.append(labels_per_image)
            matched_gt_boxes.append(matched)
        return labels, matched_gt_boxes

    def _get_top_n_idx(self, objectness: Tensor, num_anchors_per_level: list[int]) -> Tensor:
        r = []
        offset = 0
        for ob in objectness.split(num_anchors_per_level, 1):
            num_anchors = ob.shape[1]
            _, top_n_idx = ob.topk(min(self.pre_nms_top_n(), num_anchors), dim=1)
            r.append(top_n_idx + offset)
            offset += num_anchors
        return torch.cat(r, dim=1)

    def filter_proposals(
        self,
        proposals: Tensor,
        objectness: Tensor,
        image_shapes: list[tuple[int, int]],
        num_anchors_per_level: list[int],
    ) -> tuple[list[Tensor], list[Tensor]]:
        """Per image: the best proposals per level, clipped, small and low ones dropped, NMS.

        Example:
            >>> import torch
            >>> rpn = RegionProposalNetwork(None, None, 0.7, 0.3, 4, 0.5, {"training": 2},
            ...     {"training": 1}, 0.7)
            >>> proposals = torch.tensor([[[0.0, 0, 4, 4], [1, 1, 30, 30]]])
            >>> boxes, scores = rpn.filter_proposals(proposals, torch.tensor([[1.0, 2.0]]),
            ...                                      [(20, 20)], [2])
            >>> boxes[0].tolist()
            [[1.0, 1.0, 20.0, 20.0]]
        """
        num_images = proposals.shape[0]
        device = proposals.device
        objectness = objectness.detach().reshape(num_images, -1)
        levels = torch.cat(
            [
                torch.full((n,), idx, dtype=torch.int64, device=device)
                for idx, n in enumerate(num_anchors_per_level)
            ],
            0,
        )
        levels = levels.reshape(1, -1).expand_as(objectness)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        batch_idx = torch.arange(num_images, device=device)[:, None]
        objectness = objectness[batch_idx, top_n_idx]
        levels = levels[batch_idx, top_n_idx]
        proposals = proposals[batch_idx, top_n_idx]
        objectness_prob = torch.sigmoid(objectness)

        final_boxes, final_scores = [], []
        for boxes, scores, lvl, img_shape in zip(
            proposals, objectness_prob, levels, image_shapes, strict=True
        ):
            boxes = clip_boxes_to_image(boxes, img_shape)
            keep = remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = torch.where(scores >= self.score_thresh)[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = batched_nms(boxes, scores, lvl, self.nms_thresh)[: self.post_nms_top_n()]
            final_boxes.append(boxes[keep])
            final_scores.append(scores[keep])
        return final_boxes, final_scores

    def compute_loss(
        self,
        objectness: Tensor,
        pred_bbox_deltas: Tensor,
        labels: list[Tensor],
        regression_targets: list[Tensor],
    ) -> tuple[Tensor, Tensor]:
        """Binary cross-entropy of the sampled anchors and smooth L1 (beta 1/9) of the positives.

        Example:
            >>> import torch
            >>> rpn = RegionProposalNetwork(None, None, 0.7, 0.3, 4, 0.5, {}, {}, 0.7)
            >>> obj, box = rpn.compute_loss(torch.zeros(2, 1), torch.zeros(2, 4),
            ...     [torch.tensor([1.0, 0.0])], [torch.zeros(2, 4)])
            >>> round(obj.item(), 4), box.item()
            (0.6931, 0.0)
        """
        sampled_pos, sampled_neg = self.fg_bg_sampler(labels)
        sampled_pos_inds = torch.where(torch.cat(sampled_pos, dim=0))[0]
        sampled_neg_inds = torch.where(torch.cat(sampled_neg, dim=0))[0]
        sampled_inds = torch.cat([sampled_pos_inds, sampled_neg_inds], dim=0)
        objectness = objectness.flatten()
        all_labels = torch.cat(labels, dim=0)
        all_targets = torch.cat(regression_targets, dim=0)
        box_loss = F.smooth_l1_loss(
            pred_bbox_deltas[sampled_pos_inds],
            all_targets[sampled_pos_inds],
            beta=1 / 9,
            reduction="sum",
        ) / (sampled_inds.numel())
        objectness_loss = F.binary_cross_entropy_with_logits(
            objectness[sampled_inds], all_labels[sampled_inds]
        )
        return objectness_loss, box_loss

    def forward(
        self,
        images: ImageList,
        features: dict[str, Tensor],
        targets: list[dict[str, Tensor]] | None = None,
    ) -> tuple[list[Tensor], dict[str, Tensor]]:
        """The proposals of each image (``[P, 4]``) and, in training, the RPN losses.

        ``targets`` (one dict with ``boxes`` per image) are needed in training.
        """
        feature_list = list(features.values())
        objectness_levels, deltas_levels = self.head(feature_list)
        anchors = self.anchor_generator(images, feature_list)
        num_images = len(anchors)
        num_anchors_per_level = [
            o[0].shape[0] * o[0].shape[1] * o[0].shape[2] for o in objectness_levels
        ]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(
            objectness_levels, deltas_levels
        )
        # Faster R-CNN does not backpropagate through the proposals.
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors)
        proposals = proposals.view(num_images, -1, 4)
        boxes, _ = self.filter_proposals(
            proposals, objectness, images.image_sizes, num_anchors_per_level
        )
        losses: dict[str, Tensor] = {}
        if self.training:
            if targets is None:
                raise ValueError("targets should not be None")
            labels, matched_gt_boxes = self.assign_targets_to_anchors(anchors, targets)
            regression_targets = self.box_coder.encode(matched_gt_boxes, anchors)
            loss_objectness, loss_rpn_box_reg = self.compute_loss(
                objectness, pred_bbox_deltas, labels, list(regression_targets)
            )
            losses = {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
        return boxes, losses
