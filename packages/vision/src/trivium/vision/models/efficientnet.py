"""EfficientNet B0-B7 (Tan & Le, 2019) and EfficientNetV2 S/M/L (Tan & Le, 2021).

Stages of MBConv blocks (expand, depthwise, squeeze-and-excitation, project) and,
in V2's first stages, FusedMBConv blocks (one full convolution for expand and
depthwise), with stochastic depth rising linearly over the blocks. Module names,
state-dict keys and initialisation are torchvision's, so its state dicts load with
``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import efficientnet_b0
    >>> efficientnet_b0(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, make_divisible, with_weights_doc
from trivium.vision.models.weights import Weights
from trivium.vision.ops import Conv2dNormActivation, SqueezeExcitation, StochasticDepth

EFFICIENTNET_BUILDERS = tuple(f"efficientnet_b{i}" for i in range(8)) + tuple(
    f"efficientnet_v2_{s}" for s in "sml"
)
__all__ = [
    "EFFICIENTNET_BUILDERS",
    "EfficientNet",
    "FusedMBConv",
    "FusedMBConvConfig",
    "MBConv",
    "MBConvConfig",
]
__all__ += EFFICIENTNET_BUILDERS


@dataclass
class _MBConvConfig:
    expand_ratio: float
    kernel: int
    stride: int
    input_channels: int
    out_channels: int
    num_layers: int
    block: Callable[..., nn.Module]

    @staticmethod
    def adjust_channels(channels: float, width_mult: float, min_value: int | None = None) -> int:
        return make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_MBConvConfig):
    """A stage of :class:`MBConv` blocks, channels scaled by ``width_mult`` (rounded to
    multiples of 8) and depth by ``depth_mult`` (rounded up).

    Example:
        >>> cnf = MBConvConfig(6, 3, 2, 16, 24, 2, width_mult=1.1, depth_mult=1.2)
        >>> cnf.input_channels, cnf.out_channels, cnf.num_layers
        (16, 24, 3)
    """

    def __init__(
        self,
        expand_ratio: float,
        kernel: int,
        stride: int,
        input_channels: int,
        out_channels: int,
        num_layers: int,
        width_mult: float = 1.0,
        depth_mult: float = 1.0,
        block: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__(
            expand_ratio,
            kernel,
            stride,
            self.adjust_channels(input_channels, width_mult),
            self.adjust_channels(out_channels, width_mult),
            self.adjust_depth(num_layers, depth_mult),
            block or MBConv,
        )

    @staticmethod
    def adjust_depth(num_layers: int, depth_mult: float) -> int:
        """``num_layers * depth_mult`` rounded up.

        Example:
            >>> MBConvConfig.adjust_depth(3, 1.1)
            4
        """
        return math.ceil(num_layers * depth_mult)


class FusedMBConvConfig(_MBConvConfig):
    """A stage of :class:`FusedMBConv` blocks (EfficientNetV2), channels as given.

    Example:
        >>> FusedMBConvConfig(4, 3, 2, 24, 48, 4).block.__name__
        'FusedMBConv'
    """

    def __init__(
        self,
        expand_ratio: float,
        kernel: int,
        stride: int,
        input_channels: int,
        out_channels: int,
        num_layers: int,
        block: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__(
            expand_ratio,
            kernel,
            stride,
            input_channels,
            out_channels,
            num_layers,
            block or FusedMBConv,
        )


def _check_stride(stride: int) -> None:
    if not 1 <= stride <= 2:
        raise ValueError(f"illegal stride value {stride}: must be 1 or 2")


class _Residual(nn.Module):
    """``block(x)``, through stochastic depth and plus ``x`` where the shape is kept."""

    def forward(self, input: Tensor) -> Tensor:
        """The block's output.

        Example:
            >>> import torch
            >>> cnf = MBConvConfig(1, 3, 1, 8, 8, 1)
            >>> MBConv(cnf, 0.0, nn.BatchNorm2d)(torch.zeros(1, 8, 4, 4)).shape
            torch.Size([1, 8, 4, 4])
        """
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class MBConv(_Residual):
    """The mobile inverted bottleneck: 1x1 expand (SiLU), depthwise (SiLU), SE, 1x1 project.

    The expansion is left out when it would keep the channel count; the SE block
    squeezes to a quarter of the block's input channels.

    Example:
        >>> import torch
        >>> cnf = MBConvConfig(6, 5, 2, 16, 24, 1)
        >>> MBConv(cnf, 0.1, nn.BatchNorm2d)(torch.zeros(1, 16, 8, 8)).shape
        torch.Size([1, 24, 4, 4])
    """

    def __init__(
        self,
        cnf: _MBConvConfig,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module],
        se_layer: Callable[..., nn.Module] = SqueezeExcitation,
    ) -> None:
        super().__init__()
        _check_stride(cnf.stride)
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer)
        inp = cnf.input_channels
        expanded = cnf.adjust_channels(inp, cnf.expand_ratio)
        layers: list[nn.Module] = []
        if expanded != inp:
            layers.append(conv(inp, expanded, kernel_size=1, activation_layer=nn.SiLU))
        layers += [
            conv(
                expanded,
                expanded,
                kernel_size=cnf.kernel,
                stride=cnf.stride,
                groups=expanded,
                activation_layer=nn.SiLU,
            ),
            se_layer(expanded, max(1, inp // 4), activation=partial(nn.SiLU, inplace=True)),
            conv(expanded, cnf.out_channels, kernel_size=1, activation_layer=None),
        ]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels


class FusedMBConv(_Residual):
    """EfficientNetV2's block: one ``kernel`` x ``kernel`` convolution expands (SiLU), a 1x1
    projects; with ``expand_ratio`` 1, the one convolution alone.

    Example:
        >>> import torch
        >>> cnf = FusedMBConvConfig(4, 3, 2, 8, 16, 1)
        >>> FusedMBConv(cnf, 0.0, nn.BatchNorm2d)(torch.zeros(1, 8, 8, 8)).shape
        torch.Size([1, 16, 4, 4])
    """

    def __init__(
        self,
        cnf: _MBConvConfig,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__()
        _check_stride(cnf.stride)
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer)
        inp, out = cnf.input_channels, cnf.out_channels
        expanded = cnf.adjust_channels(inp, cnf.expand_ratio)
        spatial = partial(conv, kernel_size=cnf.kernel, stride=cnf.stride, activation_layer=nn.SiLU)
        if expanded != inp:
            layers = [
                spatial(inp, expanded),
                conv(expanded, out, kernel_size=1, activation_layer=None),
            ]
        else:
            layers = [spatial(inp, out)]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = out


class EfficientNet(nn.Module):
    """EfficientNet: a SiLU stem, one ``nn.Sequential`` of blocks per stage, a 1x1 head.

    Args:
        inverted_residual_setting: the stages (:class:`MBConvConfig` /
            :class:`FusedMBConvConfig`).
        dropout: dropout before the classifier's linear layer.
        stochastic_depth_prob: the drop probability reached by the last block; block
            ``i`` of ``n`` drops with ``stochastic_depth_prob * i / n``.
        num_classes: outputs of the classifier.
        norm_layer: the norm layer (default ``nn.BatchNorm2d``).
        last_channel: channels of the head (default four times the last stage's).

    Children are torchvision's: ``features``, ``avgpool``, ``classifier`` (dropout,
    linear). Initialisation: Kaiming normal (fan out) convolutions, norm weights 1
    and biases 0, linear weights uniform in +-1/sqrt(num_classes).

    Example:
        >>> import torch
        >>> cnf = [MBConvConfig(1, 3, 1, 32, 16, 1), MBConvConfig(6, 3, 2, 16, 24, 2)]
        >>> EfficientNet(cnf, dropout=0.2, num_classes=3)(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        inverted_residual_setting: Sequence[MBConvConfig | FusedMBConvConfig],
        dropout: float,
        stochastic_depth_prob: float = 0.2,
        num_classes: int = 1000,
        norm_layer: Callable[..., nn.Module] | None = None,
        last_channel: int | None = None,
    ) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not all(isinstance(s, _MBConvConfig) for s in inverted_residual_setting):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
        norm_layer = norm_layer or nn.BatchNorm2d
        first = inverted_residual_setting[0].input_channels
        layers: list[nn.Module] = [
            Conv2dNormActivation(
                3, first, stride=2, norm_layer=norm_layer, activation_layer=nn.SiLU
            )
        ]
        layers += _stages(inverted_residual_setting, stochastic_depth_prob, norm_layer)
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(
            Conv2dNormActivation(
                last_in, last_out, kernel_size=1, norm_layer=norm_layer, activation_layer=nn.SiLU
            )
        )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout, inplace=True), nn.Linear(last_out, num_classes)
        )
        _init_weights(self)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> efficientnet_b0(num_classes=2)(torch.zeros(2, 3, 32, 32)).shape
            torch.Size([2, 2])
        """
        return self._forward_impl(x)


def _stages(
    setting: Sequence[_MBConvConfig], stochastic_depth_prob: float, norm_layer: Callable[..., Any]
) -> list[nn.Sequential]:
    total = sum(cnf.num_layers for cnf in setting)
    index = 0
    stages = []
    for cnf in setting:
        blocks = []
        for i in range(cnf.num_layers):
            block_cnf = copy.copy(cnf)
            if i > 0:  # the stage's later blocks keep its output shape
                block_cnf.input_channels = block_cnf.out_channels
                block_cnf.stride = 1
            p = stochastic_depth_prob * float(index) / total
            blocks.append(block_cnf.block(block_cnf, p, norm_layer))
            index += 1
        stages.append(nn.Sequential(*blocks))
    return stages


def _init_weights(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d | nn.GroupNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            init_range = 1.0 / math.sqrt(m.out_features)
            nn.init.uniform_(m.weight, -init_range, init_range)
            nn.init.zeros_(m.bias)


# B0's stages (the paper's Table 1): expand, kernel, stride, in, out, repeats.
_B0 = [
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
]
# (width, depth, dropout) of B0-B7: the compound scaling.
_B_SCALING = [
    (1.0, 1.0, 0.2),
    (1.0, 1.1, 0.2),
    (1.1, 1.2, 0.3),
    (1.2, 1.4, 0.3),
    (1.4, 1.8, 0.4),
    (1.6, 2.2, 0.4),
    (1.8, 2.6, 0.5),
    (2.0, 3.1, 0.5),
]
# EfficientNetV2 (the paper's Tables 4 and 11): fused stages, then MBConv stages.
_V2: dict[str, tuple[list[tuple[int, ...]], list[tuple[int, ...]], float]] = {
    "s": (
        [(1, 3, 1, 24, 24, 2), (4, 3, 2, 24, 48, 4), (4, 3, 2, 48, 64, 4)],
        [(4, 3, 2, 64, 128, 6), (6, 3, 1, 128, 160, 9), (6, 3, 2, 160, 256, 15)],
        0.2,
    ),
    "m": (
        [(1, 3, 1, 24, 24, 3), (4, 3, 2, 24, 48, 5), (4, 3, 2, 48, 80, 5)],
        [
            (4, 3, 2, 80, 160, 7),
            (6, 3, 1, 160, 176, 14),
            (6, 3, 2, 176, 304, 18),
            (6, 3, 1, 304, 512, 5),
        ],
        0.3,
    ),
    "l": (
        [(1, 3, 1, 32, 32, 4), (4, 3, 2, 32, 64, 7), (4, 3, 2, 64, 96, 7)],
        [
            (4, 3, 2, 96, 192, 10),
            (6, 3, 1, 192, 224, 19),
            (6, 3, 2, 224, 384, 25),
            (6, 3, 1, 384, 640, 7),
        ],
        0.4,
    ),
}


def _efficientnet(name: str, weights: Weights | None, kwargs: dict[str, Any]) -> EfficientNet:
    setting: list[MBConvConfig | FusedMBConvConfig]
    if name.startswith("efficientnet_b"):
        index = int(name[-1])
        width, depth, dropout = _B_SCALING[index]
        setting = [MBConvConfig(*row, width_mult=width, depth_mult=depth) for row in _B0]
        last_channel = None
        if index >= 5:  # trained with TensorFlow's BatchNorm settings
            kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=0.001, momentum=0.01))
    else:
        fused, mbconv, dropout = _V2[name[-1]]
        setting = [FusedMBConvConfig(*row) for row in fused]
        setting += [MBConvConfig(*row) for row in mbconv]
        last_channel = 1280
        kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=1e-03))
    kwargs["dropout"] = kwargs.get("dropout", dropout)

    def make(**model_kwargs: Any) -> EfficientNet:
        return EfficientNet(setting, last_channel=last_channel, **model_kwargs)

    return build_classifier(name, make, weights, kwargs, "classifier.1.weight")  # type: ignore[return-value]


@with_weights_doc("EfficientNet")
def efficientnet_b0(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B0 (Tan & Le, 2019): 5.3 M parameters.

    Example:
        >>> import torch
        >>> efficientnet_b0(num_classes=3).eval()(torch.zeros(1, 3, 32, 32)).shape
        torch.Size([1, 3])
    """
    return _efficientnet("efficientnet_b0", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_b1(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B1: B0 1.1x deeper, 7.8 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_b1()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_b1", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_b2(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B2: B0 1.1x wider and 1.2x deeper, 9.1 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_b2()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_b2", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_b3(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B3: B0 1.2x wider and 1.4x deeper, 12.2 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_b3()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_b3", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_b4(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B4: B0 1.4x wider and 1.8x deeper, 19.3 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_b4()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_b4", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_b5(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B5: B0 1.6x wider and 2.2x deeper, 30.4 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_b5()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_b5", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_b6(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B6: B0 1.8x wider and 2.6x deeper, 43.0 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_b6()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_b6", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_b7(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNet-B7: B0 2x wider and 3.1x deeper, 66.3 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_b7()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_b7", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_v2_s(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNetV2-S (Tan & Le, 2021): 21.5 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_v2_s()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_v2_s", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_v2_m(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNetV2-M (Tan & Le, 2021): 54.1 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_v2_m()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_v2_m", weights, kwargs)


@with_weights_doc("EfficientNet")
def efficientnet_v2_l(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNet:
    """EfficientNetV2-L (Tan & Le, 2021): 118.5 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = efficientnet_v2_l()
        >>> model.classifier[1].out_features
        1000
    """
    return _efficientnet("efficientnet_v2_l", weights, kwargs)
