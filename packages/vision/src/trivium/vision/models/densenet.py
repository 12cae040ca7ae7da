"""DenseNet-BC (Huang et al., 2016) with torchvision's builders, module names and init.

``densenet121``, ``densenet161``, ``densenet169`` and ``densenet201`` as
``torchvision.models.densenet``: state dicts load either way with ``strict=True``.
``weights=`` takes a local file or a state dict; the older key names of
torchvision's ImageNet files (``denselayer1.norm.1.weight``) are renamed on load
(``denselayer1.norm1.weight``), as torchvision does.

Example:
    >>> import torch
    >>> from trivium.vision.models import densenet121
    >>> densenet121(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
import torch.utils.checkpoint as cp
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights, load_weights

DENSENET_BUILDERS = ("densenet121", "densenet161", "densenet169", "densenet201")
__all__ = ["DENSENET_BUILDERS", "DenseNet"]
__all__ += DENSENET_BUILDERS


class _DenseLayer(nn.Module):
    """BatchNorm, ReLU, 1x1 convolution to ``bn_size * growth_rate``, BatchNorm, ReLU, 3x3
    convolution to ``growth_rate``, on the concatenation of the previous layers' outputs."""

    def __init__(
        self,
        num_input_features: int,
        growth_rate: int,
        bn_size: int,
        drop_rate: float,
        memory_efficient: bool = False,
    ) -> None:
        super().__init__()
        width = bn_size * growth_rate
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, width, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(width)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(width, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: list[Tensor]) -> Tensor:
        return self.conv1(self.relu1(self.norm1(torch.cat(inputs, 1))))

    def _bottleneck(self, *inputs: Tensor) -> Tensor:
        return self.bn_function(list(inputs))

    def forward(self, input: Tensor | list[Tensor]) -> Tensor:
        features = [input] if isinstance(input, Tensor) else input
        if self.memory_efficient and any(t.requires_grad for t in features):
            # Recomputes the concatenation in the backward instead of keeping it.
            bottleneck = cp.checkpoint(self._bottleneck, *features, use_reentrant=False)
        else:
            bottleneck = self.bn_function(features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    """``num_layers`` dense layers (``denselayer1`` ...), each fed every earlier output."""

    _version = 2

    def __init__(
        self,
        num_layers: int,
        num_input_features: int,
        bn_size: int,
        growth_rate: int,
        drop_rate: float,
        memory_efficient: bool = False,
    ) -> None:
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(
                num_input_features + i * growth_rate,
                growth_rate=growth_rate,
                bn_size=bn_size,
                drop_rate=drop_rate,
                memory_efficient=memory_efficient,
            )
            self.add_module(f"denselayer{i + 1}", layer)

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    """BatchNorm, ReLU, 1x1 convolution and a 2x2 average pool between dense blocks."""

    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(
            num_input_features, num_output_features, kernel_size=1, stride=1, bias=False
        )
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """DenseNet-BC: ``features`` (a 7x7 stem, dense blocks joined by transitions that halve
    the channels, ``norm5``), ReLU, global average pooling, ``classifier``.

    Args:
        growth_rate: channels each dense layer adds (``k`` in the paper).
        block_config: dense layers per block (4 numbers).
        num_init_features: channels of the stem's convolution.
        bn_size: the 1x1 bottleneck's width is ``bn_size * growth_rate``.
        drop_rate: dropout after each dense layer.
        num_classes: outputs of the classifier.
        memory_efficient: recompute each layer's concatenation in the backward
            (``torch.utils.checkpoint``) instead of keeping it: much less memory, slower.

    Initialisation is torchvision's: Kaiming normal convolutions, BatchNorm weights 1
    and biases 0, the classifier's bias 0.

    Example:
        >>> import torch
        >>> model = DenseNet(8, (1, 1, 1, 1), 16, num_classes=3)
        >>> model(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        growth_rate: int = 32,
        block_config: tuple[int, int, int, int] = (6, 12, 24, 16),
        num_init_features: int = 64,
        bn_size: int = 4,
        drop_rate: float = 0,
        num_classes: int = 1000,
        memory_efficient: bool = False,
    ) -> None:
        super().__init__()
        conv0 = nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)
        stem = [
            ("conv0", conv0),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]
        self.features = nn.Sequential(OrderedDict(stem))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(
                num_layers, num_features, bn_size, growth_rate, drop_rate, memory_efficient
            )
            self.features.add_module(f"denseblock{i + 1}", block)
            num_features += num_layers * growth_rate
            if i != len(block_config) - 1:
                transition = _Transition(num_features, num_features // 2)
                self.features.add_module(f"transition{i + 1}", transition)
                num_features //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W] (H, W >= 29).

        Example:
            >>> import torch
            >>> DenseNet(8, (1, 1, 1, 1), 16, num_classes=2).eval()(torch.zeros(1, 3, 29, 29)).shape
            torch.Size([1, 2])
        """
        out = F.relu(self.features(x), inplace=True)
        out = torch.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1)
        return self.classifier(out)


# The key names of torchvision's ImageNet files: "denselayer1.norm.1.weight" for
# "denselayer1.norm1.weight".
_OLD_KEY = re.compile(
    r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$"
)


def _renamed(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    out: dict[str, Tensor] = OrderedDict()
    for key, value in state.items():
        match = _OLD_KEY.match(key)
        out[match.group(1) + match.group(2) if match else key] = value
    metadata = getattr(state, "_metadata", None)
    if metadata is not None:
        out._metadata = metadata  # type: ignore[attr-defined]
    return out


_CONFIGS = {
    "densenet121": (32, (6, 12, 24, 16), 64),
    "densenet161": (48, (6, 12, 36, 24), 96),
    "densenet169": (32, (6, 12, 32, 32), 64),
    "densenet201": (32, (6, 12, 48, 32), 64),
}


def _densenet(name: str, weights: Weights | None, kwargs: dict[str, Any]) -> DenseNet:
    growth_rate, block_config, num_init_features = _CONFIGS[name]

    def make(**model_kwargs: Any) -> DenseNet:
        return DenseNet(growth_rate, block_config, num_init_features, **model_kwargs)

    state = None if weights is None else _renamed(load_weights(weights, name))
    return build_classifier(name, make, state, kwargs, "classifier.weight")  # type: ignore[return-value]


@with_weights_doc("DenseNet")
def densenet121(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> DenseNet:
    """DenseNet-121: growth 32, blocks (6, 12, 24, 16), 8.0 M parameters.

    Example:
        >>> sum(p.numel() for p in densenet121().parameters())
        7978856
    """
    return _densenet("densenet121", weights, kwargs)


@with_weights_doc("DenseNet")
def densenet161(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> DenseNet:
    """DenseNet-161: growth 48, blocks (6, 12, 36, 24), a 96-channel stem; 28.7 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = densenet161()
        >>> model.classifier.in_features
        2208
    """
    return _densenet("densenet161", weights, kwargs)


@with_weights_doc("DenseNet")
def densenet169(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> DenseNet:
    """DenseNet-169: growth 32, blocks (6, 12, 32, 32), 14.1 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = densenet169()
        >>> model.classifier.in_features
        1664
    """
    return _densenet("densenet169", weights, kwargs)


@with_weights_doc("DenseNet")
def densenet201(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> DenseNet:
    """DenseNet-201: growth 32, blocks (6, 12, 48, 32), 20.0 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = densenet201()
        >>> model.classifier.in_features
        1920
    """
    return _densenet("densenet201", weights, kwargs)
