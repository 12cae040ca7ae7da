"""RetinaNet (Lin et al., 2017) with torchvision's classes, builder, parameter names and numerics.

:class:`RetinaNet`, its heads and :func:`retinanet_resnet50_fpn` have the names,
arguments and state dict keys of ``torchvision.models.detection.retinanet``, so
torchvision's published ``retinanet_resnet50_fpn_coco`` checkpoint loads with
``strict=True`` and a model here computes what torchvision's computes.
:func:`retinanet_resnet18_fpn` and :func:`retinanet_resnet34_fpn` are smaller
configurations through the same builder (fast enough to train on a CPU).

``weights=`` takes a local file path or a state dict: nothing is downloaded.

For speed on a CPU, convert the model to channels-last
(``model.to(memory_format=torch.channels_last)``): the inputs follow.

Example:
    >>> import torch
    >>> model = retinanet_resnet18_fpn(num_classes=3, min_size=64, max_size=64).eval()
    >>> out = model([torch.rand(3, 48, 64)])
    >>> sorted(out[0]), out[0]["boxes"].shape[1]
    (['boxes', 'labels', 'scores'], 4)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models import resnet
from trivium.vision.models.backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from trivium.vision.models.detection._utils import (
    checked_backbone,
    dense_detections,
    overwrite_eps,
    prepared_batch,
    resolve_weights,
)
from trivium.vision.models.detection.transform import _imagenet_transform
from trivium.vision.models.weights import Weights
from trivium.vision.ops import (
    AnchorGenerator,
    BoxCoder,
    FrozenBatchNorm2d,
    Matcher,
    box_iou,
    generalized_box_iou_loss,
    sigmoid_focal_loss,
)
from trivium.vision.ops.feature_pyramid_network import LastLevelP6P7, conv_norm_activation
from trivium.vision.ops.misc import UpgradesStateDict

__all__ = [
    "RetinaNet",
    "RetinaNetClassificationHead",
    "RetinaNetHead",
    "RetinaNetRegressionHead",
    "retinanet_resnet18_fpn",
    "retinanet_resnet34_fpn",
    "retinanet_resnet50_fpn",
    "retinanet_resnet50_fpn_v2",
]


def _sum(x: list[Tensor]) -> Tensor:
    res = x[0]
    for i in x[1:]:
        res = res + i
    return res


def _v1_to_v2_weights(state_dict: dict[str, Any], prefix: str) -> None:
    # Version 1 heads had Sequential(conv, relu, conv, relu, ...): conv.{2i} -> conv.{i}.0.
    for i in range(4):
        for kind in ["weight", "bias"]:
            old_key = f"{prefix}conv.{2 * i}.{kind}"
            if old_key in state_dict:
                state_dict[f"{prefix}conv.{i}.0.{kind}"] = state_dict.pop(old_key)


def _default_anchorgen() -> AnchorGenerator:
    anchor_sizes = tuple(
        (x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512]
    )
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    return AnchorGenerator(anchor_sizes, aspect_ratios)


def _head_tower(in_channels: int, norm_layer: Callable[..., nn.Module] | None) -> nn.Sequential:
    # Four 3x3 convolutions with ReLU, as four Conv2dNormActivation blocks in torchvision.
    return nn.Sequential(
        *(
            conv_norm_activation(in_channels, in_channels, 3, norm_layer, activation_layer=nn.ReLU)
            for _ in range(4)
        )
    )


def _per_location(out: Tensor, columns: int) -> Tensor:
    # (N, A * columns, H, W) -> (N, HWA, columns); free for a channels-last output.
    n, _, h, w = out.shape
    return out.view(n, -1, columns, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, columns)


class _VersionedHead(UpgradesStateDict):
    _version = 2

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        if version is None or version < 2:
            _v1_to_v2_weights(state_dict, prefix)

    def forward_levels(self, x: list[Tensor]) -> list[Tensor]:
        raise NotImplementedError

    def forward(self, x: list[Tensor]) -> Tensor:
        """The outputs of all levels, concatenated: ``[N, sum(HWA), columns]``.

        Example:
            >>> import torch
            >>> head = RetinaNetRegressionHead(8, 2)
            >>> head([torch.rand(1, 8, 4, 4), torch.rand(1, 8, 2, 2)]).shape
            torch.Size([1, 40, 4])
        """
        return torch.cat(self.forward_levels(x), dim=1)


class RetinaNetClassificationHead(_VersionedHead):
    """Class logits per anchor: four 3x3 conv + ReLU (``conv``), then ``cls_logits``.

    Args:
        in_channels: channels of the feature maps.
        num_anchors: anchors per location.
        num_classes: classes (including the background).
        prior_probability: the initial foreground probability (bias of ``cls_logits``).
        norm_layer: a norm layer in the tower (default none).

    Example:
        >>> import torch
        >>> head = RetinaNetClassificationHead(16, 9, 5)
        >>> head([torch.rand(2, 16, 8, 8), torch.rand(2, 16, 4, 4)]).shape
        torch.Size([2, 720, 5])
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_classes: int,
        prior_probability: float = 0.01,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.conv = _head_tower(in_channels, norm_layer)
        for layer in self.conv.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.constant_(layer.bias, 0)
        self.cls_logits = nn.Conv2d(
            in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1
        )
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(
            self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability)
        )
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.BETWEEN_THRESHOLDS = Matcher.BETWEEN_THRESHOLDS

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        matched_idxs: list[Tensor],
    ) -> Tensor:
        """Sigmoid focal loss over the non-ignored anchors, per image over its foreground count.

        Example:
            >>> import torch
            >>> head = RetinaNetClassificationHead(4, 1, 2)
            >>> logits = torch.zeros(1, 3, 2)
            >>> t = [{"labels": torch.tensor([1])}]
            >>> head.compute_loss(t, {"cls_logits": logits}, [torch.tensor([0, -1, -2])])
            tensor(0.4332)
        """
        losses = []
        cls_logits = head_outputs["cls_logits"]
        for targets_per_image, cls_logits_per_image, matched_idxs_per_image in zip(
            targets, cls_logits, matched_idxs, strict=False
        ):
            foreground_idxs_per_image = matched_idxs_per_image >= 0
            num_foreground = foreground_idxs_per_image.sum()
            gt_classes_target = torch.zeros_like(cls_logits_per_image)
            gt_classes_target[
                foreground_idxs_per_image,
                targets_per_image["labels"][matched_idxs_per_image[foreground_idxs_per_image]],
            ] = 1.0
            valid_idxs_per_image = matched_idxs_per_image != self.BETWEEN_THRESHOLDS
            losses.append(
                sigmoid_focal_loss(
                    cls_logits_per_image[valid_idxs_per_image],
                    gt_classes_target[valid_idxs_per_image],
                    reduction="sum",
                )
                / max(1, num_foreground)
            )
        return _sum(losses) / len(targets)

    def forward_levels(self, x: list[Tensor]) -> list[Tensor]:
        """The logits of each level, ``[N, HWA, num_classes]`` each.

        Example:
            >>> import torch
            >>> head = RetinaNetClassificationHead(4, 2, 3)
            >>> [t.shape for t in head.forward_levels([torch.rand(1, 4, 2, 2)])]
            [torch.Size([1, 8, 3])]
        """
        return [_per_location(self.cls_logits(self.conv(f)), self.num_classes) for f in x]


