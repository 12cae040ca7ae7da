"""FCOS (Tian et al., 2019) with torchvision's classes, builder, parameter names and numerics.

:class:`FCOS`, its heads and :func:`fcos_resnet50_fpn` have the names, arguments and
state dict keys of ``torchvision.models.detection.fcos``, so torchvision's
``fcos_resnet50_fpn_coco`` checkpoint loads with ``strict=True``. FCOS is anchor-free:
one point per location and level (an "anchor" of the level's stride, used only for
its centre and size); in training a point is foreground for a box when it lies inside
the box, within ``center_sampling_radius`` strides of its centre and the box's extent
suits the level; the losses are the focal loss, the GIoU loss of the decoded boxes and
the binary cross-entropy of the centerness.

Example:
    >>> import torch
    >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
    >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
    >>> model = FCOS(backbone, num_classes=3, min_size=64, max_size=64).eval()
    >>> out = model([torch.rand(3, 48, 64)])
    >>> sorted(out[0])
    ['boxes', 'labels', 'scores']
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
    prepared_batch,
    resolve_weights,
)
from trivium.vision.models.detection.retinanet import _per_location
from trivium.vision.models.detection.transform import _imagenet_transform
from trivium.vision.models.weights import Weights
from trivium.vision.ops import (
    AnchorGenerator,
    BoxLinearCoder,
    FrozenBatchNorm2d,
    generalized_box_iou_loss,
    sigmoid_focal_loss,
)
from trivium.vision.ops.feature_pyramid_network import LastLevelP6P7

__all__ = [
    "FCOS",
    "FCOSClassificationHead",
    "FCOSHead",
    "FCOSRegressionHead",
    "fcos_resnet50_fpn",
]


def _tower(
    in_channels: int, num_convs: int, norm_layer: Callable[..., nn.Module] | None
) -> nn.Sequential:
    # (conv, norm, ReLU) x num_convs, flat: state dict keys conv.0, conv.1, conv.3, ...
    if norm_layer is None:
        norm_layer = partial(nn.GroupNorm, 32)
    layers: list[nn.Module] = []
    for _ in range(num_convs):
        layers += [nn.Conv2d(in_channels, in_channels, 3, padding=1), norm_layer(in_channels)]
        layers.append(nn.ReLU())
    tower = nn.Sequential(*layers)
    for layer in tower.children():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)
    return tower


class FCOSClassificationHead(nn.Module):
    """Class logits per location: ``num_convs`` x (3x3 conv, GroupNorm, ReLU), then ``cls_logits``.

    Args:
        in_channels: channels of the feature maps.
        num_anchors: points per location (1 in FCOS).
        num_classes: classes (including the background).
        num_convs: convolutions in the tower.
        prior_probability: the initial foreground probability (bias of ``cls_logits``).
        norm_layer: the tower's norm layer (default ``GroupNorm(32, ...)``).

    Example:
        >>> import torch
        >>> head = FCOSClassificationHead(32, 1, 5)
        >>> head([torch.rand(2, 32, 8, 8), torch.rand(2, 32, 4, 4)]).shape
        torch.Size([2, 80, 5])
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_classes: int,
        num_convs: int = 4,
        prior_probability: float = 0.01,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.conv = _tower(in_channels, num_convs, norm_layer)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, 3, padding=1)
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(
            self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability)
        )

    def forward(self, x: list[Tensor]) -> Tensor:
        """The logits of all levels, ``[N, sum(HWA), num_classes]``.

        Example:
            >>> import torch
            >>> FCOSClassificationHead(32, 1, 3)([torch.rand(1, 32, 2, 2)]).shape
            torch.Size([1, 4, 3])
        """
        levels = [_per_location(self.cls_logits(self.conv(f)), self.num_classes) for f in x]
        return torch.cat(levels, dim=1)


