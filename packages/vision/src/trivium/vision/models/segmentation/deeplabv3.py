"""DeepLabV3 (Chen et al., 2017) on a dilated ResNet or MobileNetV3-Large, as torchvision's.

The classes and builders of ``torchvision.models.segmentation.deeplabv3``: state
dicts load either way with ``strict=True``; ``weights=`` takes a local file or a
state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models.segmentation import deeplabv3_mobilenet_v3_large
    >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
    ...     model = deeplabv3_mobilenet_v3_large(num_classes=3)
    >>> type(model.classifier).__name__, model.classifier[4].out_channels
    ('DeepLabHead', 3)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from trivium.vision.models.feature_extraction import IntermediateLayerGetter
from trivium.vision.models.mobilenetv3 import mobilenet_v3_large
from trivium.vision.models.resnet import ResNet, resnet50, resnet101
from trivium.vision.models.segmentation._utils import (
    _build_args,
    _BuildArgs,
    _loaded,
    _mobilenet_v3_stages,
    _SimpleSegmentationModel,
    _with_builder_doc,
)
from trivium.vision.models.segmentation.fcn import FCNHead, _dilated_resnet
from trivium.vision.models.weights import Weights

__all__ = [
    "ASPP",
    "ASPPConv",
    "ASPPPooling",
    "DeepLabHead",
    "DeepLabV3",
    "deeplabv3_mobilenet_v3_large",
    "deeplabv3_resnet50",
    "deeplabv3_resnet101",
]

_CLASSIFIER_KEY = "classifier.4.weight"


class DeepLabV3(_SimpleSegmentationModel):
    """DeepLabV3: a backbone, a :class:`DeepLabHead` and an optional auxiliary classifier.

    Args:
        backbone: returns a dict of feature maps: ``"out"`` for the classifier,
            ``"aux"`` for the auxiliary classifier.
        classifier: maps ``"out"`` to class scores (e.g. :class:`DeepLabHead`).
        aux_classifier: maps ``"aux"`` to class scores, for an auxiliary loss; or None.

    The forward returns ``{"out": ..., "aux": ...}`` (``"aux"`` with an auxiliary
    classifier), the scores [N, num_classes, H, W] bilinearly upsampled to the input's size.

    Example:
        >>> import torch
        >>> model = DeepLabV3(lambda x: {"out": x}, DeepLabHead(8, 2)).eval()
        >>> model(torch.zeros(1, 8, 4, 4))["out"].shape
        torch.Size([1, 2, 4, 4])
    """


class DeepLabHead(nn.Sequential):
    """:class:`ASPP` (256 channels), a 3x3 convolution, BatchNorm, ReLU and a 1x1 to the classes.

    Example:
        >>> import torch
        >>> DeepLabHead(16, 3, atrous_rates=(2, 4)).eval()(torch.zeros(1, 16, 5, 5)).shape
        torch.Size([1, 3, 5, 5])
    """

    def __init__(
        self, in_channels: int, num_classes: int, atrous_rates: Sequence[int] = (12, 24, 36)
    ) -> None:
        super().__init__(
            ASPP(in_channels, atrous_rates),
            nn.Conv2d(256, 256, 3, padding=1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, num_classes, 1),
        )


class ASPPConv(nn.Sequential):
    """A 3x3 convolution of dilation ``dilation`` (size kept), BatchNorm and ReLU.

    Example:
        >>> ASPPConv(4, 8, dilation=6)[0].padding
        (6, 6)
    """

    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        super().__init__(
            nn.Conv2d(
                in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False
            ),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )


class ASPPPooling(nn.Sequential):
    """Global average pooling, 1x1 convolution, BatchNorm and ReLU, spread to the input's size.

    Example:
        >>> import torch
        >>> ASPPPooling(4, 2).eval()(torch.ones(1, 4, 3, 5)).shape
        torch.Size([1, 2, 3, 5])
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: Tensor) -> Tensor:
        """The pooled features [N, out_channels, H, W], one value per map.

        Example:
            >>> import torch
            >>> ASPPPooling(2, 3).eval()(torch.rand(1, 2, 4, 4)).shape
            torch.Size([1, 3, 4, 4])
        """
        size = x.shape[-2:]
        for module in self:
            x = module(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    """Atrous spatial pyramid pooling: a 1x1 branch, one :class:`ASPPConv` per rate and
    :class:`ASPPPooling` (``convs``), concatenated and projected to ``out_channels``
    (``project``: 1x1 convolution, BatchNorm, ReLU, dropout 0.5).

    Example:
        >>> import torch
        >>> aspp = ASPP(8, atrous_rates=(1, 2), out_channels=4).eval()
        >>> len(aspp.convs), aspp(torch.zeros(1, 8, 6, 6)).shape
        (4, torch.Size([1, 4, 6, 6]))
    """

    def __init__(
        self, in_channels: int, atrous_rates: Sequence[int], out_channels: int = 256
    ) -> None:
        super().__init__()
        modules: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
            )
        ]
        modules += [ASPPConv(in_channels, out_channels, rate) for rate in tuple(atrous_rates)]
        modules.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x: Tensor) -> Tensor:
        """The branches' outputs concatenated and projected: [N, out_channels, H, W].

        Example:
            >>> import torch
            >>> ASPP(4, [3]).eval()(torch.zeros(1, 4, 5, 5)).shape
            torch.Size([1, 256, 5, 5])
        """
        return self.project(torch.cat([conv(x) for conv in self.convs], dim=1))