class RetinaNetRegressionHead(_VersionedHead):
    """Box deltas per anchor: four 3x3 conv + ReLU (``conv``), then ``bbox_reg``.

    The loss is L1 on the deltas of :class:`~trivium.vision.ops.BoxCoder` with
    weights (1, 1, 1, 1) (``_loss_type = "l1"``), as torchvision's; ``"smooth_l1"``
    and ``"giou"`` (the GIoU loss of the decoded boxes, torchvision's v2 recipe) also
    work.

    Args:
        in_channels: channels of the feature maps.
        num_anchors: anchors per location.
        norm_layer: a norm layer in the tower (default none).

    Example:
        >>> import torch
        >>> RetinaNetRegressionHead(16, 9)([torch.rand(2, 16, 8, 8)]).shape
        torch.Size([2, 576, 4])
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.conv = _head_tower(in_channels, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.bbox_reg.weight, std=0.01)
        nn.init.zeros_(self.bbox_reg.bias)
        for layer in self.conv.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self._loss_type = "l1"

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> Tensor:
        """L1 loss of the foreground anchors' deltas, per image over its foreground count.

        Example:
            >>> import torch
            >>> head = RetinaNetRegressionHead(4, 1)
            >>> anchors = [torch.tensor([[0.0, 0.0, 10.0, 10.0]])]
            >>> t = [{"boxes": torch.tensor([[0.0, 0.0, 10.0, 10.0]])}]
            >>> out = {"bbox_regression": torch.ones(1, 1, 4)}
            >>> head.compute_loss(t, out, anchors, [torch.tensor([0])])
            tensor(4.)
        """
        losses = []
        bbox_regression = head_outputs["bbox_regression"]
        for targets_per_image, regression_per_image, anchors_per_image, matched in zip(
            targets, bbox_regression, anchors, matched_idxs, strict=False
        ):
            foreground = torch.where(matched >= 0)[0]
            matched_gt_boxes = targets_per_image["boxes"][matched[foreground]]
            losses.append(
                self._box_loss(
                    regression_per_image[foreground, :],
                    matched_gt_boxes,
                    anchors_per_image[foreground, :],
                )
                / max(1, foreground.numel())
            )
        return _sum(losses) / max(1, len(targets))

    def _box_loss(self, regression: Tensor, gt_boxes: Tensor, anchors: Tensor) -> Tensor:
        if self._loss_type == "giou":
            boxes = self.box_coder.decode_single(regression, anchors)
            return generalized_box_iou_loss(boxes, gt_boxes, reduction="sum")
        target = self.box_coder.encode_single(gt_boxes, anchors)
        if self._loss_type == "l1":
            return F.l1_loss(regression, target, reduction="sum")
        if self._loss_type == "smooth_l1":
            return F.smooth_l1_loss(regression, target, reduction="sum", beta=1.0)
        raise ValueError(f"_loss_type must be 'l1', 'smooth_l1' or 'giou', got {self._loss_type!r}")

    def forward_levels(self, x: list[Tensor]) -> list[Tensor]:
        """The box deltas of each level, ``[N, HWA, 4]`` each.

        Example:
            >>> import torch
            >>> head = RetinaNetRegressionHead(4, 3)
            >>> [t.shape for t in head.forward_levels([torch.rand(1, 4, 2, 2)])]
            [torch.Size([1, 12, 4])]
        """
        return [_per_location(self.bbox_reg(self.conv(f)), 4) for f in x]


class RetinaNetHead(nn.Module):
    """The classification and regression heads of RetinaNet, as torchvision's.

    Args:
        in_channels: channels of the feature maps.
        num_anchors: anchors per location.
        num_classes: classes (including the background).
        norm_layer: a norm layer in the towers (default none).

    Example:
        >>> import torch
        >>> head = RetinaNetHead(8, 9, 4)
        >>> {k: tuple(v.shape) for k, v in head([torch.rand(1, 8, 2, 2)]).items()}
        {'cls_logits': (1, 36, 4), 'bbox_regression': (1, 36, 4)}
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_classes: int,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(
            in_channels, num_anchors, num_classes, norm_layer=norm_layer
        )
        self.regression_head = RetinaNetRegressionHead(
            in_channels, num_anchors, norm_layer=norm_layer
        )

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> dict[str, Tensor]:
        """``{"classification": focal loss, "bbox_regression": L1 loss}``.

        Example:
            >>> import torch
            >>> head = RetinaNetHead(4, 1, 2)
            >>> out = {"cls_logits": torch.zeros(1, 1, 2), "bbox_regression": torch.zeros(1, 1, 4)}
            >>> t = [{"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)}]
            >>> anchors = [torch.tensor([[0.0, 0.0, 1.0, 1.0]])]
            >>> loss = head.compute_loss(t, out, anchors, [torch.tensor([-1])])
            >>> sorted(loss)
            ['bbox_regression', 'classification']
        """
        return {
            "classification": self.classification_head.compute_loss(
                targets, head_outputs, matched_idxs
            ),
            "bbox_regression": self.regression_head.compute_loss(
                targets, head_outputs, anchors, matched_idxs
            ),
        }

    def forward_levels(self, x: list[Tensor]) -> dict[str, list[Tensor]]:
        """The heads' outputs per level, not concatenated.

        Example:
            >>> import torch
            >>> out = RetinaNetHead(4, 1, 2).forward_levels([torch.rand(1, 4, 2, 2)] * 2)
            >>> [len(v) for v in out.values()]
            [2, 2]
        """
        return {
            "cls_logits": self.classification_head.forward_levels(x),
            "bbox_regression": self.regression_head.forward_levels(x),
        }

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        """``{"cls_logits": [N, HWA, K], "bbox_regression": [N, HWA, 4]}`` over all levels.

        Example:
            >>> import torch
            >>> out = RetinaNetHead(4, 1, 2)([torch.rand(1, 4, 2, 2)] * 2)
            >>> out["cls_logits"].shape
            torch.Size([1, 8, 2])
        """
        return {k: torch.cat(v, dim=1) for k, v in self.forward_levels(x).items()}