class FCOSRegressionHead(nn.Module):
    """Box distances (ReLU'd) and centerness per location, from one shared tower.

    Args:
        in_channels: channels of the feature maps.
        num_anchors: points per location (1 in FCOS).
        num_convs: convolutions in the tower.
        norm_layer: the tower's norm layer (default ``GroupNorm(32, ...)``).

    Example:
        >>> import torch
        >>> reg, ctr = FCOSRegressionHead(32, 1)([torch.rand(2, 32, 4, 4)])
        >>> reg.shape, ctr.shape, bool((reg >= 0).all())
        (torch.Size([2, 16, 4]), torch.Size([2, 16, 1]), True)
    """

    def __init__(
        self,
        in_channels: int,
        num_anchors: int,
        num_convs: int = 4,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.conv = _tower(in_channels, num_convs, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, 3, padding=1)
        self.bbox_ctrness = nn.Conv2d(in_channels, num_anchors, 3, padding=1)
        for layer in (self.bbox_reg, self.bbox_ctrness):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)

    def forward(self, x: list[Tensor]) -> tuple[Tensor, Tensor]:
        """``([N, sum(HWA), 4] distances, [N, sum(HWA), 1] centerness logits)``.

        Example:
            >>> import torch
            >>> [t.shape[1] for t in FCOSRegressionHead(32, 1)([torch.rand(1, 32, 3, 3)])]
            [9, 9]
        """
        regression, ctrness = [], []
        for features in x:
            tower = self.conv(features)
            regression.append(_per_location(F.relu(self.bbox_reg(tower)), 4))
            ctrness.append(_per_location(self.bbox_ctrness(tower), 1))
        return torch.cat(regression, dim=1), torch.cat(ctrness, dim=1)


class FCOSHead(nn.Module):
    """FCOS's classification and regression heads and its losses, as torchvision's.

    Args:
        in_channels: channels of the feature maps.
        num_anchors: points per location (1 in FCOS).
        num_classes: classes (including the background).
        num_convs: convolutions in each tower.

    Example:
        >>> import torch
        >>> head = FCOSHead(32, 1, 4)
        >>> {k: tuple(v.shape) for k, v in head([torch.rand(1, 32, 2, 2)]).items()}
        {'cls_logits': (1, 4, 4), 'bbox_regression': (1, 4, 4), 'bbox_ctrness': (1, 4, 1)}
    """

    def __init__(
        self, in_channels: int, num_anchors: int, num_classes: int, num_convs: int | None = 4
    ) -> None:
        super().__init__()
        num_convs = 4 if num_convs is None else num_convs
        self.box_coder = BoxLinearCoder(normalize_by_size=True)
        self.classification_head = FCOSClassificationHead(
            in_channels, num_anchors, num_classes, num_convs
        )
        self.regression_head = FCOSRegressionHead(in_channels, num_anchors, num_convs)

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> dict[str, Tensor]:
        """Focal, GIoU and centerness losses, each summed over the batch's foreground points.

        ``matched_idxs`` holds, per image, the index of the box each point is
        foreground for, or -1.

        Example:
            >>> import torch
            >>> head = FCOSHead(32, 1, 2)
            >>> out = {"cls_logits": torch.zeros(1, 2, 2), "bbox_regression": torch.ones(1, 2, 4),
            ...        "bbox_ctrness": torch.zeros(1, 2, 1)}
            >>> t = [{"boxes": torch.tensor([[0.0, 0.0, 8.0, 8.0]]), "labels": torch.tensor([1])}]
            >>> anchors = [torch.tensor([[0.0, 0.0, 8.0, 8.0], [8.0, 8.0, 16.0, 16.0]])]
            >>> losses = head.compute_loss(t, out, anchors, [torch.tensor([0, -1])])
            >>> round(losses["bbox_regression"].item(), 4), round(losses["bbox_ctrness"].item(), 4)
            (0.75, 0.6931)
        """
        cls_logits = head_outputs["cls_logits"]
        classes, boxes = _matched_targets(targets, matched_idxs)
        anchors_t = torch.stack(anchors)
        foreground = classes >= 0
        num_foreground = max(1, int(foreground.sum().item()))
        gt_classes = torch.zeros_like(cls_logits)
        gt_classes[foreground, classes[foreground]] = 1.0
        loss_cls = sigmoid_focal_loss(cls_logits, gt_classes, reduction="sum")
        pred_boxes = self.box_coder.decode(head_outputs["bbox_regression"], anchors_t)
        loss_reg = generalized_box_iou_loss(
            pred_boxes[foreground], boxes[foreground], reduction="sum"
        )
        ctrness = _centerness(self.box_coder.encode(anchors_t, boxes))
        loss_ctrness = F.binary_cross_entropy_with_logits(
            head_outputs["bbox_ctrness"].squeeze(dim=2)[foreground],
            ctrness[foreground],
            reduction="sum",
        )
        return {
            "classification": loss_cls / num_foreground,
            "bbox_regression": loss_reg / num_foreground,
            "bbox_ctrness": loss_ctrness / num_foreground,
        }

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        """``{"cls_logits", "bbox_regression", "bbox_ctrness"}`` of all levels, concatenated.

        Example:
            >>> import torch
            >>> sorted(FCOSHead(32, 1, 2)([torch.rand(1, 32, 2, 2)]))
            ['bbox_ctrness', 'bbox_regression', 'cls_logits']
        """
        regression, ctrness = self.regression_head(x)
        return {
            "cls_logits": self.classification_head(x),
            "bbox_regression": regression,
            "bbox_ctrness": ctrness,
        }


