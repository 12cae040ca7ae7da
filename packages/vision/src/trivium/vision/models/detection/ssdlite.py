"""SSDlite (Sandler et al., 2018; Howard et al., 2019) on MobileNetV3, as torchvision's.

:func:`ssdlite320_mobilenet_v3_large` and :class:`SSDLiteHead` have the names,
arguments and state dict keys of ``torchvision.models.detection.ssdlite``, so
torchvision's ``ssdlite320_mobilenet_v3_large_coco`` checkpoint loads with
``strict=True``. It is an :class:`~trivium.vision.models.detection.SSD` whose heads are
depthwise-separable convolutions, on six feature maps of a MobileNetV3-Large (C4's
expansion, the last layer, and four extra blocks) at 320x320.

Example:
    >>> import torch
    >>> with torch.device("meta"):  # the structure only
    ...     model = ssdlite320_mobilenet_v3_large(num_classes=3)
    >>> [block[1].out_channels // 3 for block in model.head.classification_head.module_list]
    [6, 6, 6, 6, 6, 6]
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from torch import Tensor, nn

from trivium.vision.models.backbone_utils import _validate_trainable_layers
from trivium.vision.models.detection._utils import resolve_weights
from trivium.vision.models.detection.ssd import SSD, SSDScoringHead, _ignore_size, _out_channels
from trivium.vision.models.mobilenetv3 import MobileNetV3, mobilenet_v3_large
from trivium.vision.models.weights import Weights
from trivium.vision.ops import Conv2dNormActivation, DefaultBoxGenerator

__all__ = [
    "SSDLiteClassificationHead",
    "SSDLiteFeatureExtractorMobileNet",
    "SSDLiteHead",
    "SSDLiteRegressionHead",
    "ssdlite320_mobilenet_v3_large",
]


def _prediction_block(
    in_channels: int, out_channels: int, kernel_size: int, norm_layer: Callable[..., nn.Module]
) -> nn.Sequential:
    # A depthwise conv + norm + ReLU6, then a pointwise conv with a bias.
    return nn.Sequential(
        Conv2dNormActivation(
            in_channels,
            in_channels,
            kernel_size=kernel_size,
            groups=in_channels,
            norm_layer=norm_layer,
            activation_layer=nn.ReLU6,
        ),
        nn.Conv2d(in_channels, out_channels, 1),
    )


def _extra_block(
    in_channels: int, out_channels: int, norm_layer: Callable[..., nn.Module]
) -> nn.Sequential:
    # 1x1 down to half the output width, a strided depthwise 3x3, 1x1 up; ReLU6 after each.
    mid = out_channels // 2
    conv = partial(Conv2dNormActivation, norm_layer=norm_layer, activation_layer=nn.ReLU6)
    return nn.Sequential(
        conv(in_channels, mid, kernel_size=1),
        conv(mid, mid, kernel_size=3, stride=2, groups=mid),
        conv(mid, out_channels, kernel_size=1),
    )


def _normal_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, mean=0.0, std=0.03)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDLiteClassificationHead(SSDScoringHead):
    """Class logits: a depthwise-separable prediction block per feature map.

    Args:
        in_channels: channels of each feature map.
        num_anchors: default boxes per position of each map.
        num_classes: classes (including the background).
        norm_layer: the norm layer after the depthwise convolutions.

    Example:
        >>> import torch
        >>> head = SSDLiteClassificationHead([8], [6], 3, nn.BatchNorm2d)
        >>> head([torch.rand(1, 8, 2, 2)]).shape
        torch.Size([1, 24, 3])
    """

    def __init__(
        self,
        in_channels: list[int],
        num_anchors: list[int],
        num_classes: int,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        cls_logits = nn.ModuleList(
            _prediction_block(channels, num_classes * anchors, 3, norm_layer)
            for channels, anchors in zip(in_channels, num_anchors, strict=True)
        )
        _normal_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDLiteRegressionHead(SSDScoringHead):
    """Box deltas: a depthwise-separable prediction block per feature map.

    Args:
        in_channels: channels of each feature map.
        num_anchors: default boxes per position of each map.
        norm_layer: the norm layer after the depthwise convolutions.

    Example:
        >>> import torch
        >>> SSDLiteRegressionHead([8], [6], nn.BatchNorm2d)([torch.rand(1, 8, 2, 2)]).shape
        torch.Size([1, 24, 4])
    """

    def __init__(
        self, in_channels: list[int], num_anchors: list[int], norm_layer: Callable[..., nn.Module]
    ) -> None:
        bbox_reg = nn.ModuleList(
            _prediction_block(channels, 4 * anchors, 3, norm_layer)
            for channels, anchors in zip(in_channels, num_anchors, strict=True)
        )
        _normal_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSDLiteHead(nn.Module):
    """SSDlite's classification and regression heads, as torchvision's.

    Args:
        in_channels: channels of each feature map.
        num_anchors: default boxes per position of each map.
        num_classes: classes (including the background).
        norm_layer: the norm layer after the depthwise convolutions.

    Example:
        >>> import torch
        >>> out = SSDLiteHead([8], [6], 3, nn.BatchNorm2d)([torch.rand(1, 8, 2, 2)])
        >>> {k: tuple(v.shape) for k, v in out.items()}
        {'bbox_regression': (1, 24, 4), 'cls_logits': (1, 24, 3)}
    """

    def __init__(
        self,
        in_channels: list[int],
        num_anchors: list[int],
        num_classes: int,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__()
        self.classification_head = SSDLiteClassificationHead(
            in_channels, num_anchors, num_classes, norm_layer
        )
        self.regression_head = SSDLiteRegressionHead(in_channels, num_anchors, norm_layer)

    def forward(self, x: list[Tensor]) -> dict[str, Tensor]:
        """``{"bbox_regression", "cls_logits"}`` of all feature maps, concatenated.

        Example:
            >>> import torch
            >>> sorted(SSDLiteHead([8], [4], 2, nn.BatchNorm2d)([torch.rand(1, 8, 2, 2)]))
            ['bbox_regression', 'cls_logits']
        """
        return {
            "bbox_regression": self.regression_head(x),
            "cls_logits": self.classification_head(x),
        }


class SSDLiteFeatureExtractorMobileNet(nn.Module):
    """Six feature maps of a MobileNet's ``features``: C4's expansion, the last layer,
    then four extra blocks, as torchvision's.

    Args:
        backbone: a MobileNet's ``features``.
        c4_pos: the index of the C4 block (a strided inverted residual).
        norm_layer: the extra blocks' norm layer.
        width_mult: scales the extra blocks' widths...
        min_depth: ...down to at least this.

    Example:
        >>> import torch
        >>> from trivium.vision.models import mobilenet_v3_large
        >>> features = mobilenet_v3_large(reduced_tail=True).features
        >>> extractor = SSDLiteFeatureExtractorMobileNet(features, 13, nn.BatchNorm2d).eval()
        >>> [m.shape[1] for m in extractor(torch.rand(1, 3, 64, 64)).values()]
        [672, 480, 512, 256, 256, 128]
    """

    def __init__(
        self,
        backbone: nn.Sequential,
        c4_pos: int,
        norm_layer: Callable[..., nn.Module],
        width_mult: float = 1.0,
        min_depth: int = 16,
    ) -> None:
        super().__init__()
        if backbone[c4_pos].use_res_connect:
            raise ValueError("backbone[c4_pos].use_res_connect should be False")
        self.features = nn.Sequential(
            # From the start to C4's expansion layer, then from its depthwise conv to the end.
            nn.Sequential(*backbone[:c4_pos], backbone[c4_pos].block[0]),
            nn.Sequential(backbone[c4_pos].block[1:], *backbone[c4_pos + 1 :]),
        )

        def depth(d: int) -> int:
            return max(min_depth, int(d * width_mult))

        extra = nn.ModuleList(
            [
                _extra_block(backbone[-1].out_channels, depth(512), norm_layer),
                _extra_block(depth(512), depth(256), norm_layer),
                _extra_block(depth(256), depth(256), norm_layer),
                _extra_block(depth(256), depth(128), norm_layer),
            ]
        )
        _normal_init(extra)
        self.extra = extra

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """The feature maps ``"0"`` .. ``"5"`` of images ``x``.

        Example:
            >>> import torch
            >>> from trivium.vision.models import mobilenet_v3_large
            >>> features = mobilenet_v3_large().features
            >>> extractor = SSDLiteFeatureExtractorMobileNet(features, 13, nn.BatchNorm2d)
            >>> [m.shape[-1] for m in extractor.eval()(torch.rand(1, 3, 64, 64)).values()]
            [4, 2, 1, 1, 1, 1]
        """
        output = []
        for block in self.features:
            x = block(x)
            output.append(x)
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _mobilenet_extractor(
    backbone: MobileNetV3, trainable_layers: int, norm_layer: Callable[..., nn.Module]
) -> SSDLiteFeatureExtractorMobileNet:
    # Freeze the first stages: the last trainable_layers of the stages stay trainable.
    features = backbone.features
    strided = [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)]
    stage_indices = [0, *strided, len(features) - 1]
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
    return SSDLiteFeatureExtractorMobileNet(features, stage_indices[-2], norm_layer)


def _classes_of(state: Mapping[str, Tensor]) -> int | None:
    weight = state.get("head.classification_head.module_list.0.1.weight")
    anchors = state.get("head.regression_head.module_list.0.1.weight")
    if weight is None or anchors is None:
        return None
    return int(weight.shape[0]) // (int(anchors.shape[0]) // 4)


def ssdlite320_mobilenet_v3_large(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    norm_layer: Callable[..., nn.Module] | None = None,
    **kwargs: Any,
) -> SSD:
    """SSDlite at 320x320 on MobileNetV3-Large, as torchvision's ``ssdlite320_mobilenet_v3_large``.

    Without ``weights_backbone`` the MobileNet has the reduced tail (its last stage at
    half width) and the normal init of the heads, as torchvision's.

    Args:
        weights: the whole model's weights: a local file path of a state dict saved
            with ``torch.save`` (torchvision's ``ssdlite320_mobilenet_v3_large_coco``
            ``.pth`` is such a file), or the state dict itself; None (default): random
            initialisation. Nothing is downloaded. The number of classes follows the
            weights.
        progress: accepted for torchvision compatibility and ignored.
        num_classes: classes including the background (default 91, COCO's).
        weights_backbone: the MobileNetV3-Large's weights (a local path or a state
            dict), or None (torchvision's default downloads them).
        trainable_backbone_layers: backbone stages left trainable, from the last (0 to
            6; default 6).
        norm_layer: the norm layer of the backbone and heads (default
            ``BatchNorm2d(eps=0.001, momentum=0.03)``).
        **kwargs: passed to the MobileNetV3 and to :class:`SSD` (``score_thresh``, ...);
            ``size`` is fixed (320, 320) and ignored with a warning.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = ssdlite320_mobilenet_v3_large(num_classes=5)
        >>> model.head.classification_head.module_list[0][1].out_channels  # 6 boxes x 5 classes
        30
    """
    _ignore_size(kwargs)
    state, num_classes, weights_backbone = resolve_weights(
        "ssdlite320_mobilenet_v3_large",
        weights,
        num_classes,
        weights_backbone,
        kwargs,
        _classes_of,
    )
    trainable = _validate_trainable_layers(
        weights is not None or weights_backbone is not None, trainable_backbone_layers, 6, 6
    )
    reduce_tail = weights_backbone is None
    if norm_layer is None:
        norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    backbone = mobilenet_v3_large(
        weights=weights_backbone, norm_layer=norm_layer, reduced_tail=reduce_tail, **kwargs
    )
    if weights_backbone is None:
        _normal_init(backbone)
    extractor = _mobilenet_extractor(backbone, trainable, norm_layer)
    size = (320, 320)
    anchor_generator = DefaultBoxGenerator(
        [[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95
    )
    out_channels = _out_channels(extractor, size)
    defaults = {
        "score_thresh": 0.001,
        "nms_thresh": 0.55,
        "detections_per_img": 300,
        "topk_candidates": 300,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
    }
    head = SSDLiteHead(
        out_channels, anchor_generator.num_anchors_per_location(), num_classes, norm_layer
    )
    model = SSD(extractor, anchor_generator, size, num_classes, head=head, **{**defaults, **kwargs})
    if state is not None:
        model.load_state_dict(state)
    return model