class RetinaNet(nn.Module):
    """RetinaNet: feature levels, anchors, focal-loss classification and box regression.

    Images are a list of float ``[C, H, W]`` tensors in [0, 1], of any sizes. In
    training mode, ``model(images, targets)`` takes one dict per image with
    ``boxes`` (float ``[N, 4]``, XYXY, ``x1 < x2`` and ``y1 < y2``; ``N`` may be 0)
    and ``labels`` (int64 ``[N]``), and returns ``{"classification",
    "bbox_regression"}`` losses. In eval mode ``model(images)`` returns one dict per
    image with ``boxes`` (XYXY in the input image's coordinates), ``scores`` and
    ``labels``; targets passed in eval mode are ignored.

    Args:
        backbone: a module returning a Tensor or an ordered dict of feature maps, with
            an ``out_channels`` attribute (the channels of every map).
        num_classes: classes, including the background.
        min_size: images are resized so that their shorter side is this long...
        max_size: ...unless their longer side would then exceed this.
        image_mean: the per-channel mean images are normalised with (default ImageNet's).
        image_std: the per-channel standard deviation (default ImageNet's).
        anchor_generator: an :class:`~trivium.vision.ops.AnchorGenerator` (default:
            sizes 32..512 with three scales each, ratios 0.5, 1, 2 per level).
        head: default :class:`RetinaNetHead`.
        proposal_matcher: default ``Matcher(fg_iou_thresh, bg_iou_thresh,
            allow_low_quality_matches=True)``.
        score_thresh: detections scoring at most this are dropped.
        nms_thresh: IoU threshold of the per-class non-maximum suppression.
        detections_per_img: detections kept per image (best first).
        fg_iou_thresh: the IoU above which an anchor is foreground in training.
        bg_iou_thresh: the IoU below which an anchor is background in training.
        topk_candidates: candidates kept per level before NMS.
        **kwargs: passed to the transform (``size_divisible``, ``fixed_size``).

    Bad targets (missing keys, boxes not float ``[N, 4]``, degenerate boxes, labels
    not one int64 per box) raise ``ValueError`` / ``TypeError`` naming the image.

    Example:
        >>> import torch
        >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
        >>> from trivium.vision.ops.feature_pyramid_network import LastLevelP6P7
        >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None,
        ...     returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256))
        >>> model = RetinaNet(backbone, num_classes=2, min_size=64, max_size=64)
        >>> t = [{"boxes": torch.tensor([[4.0, 4.0, 30.0, 40.0]]), "labels": torch.tensor([1])}]
        >>> sorted(model([torch.rand(3, 64, 64)], t))
        ['bbox_regression', 'classification']
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int,
        min_size: int = 800,
        max_size: int = 1333,
        image_mean: list[float] | None = None,
        image_std: list[float] | None = None,
        anchor_generator: AnchorGenerator | None = None,
        head: nn.Module | None = None,
        proposal_matcher: Matcher | None = None,
        score_thresh: float = 0.05,
        nms_thresh: float = 0.5,
        detections_per_img: int = 300,
        fg_iou_thresh: float = 0.5,
        bg_iou_thresh: float = 0.4,
        topk_candidates: int = 1000,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.backbone = checked_backbone(backbone)
        if not isinstance(anchor_generator, AnchorGenerator | None):
            raise TypeError(
                "anchor_generator should be of type AnchorGenerator or None instead of "
                f"{type(anchor_generator)}"
            )
        if anchor_generator is None:
            anchor_generator = _default_anchorgen()
        self.anchor_generator = anchor_generator
        if head is None:
            head = RetinaNetHead(
                backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes
            )
        self.head = head
        if proposal_matcher is None:
            proposal_matcher = Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.proposal_matcher = proposal_matcher
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.transform = _imagenet_transform(min_size, max_size, image_mean, image_std, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
    ) -> dict[str, Tensor]:
        """The head's losses, with each anchor matched to a target box (or background).

        Example:
            >>> import torch
            >>> from trivium.vision.models import retinanet_resnet18_fpn
            >>> model = retinanet_resnet18_fpn(num_classes=2)
            >>> out = {"cls_logits": torch.zeros(1, 1, 2), "bbox_regression": torch.zeros(1, 1, 4)}
            >>> t = [{"boxes": torch.tensor([[0., 0., 4., 4.]]), "labels": torch.tensor([1])}]
            >>> loss = model.compute_loss(t, out, [torch.tensor([[0., 0., 4., 4.]])])
            >>> round(loss["bbox_regression"].item(), 4)
            0.0
        """
        matched_idxs = []
        for anchors_per_image, targets_per_image in zip(anchors, targets, strict=False):
            if targets_per_image["boxes"].numel() == 0:
                matched_idxs.append(
                    torch.full(
                        (anchors_per_image.size(0),),
                        -1,
                        dtype=torch.int64,
                        device=anchors_per_image.device,
                    )
                )
                continue
            match_quality_matrix = box_iou(targets_per_image["boxes"], anchors_per_image)
            matched_idxs.append(self.proposal_matcher(match_quality_matrix))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(
        self,
        head_outputs: dict[str, list[Tensor]],
        anchors: list[list[Tensor]],
        image_shapes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        """Per image: the best ``topk_candidates`` per level above ``score_thresh``, decoded,
        clipped, then per-class NMS; at most ``detections_per_img`` (in the resized image).

        ``head_outputs`` holds, per key, one ``[N, HWA, ...]`` tensor per level, and
        ``anchors`` one list of per-level anchors per image.

        Example:
            >>> import torch
            >>> from trivium.vision.models import retinanet_resnet18_fpn
            >>> model = retinanet_resnet18_fpn(num_classes=2, score_thresh=0.5)
            >>> logits = torch.tensor([[[-5.0, 3.0]]])
            >>> out = {"cls_logits": [logits], "bbox_regression": [torch.zeros(1, 1, 4)]}
            >>> anchors = [[torch.tensor([[1.0, 2.0, 3.0, 4.0]])]]
            >>> det = model.postprocess_detections(out, anchors, [(8, 8)])
            >>> det[0]["boxes"], det[0]["labels"]
            (tensor([[1., 2., 3., 4.]]), tensor([1]))
        """
        return dense_detections(
            head_outputs,
            anchors,
            image_shapes,
            lambda outputs: torch.sigmoid(outputs["cls_logits"]),
            self.box_coder.decode_single,
            self,
        )

    def _num_classes(self) -> int | None:
        head = getattr(self.head, "classification_head", None)
        return getattr(head, "num_classes", None)

    def forward(
        self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
    ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        """Training: the losses for ``targets``. Eval: the detections of each image.

        Example:
            >>> import torch
            >>> from trivium.vision.models import retinanet_resnet18_fpn
            >>> model = retinanet_resnet18_fpn(num_classes=2, min_size=64, max_size=64).eval()
            >>> [sorted(d) for d in model([torch.rand(3, 32, 32), torch.rand(3, 40, 30)])]
            [['boxes', 'labels', 'scores'], ['boxes', 'labels', 'scores']]
        """
        image_list, targets, original_image_sizes, features = prepared_batch(self, images, targets)
        feature_list = list(features.values())
        anchors = self.anchor_generator(image_list, feature_list)
        if self.training:
            assert targets is not None
            return self.compute_loss(targets, self.head(feature_list), anchors)
        split_outputs = self._head_levels(feature_list)
        sizes = [out.size(1) for out in split_outputs["cls_logits"]]
        split_anchors = [list(a.split(sizes)) for a in anchors]
        detections = self.postprocess_detections(
            split_outputs, split_anchors, image_list.image_sizes
        )
        return self.transform.postprocess(detections, image_list.image_sizes, original_image_sizes)

    def _head_levels(self, features: list[Tensor]) -> dict[str, list[Tensor]]:
        # Per-level head outputs; a head without forward_levels is split as torchvision does.
        if hasattr(self.head, "forward_levels"):
            return self.head.forward_levels(features)
        head_outputs = self.head(features)
        hw = sum(x.size(2) * x.size(3) for x in features)
        a = head_outputs["cls_logits"].size(1) // hw
        sizes = [x.size(2) * x.size(3) * a for x in features]
        return {k: list(v.split(sizes, dim=1)) for k, v in head_outputs.items()}


# ---------------------------------------------------------------------- builders


def _retinanet_resnet_fpn(
    name: str,
    backbone_name: str,
    weights: Weights | None,
    num_classes: int | None,
    weights_backbone: Weights | None,
    trainable_backbone_layers: int | None,
    kwargs: dict[str, Any],
) -> RetinaNet:
    state, num_classes, weights_backbone = resolve_weights(
        name, weights, num_classes, weights_backbone, kwargs, _classes_of
    )
    is_trained = weights is not None or weights_backbone is not None
    trainable = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    body = getattr(resnet, backbone_name)(weights=weights_backbone, norm_layer=norm_layer)
    # P6 from P5 (the FPN's width whatever the ResNet), skipping P2, as torchvision's v1.
    width = kwargs.pop("fpn_channels", 256)
    backbone = _resnet_fpn_extractor(
        body,
        trainable,
        returned_layers=[2, 3, 4],
        extra_blocks=LastLevelP6P7(width, width),
        out_channels=width,
    )
    model = RetinaNet(backbone, num_classes, **kwargs)
    if state is not None:
        model.load_state_dict(state)
    return model


def _classes_of(state: Mapping[str, Tensor]) -> int | None:
    weight = state.get("head.classification_head.cls_logits.weight")
    return None if weight is None else int(weight.shape[0]) // 9


_BUILDER_DOC = """
    Args:
        weights: the whole model's weights: a local file path (str or os.PathLike) of
            a state dict saved with ``torch.save`` (torchvision's
            ``retinanet_resnet50_fpn_coco`` ``.pth`` is such a file), or the state dict
            itself; None (default): random initialisation. Nothing is downloaded: a
            torchvision weights enum or its name raises ``ValueError``. The number of
            classes follows the weights.
        progress: accepted for torchvision compatibility and ignored (nothing is
            downloaded).
        num_classes: classes including the background (default 91, COCO's).
        weights_backbone: the ResNet's weights (a local path or a state dict), or None.
        trainable_backbone_layers: backbone layers left trainable, from the last
            (0 to 5; default 3). Without any weights every layer is trainable, and
            the ResNet uses ``nn.BatchNorm2d``; with weights it uses
            ``FrozenBatchNorm2d``.
        **kwargs: passed to :class:`RetinaNet` (``min_size``, ``score_thresh``, ...),
            except ``fpn_channels``: the width of the pyramid and the heads (default
            256, torchvision's; narrower trains faster on a CPU).
"""


def _with_builder_doc(fn: Callable[..., RetinaNet]) -> Callable[..., RetinaNet]:
    summary, _, example = (fn.__doc__ or "").partition("\n\n")
    fn.__doc__ = f"{summary}\n{_BUILDER_DOC}\n{example}"
    return fn


@_with_builder_doc
def retinanet_resnet50_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> RetinaNet:
    """RetinaNet with a ResNet-50 FPN backbone (P3-P7), as torchvision's ``retinanet_resnet50_fpn``.

    With ``weights``, the backbone's FrozenBatchNorm2d layers get ``eps=0``, as
    torchvision sets for its published COCO weights (which were trained so).
    ``weights_backbone`` defaults to None here (torchvision's default downloads
    ImageNet weights).

    Example:
        >>> import torch
        >>> model = retinanet_resnet50_fpn(num_classes=5, min_size=64, max_size=64).eval()
        >>> model.head.classification_head.cls_logits.out_channels
        45
    """
    model = _retinanet_resnet_fpn(
        "retinanet_resnet50_fpn",
        "resnet50",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
    )
    if weights is not None:
        overwrite_eps(model, 0.0)
    return model


@_with_builder_doc
def retinanet_resnet34_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> RetinaNet:
    """RetinaNet with a ResNet-34 FPN backbone: ``retinanet_resnet50_fpn``'s design, smaller.

    The FPN reads ``layer2`` .. ``layer4`` (128, 256, 512 channels) and, as the
    ResNet-50 model, computes P6 from P5 (``LastLevelP6P7(256, 256)``), since P5 has
    the FPN's 256 channels whatever the ResNet.

    Example:
        >>> retinanet_resnet34_fpn(num_classes=3).backbone.fpn.inner_blocks[0][0].in_channels
        128
    """
    return _retinanet_resnet_fpn(
        "retinanet_resnet34_fpn",
        "resnet34",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
    )


@_with_builder_doc
def retinanet_resnet18_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> RetinaNet:
    """RetinaNet with a ResNet-18 FPN backbone: the smallest configuration, for CPU training.

    Its pyramid is that of :func:`retinanet_resnet34_fpn` (the same ResNet stage widths).

    Example:
        >>> import torch
        >>> model = retinanet_resnet18_fpn(num_classes=3, min_size=64, max_size=64)
        >>> t = [{"boxes": torch.tensor([[8.0, 8.0, 40.0, 40.0]]), "labels": torch.tensor([2])}]
        >>> sorted(model([torch.rand(3, 64, 64)], t))
        ['bbox_regression', 'classification']
    """
    return _retinanet_resnet_fpn(
        "retinanet_resnet18_fpn",
        "resnet18",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
    )


@_with_builder_doc
def retinanet_resnet50_fpn_v2(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> RetinaNet:
    """RetinaNet v2 (ResNet-50 FPN), as torchvision's ``retinanet_resnet50_fpn_v2``.

    The changes of torchvision's v2 recipe: GroupNorm (32 groups) in the heads' towers,
    P6 from C5 (``LastLevelP6P7(2048, 256)``), the GIoU loss of the decoded boxes
    (``_loss_type = "giou"``), and a ResNet with ``nn.BatchNorm2d`` whatever the
    weights (torchvision's v2 does not freeze its norm layers). ``fpn_channels`` is
    not taken.

    Example:
        >>> model = retinanet_resnet50_fpn_v2(num_classes=5)
        >>> model.head.regression_head._loss_type, model.backbone.fpn.extra_blocks.use_P5
        ('giou', False)
    """
    state, num_classes, weights_backbone = resolve_weights(
        "retinanet_resnet50_fpn_v2", weights, num_classes, weights_backbone, kwargs, _classes_of
    )
    is_trained = weights is not None or weights_backbone is not None
    trainable = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    body = resnet.resnet50(weights=weights_backbone)
    backbone = _resnet_fpn_extractor(
        body, trainable, returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(2048, 256)
    )
    anchor_generator = _default_anchorgen()
    head = RetinaNetHead(
        backbone.out_channels,
        anchor_generator.num_anchors_per_location()[0],
        num_classes,
        norm_layer=partial(nn.GroupNorm, 32),
    )
    head.regression_head._loss_type = "giou"
    model = RetinaNet(backbone, num_classes, anchor_generator=anchor_generator, head=head, **kwargs)
    if state is not None:
        model.load_state_dict(state)
    return model
