"""Keypoint R-CNN (He et al., 2017): torchvision's classes, builder, state dict keys and numerics.

:class:`KeypointRCNN` is :class:`~trivium.vision.models.detection.FasterRCNN` with a
keypoint branch in its RoI heads (:class:`KeypointRCNNHeads`,
:class:`KeypointRCNNPredictor`): one heatmap per keypoint and detection, decoded to
the highest cell (``heatmaps_to_keypoints``). ``keypointrcnn_resnet50_fpn`` is
torchvision's builder (2 classes, person and background; 17 COCO keypoints).
Training targets also need ``keypoints`` (float ``[N, K, 3]``: x, y, visibility; 0
visibility: not labelled); eval detections have ``keypoints`` ``[N, K, 3]`` and
``keypoints_scores`` ``[N, K]``.

``weights=`` and ``weights_backbone=`` take a local file path or a state dict:
nothing is downloaded.

Example:
    >>> import torch
    >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
    >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
    >>> model = KeypointRCNN(backbone, num_classes=2, min_size=64, max_size=64,
    ...     box_score_thresh=0.0, box_detections_per_img=3,  # small, for a quick example
    ...     keypoint_head=KeypointRCNNHeads(256, (32,)),
    ...     keypoint_predictor=KeypointRCNNPredictor(32, 5)).eval()
    >>> out = model([torch.rand(3, 48, 64)])
    >>> sorted(out[0]), out[0]["keypoints"].shape[1:]
    (['boxes', 'keypoints', 'keypoints_scores', 'labels', 'scores'], torch.Size([5, 3]))
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models.detection._utils import (
    checked_targets,
)
from trivium.vision.models.detection.faster_rcnn import (
    FasterRCNN,
    _faster_rcnn_arguments,
    _init_convs,
    _rcnn_resnet50_fpn,
    _with_builder_doc,
)
from trivium.vision.models.weights import Weights
from trivium.vision.ops import AnchorGenerator, MultiScaleRoIAlign

__all__ = [
    "KeypointRCNN",
    "KeypointRCNNHeads",
    "KeypointRCNNPredictor",
    "keypointrcnn_resnet50_fpn",
]

_KEYPOINT_KEY = "roi_heads.keypoint_predictor.kps_score_lowres.weight"


class KeypointRCNN(FasterRCNN):
    """Keypoint R-CNN: Faster R-CNN with keypoints per detection.

    The arguments are :class:`~trivium.vision.models.detection.FasterRCNN`'s (but
    ``min_size`` defaults to torchvision's ``(640, 672, 704, 736, 768, 800)``: one
    drawn per training image, 800 in eval), and:

    Args:
        keypoint_roi_pool: default ``MultiScaleRoIAlign(["0", "1", "2", "3"], 14, 2)``.
        keypoint_head: default :class:`KeypointRCNNHeads` (eight 512-channel convolutions).
        keypoint_predictor: default :class:`KeypointRCNNPredictor` for ``num_keypoints``.
        num_keypoints: keypoints per object (default 17, COCO's); None with a predictor.

    Example:
        >>> import torch
        >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
        >>> model = KeypointRCNN(resnet_fpn_backbone(backbone_name="resnet18", weights=None),
        ...     2, min_size=64, max_size=64, keypoint_head=KeypointRCNNHeads(256, (32,)),
        ...     keypoint_predictor=KeypointRCNNPredictor(32, 3))
        >>> kp = torch.tensor([[[10.0, 12.0, 1.0], [20.0, 30.0, 1.0], [0.0, 0.0, 0.0]]])
        >>> t = [{"boxes": torch.tensor([[8.0, 8.0, 40.0, 40.0]]), "labels": torch.tensor([1]),
        ...       "keypoints": kp}]
        >>> sorted(model([torch.rand(3, 64, 64)], t))
        ['loss_box_reg', 'loss_classifier', 'loss_keypoint', 'loss_objectness', 'loss_rpn_box_reg']
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int | None = None,
        min_size: int | tuple[int, ...] | None = None,
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
        keypoint_roi_pool: MultiScaleRoIAlign | None = None,
        keypoint_head: nn.Module | None = None,
        keypoint_predictor: nn.Module | None = None,
        num_keypoints: int | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(keypoint_roi_pool, MultiScaleRoIAlign | None):
            raise TypeError(
                "keypoint_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                f"{type(keypoint_roi_pool)}"
            )
        if min_size is None:
            min_size = (640, 672, 704, 736, 768, 800)
        if num_keypoints is not None and keypoint_predictor is not None:
            raise ValueError("num_keypoints should be None when keypoint_predictor is specified")
        if num_keypoints is None:
            num_keypoints = 17
        out_channels = backbone.out_channels
        if keypoint_roi_pool is None:
            keypoint_roi_pool = MultiScaleRoIAlign(
                featmap_names=["0", "1", "2", "3"], output_size=14, sampling_ratio=2
            )
        if keypoint_head is None:
            keypoint_head = KeypointRCNNHeads(out_channels, tuple(512 for _ in range(8)))
        if keypoint_predictor is None:
            keypoint_predictor = KeypointRCNNPredictor(512, num_keypoints)
        super().__init__(**_faster_rcnn_arguments(locals()), **kwargs)
        self.roi_heads.keypoint_roi_pool = keypoint_roi_pool
        self.roi_heads.keypoint_head = keypoint_head
        self.roi_heads.keypoint_predictor = keypoint_predictor

    def _checked_targets(self, targets: Any, num_images: int) -> list[dict[str, Tensor]]:
        checked = checked_targets(targets, num_images, self._num_classes())
        num_keypoints = getattr(self.roi_heads.keypoint_predictor, "out_channels", None)
        for i, target in enumerate(checked):
            _check_keypoints(target, i, num_keypoints)
        return checked


def _check_keypoints(target: dict[str, Tensor], i: int, num_keypoints: int | None) -> None:
    keypoints = target.get("keypoints")
    if keypoints is None:
        raise ValueError(f"targets[{i}] has no 'keypoints' (it has {sorted(map(str, target))})")
    if not isinstance(keypoints, Tensor) or keypoints.dtype != torch.float32:
        got = keypoints.dtype if isinstance(keypoints, Tensor) else type(keypoints).__name__
        raise TypeError(
            f"target keypoints must be a float32 tensor, got {got} for target at index {i}"
        )
    n = target["boxes"].shape[0]
    k = "K" if num_keypoints is None else str(num_keypoints)
    if (
        keypoints.dim() != 3
        or keypoints.shape[0] != n
        or keypoints.shape[2] != 3
        or (num_keypoints is not None and keypoints.shape[1] != num_keypoints)
    ):
        raise ValueError(
            f"Expected target keypoints of shape [{n}, {k}, 3] (x, y, visibility per box), "
            f"got {tuple(keypoints.shape)} for target at index {i}"
        )


class KeypointRCNNHeads(nn.Sequential):
    """3x3 conv + ReLU layers over the pooled features, as torchvision's.

    Args:
        in_channels: channels of the pooled features.
        layers: the channels of each convolution.

    Example:
        >>> import torch
        >>> KeypointRCNNHeads(8, (16, 16))(torch.rand(2, 8, 14, 14)).shape
        torch.Size([2, 16, 14, 14])
    """

    def __init__(self, in_channels: int, layers: list[int] | tuple[int, ...]) -> None:
        blocks: list[nn.Module] = []
        previous = in_channels
        for channels in layers:
            blocks.append(nn.Conv2d(previous, channels, 3, stride=1, padding=1))
            blocks.append(nn.ReLU(inplace=True))
            previous = channels
        super().__init__(*blocks)
        _init_convs(self)


class KeypointRCNNPredictor(nn.Module):
    """One heatmap per keypoint: a 4x4 stride-2 transposed conv, then a bilinear 2x upsampling.

    Args:
        in_channels: channels of the keypoint head's output.
        num_keypoints: keypoints per object (``out_channels``).

    Example:
        >>> import torch
        >>> KeypointRCNNPredictor(16, 17)(torch.rand(2, 16, 14, 14)).shape
        torch.Size([2, 17, 56, 56])
    """

    def __init__(self, in_channels: int, num_keypoints: int) -> None:
        super().__init__()
        deconv_kernel = 4
        self.kps_score_lowres = nn.ConvTranspose2d(
            in_channels,
            num_keypoints,
            deconv_kernel,
            stride=2,
            padding=deconv_kernel // 2 - 1,
        )
        nn.init.kaiming_normal_(self.kps_score_lowres.weight, mode="fan_out", nonlinearity="relu")
        nn.init.constant_(self.kps_score_lowres.bias, 0)
        self.up_scale = 2
        self.out_channels = num_keypoints

    def forward(self, x: Tensor) -> Tensor:
        """``[R, C, S, S]`` to heatmap logits ``[R, K, 4S, 4S]``."""
        x = self.kps_score_lowres(x)
        return nn.functional.interpolate(
            x,
            scale_factor=float(self.up_scale),
            mode="bilinear",
            align_corners=False,
            recompute_scale_factor=False,
        )


@_with_builder_doc
def keypointrcnn_resnet50_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    num_keypoints: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> KeypointRCNN:
    """Keypoint R-CNN with a ResNet-50 FPN backbone, as torchvision's ``keypointrcnn_resnet50_fpn``.

    ``num_classes`` defaults to 2 (person and background) and ``num_keypoints`` to
    17 (COCO's); with ``weights`` both follow the weights. With ``weights``, the
    backbone's FrozenBatchNorm2d layers get ``eps=0``, as torchvision sets for its
    ``COCO_V1`` weights.

    Example:
        >>> model = keypointrcnn_resnet50_fpn(num_keypoints=5)
        >>> model.roi_heads.keypoint_predictor.out_channels, model.transform.min_size[-1]
        (5, 800)
    """
    name = "keypointrcnn_resnet50_fpn"

    def keypoints(state: dict[str, Any] | None, out_channels: int) -> dict[str, Any]:
        return {"num_keypoints": _keypoints_of(name, state, num_keypoints) or 17}

    return _rcnn_resnet50_fpn(
        KeypointRCNN,
        name,
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
        default_classes=2,
        extra=keypoints,
    )


def _keypoints_of(name: str, state: dict[str, Any] | None, num_keypoints: int | None) -> int | None:
    # The weights fix the number of keypoints; a different num_keypoints raises.
    kp_weight = None if state is None else state.get(_KEYPOINT_KEY)
    if kp_weight is None:
        return num_keypoints
    keypoints = int(kp_weight.shape[1])
    if num_keypoints is not None and num_keypoints != keypoints:
        raise ValueError(
            f"num_keypoints={num_keypoints} was given, but the {name} weights have "
            f"{keypoints} keypoints"
        )
    return keypoints
