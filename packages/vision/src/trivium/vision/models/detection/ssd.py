"""SSD (Liu et al., 2016) with torchvision's classes, builder, parameter names and numerics.

:class:`SSD`, its heads and :func:`ssd300_vgg16` have the names, arguments and state
dict keys of ``torchvision.models.detection.ssd``, so torchvision's ``ssd300_vgg16_coco``
checkpoint loads with ``strict=True``. Images are resized to one fixed size; the
default boxes come from :class:`~trivium.vision.ops.DefaultBoxGenerator`; training
matches them with :class:`~trivium.vision.ops.SSDMatcher` and mines hard negatives
(the background boxes of highest loss, three per foreground box by default).

Example:
    >>> import torch
    >>> from trivium.vision.ops import DefaultBoxGenerator
    >>> backbone = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=8), torch.nn.ReLU())
    >>> backbone.out_channels = [8]
    >>> model = SSD(backbone, DefaultBoxGenerator([[2]]), (64, 64), num_classes=3).eval()
    >>> sorted(model([torch.rand(3, 48, 64)])[0])
    ['boxes', 'labels', 'scores']
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models.backbone_utils import _validate_trainable_layers
from trivium.vision.models.detection._utils import (
    nms_detections,
    prepared_batch,
    resolve_weights,
)
from trivium.vision.models.detection.retinanet import _per_location
from trivium.vision.models.detection.transform import _imagenet_transform
from trivium.vision.models.vgg import VGG, vgg16
from trivium.vision.models.weights import Weights
from trivium.vision.ops import (
    BoxCoder,
    DefaultBoxGenerator,
    SSDMatcher,
    box_iou,
    clip_boxes_to_image,
)

__all__ = [
    "SSD",
    "SSDClassificationHead",
    "SSDFeatureExtractorVGG",
    "SSDHead",
    "SSDRegressionHead",
    "SSDScoringHead",
    "ssd300_vgg16",
]


def _xavier_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDScoringHead(nn.Module):
    """One module per feature map, their outputs as ``[N, sum(HWA), num_columns]``.

    Args:
        module_list: the module of each feature map, in order.
        num_columns: outputs per box (the classes, or 4 box deltas).

    Example:
        >>> import torch
        >>> head = SSDScoringHead(nn.ModuleList([nn.Conv2d(4, 6, 1), nn.Conv2d(8, 3, 1)]), 3)
        >>> head([torch.rand(1, 4, 2, 2), torch.rand(1, 8, 1, 1)]).shape
        torch.Size([1, 9, 3])
    """

    def __init__(self, module_list: nn.ModuleList, num_columns: int) -> None:
        super().__init__()
        self.module_list = module_list
        self.num_columns = num_columns

    def forward(self, x: list[Tensor]) -> Tensor:
        """The outputs of all feature maps, concatenated.

        Example:
            >>> import torch
            >>> head = SSDScoringHead(nn.ModuleList([nn.Conv2d(4, 8, 1)]), 4)
            >>> head([torch.rand(2, 4, 3, 3)]).shape
            torch.Size([2, 18, 4])
        """
        if len(x) != len(self.module_list):
            raise ValueError(
                f"expected {len(self.module_list)} feature maps (one per module), got {len(x)}"
            )
        outputs = [
            _per_location(module(features), self.num_columns)
            for module, features in zip(self.module_list, x, strict=True)
        ]
        return torch.cat(outputs, dim=1)


class SSDClassificationHead(SSDScoringHead):
    """Class logits: one 3x3 convolution per feature map (``module_list``), Xavier-initialised.

    Args:
        in_channels: channels of each feature map.
        num_anchors: default boxes per position of each map.
        num_classes: classes (including the background).

    Example:
        >>> import torch
        >>> SSDClassificationHead([4], [6], 3)([torch.rand(1, 4, 2, 2)]).shape
        torch.Size([1, 24, 3])
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        cls_logits = nn.ModuleList(
            nn.Conv2d(channels, num_classes * anchors, kernel_size=3, padding=1)
            for channels, anchors in zip(in_channels, num_anchors, strict=True)
        )
        _xavier_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDRegressionHead(SSDScoringHead):
    """Box deltas: one 3x3 convolution per feature map (``module_list``), Xavier-initialised.

    Args:
        in_channels: channels of each feature map.
        num_anchors: default boxes per position of each map.

    Example:
        >>> import torch
        >>> SSDRegressionHead([4], [6])([torch.rand(1, 4, 2, 2)]).shape
        torch.Size([1, 24, 4])
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int]) -> None:
        bbox_reg = nn.ModuleList(
            nn.Conv2d(channels, 4 * anchors, kernel_size=3, padding=1)
            for channels, anchors in zip(in_channels, num_anchors, strict=True)
        )
        _xavier_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSDHead(nn.Module):
    """SSD's classification and regression heads, as torchvision's.

    Args:
        in_channels: channels of each feature map.
        num_anchors: default boxes per position of each map.
        num_classes: classes (including the background).

    Example:
        >>> import torch
        >>> out = SSDHead([4, 8], [4, 6], 3)([torch.rand(1, 4, 2, 2), torch.rand(1, 8, 1, 1)])
        >>> {k: tuple(v.shape) for k, v in out.items()}
        {'bbox_regression': (1, 22, 4), 'cls_logits': (1, 22, 3)}
    """

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        super().__init__()
        self.classification_head = SSDClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = SSDRegressionHead(in_channels, num_anchors)

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        """``{"bbox_regression", "cls_logits"}`` of all feature maps, concatenated.

        Example:
            >>> import torch
            >>> sorted(SSDHead([4], [4], 2)([torch.rand(1, 4, 1, 1)]))
            ['bbox_regression', 'cls_logits']
        """
        return {
            "bbox_regression": self.regression_head(x),
            "cls_logits": self.classification_head(x),
        }


def _out_channels(model: nn.Module, size: tuple[int, int]) -> list[int]:
    # The channels of each feature map, from one forward of a zero image (W x H = size).
    in_training = model.training
    model.eval()
    with torch.no_grad():
        device = next(model.parameters()).device
        features = model(torch.zeros((1, 3, size[1], size[0]), device=device))
    model.train(in_training)
    if isinstance(features, Tensor):
        return [features.size(1)]
    return [x.size(1) for x in features.values()]


class SSD(nn.Module):
    """SSD: default boxes on several feature maps, softmax classes and box deltas.

    Images and targets are those of :class:`~trivium.vision.models.RetinaNet`; every
    image is resized to ``size`` (the boxes returned are in the input's coordinates).
    Training gives ``{"bbox_regression", "classification"}``: the smooth L1 loss of the
    foreground boxes' deltas and the cross-entropy of the foreground boxes and of the
    hardest background boxes (``(1 - positive_fraction) / positive_fraction`` per
    foreground box), both over the number of foreground boxes.

    Args:
        backbone: a module returning a Tensor or an ordered dict of feature maps; its
            ``out_channels`` (a list) or, without one, a forward of a zero image gives
            their channels.
        anchor_generator: the :class:`~trivium.vision.ops.DefaultBoxGenerator`.
        size: (width, height) every image is resized to.
        num_classes: classes, including the background (0).
        image_mean: the per-channel mean images are normalised with (default ImageNet's).
        image_std: the per-channel standard deviation (default ImageNet's).
        head: default :class:`SSDHead`.
        score_thresh: detections scoring at most this are dropped.
        nms_thresh: IoU threshold of the per-class non-maximum suppression.
        detections_per_img: detections kept per image (best first).
        iou_thresh: the IoU from which a default box is foreground in training.
        topk_candidates: candidates kept per class before NMS.
        positive_fraction: the share of foreground boxes in the classification loss.
        **kwargs: passed to the transform.

    Example:
        >>> import torch
        >>> from trivium.vision.ops import DefaultBoxGenerator
        >>> backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=8), nn.ReLU())
        >>> backbone.out_channels = [8]
        >>> model = SSD(backbone, DefaultBoxGenerator([[2]]), (64, 64), num_classes=3)
        >>> t = [{"boxes": torch.tensor([[4.0, 4.0, 30.0, 40.0]]), "labels": torch.tensor([1])}]
        >>> sorted(model([torch.rand(3, 64, 64)], t))
        ['bbox_regression', 'classification']
    """

    def __init__(
        self,
        backbone: nn.Module,
        anchor_generator: DefaultBoxGenerator,
        size: tuple[int, int],
        num_classes: int,
        image_mean: list[float] | None = None,
        image_std: list[float] | None = None,
        head: nn.Module | None = None,
        score_thresh: float = 0.01,
        nms_thresh: float = 0.45,
        detections_per_img: int = 200,
        iou_thresh: float = 0.5,
        topk_candidates: int = 400,
        positive_fraction: float = 0.25,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not 0.0 < positive_fraction <= 1.0:
            raise ValueError(f"positive_fraction must be in (0, 1], got {positive_fraction}")
        self.backbone = backbone
        self.anchor_generator = anchor_generator
        self.box_coder = BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
        if head is None:
            out_channels = getattr(backbone, "out_channels", None)
            if out_channels is None:
                out_channels = _out_channels(backbone, size)
            if len(out_channels) != len(anchor_generator.aspect_ratios):
                raise ValueError(
                    f"The length of the output channels from the backbone ({len(out_channels)}) "
                    "do not match the length of the anchor generator aspect ratios "
                    f"({len(anchor_generator.aspect_ratios)})"
                )
            head = SSDHead(out_channels, anchor_generator.num_anchors_per_location(), num_classes)
        self.head = head
        self.proposal_matcher = SSDMatcher(iou_thresh)
        self.transform = _imagenet_transform(
            min(size),
            max(size),
            image_mean,
            image_std,
            size_divisible=1,
            fixed_size=size,
            **kwargs,
        )
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates
        self.neg_to_pos_ratio = (1.0 - positive_fraction) / positive_fraction

    def compute_loss(
        self,
        targets: list[dict[str, Tensor]],
        head_outputs: dict[str, Tensor],
        anchors: list[Tensor],
        matched_idxs: list[Tensor],
    ) -> dict[str, Tensor]:
        """Smooth L1 and hard-negative-mined cross-entropy losses, over the foreground count.

        ``matched_idxs`` holds, per image, each default box's matched target box or -1.
        Background boxes are ranked by loss (a sort of the loss, descending) and the
        first ``neg_to_pos_ratio`` x foreground count of each image are kept.

        Example:
            >>> import torch
            >>> from trivium.vision.ops import DefaultBoxGenerator
            >>> backbone = nn.Identity()
            >>> head = SSDHead([3], [2], 2)
            >>> model = SSD(backbone, DefaultBoxGenerator([[]]), (8, 8), 2, head=head)
            >>> out = {"bbox_regression": torch.zeros(1, 3, 4), "cls_logits": torch.zeros(1, 3, 2)}
            >>> t = [{"boxes": torch.tensor([[0.0, 0.0, 4.0, 4.0]]), "labels": torch.tensor([1])}]
            >>> anchors = [torch.tensor([[0.0, 0, 4, 4], [4.0, 4, 8, 8], [0.0, 4, 4, 8]])]
            >>> losses = model.compute_loss(t, out, anchors, [torch.tensor([0, -1, -1])])
            >>> losses["bbox_regression"].item(), round(losses["classification"].item(), 4)
            (0.0, 2.7726)
        """
        bbox_regression = head_outputs["bbox_regression"]
        cls_logits = head_outputs["cls_logits"]
        num_foreground = 0
        bbox_loss, cls_targets = [], []
        for target, regression, logits, image_anchors, matched in zip(
            targets, bbox_regression, cls_logits, anchors, matched_idxs, strict=True
        ):
            foreground = torch.where(matched >= 0)[0]
            foreground_matched = matched[foreground]
            num_foreground += foreground_matched.numel()
            target_regression = self.box_coder.encode_single(
                target["boxes"][foreground_matched], image_anchors[foreground, :]
            )
            bbox_loss.append(
                F.smooth_l1_loss(regression[foreground, :], target_regression, reduction="sum")
            )
            classes = torch.zeros(
                (logits.size(0),), dtype=target["labels"].dtype, device=target["labels"].device
            )
            classes[foreground] = target["labels"][foreground_matched]
            cls_targets.append(classes)
        cls_targets_t = torch.stack(cls_targets)
        num_classes = cls_logits.size(-1)
        cls_loss = F.cross_entropy(
            cls_logits.view(-1, num_classes), cls_targets_t.view(-1), reduction="none"
        ).view(cls_targets_t.size())
        foreground_mask = cls_targets_t > 0
        background_mask = self._hard_negatives(cls_loss, foreground_mask)
        n = max(1, num_foreground)
        return {
            "bbox_regression": torch.stack(bbox_loss).sum() / n,
            "classification": (cls_loss[foreground_mask].sum() + cls_loss[background_mask].sum())
            / n,
        }

    def _hard_negatives(self, cls_loss: Tensor, foreground: Tensor) -> Tensor:
        # The background boxes of highest loss, neg_to_pos_ratio per foreground box of the
        # image: the same sorts as torchvision's, so that ties are broken the same way.
        num_negative = self.neg_to_pos_ratio * foreground.sum(1, keepdim=True)
        negative_loss = cls_loss.clone()
        negative_loss[foreground] = -float("inf")
        _, idx = negative_loss.sort(1, descending=True)
        return idx.sort(1)[1] < num_negative

    def match(self, targets: list[dict[str, Tensor]], anchors: list[Tensor]) -> list[Tensor]:
        """Per image, each default box's matched target box (:class:`SSDMatcher`), or -1.

        Example:
            >>> import torch
            >>> from trivium.vision.ops import DefaultBoxGenerator
            >>> model = SSD(nn.Identity(), DefaultBoxGenerator([[]]), (8, 8), 2, head=nn.Identity())
            >>> t = [{"boxes": torch.tensor([[0.0, 0.0, 4.0, 4.0]]), "labels": torch.tensor([1])}]
            >>> model.match(t, [torch.tensor([[0.0, 0, 4, 4], [4.0, 4, 8, 8]])])
            [tensor([ 0, -1])]
        """
        matched_idxs = []
        for image_anchors, target in zip(anchors, targets, strict=True):
            if target["boxes"].numel() == 0:
                matched_idxs.append(
                    torch.full(
                        (image_anchors.size(0),), -1, dtype=torch.int64, device=image_anchors.device
                    )
                )
                continue
            matched_idxs.append(self.proposal_matcher(box_iou(target["boxes"], image_anchors)))
        return matched_idxs

    def postprocess_detections(
        self,
        head_outputs: dict[str, Tensor],
        image_anchors: list[Tensor],
        image_shapes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        """Per image: decoded, clipped boxes; per class the best ``topk_candidates`` above
        ``score_thresh`` (softmax scores), then per-class NMS; at most ``detections_per_img``.

        Example:
            >>> import torch
            >>> from trivium.vision.ops import DefaultBoxGenerator
            >>> model = SSD(nn.Identity(), DefaultBoxGenerator([[]]), (8, 8), 2, head=nn.Identity())
            >>> out = {"bbox_regression": torch.zeros(1, 1, 4),
            ...        "cls_logits": torch.tensor([[[0.0, 3.0]]])}
            >>> det = model.postprocess_detections(out, [torch.tensor([[1.0, 1, 5, 5]])], [(8, 8)])
            >>> det[0]["boxes"], det[0]["labels"]
            (tensor([[1., 1., 5., 5.]]), tensor([1]))
        """
        pred_scores = F.softmax(head_outputs["cls_logits"], dim=-1)
        num_classes = pred_scores.size(-1)
        detections: list[dict[str, Tensor]] = []
        for regression, scores, anchors, image_shape in zip(
            head_outputs["bbox_regression"], pred_scores, image_anchors, image_shapes, strict=True
        ):
            boxes = clip_boxes_to_image(
                self.box_coder.decode_single(regression, anchors), image_shape
            )
            image_boxes, image_scores, image_labels = [], [], []
            for label in range(1, num_classes):
                score = scores[:, label]
                keep = score > self.score_thresh
                score, box = score[keep], boxes[keep]
                score, idxs = score.topk(min(self.topk_candidates, score.size(0)))
                image_boxes.append(box[idxs])
                image_scores.append(score)
                image_labels.append(torch.full_like(score, label, dtype=torch.int64))
            detections.append(
                nms_detections(
                    image_boxes,
                    image_scores,
                    image_labels,
                    self.nms_thresh,
                    self.detections_per_img,
                )
            )
        return detections

    def _num_classes(self) -> int | None:
        head = getattr(self.head, "classification_head", None)
        return getattr(head, "num_columns", None)

    def forward(
        self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
    ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        """Training: the losses for ``targets``. Eval: the detections of each image.

        Example:
            >>> import torch
            >>> from trivium.vision.ops import DefaultBoxGenerator
            >>> backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=8), nn.ReLU())
            >>> model = SSD(backbone, DefaultBoxGenerator([[2]]), (64, 64), num_classes=3).eval()
            >>> [sorted(d) for d in model([torch.rand(3, 32, 32)])]
            [['boxes', 'labels', 'scores']]
        """
        image_list, targets, original_image_sizes, features = prepared_batch(self, images, targets)
        feature_list = list(features.values())
        head_outputs = self.head(feature_list)
        anchors = self.anchor_generator(image_list, feature_list)
        if self.training:
            assert targets is not None
            matched_idxs = self.match(targets, anchors)
            return self.compute_loss(targets, head_outputs, anchors, matched_idxs)
        detections = self.postprocess_detections(head_outputs, anchors, image_list.image_sizes)
        return self.transform.postprocess(detections, image_list.image_sizes, original_image_sizes)


class SSDFeatureExtractorVGG(nn.Module):
    """SSD300's feature maps from a VGG's ``features``: conv4_3 (L2-normalised, scaled),
    fc7 (atrous) and four (five with ``highres``) extra blocks, as torchvision's.

    The VGG's third max pool gets ``ceil_mode=True`` (38x38 conv4_3 maps at 300 px).

    Args:
        backbone: a VGG's ``features`` (``nn.Sequential``), VGG-16's in SSD300.
        highres: add a sixth extra map (SSD512's).

    Example:
        >>> import torch
        >>> from trivium.vision.models import vgg16
        >>> with torch.device("meta"):
        ...     extractor = SSDFeatureExtractorVGG(vgg16().features, highres=False)
        >>> [m.shape[1] for m in extractor(torch.zeros(1, 3, 300, 300, device="meta")).values()]
        [512, 1024, 512, 256, 256, 256]
    """

    def __init__(self, backbone: nn.Sequential, highres: bool) -> None:
        super().__init__()
        pools = [i for i, layer in enumerate(backbone) if isinstance(layer, nn.MaxPool2d)]
        if len(pools) != 5:
            raise ValueError(f"backbone must be a VGG's features (5 max pools), got {len(pools)}")
        _, _, maxpool3_pos, maxpool4_pos, _ = pools
        backbone[maxpool3_pos].ceil_mode = True
        self.scale_weight = nn.Parameter(torch.ones(512) * 20)
        self.features = nn.Sequential(*backbone[:maxpool4_pos])  # until conv4_3
        extra = nn.ModuleList(
            [
                _extra_vgg_block(1024, 256, 512, stride=2, padding=1),  # conv8_2
                _extra_vgg_block(512, 128, 256, stride=2, padding=1),  # conv9_2
                _extra_vgg_block(256, 128, 256),  # conv10_2
                _extra_vgg_block(256, 128, 256),  # conv11_2
            ]
        )
        if highres:
            extra.append(_extra_vgg_block(256, 128, 256, kernel_size=4))  # conv12_2
        _xavier_init(extra)
        fc = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=False),  # modified pool5
            nn.Conv2d(512, 1024, kernel_size=3, padding=6, dilation=6),  # FC6, atrous
            nn.ReLU(inplace=True),
            nn.Conv2d(1024, 1024, kernel_size=1),  # FC7
            nn.ReLU(inplace=True),
        )
        _xavier_init(fc)
        extra.insert(0, nn.Sequential(*backbone[maxpool4_pos:-1], fc))  # conv5_3, no pool5
        self.extra = extra

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """The feature maps ``"0"`` .. ``"5"`` (``"6"`` with ``highres``) of images ``x``.

        Example:
            >>> import torch
            >>> from trivium.vision.models import vgg16
            >>> with torch.device("meta"):
            ...     extractor = SSDFeatureExtractorVGG(vgg16().features, highres=False)
            >>> out = extractor(torch.zeros(1, 3, 300, 300, device="meta"))
            >>> [m.shape[-1] for m in out.values()]
            [38, 19, 10, 5, 3, 1]
        """
        x = self.features(x)
        output = [self.scale_weight.view(1, -1, 1, 1) * F.normalize(x)]
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _extra_vgg_block(
    in_channels: int,
    mid_channels: int,
    out_channels: int,
    kernel_size: int = 3,
    stride: int = 1,
    padding: int = 0,
) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, mid_channels, kernel_size=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(mid_channels, out_channels, kernel_size, stride=stride, padding=padding),
        nn.ReLU(inplace=True),
    )


def _vgg_extractor(backbone: VGG, highres: bool, trainable_layers: int) -> SSDFeatureExtractorVGG:
    # Freeze the VGG's first stages: the last trainable_layers of its 5 stay trainable.
    features = backbone.features
    pools = [i for i, b in enumerate(features) if isinstance(b, nn.MaxPool2d)]
    stage_indices = [0, *pools[:-1]]
    num_stages = len(stage_indices)
    if not 0 <= trainable_layers <= num_stages:
        raise ValueError(
            f"trainable_layers should be in the range [0, {num_stages}], got {trainable_layers}"
        )
    freeze_before = (
        len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    )
    for block in features[:freeze_before]:
        for parameter in block.parameters():
            parameter.requires_grad_(False)
    return SSDFeatureExtractorVGG(features, highres)


def _classes_of(state: Mapping[str, Tensor]) -> int | None:
    weight = state.get("head.classification_head.module_list.0.weight")
    if weight is None:
        return None
    anchors = state.get("head.regression_head.module_list.0.weight")
    per_location = 4 if anchors is None else int(anchors.shape[0]) // 4
    return int(weight.shape[0]) // per_location


def _ignore_size(kwargs: dict[str, Any]) -> None:
    if "size" in kwargs:
        warnings.warn(
            "The size of the model is already fixed; ignoring the parameter.", stacklevel=3
        )
        kwargs.pop("size")


def ssd300_vgg16(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> SSD:
    """SSD300 on VGG-16, as torchvision's ``ssd300_vgg16``: 300x300 inputs, six feature maps.

    Args:
        weights: the whole model's weights: a local file path of a state dict saved
            with ``torch.save`` (torchvision's ``ssd300_vgg16_coco`` ``.pth`` is such a
            file), or the state dict itself; None (default): random initialisation.
            Nothing is downloaded. The number of classes follows the weights.
        progress: accepted for torchvision compatibility and ignored.
        num_classes: classes including the background (default 91, COCO's).
        weights_backbone: the VGG-16's weights (a local path or a state dict, as
            torchvision's ``IMAGENET1K_FEATURES``), or None (torchvision's default
            downloads them).
        trainable_backbone_layers: VGG stages left trainable, from the last (0 to 5;
            default 4); all without any weights.
        **kwargs: passed to :class:`SSD` (``score_thresh``, ``image_mean``, ...);
            ``size`` is fixed (300, 300) and ignored with a warning.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only, without the cost of an init
        ...     model = ssd300_vgg16(num_classes=5)
        >>> model.head.classification_head.module_list[0].out_channels  # 4 boxes x 5 classes
        20
    """
    _ignore_size(kwargs)
    state, num_classes, weights_backbone = resolve_weights(
        "ssd300_vgg16", weights, num_classes, weights_backbone, kwargs, _classes_of
    )
    trainable = _validate_trainable_layers(
        weights is not None or weights_backbone is not None, trainable_backbone_layers, 5, 4
    )
    backbone = _vgg_extractor(vgg16(weights=weights_backbone), False, trainable)
    anchor_generator = DefaultBoxGenerator(
        [[2], [2, 3], [2, 3], [2, 3], [2], [2]],
        scales=[0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05],
        steps=[8, 16, 32, 64, 100, 300],
    )
    defaults = {
        "image_mean": [0.48235, 0.45882, 0.40784],
        "image_std": [1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0],  # undo the 0-1 scaling of images
    }
    model = SSD(backbone, anchor_generator, (300, 300), num_classes, **{**defaults, **kwargs})
    if state is not None:
        model.load_state_dict(state)
    return model
