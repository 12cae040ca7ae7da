"""RegNetX and RegNetY (Radosavovic et al., 2020) with torchvision's builders and names.

A RegNet's stage widths and depths come from a quantized linear rule (``w_0``,
``w_a``, ``w_m``, ``depth``); its blocks are ResNet bottlenecks with group
convolutions, with squeeze-and-excitation in RegNetY. Module names (``stem``,
``trunk_output.block1.block1-0.f.a``, ...), state-dict keys and initialisation are
torchvision's, so its state dicts load with ``strict=True``; ``weights=`` takes a
local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import regnet_y_400mf
    >>> regnet_y_400mf(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, make_divisible, with_weights_doc
from trivium.vision.models.weights import Weights
from trivium.vision.ops import Conv2dNormActivation, SqueezeExcitation

# name: (depth, w_0, w_a, w_m, group_width, se_ratio): the papers' Tables (RegNet, and
# SWAG's RegNetY-128GF).
_DESIGNS: dict[str, tuple[int, int, float, float, int, float | None]] = {
    "regnet_y_400mf": (16, 48, 27.89, 2.09, 8, 0.25),
    "regnet_y_800mf": (14, 56, 38.84, 2.4, 16, 0.25),
    "regnet_y_1_6gf": (27, 48, 20.71, 2.65, 24, 0.25),
    "regnet_y_3_2gf": (21, 80, 42.63, 2.66, 24, 0.25),
    "regnet_y_8gf": (17, 192, 76.82, 2.19, 56, 0.25),
    "regnet_y_16gf": (18, 200, 106.23, 2.48, 112, 0.25),
    "regnet_y_32gf": (20, 232, 115.89, 2.53, 232, 0.25),
    "regnet_y_128gf": (27, 456, 160.83, 2.52, 264, 0.25),
    "regnet_x_400mf": (22, 24, 24.48, 2.54, 16, None),
    "regnet_x_800mf": (16, 56, 35.73, 2.28, 16, None),
    "regnet_x_1_6gf": (18, 80, 34.01, 2.25, 24, None),
    "regnet_x_3_2gf": (25, 88, 26.31, 2.25, 48, None),
    "regnet_x_8gf": (23, 80, 49.56, 2.88, 120, None),
    "regnet_x_16gf": (22, 216, 55.59, 2.1, 128, None),
    "regnet_x_32gf": (23, 320, 69.86, 2.0, 168, None),
}
REGNET_BUILDERS = tuple(_DESIGNS)
__all__ = [
    "REGNET_BUILDERS",
    "AnyStage",
    "BlockParams",
    "BottleneckTransform",
    "RegNet",
    "ResBottleneckBlock",
    "SimpleStemIN",
]
__all__ += REGNET_BUILDERS


class SimpleStemIN(Conv2dNormActivation):
    """The stem: a 3x3 convolution of stride 2, norm and activation.

    Example:
        >>> import torch
        >>> SimpleStemIN(3, 8, nn.BatchNorm2d, nn.ReLU)(torch.zeros(1, 3, 8, 8)).shape
        torch.Size([1, 8, 4, 4])
    """

    def __init__(
        self,
        width_in: int,
        width_out: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__(
            width_in,
            width_out,
            kernel_size=3,
            stride=2,
            norm_layer=norm_layer,
            activation_layer=activation_layer,
        )


class BottleneckTransform(nn.Sequential):
    """The residual branch: 1x1 ``a``, grouped 3x3 ``b`` (the stride), optional ``se``, 1x1 ``c``.

    The inner width is ``round(width_out * bottleneck_multiplier)`` in groups of
    ``group_width``; the SE block squeezes to ``round(se_ratio * width_in)``.

    Example:
        >>> t = BottleneckTransform(16, 32, 2, nn.BatchNorm2d, nn.ReLU, 8, 1.0, 0.25)
        >>> list(t._modules), t.b[0].groups, t.se.fc1.out_channels
        (['a', 'b', 'se', 'c'], 4, 4)
    """

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int,
        bottleneck_multiplier: float,
        se_ratio: float | None,
    ) -> None:
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer)
        w_b = round(width_out * bottleneck_multiplier)
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        layers["a"] = conv(width_in, w_b, kernel_size=1, activation_layer=activation_layer)
        layers["b"] = conv(
            w_b, w_b, stride=stride, groups=w_b // group_width, activation_layer=activation_layer
        )
        if se_ratio:
            layers["se"] = SqueezeExcitation(
                input_channels=w_b,
                squeeze_channels=round(se_ratio * width_in),
                activation=activation_layer,
            )
        layers["c"] = conv(w_b, width_out, kernel_size=1, activation_layer=None)
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """``activation(proj(x) + f(x))``: the transform ``f`` and a 1x1 projection ``proj``
    where the width or stride changes (else the identity).

    Example:
        >>> import torch
        >>> block = ResBottleneckBlock(8, 16, 2, nn.BatchNorm2d, nn.ReLU, group_width=8)
        >>> block(torch.zeros(1, 8, 8, 8)).shape
        torch.Size([1, 16, 4, 4])
    """

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int = 1,
        bottleneck_multiplier: float = 1.0,
        se_ratio: float | None = None,
    ) -> None:
        super().__init__()
        self.proj = None
        if width_in != width_out or stride != 1:
            self.proj = Conv2dNormActivation(
                width_in,
                width_out,
                kernel_size=1,
                stride=stride,
                norm_layer=norm_layer,
                activation_layer=None,
            )
        self.f = BottleneckTransform(
            width_in,
            width_out,
            stride,
            norm_layer,
            activation_layer,
            group_width,
            bottleneck_multiplier,
            se_ratio,
        )
        self.activation = activation_layer(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        """The block's output.

        Example:
            >>> import torch
            >>> ResBottleneckBlock(8, 8, 1, nn.BatchNorm2d, nn.ReLU)(torch.zeros(1, 8, 2, 2)).shape
            torch.Size([1, 8, 2, 2])
        """
        shortcut = x if self.proj is None else self.proj(x)
        return self.activation(shortcut + self.f(x))


class AnyStage(nn.Sequential):
    """``depth`` blocks named ``block{stage_index}-{i}``, the first one striding.

    Example:
        >>> stage = AnyStage(8, 16, 2, 2, ResBottleneckBlock, nn.BatchNorm2d, nn.ReLU, 8, 1.0,
        ...                  stage_index=1)
        >>> list(stage._modules)
        ['block1-0', 'block1-1']
    """

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        depth: int,
        block_constructor: Callable[..., nn.Module],
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int,
        bottleneck_multiplier: float,
        se_ratio: float | None = None,
        stage_index: int = 0,
    ) -> None:
        super().__init__()
        for i in range(depth):
            block = block_constructor(
                width_in if i == 0 else width_out,
                width_out,
                stride if i == 0 else 1,
                norm_layer,
                activation_layer,
                group_width,
                bottleneck_multiplier,
                se_ratio,
            )
            self.add_module(f"block{stage_index}-{i}", block)


class BlockParams:
    """The stages of a RegNet: depths, widths, group widths, bottleneck multipliers, strides.

    Example:
        >>> p = BlockParams.from_init_params(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8)
        >>> p.depths, p.widths
        ([1, 3, 6, 6], [48, 104, 208, 440])
    """

    def __init__(
        self,
        depths: list[int],
        widths: list[int],
        group_widths: list[int],
        bottleneck_multipliers: list[float],
        strides: list[int],
        se_ratio: float | None = None,
    ) -> None:
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(
        cls,
        depth: int,
        w_0: int,
        w_a: float,
        w_m: float,
        group_width: int,
        bottleneck_multiplier: float = 1.0,
        se_ratio: float | None = None,
        **kwargs: Any,
    ) -> BlockParams:
        """The stages of the design space's rule: block ``j`` has width ``w_0 + w_a * j``,
        snapped to ``w_0 * w_m ** k`` (integer ``k``) and to multiples of 8; blocks of one
        width form a stage of stride 2. ``kwargs`` are ignored (the builders pass theirs).

        Example:
            >>> BlockParams.from_init_params(8, 24, 24.0, 2.5, 8).depths
            [1, 2, 5]
        """
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError(
                f"Invalid RegNet settings: need w_a >= 0, w_0 > 0 a multiple of 8 and "
                f"w_m > 1, got w_0={w_0}, w_a={w_a}, w_m={w_m}"
            )
        # On the CPU whatever the default device (a plan, not model data: meta works too).
        widths_cont = torch.arange(depth, device="cpu") * w_a + w_0
        capacity = torch.round(torch.log(widths_cont / w_0) / math.log(w_m))
        quantized = torch.round(torch.divide(w_0 * torch.pow(w_m, capacity), 8)) * 8
        block_widths = quantized.int().tolist()
        stage_widths, stage_depths = _runs(block_widths)
        n = len(stage_widths)
        multipliers = [bottleneck_multiplier] * n
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(
            stage_widths, multipliers, [group_width] * n
        )
        return cls(stage_depths, stage_widths, group_widths, multipliers, [2] * n, se_ratio)

    def _get_expanded_params(self) -> Iterator[tuple[int, int, int, int, float]]:
        return zip(  # type: ignore[return-value]
            self.widths,
            self.strides,
            self.depths,
            self.group_widths,
            self.bottleneck_multipliers,
            strict=True,
        )

    @staticmethod
    def _adjust_widths_groups_compatibilty(
        stage_widths: list[int], bottleneck_ratios: list[float], group_widths: list[int]
    ) -> tuple[list[int], list[int]]:
        """Widths whose bottlenecks are whole multiples of their (capped) group widths."""
        widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios, strict=True)]
        groups = [min(g, w) for g, w in zip(group_widths, widths, strict=True)]
        bottlenecks = [make_divisible(w, g) for w, g in zip(widths, groups, strict=True)]
        stage = [int(w / b) for w, b in zip(bottlenecks, bottleneck_ratios, strict=True)]
        return stage, groups


def _runs(values: list[int]) -> tuple[list[int], list[int]]:
    """The runs of equal consecutive ``values``: each run's value and length."""
    starts = [i for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]
    lengths = [b - a for a, b in zip(starts, [*starts[1:], len(values)], strict=True)]
    return [values[i] for i in starts], lengths


