"""SqueezeNet 1.0 and 1.1 (Iandola et al., 2016) with torchvision's builders, names and init.

As ``torchvision.models.squeezenet``: state dicts load either way with
``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import squeezenet1_1
    >>> squeezenet1_1(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights

__all__ = ["Fire", "SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


class Fire(nn.Module):
    """SqueezeNet's module: a 1x1 ``squeeze``, then 1x1 and 3x3 ``expand`` convolutions whose
    ReLU outputs are concatenated (``expand1x1_planes + expand3x3_planes`` channels).

    Example:
        >>> import torch
        >>> Fire(8, 2, 4, 4)(torch.zeros(1, 8, 5, 5)).shape
        torch.Size([1, 8, 5, 5])
    """

    def __init__(
        self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int
    ) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        """The two expansions of the squeezed ``x``, concatenated along the channels.

        Example:
            >>> import torch
            >>> Fire(4, 2, 3, 5)(torch.zeros(2, 4, 3, 3)).shape
            torch.Size([2, 8, 3, 3])
        """
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat(
            [
                self.expand1x1_activation(self.expand1x1(x)),
                self.expand3x3_activation(self.expand3x3(x)),
            ],
            1,
        )


# (squeeze, expand) widths of the Fire modules; "M" a 3x3 max pool of stride 2.
_FIRES: dict[str, list[tuple[int, int] | str]] = {
    "1_0": [(16, 64), (16, 64), (32, 128), "M", (32, 128), (48, 192), (48, 192), (64, 256), "M",
            (64, 256)],
    "1_1": [(16, 64), (16, 64), "M", (32, 128), (32, 128), "M", (48, 192), (48, 192), (64, 256),
            (64, 256)],
}  # fmt: skip


def _pool() -> nn.MaxPool2d:
    return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)


def _features(version: str) -> nn.Sequential:
    # 1.0: a 7x7 stem of 96 channels; 1.1: a 3x3 stem of 64 and earlier pooling.
    stem = 96 if version == "1_0" else 64
    kernel = 7 if version == "1_0" else 3
    layers: list[nn.Module] = [
        nn.Conv2d(3, stem, kernel_size=kernel, stride=2),
        nn.ReLU(inplace=True),
        _pool(),
    ]
    channels = stem
    for item in _FIRES[version]:
        if item == "M":
            layers.append(_pool())
            continue
        squeeze, expand = item  # type: ignore[misc]
        layers.append(Fire(channels, squeeze, expand, expand))
        channels = 2 * expand
    return nn.Sequential(*layers)


class SqueezeNet(nn.Module):
    """SqueezeNet: ``features`` (a stem and Fire modules), then ``classifier`` (dropout, a
    1x1 convolution to the classes, ReLU, global average pooling).

    Args:
        version: ``"1_0"`` or ``"1_1"`` (2.4x less computation, as accurate).
        num_classes: outputs of the final convolution.
        dropout: dropout before the final convolution.

    Initialisation is torchvision's: Kaiming uniform convolutions, the final one
    N(0, 0.01); biases 0.

    Example:
        >>> import torch
        >>> SqueezeNet("1_1", num_classes=3)(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 3])
    """

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        if version not in _FIRES:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        self.num_classes = num_classes
        self.features = _features(version)
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1))
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> SqueezeNet("1_0", num_classes=2).eval()(torch.zeros(1, 3, 64, 64)).shape
            torch.Size([1, 2])
        """
        return torch.flatten(self.classifier(self.features(x)), 1)


def _squeezenet(version: str, weights: Weights | None, kwargs: dict[str, Any]) -> SqueezeNet:
    def make(**model_kwargs: Any) -> SqueezeNet:
        return SqueezeNet(version, **model_kwargs)

    name = f"squeezenet{version}"
    return build_classifier(name, make, weights, kwargs, "classifier.1.weight")  # type: ignore[return-value]


@with_weights_doc("SqueezeNet")
def squeezenet1_0(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SqueezeNet:
    """SqueezeNet 1.0 (Iandola et al., 2016): 1.2 M parameters.

    Example:
        >>> sum(p.numel() for p in squeezenet1_0().parameters())
        1248424
    """
    return _squeezenet("1_0", weights, kwargs)


@with_weights_doc("SqueezeNet")
def squeezenet1_1(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SqueezeNet:
    """SqueezeNet 1.1: SqueezeNet 1.0's accuracy with 2.4x less computation; 1.2 M parameters.

    Example:
        >>> sum(p.numel() for p in squeezenet1_1().parameters())
        1235496
    """
    return _squeezenet("1_1", weights, kwargs)
