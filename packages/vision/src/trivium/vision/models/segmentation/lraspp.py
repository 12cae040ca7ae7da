"""Lite R-ASPP (Howard et al., 2019) on MobileNetV3-Large, as torchvision's ``lraspp``.

State dicts load to and from ``torchvision.models.segmentation.lraspp_mobilenet_v3_large``
with ``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models.segmentation import lraspp_mobilenet_v3_large
    >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
    ...     model = lraspp_mobilenet_v3_large(num_classes=3)
    >>> model.classifier.low_classifier.in_channels, model.classifier.cbr[0].in_channels
    (40, 960)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from torch import Tensor, nn
from torch.nn import functional as F

from trivium.vision.models.feature_extraction import IntermediateLayerGetter
from trivium.vision.models.mobilenetv3 import mobilenet_v3_large
from trivium.vision.models.segmentation._utils import (
    _build_args,
    _loaded,
    _mobilenet_v3_stages,
    _with_builder_doc,
)
from trivium.vision.models.weights import Weights

__all__ = ["LRASPP", "LRASPPHead", "lraspp_mobilenet_v3_large"]


class LRASPP(nn.Module):
    """A backbone and an :class:`LRASPPHead` (``classifier``), upsampled to the input's size.

    Args:
        backbone: returns a dict with ``"low"`` (fine) and ``"high"`` (coarse) feature maps.
        low_channels: channels of ``"low"``.
        high_channels: channels of ``"high"``.
        num_classes: classes including the background.
        inter_channels: channels of the head's intermediate maps.

    Example:
        >>> import torch
        >>> model = LRASPP(lambda x: {"low": x, "high": x[..., ::2, ::2]}, 4, 4, 2, 8).eval()
        >>> model(torch.zeros(1, 4, 8, 8))["out"].shape
        torch.Size([1, 2, 8, 8])
    """

    def __init__(
        self,
        backbone: nn.Module | Callable[[Tensor], dict[str, Tensor]],
        low_channels: int,
        high_channels: int,
        num_classes: int,
        inter_channels: int = 128,
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = LRASPPHead(low_channels, high_channels, num_classes, inter_channels)

    def forward(self, input: Tensor) -> dict[str, Tensor]:
        """``{"out": [N, num_classes, H, W]}``: the head's scores at the input's size.

        Example:
            >>> import torch
            >>> model = LRASPP(lambda x: {"low": x, "high": x}, 3, 3, num_classes=2).eval()
            >>> list(model(torch.zeros(1, 3, 4, 6)))
            ['out']
        """
        features = self.backbone(input)
        out = self.classifier(features)
        out = F.interpolate(out, size=input.shape[-2:], mode="bilinear", align_corners=False)
        result: dict[str, Tensor] = OrderedDict()
        result["out"] = out
        return result


class LRASPPHead(nn.Module):
    """The ``"high"`` features through ``cbr`` (1x1, BatchNorm, ReLU), gated by ``scale`` (their
    pooled sigmoid), upsampled to ``"low"`` and classified; plus ``"low"`` classified.

    Example:
        >>> import torch
        >>> head = LRASPPHead(4, 8, 3, 16).eval()
        >>> head({"low": torch.zeros(1, 4, 6, 6), "high": torch.zeros(1, 8, 3, 3)}).shape
        torch.Size([1, 3, 6, 6])
    """

    def __init__(
        self, low_channels: int, high_channels: int, num_classes: int, inter_channels: int
    ) -> None:
        super().__init__()
        self.cbr = nn.Sequential(
            nn.Conv2d(high_channels, inter_channels, 1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(inplace=True),
        )
        self.scale = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(high_channels, inter_channels, 1, bias=False),
            nn.Sigmoid(),
        )
        self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
        self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)

    def forward(self, input: dict[str, Tensor]) -> Tensor:
        """Class scores [N, num_classes, h, w] at the size of ``input["low"]``.

        Example:
            >>> import torch
            >>> head = LRASPPHead(2, 2, 1, 2)
            >>> head({"low": torch.zeros(2, 2, 4, 4), "high": torch.ones(2, 2, 2, 2)}).shape
            torch.Size([2, 1, 4, 4])
        """
        low, high = input["low"], input["high"]
        x = self.cbr(high) * self.scale(high)
        x = F.interpolate(x, size=low.shape[-2:], mode="bilinear", align_corners=False)
        return self.low_classifier(low) + self.high_classifier(x)


@_with_builder_doc(aux=False)
def lraspp_mobilenet_v3_large(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    **kwargs: Any,
) -> LRASPP:
    """Lite R-ASPP on a MobileNetV3-Large whose last stage is dilated: 3.2 M parameters.

    The head reads C2 (output stride 8) as ``"low"`` and the last layer (output
    stride 16) as ``"high"``. It has no auxiliary classifier: ``aux_loss=True``
    raises ``NotImplementedError``, as in torchvision.

    Example:
        >>> import torch
        >>> model = lraspp_mobilenet_v3_large(num_classes=2).eval()
        >>> model(torch.zeros(1, 3, 64, 64))["out"].shape
        torch.Size([1, 2, 64, 64])
    """
    if kwargs.pop("aux_loss", False):
        raise NotImplementedError(
            "lraspp_mobilenet_v3_large: aux_loss=True: this model has no auxiliary classifier"
        )
    name = "lraspp_mobilenet_v3_large"
    key = "classifier.low_classifier.weight"
    args = _build_args(name, weights, num_classes, None, weights_backbone, kwargs, key)
    features = mobilenet_v3_large(weights=args.weights_backbone, dilated=True).features
    low_pos, high_pos = _mobilenet_v3_stages(features)
    low_channels = features[low_pos].out_channels
    high_channels = features[high_pos].out_channels
    backbone = IntermediateLayerGetter(
        features, return_layers={str(low_pos): "low", str(high_pos): "high"}
    )
    model = LRASPP(backbone, low_channels, high_channels, args.num_classes)
    return _loaded(model, args.state)  # type: ignore[return-value]
