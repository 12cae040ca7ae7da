"""MobileNetV2 (Sandler et al., 2018) with torchvision's constructor, module names and init.

Inverted residual blocks: a 1x1 expansion, a 3x3 depthwise convolution and a
linear 1x1 projection, with a shortcut where the shape is kept. State dicts load
to and from ``torchvision.models.mobilenet_v2`` with ``strict=True``; ``weights=``
takes a local file or a state dict (nothing is downloaded).

Example:
    >>> import torch
    >>> from trivium.vision.models import mobilenet_v2
    >>> mobilenet_v2(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, make_divisible, with_weights_doc
from trivium.vision.models.weights import Weights
from trivium.vision.ops import Conv2dNormActivation

__all__ = ["InvertedResidual", "MobileNetV2", "mobilenet_v2"]

# expansion t, channels c, repeats n, first stride s: the paper's Table 2.
_SETTING = [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
]


class InvertedResidual(nn.Module):
    """MobileNetV2's block: expand (1x1, ReLU6), depthwise 3x3 (ReLU6), project (1x1, linear).

    The expansion is left out when ``expand_ratio`` is 1; the input is added back
    when ``stride == 1`` and ``inp == oup``.

    Example:
        >>> import torch
        >>> InvertedResidual(8, 8, 1, expand_ratio=6)(torch.zeros(1, 8, 4, 4)).shape
        torch.Size([1, 8, 4, 4])
    """

    def __init__(
        self,
        inp: int,
        oup: int,
        stride: int,
        expand_ratio: int,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        self.stride = stride
        hidden_dim = round(inp * expand_ratio)
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(_conv_relu6(inp, hidden_dim, norm_layer, kernel_size=1))
        depthwise = _conv_relu6(
            hidden_dim, hidden_dim, norm_layer, stride=stride, groups=hidden_dim
        )
        layers += [depthwise, nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False), norm_layer(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x: Tensor) -> Tensor:
        """The block's output, with the shortcut where shapes allow.

        Example:
            >>> import torch
            >>> InvertedResidual(4, 8, 2, expand_ratio=1)(torch.zeros(1, 4, 4, 4)).shape
            torch.Size([1, 8, 2, 2])
        """
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


def _conv_relu6(
    inp: int, oup: int, norm_layer: Callable[..., nn.Module], **kwargs: Any
) -> Conv2dNormActivation:
    return Conv2dNormActivation(
        inp, oup, norm_layer=norm_layer, activation_layer=nn.ReLU6, **kwargs
    )


class MobileNetV2(nn.Module):
    """MobileNetV2: a stem, inverted residual stages and a 1x1 head, then the classifier.

    Args:
        num_classes: outputs of the classifier.
        width_mult: multiplier of every stage's channels (rounded to ``round_nearest``).
        inverted_residual_setting: the stages as ``[t, c, n, s]`` rows (expansion,
            channels, repeats, first stride); default the paper's.
        round_nearest: channels are rounded to multiples of this.
        block: the block class (default :class:`InvertedResidual`).
        norm_layer: the norm layer (default ``nn.BatchNorm2d``).
        dropout: dropout before the last linear layer.

    Children are torchvision's: ``features`` (an ``nn.Sequential``) and
    ``classifier`` (dropout, linear). Initialisation: Kaiming normal (fan out)
    convolutions, norm weights 1 and biases 0, linear weights N(0, 0.01).

    Example:
        >>> import torch
        >>> model = MobileNetV2(num_classes=4, width_mult=0.5).eval()
        >>> model(torch.zeros(1, 3, 32, 32)).shape, model.last_channel
        (torch.Size([1, 4]), 1280)
    """

    def __init__(
        self,
        num_classes: int = 1000,
        width_mult: float = 1.0,
        inverted_residual_setting: list[list[int]] | None = None,
        round_nearest: int = 8,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        dropout: float = 0.2,
    ) -> None:
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d
        setting = _SETTING if inverted_residual_setting is None else inverted_residual_setting
        if len(setting) == 0 or len(setting[0]) != 4:
            raise ValueError(
                "inverted_residual_setting should be non-empty or a 4-element list, "
                f"got {inverted_residual_setting}"
            )
        channels = make_divisible(32 * width_mult, round_nearest)
        self.last_channel = make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features: list[nn.Module] = [_conv_relu6(3, channels, norm_layer, stride=2)]
        for t, c, n, s in setting:
            out = make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(block(channels, out, stride, expand_ratio=t, norm_layer=norm_layer))
                channels = out
        features.append(_conv_relu6(channels, self.last_channel, norm_layer, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes)
        )
        _init_mobilenet(self)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> MobileNetV2(num_classes=2)(torch.zeros(2, 3, 32, 32)).shape
            torch.Size([2, 2])
        """
        return self._forward_impl(x)


def _init_mobilenet(model: nn.Module) -> None:
    # torchvision's order of draws, so the same seed gives the same weights.
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


@with_weights_doc("MobileNetV2")
def mobilenet_v2(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> MobileNetV2:
    """MobileNetV2 (Sandler et al., 2018), width 1.0: 3.5 M parameters.

    Example:
        >>> import torch
        >>> model = mobilenet_v2()
        >>> torch.save(model.state_dict(), path := getfixture("tmp_path") / "m.pth")
        >>> mobilenet_v2(weights=path).classifier[1].weight.equal(model.classifier[1].weight)
        True
    """
    return build_classifier("mobilenet_v2", MobileNetV2, weights, kwargs, "classifier.1.weight")
