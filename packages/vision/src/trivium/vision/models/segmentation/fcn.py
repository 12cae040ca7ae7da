"""FCN (Long et al., 2014) on a dilated ResNet, as ``torchvision.models.segmentation.fcn``.

State dicts load to and from torchvision's ``fcn_resnet50`` / ``fcn_resnet101`` with
``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models.segmentation import fcn_resnet50
    >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
    ...     model = fcn_resnet50(num_classes=3, aux_loss=True)
    >>> model.backbone.layer4[0].conv2.dilation, model.classifier[4].out_channels
    ((2, 2), 3)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from trivium.vision.models.feature_extraction import IntermediateLayerGetter
from trivium.vision.models.resnet import ResNet, resnet50, resnet101
from trivium.vision.models.segmentation._utils import (
    _build_args,
    _BuildArgs,
    _loaded,
    _SimpleSegmentationModel,
    _with_builder_doc,
)
from trivium.vision.models.weights import Weights

__all__ = ["FCN", "FCNHead", "fcn_resnet50", "fcn_resnet101"]


class FCN(_SimpleSegmentationModel):
    """A fully convolutional network: a backbone, a classifier and an optional auxiliary one.

    Args:
        backbone: returns a dict of feature maps: ``"out"`` for the classifier,
            ``"aux"`` for the auxiliary classifier.
        classifier: maps ``"out"`` to class scores (e.g. :class:`FCNHead`).
        aux_classifier: maps ``"aux"`` to class scores, for an auxiliary loss; or None.

    The forward returns ``{"out": ..., "aux": ...}`` (``"aux"`` with an auxiliary
    classifier), the scores [N, num_classes, H, W] bilinearly upsampled to the input's size.

    Example:
        >>> import torch
        >>> from torch import nn
        >>> model = FCN(lambda x: {"out": x}, FCNHead(8, 2))
        >>> model(torch.zeros(1, 8, 4, 4))["out"].shape
        torch.Size([1, 2, 4, 4])
    """


class FCNHead(nn.Sequential):
    """3x3 convolution to ``in_channels // 4``, BatchNorm, ReLU, dropout 0.1, 1x1 to ``channels``.

    Example:
        >>> import torch
        >>> FCNHead(16, 5).eval()(torch.zeros(1, 16, 3, 3)).shape
        torch.Size([1, 5, 3, 3])
    """

    def __init__(self, in_channels: int, channels: int) -> None:
        inter_channels = in_channels // 4
        super().__init__(
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv2d(inter_channels, channels, 1),
        )


def _fcn_resnet(
    name: str,
    backbone_builder: Callable[..., ResNet],
    weights: Weights | None,
    num_classes: int | None,
    aux_loss: bool | None,
    weights_backbone: Weights | None,
    kwargs: dict[str, Any],
) -> FCN:
    args = _build_args(
        name, weights, num_classes, aux_loss, weights_backbone, kwargs, "classifier.4.weight"
    )
    backbone, aux_classifier = _dilated_resnet(args, backbone_builder)
    model = FCN(backbone, FCNHead(2048, args.num_classes), aux_classifier)
    return _loaded(model, args.state)  # type: ignore[return-value]


def _dilated_resnet(
    args: _BuildArgs, backbone_builder: Callable[..., ResNet]
) -> tuple[IntermediateLayerGetter, FCNHead | None]:
    # FCN's and DeepLabV3's ResNet (last two stages dilated: output stride 8) returning
    # layer4 as "out" and, with aux_loss, layer3 as "aux" with its FCNHead.
    body = backbone_builder(
        weights=args.weights_backbone, replace_stride_with_dilation=[False, True, True]
    )
    return_layers = {"layer4": "out"}
    if args.aux_loss:
        return_layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(body, return_layers=return_layers)
    return backbone, FCNHead(1024, args.num_classes) if args.aux_loss else None


@_with_builder_doc()
def fcn_resnet50(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: Weights | None = None,
    **kwargs: Any,
) -> FCN:
    """FCN on a ResNet-50 whose last two stages are dilated (output stride 8): 35.3 M parameters.

    Example:
        >>> import torch
        >>> model = fcn_resnet50(num_classes=4, aux_loss=True).eval()
        >>> {k: tuple(v.shape) for k, v in model(torch.zeros(1, 3, 32, 32)).items()}
        {'out': (1, 4, 32, 32), 'aux': (1, 4, 32, 32)}
    """
    return _fcn_resnet(
        "fcn_resnet50", resnet50, weights, num_classes, aux_loss, weights_backbone, kwargs
    )


@_with_builder_doc()
def fcn_resnet101(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    aux_loss: bool | None = None,
    weights_backbone: Weights | None = None,
    **kwargs: Any,
) -> FCN:
    """FCN on a dilated ResNet-101 (output stride 8): 54.3 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = fcn_resnet101(aux_loss=True)
        >>> len(model.backbone.layer3), model.aux_classifier[0].in_channels
        (23, 1024)
    """
    return _fcn_resnet(
        "fcn_resnet101", resnet101, weights, num_classes, aux_loss, weights_backbone, kwargs
    )