def _matched_targets(
    targets: list[dict[str, Tensor]], matched_idxs: list[Tensor]
) -> tuple[Tensor, Tensor]:
    # Per point: the matched box's label (-1 for background) and the box, stacked over images.
    all_classes, all_boxes = [], []
    for target, matched in zip(targets, matched_idxs, strict=True):
        if len(target["labels"]) == 0:
            classes = target["labels"].new_zeros((len(matched),))
            boxes = target["boxes"].new_zeros((len(matched), 4))
        else:
            classes = target["labels"][matched.clip(min=0)]
            boxes = target["boxes"][matched.clip(min=0)]
        classes[matched < 0] = -1
        all_classes.append(classes)
        all_boxes.append(boxes)
    return torch.stack(all_classes), torch.stack(all_boxes)


def _centerness(distances: Tensor) -> Tensor:
    # sqrt(min(l, r) / max(l, r) * min(t, b) / max(t, b)) of [N, P, 4] (l, t, r, b).
    if len(distances) == 0:
        return distances.new_zeros(distances.size()[:-1])
    left_right = distances[:, :, [0, 2]]
    top_bottom = distances[:, :, [1, 3]]
    return torch.sqrt(
        (left_right.min(dim=-1)[0] / left_right.max(dim=-1)[0])
        * (top_bottom.min(dim=-1)[0] / top_bottom.max(dim=-1)[0])
    )