class RegNet(nn.Module):
    """A RegNet: ``stem``, the stages in ``trunk_output`` (``block1``, ``block2``, ...),
    ``avgpool`` and ``fc``.

    Args:
        block_params: the stages (:class:`BlockParams`).
        num_classes: outputs of ``fc``.
        stem_width: channels of the stem.
        stem_type: the stem class (default :class:`SimpleStemIN`).
        block_type: the block class (default :class:`ResBottleneckBlock`).
        norm_layer: the norm layer (default ``nn.BatchNorm2d``).
        activation: the activation class (default ``nn.ReLU``).

    Initialisation: convolutions N(0, sqrt(2 / fan_out)), BatchNorm weights 1 and
    biases 0, ``fc`` N(0, 0.01) with bias 0.

    Example:
        >>> import torch
        >>> params = BlockParams([1, 1], [16, 32], [8, 8], [1.0, 1.0], [2, 2])
        >>> RegNet(params, num_classes=3)(torch.zeros(2, 3, 16, 16)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        block_params: BlockParams,
        num_classes: int = 1000,
        stem_width: int = 32,
        stem_type: Callable[..., nn.Module] | None = None,
        block_type: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        activation: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        stem_type = stem_type or SimpleStemIN
        norm_layer = norm_layer or nn.BatchNorm2d
        block_type = block_type or ResBottleneckBlock
        activation = activation or nn.ReLU
        self.stem = stem_type(3, stem_width, norm_layer, activation)
        width = stem_width
        stages: OrderedDict[str, nn.Module] = OrderedDict()
        for i, (out, stride, depth, group_width, multiplier) in enumerate(
            block_params._get_expanded_params(), start=1
        ):
            stages[f"block{i}"] = AnyStage(
                width,
                out,
                stride,
                depth,
                block_type,
                norm_layer,
                activation,
                group_width,
                multiplier,
                block_params.se_ratio,
                stage_index=i,
            )
            width = out
        self.trunk_output = nn.Sequential(stages)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=width, out_features=num_classes)
        _init_weights(self)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> regnet_x_400mf(num_classes=2)(torch.zeros(2, 3, 32, 32)).shape
            torch.Size([2, 2])
        """
        x = self.avgpool(self.trunk_output(self.stem(x)))
        return self.fc(x.flatten(start_dim=1))


