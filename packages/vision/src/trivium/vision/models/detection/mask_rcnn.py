"""Mask R-CNN (He et al., 2017): torchvision's classes, builders, state dict keys and numerics.

:class:`MaskRCNN` is :class:`~trivium.vision.models.detection.FasterRCNN` with a mask
branch in its RoI heads (:class:`MaskRCNNHeads`, :class:`MaskRCNNPredictor`);
``maskrcnn_resnet50_fpn`` and ``maskrcnn_resnet50_fpn_v2`` are torchvision's builders.
In training the targets also need ``masks`` (``[N, H, W]``, one binary mask per box);
in eval each detection has a ``masks`` probability map ``[N, 1, H, W]`` of the input
image's size (threshold it, e.g. at 0.5, for a binary mask).

``weights=`` and ``weights_backbone=`` take a local file path or a state dict:
nothing is downloaded.

Example:
    >>> import torch
    >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
    >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
    >>> model = MaskRCNN(backbone, num_classes=3, min_size=64, max_size=64,
    ...                  box_detections_per_img=3).eval()
    >>> out = model([torch.rand(3, 48, 64)])
    >>> sorted(out[0]), out[0]["masks"].shape[1:]
    (['boxes', 'labels', 'masks', 'scores'], torch.Size([1, 48, 64]))
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from torch import Tensor, nn

from trivium.vision.models.detection._utils import (
    checked_targets,
)
from trivium.vision.models.detection.faster_rcnn import (
    FasterRCNN,
    _conv_blocks,
    _faster_rcnn_arguments,
    _init_convs,
    _rcnn_resnet50_fpn,
    _with_builder_doc,
)
from trivium.vision.models.weights import Weights
from trivium.vision.ops import AnchorGenerator, MultiScaleRoIAlign
from trivium.vision.ops.misc import UpgradesStateDict

__all__ = [
    "MaskRCNN",
    "MaskRCNNHeads",
    "MaskRCNNPredictor",
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
]


class MaskRCNN(FasterRCNN):
    """Mask R-CNN: Faster R-CNN with a mask per detection.

    The arguments are :class:`~trivium.vision.models.detection.FasterRCNN`'s, and:

    Args:
        mask_roi_pool: default ``MultiScaleRoIAlign(["0", "1", "2", "3"], 14, 2)``.
        mask_head: default :class:`MaskRCNNHeads` (four 256-channel 3x3 convolutions).
        mask_predictor: default :class:`MaskRCNNPredictor` for ``num_classes``.

    Training targets need ``masks`` (uint8 or bool ``[N, H, W]``, the image's size)
    besides ``boxes`` and ``labels``; the losses add ``loss_mask``.

    Example:
        >>> import torch
        >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
        >>> from trivium.vision.models.detection import FastRCNNPredictor
        >>> model = MaskRCNN(resnet_fpn_backbone(backbone_name="resnet18", weights=None), None,
        ...     min_size=64, max_size=64, box_predictor=FastRCNNPredictor(1024, 3),
        ...     mask_head=MaskRCNNHeads(256, [32], 1), mask_predictor=MaskRCNNPredictor(32, 16, 3))
        >>> masks = torch.zeros(1, 64, 64, dtype=torch.uint8)
        >>> masks[0, 8:40, 8:40] = 1
        >>> t = [{"boxes": torch.tensor([[8.0, 8.0, 40.0, 40.0]]), "labels": torch.tensor([1]),
        ...       "masks": masks}]
        >>> sorted(model([torch.rand(3, 64, 64)], t))
        ['loss_box_reg', 'loss_classifier', 'loss_mask', 'loss_objectness', 'loss_rpn_box_reg']
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int | None = None,
        min_size: int = 800,
        max_size: int = 1333,
        image_mean: list[float] | None = None,
        image_std: list[float] | None = None,
        rpn_anchor_generator: AnchorGenerator | None = None,
        rpn_head: nn.Module | None = None,
        rpn_pre_nms_top_n_train: int = 2000,
        rpn_pre_nms_top_n_test: int = 1000,
        rpn_post_nms_top_n_train: int = 2000,
        rpn_post_nms_top_n_test: int = 1000,
        rpn_nms_thresh: float = 0.7,
        rpn_fg_iou_thresh: float = 0.7,
        rpn_bg_iou_thresh: float = 0.3,
        rpn_batch_size_per_image: int = 256,
        rpn_positive_fraction: float = 0.5,
        rpn_score_thresh: float = 0.0,
        box_roi_pool: MultiScaleRoIAlign | None = None,
        box_head: nn.Module | None = None,
        box_predictor: nn.Module | None = None,
        box_score_thresh: float = 0.05,
        box_nms_thresh: float = 0.5,
        box_detections_per_img: int = 100,
        box_fg_iou_thresh: float = 0.5,
        box_bg_iou_thresh: float = 0.5,
        box_batch_size_per_image: int = 512,
        box_positive_fraction: float = 0.25,
        bbox_reg_weights: tuple[float, float, float, float] | None = None,
        mask_roi_pool: MultiScaleRoIAlign | None = None,
        mask_head: nn.Module | None = None,
        mask_predictor: nn.Module | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(mask_roi_pool, MultiScaleRoIAlign | None):
            raise TypeError(
                "mask_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                f"{type(mask_roi_pool)}"
            )
        if num_classes is not None and mask_predictor is not None:
            raise ValueError("num_classes should be None when mask_predictor is specified")
        out_channels = backbone.out_channels
        if mask_roi_pool is None:
            mask_roi_pool = MultiScaleRoIAlign(
                featmap_names=["0", "1", "2", "3"], output_size=14, sampling_ratio=2
            )
        if mask_head is None:
            mask_head = MaskRCNNHeads(out_channels, (256, 256, 256, 256), 1)
        if mask_predictor is None:
            if num_classes is None:
                raise ValueError(
                    "num_classes should not be None when mask_predictor is not specified"
                )
            mask_predictor = MaskRCNNPredictor(256, 256, num_classes)
        super().__init__(**_faster_rcnn_arguments(locals()), **kwargs)
        self.roi_heads.mask_roi_pool = mask_roi_pool
        self.roi_heads.mask_head = mask_head
        self.roi_heads.mask_predictor = mask_predictor

    def _checked_targets(self, targets: Any, num_images: int) -> list[dict[str, Tensor]]:
        checked = checked_targets(targets, num_images, self._num_classes())
        for i, target in enumerate(checked):
            _check_masks(target, i)
        return checked


def _check_masks(target: dict[str, Tensor], i: int) -> None:
    masks = target.get("masks")
    if masks is None:
        raise ValueError(f"targets[{i}] has no 'masks' (it has {sorted(map(str, target))})")
    if not isinstance(masks, Tensor):
        raise TypeError(
            f"target masks must be a Tensor, got {type(masks).__name__} for target at index {i}"
        )
    n = target["boxes"].shape[0]
    if masks.dim() != 3 or masks.shape[0] != n:
        raise ValueError(
            f"Expected target masks of shape [{n}, H, W] (one per box), "
            f"got {tuple(masks.shape)} for target at index {i}"
        )


class MaskRCNNHeads(UpgradesStateDict, nn.Sequential):
    """3x3 conv (+ norm) + ReLU layers over the pooled features, as torchvision's.

    Args:
        in_channels: channels of the pooled features.
        layers: the channels of each convolution.
        dilation: the convolutions' dilation (and padding).
        norm_layer: a norm layer after each convolution (default none; v2: BatchNorm).

    Example:
        >>> import torch
        >>> MaskRCNNHeads(8, [16, 16], 1)(torch.rand(2, 8, 14, 14)).shape
        torch.Size([2, 16, 14, 14])
    """

    _version = 2

    def __init__(
        self,
        in_channels: int,
        layers: list[int] | tuple[int, ...],
        dilation: int,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__(*_conv_blocks(in_channels, layers, norm_layer, dilation))
        _init_convs(self)

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        """Version 1 state dicts named the convolutions ``mask_fcn1`` ..: now ``0.0`` ..

        Example:
            >>> import torch
            >>> heads = MaskRCNNHeads(2, [2], 1)
            >>> old = {"mask_fcn1.weight": torch.ones(2, 2, 3, 3), "mask_fcn1.bias": torch.ones(2)}
            >>> heads.load_state_dict(old)
            <All keys matched successfully>
        """
        if version is None or version < 2:
            for i in range(len(self)):
                for kind in ("weight", "bias"):
                    old_key = f"{prefix}mask_fcn{i + 1}.{kind}"
                    if old_key in state_dict:
                        state_dict[f"{prefix}{i}.0.{kind}"] = state_dict.pop(old_key)


class MaskRCNNPredictor(nn.Sequential):
    """A 2x2 stride-2 transposed conv + ReLU, then per-class mask logits (``mask_fcn_logits``).

    Args:
        in_channels: channels of the mask head's output.
        dim_reduced: channels of the transposed convolution (``conv5_mask``).
        num_classes: classes including the background.

    Example:
        >>> import torch
        >>> MaskRCNNPredictor(16, 8, 3)(torch.rand(2, 16, 14, 14)).shape
        torch.Size([2, 3, 28, 28])
    """

    def __init__(self, in_channels: int, dim_reduced: int, num_classes: int) -> None:
        super().__init__(
            OrderedDict(
                [
                    ("conv5_mask", nn.ConvTranspose2d(in_channels, dim_reduced, 2, 2, 0)),
                    ("relu", nn.ReLU(inplace=True)),
                    ("mask_fcn_logits", nn.Conv2d(dim_reduced, num_classes, 1, 1, 0)),
                ]
            )
        )
        for name, param in self.named_parameters():
            if "weight" in name:
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")


@_with_builder_doc
def maskrcnn_resnet50_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> MaskRCNN:
    """Mask R-CNN with a ResNet-50 FPN backbone, as torchvision's ``maskrcnn_resnet50_fpn``.

    With ``weights``, the backbone's FrozenBatchNorm2d layers get ``eps=0``, as
    torchvision sets for its ``COCO_V1`` weights.

    Example:
        >>> model = maskrcnn_resnet50_fpn(num_classes=4)
        >>> model.roi_heads.mask_predictor.mask_fcn_logits.out_channels
        4
    """
    return _rcnn_resnet50_fpn(
        MaskRCNN,
        "maskrcnn_resnet50_fpn",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
    )


@_with_builder_doc
def maskrcnn_resnet50_fpn_v2(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> MaskRCNN:
    """Mask R-CNN v2 (Li et al., 2021): BatchNorm in the FPN and heads, a deeper RPN head.

    As torchvision's ``maskrcnn_resnet50_fpn_v2``: the v2 Faster R-CNN heads, and a
    mask head with BatchNorm after each convolution.

    Example:
        >>> model = maskrcnn_resnet50_fpn_v2(num_classes=3)
        >>> type(model.roi_heads.mask_head[0][1]).__name__
        'BatchNorm2d'
    """
    return _rcnn_resnet50_fpn(
        MaskRCNN,
        "maskrcnn_resnet50_fpn_v2",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
        v2=True,
        extra=_v2_mask_head,
    )


def _v2_mask_head(state: dict[str, Any] | None, out_channels: int) -> dict[str, Any]:
    mask_head = MaskRCNNHeads(out_channels, [256, 256, 256, 256], 1, norm_layer=nn.BatchNorm2d)
    return {"mask_head": mask_head}