class FCOS(nn.Module):
    """FCOS: anchor-free detection with focal, GIoU and centerness losses.

    Images and targets are those of :class:`~trivium.vision.models.RetinaNet`: a list of
    float ``[C, H, W]`` images; in training one dict per image with ``boxes`` (float
    ``[N, 4]`` XYXY) and ``labels`` (int64 ``[N]``), giving ``{"classification",
    "bbox_regression", "bbox_ctrness"}`` losses; in eval one dict per image with
    ``boxes``, ``scores`` (``sqrt(class probability x centerness)``) and ``labels``.

    Args:
        backbone: a module returning a Tensor or an ordered dict of feature maps, with
            an ``out_channels`` attribute.
        num_classes: classes, including the background.
        min_size: images are resized so that their shorter side is this long...
        max_size: ...unless their longer side would then exceed this.
        image_mean: the per-channel mean images are normalised with (default ImageNet's).
        image_std: the per-channel standard deviation (default ImageNet's).
        anchor_generator: an :class:`~trivium.vision.ops.AnchorGenerator` with one
            anchor per location (default: sizes 8, 16, 32, 64, 128, the levels' strides).
        head: default :class:`FCOSHead`.
        center_sampling_radius: a point is foreground only within this many strides
            of a box's centre.
        score_thresh: detections scoring at most this are dropped.
        nms_thresh: IoU threshold of the per-class non-maximum suppression.
        detections_per_img: detections kept per image (best first).
        topk_candidates: candidates kept per level before NMS.
        **kwargs: passed to the transform (``size_divisible``, ``fixed_size``).

    Example:
        >>> import torch
        >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
        >>> from trivium.vision.ops.feature_pyramid_network import LastLevelP6P7
        >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None,
        ...     returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256))
        >>> model = FCOS(backbone, num_classes=2, min_size=64, max_size=64)
        >>> t = [{"boxes": torch.tensor([[4.0, 4.0, 30.0, 40.0]]), "labels": torch.tensor([1])}]
        >>> sorted(model([torch.rand(3, 64, 64)], t))
        ['bbox_ctrness', 'bbox_regression', 'classification']
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
        center_sampling_radius: float = 1.5,
        score_thresh: float = 0.2,
        nms_thresh: float = 0.6,
        detections_per_img: int = 100,
        topk_candidates: int = 1000,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.backbone = checked_backbone(backbone)
        if not isinstance(anchor_generator, AnchorGenerator | None):
            raise TypeError(
                "anchor_generator should be of type AnchorGenerator or None, instead got "
                f"{type(anchor_generator)}"
            )
        if anchor_generator is None:
            sizes = ((8,), (16,), (32,), (64,), (128,))  # the levels' strides
            anchor_generator = AnchorGenerator(sizes, ((1.0,),) * len(sizes))
        self.anchor_generator = anchor_generator
        if anchor_generator.num_anchors_per_location()[0] != 1:
            raise ValueError(
                "anchor_generator.num_anchors_per_location()[0] should be 1 instead of "
                f"{anchor_generator.num_anchors_per_location()[0]}"
            )
        if head is None:
            head = FCOSHead(backbone.out_channels, 1, num_classes)
        self.head = head
        self.box_coder = BoxLinearCoder(normalize_by_size=True)
        self.transform = _imagenet_transform(min_size, max_size, image_mean, image_std, **kwargs)
        self.center_sampling_radius = center_sampling_radius
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        num_anchors_per_level: list[int],
    ) -> dict[str, Tensor]:
        """The head's losses, with each point matched to the smallest box it may predict.

        A point matches a box when it lies inside it, within ``center_sampling_radius``
        strides of its centre, and the box's farthest edge is between 4 and 8 strides
        away (0 and 8 on the first level, 4 and infinity on the last).

        Example:
            >>> import torch
            >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
            >>> model = FCOS(resnet_fpn_backbone(backbone_name="resnet18", weights=None), 2)
            >>> anchors = [torch.tensor([[0.0, 0.0, 8.0, 8.0], [8.0, 8.0, 16.0, 16.0]])]
            >>> t = [{"boxes": torch.tensor([[0.0, 0.0, 12.0, 12.0]]), "labels": torch.tensor([1])}]
            >>> out = {"cls_logits": torch.zeros(1, 2, 2), "bbox_regression": torch.ones(1, 2, 4),
            ...        "bbox_ctrness": torch.zeros(1, 2, 1)}
            >>> round(model.compute_loss(t, out, anchors, [2])["bbox_regression"].item(), 4)
            0.4375
        """
        matched_idxs = []
        for anchors_per_image, target in zip(anchors, targets, strict=True):
            if target["boxes"].numel() == 0:
                matched_idxs.append(
                    torch.full(
                        (anchors_per_image.size(0),),
                        -1,
                        dtype=torch.int64,
                        device=anchors_per_image.device,
                    )
                )
                continue
            matched_idxs.append(
                self._match_image(target["boxes"], anchors_per_image, num_anchors_per_level)
            )
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def _match_image(
        self, gt_boxes: Tensor, anchors: Tensor, num_anchors_per_level: list[int]
    ) -> Tensor:
        gt_centers = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2
        anchor_centers = (anchors[:, :2] + anchors[:, 2:]) / 2
        anchor_sizes = anchors[:, 2] - anchors[:, 0]
        # Centre sampling: the point is near the box's centre.
        match = (anchor_centers[:, None, :] - gt_centers[None, :, :]).abs_().max(
            dim=2
        ).values < self.center_sampling_radius * anchor_sizes[:, None]
        x, y = anchor_centers.unsqueeze(dim=2).unbind(dim=1)
        x0, y0, x1, y1 = gt_boxes.unsqueeze(dim=0).unbind(dim=2)
        dist = torch.stack([x - x0, y - y0, x1 - x, y1 - y], dim=2)
        match &= dist.min(dim=2).values > 0  # inside the box
        # Each level predicts boxes of one range of extents.
        lower = anchor_sizes * 4
        lower[: num_anchors_per_level[0]] = 0
        upper = anchor_sizes * 8
        upper[-num_anchors_per_level[-1] :] = float("inf")
        farthest = dist.max(dim=2).values
        match &= (farthest > lower[:, None]) & (farthest < upper[:, None])
        # The smallest of several matching boxes.
        areas = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
        weighted = match.to(torch.float32) * (1e8 - areas[None, :])
        best, matched = weighted.max(dim=1)
        matched[best < 1e-5] = -1
        return matched

    def postprocess_detections(
        self,
        head_outputs: dict[str, list[Tensor]],
        anchors: list[list[Tensor]],
        image_shapes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        """Per image: each level's best ``topk_candidates`` above ``score_thresh``, decoded,
        clipped, then per-class NMS; at most ``detections_per_img``.

        Example:
            >>> import torch
            >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
            >>> model = FCOS(resnet_fpn_backbone(backbone_name="resnet18", weights=None), 2)
            >>> out = {"cls_logits": [torch.tensor([[[-5.0, 5.0]]])],
            ...        "bbox_regression": [torch.zeros(1, 1, 4)],
            ...        "bbox_ctrness": [torch.tensor([[[5.0]]])]}
            >>> anchors = [[torch.tensor([[0.0, 0, 8, 8]])]]
            >>> det = model.postprocess_detections(out, anchors, [(8, 8)])
            >>> det[0]["boxes"], det[0]["labels"]
            (tensor([[4., 4., 4., 4.]]), tensor([1]))
        """
        return dense_detections(
            head_outputs,
            anchors,
            image_shapes,
            _scores,
            self.box_coder.decode,
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
            >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
            >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
            >>> model = FCOS(backbone, num_classes=2, min_size=64, max_size=64).eval()
            >>> [sorted(d) for d in model([torch.rand(3, 32, 32)])]
            [['boxes', 'labels', 'scores']]
        """
        image_list, targets, original_image_sizes, features = prepared_batch(self, images, targets)
        feature_list = list(features.values())
        head_outputs = self.head(feature_list)
        anchors = self.anchor_generator(image_list, feature_list)
        num_anchors_per_level = [x.size(2) * x.size(3) for x in feature_list]
        if self.training:
            assert targets is not None
            return self.compute_loss(targets, head_outputs, anchors, num_anchors_per_level)
        split_outputs = {
            k: list(v.split(num_anchors_per_level, dim=1)) for k, v in head_outputs.items()
        }
        split_anchors = [list(a.split(num_anchors_per_level)) for a in anchors]
        detections = self.postprocess_detections(
            split_outputs, split_anchors, image_list.image_sizes
        )
        return self.transform.postprocess(detections, image_list.image_sizes, original_image_sizes)