def _init_weights(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
            nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.01)
            nn.init.zeros_(m.bias)


def _regnet(name: str, weights: Weights | None, kwargs: dict[str, Any]) -> RegNet:
    depth, w_0, w_a, w_m, group_width, se_ratio = _DESIGNS[name]
    params = BlockParams.from_init_params(depth, w_0, w_a, w_m, group_width, se_ratio=se_ratio)
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    return build_classifier(  # type: ignore[return-value]
        name, partial(RegNet, params), weights, kwargs, "fc.weight"
    )


@with_weights_doc("RegNet")
def regnet_y_400mf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetY-400MF (Radosavovic et al., 2020, squeeze-and-excitation): 4.3 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_400mf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_400mf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_y_800mf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetY-800MF (Radosavovic et al., 2020, squeeze-and-excitation): 6.4 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_800mf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_800mf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_y_1_6gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetY-1.6GF (Radosavovic et al., 2020, squeeze-and-excitation): 11.2 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_1_6gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_1_6gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_y_3_2gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetY-3.2GF (Radosavovic et al., 2020, squeeze-and-excitation): 19.4 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_3_2gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_3_2gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_y_8gf(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-8GF (Radosavovic et al., 2020, squeeze-and-excitation): 39.4 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_8gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_8gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_y_16gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetY-16GF (Radosavovic et al., 2020, squeeze-and-excitation): 83.6 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_16gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_16gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_y_32gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetY-32GF (Radosavovic et al., 2020, squeeze-and-excitation): 145.0 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_32gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_32gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_y_128gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetY-128GF (Radosavovic et al., 2020, squeeze-and-excitation): 644.8 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_y_128gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_y_128gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_x_400mf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetX-400MF (Radosavovic et al., 2020): 5.5 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_x_400mf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_x_400mf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_x_800mf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetX-800MF (Radosavovic et al., 2020): 7.3 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_x_800mf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_x_800mf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_x_1_6gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetX-1.6GF (Radosavovic et al., 2020): 9.2 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_x_1_6gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_x_1_6gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_x_3_2gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetX-3.2GF (Radosavovic et al., 2020): 15.3 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_x_3_2gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_x_3_2gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_x_8gf(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-8GF (Radosavovic et al., 2020): 39.6 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_x_8gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_x_8gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_x_16gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetX-16GF (Radosavovic et al., 2020): 54.3 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_x_16gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_x_16gf", weights, kwargs)


@with_weights_doc("RegNet")
def regnet_x_32gf(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> RegNet:
    """RegNetX-32GF (Radosavovic et al., 2020): 107.8 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = regnet_x_32gf()
        >>> model.fc.out_features
        1000
    """
    return _regnet("regnet_x_32gf", weights, kwargs)