def _deeplabv3_resnet(args: _BuildArgs, backbone_builder: Callable[..., ResNet]) -> DeepLabV3:
    backbone, aux_classifier = _dilated_resnet(args, backbone_builder)
    model = DeepLabV3(backbone, DeepLabHead(2048, args.num_classes), aux_classifier)
    return _loaded(model, args.state)  # type: ignore[return-value]


@_with_builder_doc()
def deeplabv3_resnet50(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: Weights | None = None,
    **kwargs: Any,
) -> DeepLabV3:
    """DeepLabV3 on a ResNet-50 whose last two stages are dilated (output stride 8): 42.0 M
    parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = deeplabv3_resnet50(num_classes=2)
        >>> [branch[0].dilation for branch in model.classifier[0].convs[1:4]]
        [(12, 12), (24, 24), (36, 36)]
    """
    args = _build_args(
        "deeplabv3_resnet50",
        weights,
        num_classes,
        aux_loss,
        weights_backbone,
        kwargs,
        _CLASSIFIER_KEY,
    )
    return _deeplabv3_resnet(args, resnet50)


@_with_builder_doc()
def deeplabv3_resnet101(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: Weights | None = None,
    **kwargs: Any,
) -> DeepLabV3:
    """DeepLabV3 on a dilated ResNet-101 (output stride 8): 61.0 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = deeplabv3_resnet101()
        >>> len(model.backbone.layer3), model.aux_classifier is None
        (23, True)
    """
    args = _build_args(
        "deeplabv3_resnet101",
        weights,
        num_classes,
        aux_loss,
        weights_backbone,
        kwargs,
        _CLASSIFIER_KEY,
    )
    return _deeplabv3_resnet(args, resnet101)


@_with_builder_doc()
def deeplabv3_mobilenet_v3_large(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: Weights | None = None,
    **kwargs: Any,
) -> DeepLabV3:
    """DeepLabV3 on a MobileNetV3-Large whose last stage is dilated (output stride 16): 11.0 M
    parameters; the auxiliary classifier reads C2 (output stride 8).

    Example:
        >>> import torch
        >>> model = deeplabv3_mobilenet_v3_large(num_classes=2, aux_loss=True).eval()
        >>> sorted(model(torch.zeros(1, 3, 64, 64)))
        ['aux', 'out']
    """
    args = _build_args(
        "deeplabv3_mobilenet_v3_large",
        weights,
        num_classes,
        aux_loss,
        weights_backbone,
        kwargs,
        _CLASSIFIER_KEY,
    )
    features = mobilenet_v3_large(weights=args.weights_backbone, dilated=True).features
    aux_pos, out_pos = _mobilenet_v3_stages(features)
    return_layers = {str(out_pos): "out"}
    if args.aux_loss:
        return_layers[str(aux_pos)] = "aux"
    out_channels = features[out_pos].out_channels
    aux_channels = features[aux_pos].out_channels
    backbone = IntermediateLayerGetter(features, return_layers=return_layers)
    aux_classifier = FCNHead(aux_channels, args.num_classes) if args.aux_loss else None
    model = DeepLabV3(backbone, DeepLabHead(out_channels, args.num_classes), aux_classifier)
    return _loaded(model, args.state)  # type: ignore[return-value]