def _scores(outputs: dict[str, Tensor]) -> Tensor:
    # FCOS ranks a point's classes by the geometric mean of class and centerness scores.
    return torch.sqrt(torch.sigmoid(outputs["cls_logits"]) * torch.sigmoid(outputs["bbox_ctrness"]))


def _classes_of(state: Mapping[str, Tensor]) -> int | None:
    weight = state.get("head.classification_head.cls_logits.weight")
    return None if weight is None else int(weight.shape[0])


def fcos_resnet50_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FCOS:
    """FCOS with a ResNet-50 FPN backbone (P3-P7), as torchvision's ``fcos_resnet50_fpn``.

    Args:
        weights: the whole model's weights: a local file path of a state dict saved
            with ``torch.save`` (torchvision's ``fcos_resnet50_fpn_coco`` ``.pth`` is
            such a file), or the state dict itself; None (default): random
            initialisation. Nothing is downloaded. The number of classes follows the
            weights.
        progress: accepted for torchvision compatibility and ignored.
        num_classes: classes including the background (default 91, COCO's).
        weights_backbone: the ResNet's weights (a local path or a state dict), or None
            (torchvision's default downloads ImageNet weights).
        trainable_backbone_layers: backbone layers left trainable, from the last
            (0 to 5; default 3). Without any weights every layer is trainable and the
            ResNet uses ``nn.BatchNorm2d``; with weights, ``FrozenBatchNorm2d``.
        **kwargs: passed to :class:`FCOS` (``min_size``, ``score_thresh``, ...).

    Example:
        >>> model = fcos_resnet50_fpn(num_classes=5)
        >>> model.head.classification_head.cls_logits.out_channels
        5
    """
    state, num_classes, weights_backbone = resolve_weights(
        "fcos_resnet50_fpn", weights, num_classes, weights_backbone, kwargs, _classes_of
    )
    is_trained = weights is not None or weights_backbone is not None
    trainable = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    body = resnet.resnet50(weights=weights_backbone, norm_layer=norm_layer)
    backbone = _resnet_fpn_extractor(
        body, trainable, returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256)
    )
    model = FCOS(backbone, num_classes, **kwargs)
    if state is not None:
        model.load_state_dict(state)
    return model
