"""MobileNetV3 large and small (Howard et al., 2019) with torchvision's names and init.

The blocks of MobileNetV2 with squeeze-and-excitation (a hard-sigmoid gate) and
hard-swish activations in the deeper half. State dicts load to and from
``torchvision.models.mobilenet_v3_large`` / ``mobilenet_v3_small`` with
``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import mobilenet_v3_small
    >>> mobilenet_v3_small(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, make_divisible, with_weights_doc
from trivium.vision.models.weights import Weights
from trivium.vision.ops import Conv2dNormActivation, SqueezeExcitation

__all__ = [
    "InvertedResidual",
    "InvertedResidualConfig",
    "MobileNetV3",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
]


class InvertedResidualConfig:
    """One MobileNetV3 block: channels (scaled by ``width_mult``), kernel, SE, activation.

    ``activation`` is ``"RE"`` (ReLU) or ``"HS"`` (hard swish); channel counts are
    ``make_divisible(channels * width_mult, 8)``.

    Example:
        >>> cnf = InvertedResidualConfig(16, 3, 64, 24, False, "HS", 2, 1, width_mult=0.5)
        >>> cnf.expanded_channels, cnf.out_channels, cnf.use_hs
        (32, 16, True)
    """

    def __init__(
        self,
        input_channels: int,
        kernel: int,
        expanded_channels: int,
        out_channels: int,
        use_se: bool,
        activation: str,
        stride: int,
        dilation: int,
        width_mult: float,
    ) -> None:
        if activation not in ("RE", "HS"):
            raise ValueError(f"activation must be 'RE' or 'HS', got {activation!r}")
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float) -> int:
        """``channels * width_mult`` rounded to a multiple of 8.

        Example:
            >>> InvertedResidualConfig.adjust_channels(40, 0.75)
            32
        """
        return make_divisible(channels * width_mult, 8)


# The SE block of MobileNetV3: a hard-sigmoid gate.
_HARD_SE = partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid)


class InvertedResidual(nn.Module):
    """MobileNetV3's block: expand, depthwise, optional SE, project (children of ``block``).

    Not MobileNetV2's block of the same name (both modules have one, as in
    torchvision). With ``dilation > 1`` the depthwise
    convolution is dilated instead of strided.

    Example:
        >>> import torch
        >>> cnf = InvertedResidualConfig(16, 3, 64, 16, True, "HS", 1, 1, 1.0)
        >>> InvertedResidual(cnf, nn.BatchNorm2d)(torch.zeros(1, 16, 4, 4)).shape
        torch.Size([1, 16, 4, 4])
    """

    def __init__(
        self,
        cnf: InvertedResidualConfig,
        norm_layer: Callable[..., nn.Module],
        se_layer: Callable[..., nn.Module] = _HARD_SE,
    ) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError(f"illegal stride value {cnf.stride}: must be 1 or 2")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        act = nn.Hardswish if cnf.use_hs else nn.ReLU
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer)
        expanded = cnf.expanded_channels
        layers: list[nn.Module] = []
        if expanded != cnf.input_channels:
            layers.append(conv(cnf.input_channels, expanded, kernel_size=1, activation_layer=act))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(
            conv(
                expanded,
                expanded,
                kernel_size=cnf.kernel,
                stride=stride,
                dilation=cnf.dilation,
                groups=expanded,
                activation_layer=act,
            )
        )
        if cnf.use_se:
            layers.append(se_layer(expanded, make_divisible(expanded // 4, 8)))
        layers.append(conv(expanded, cnf.out_channels, kernel_size=1, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input: Tensor) -> Tensor:
        """The block's output, plus ``input`` where the shape is kept.

        Example:
            >>> import torch
            >>> cnf = InvertedResidualConfig(8, 3, 8, 16, False, "RE", 2, 1, 1.0)
            >>> InvertedResidual(cnf, nn.BatchNorm2d)(torch.zeros(1, 8, 4, 4)).shape
            torch.Size([1, 16, 2, 2])
        """
        result = self.block(input)
        if self.use_res_connect:
            result = result + input
        return result


class MobileNetV3(nn.Module):
    """MobileNetV3: a hard-swish stem, the blocks of ``inverted_residual_setting``, a 1x1
    head of six times the last block's channels, then the classifier.

    Args:
        inverted_residual_setting: the blocks (:class:`InvertedResidualConfig` s).
        last_channel: width of the classifier's hidden layer.
        num_classes: outputs of the classifier.
        block: the block class (default :class:`InvertedResidual`).
        norm_layer: default ``BatchNorm2d`` with ``eps=0.001``, ``momentum=0.01``.
        dropout: dropout before the last linear layer.
        **kwargs: ignored (the builders pass their configuration arguments on).

    Children are torchvision's: ``features``, ``avgpool``, ``classifier`` (linear,
    hard swish, dropout, linear). Initialisation: Kaiming normal (fan out)
    convolutions, norm weights 1 and biases 0, linear weights N(0, 0.01).

    Example:
        >>> import torch
        >>> cnf = [InvertedResidualConfig(16, 3, 16, 16, True, "RE", 2, 1, 1.0)]
        >>> MobileNetV3(cnf, last_channel=32, num_classes=3)(torch.zeros(2, 3, 16, 16)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        inverted_residual_setting: Sequence[InvertedResidualConfig],
        last_channel: int,
        num_classes: int = 1000,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        dropout: float = 0.2,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig]")
        block = block or InvertedResidual
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        first = inverted_residual_setting[0].input_channels
        layers: list[nn.Module] = [
            Conv2dNormActivation(
                3, first, stride=2, norm_layer=norm_layer, activation_layer=nn.Hardswish
            )
        ]
        layers += [block(cnf, norm_layer) for cnf in inverted_residual_setting]
        last_in = inverted_residual_setting[-1].out_channels
        last_out = 6 * last_in
        layers.append(
            Conv2dNormActivation(
                last_in,
                last_out,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=nn.Hardswish,
            )
        )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(last_out, last_channel),
            nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True),
            nn.Linear(last_channel, num_classes),
        )
        _init_weights(self)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> mobilenet_v3_small(num_classes=2)(torch.zeros(2, 3, 32, 32)).shape
            torch.Size([2, 2])
        """
        return self._forward_impl(x)


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
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)


# (input, kernel, expanded, output, SE, activation, stride, dilated?) per block: the paper's
# Tables 1 and 2. "tail" widths are halved with reduced_tail; "dilated" blocks (the last
# stage) take dilation 2 with dilated=True.
_LARGE = [
    (16, 3, 16, 16, False, "RE", 1, False),
    (16, 3, 64, 24, False, "RE", 2, False),
    (24, 3, 72, 24, False, "RE", 1, False),
    (24, 5, 72, 40, True, "RE", 2, False),
    (40, 5, 120, 40, True, "RE", 1, False),
    (40, 5, 120, 40, True, "RE", 1, False),
    (40, 3, 240, 80, False, "HS", 2, False),
    (80, 3, 200, 80, False, "HS", 1, False),
    (80, 3, 184, 80, False, "HS", 1, False),
    (80, 3, 184, 80, False, "HS", 1, False),
    (80, 3, 480, 112, True, "HS", 1, False),
    (112, 3, 672, 112, True, "HS", 1, False),
    (112, 5, 672, "160", True, "HS", 2, True),
    ("160", 5, "960", "160", True, "HS", 1, True),
    ("160", 5, "960", "160", True, "HS", 1, True),
]
_SMALL = [
    (16, 3, 16, 16, True, "RE", 2, False),
    (16, 3, 72, 24, False, "RE", 2, False),
    (24, 3, 88, 24, False, "RE", 1, False),
    (24, 5, 96, 40, True, "HS", 2, False),
    (40, 5, 240, 40, True, "HS", 1, False),
    (40, 5, 240, 40, True, "HS", 1, False),
    (40, 5, 120, 48, True, "HS", 1, False),
    (48, 5, 144, 48, True, "HS", 1, False),
    (48, 5, 288, "96", True, "HS", 2, True),
    ("96", 5, "576", "96", True, "HS", 1, True),
    ("96", 5, "576", "96", True, "HS", 1, True),
]
_LAST_CHANNEL = {"mobilenet_v3_large": 1280, "mobilenet_v3_small": 1024}


def _mobilenet_v3_conf(
    arch: str,
    width_mult: float = 1.0,
    reduced_tail: bool = False,
    dilated: bool = False,
    **kwargs: Any,
) -> tuple[list[InvertedResidualConfig], int]:
    """The blocks and classifier width of ``arch``, as torchvision's function of that name."""
    divider = 2 if reduced_tail else 1

    def width(c: int | str) -> int:  # a string: a tail width, divided with reduced_tail
        return int(c) // divider if isinstance(c, str) else c

    table = _LARGE if arch == "mobilenet_v3_large" else _SMALL
    setting = [
        InvertedResidualConfig(
            width(inp),
            k,
            width(exp),
            width(out),
            se,
            act,
            s,
            2 if dilated and dil else 1,
            width_mult,
        )
        for inp, k, exp, out, se, act, s, dil in table
    ]
    last = InvertedResidualConfig.adjust_channels(_LAST_CHANNEL[arch] // divider, width_mult)
    return setting, last


def _mobilenet_v3(name: str, weights: Weights | None, kwargs: dict[str, Any]) -> MobileNetV3:
    setting, last_channel = _mobilenet_v3_conf(name, **kwargs)
    for arg in ("width_mult", "reduced_tail", "dilated"):
        kwargs.pop(arg, None)

    def make(**model_kwargs: Any) -> MobileNetV3:
        return MobileNetV3(setting, last_channel, **model_kwargs)

    return build_classifier(name, make, weights, kwargs, "classifier.3.weight")  # type: ignore[return-value]


@with_weights_doc("MobileNetV3")
def mobilenet_v3_large(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> MobileNetV3:
    """MobileNetV3-Large (Howard et al., 2019): 5.5 M parameters.

    Besides the model's arguments, ``width_mult``, ``reduced_tail`` (halve the last
    stage, for detection) and ``dilated`` (dilate the last stage, for segmentation).

    Example:
        >>> sum(p.numel() for p in mobilenet_v3_large().parameters())
        5483032
    """
    return _mobilenet_v3("mobilenet_v3_large", weights, kwargs)


@with_weights_doc("MobileNetV3")
def mobilenet_v3_small(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> MobileNetV3:
    """MobileNetV3-Small (Howard et al., 2019): 2.5 M parameters.

    Besides the model's arguments, ``width_mult``, ``reduced_tail`` and ``dilated``.

    Example:
        >>> len(mobilenet_v3_small().features)
        13
    """
    return _mobilenet_v3("mobilenet_v3_small", weights, kwargs)
