"""Feature Pyramid Network (Lin et al., 2017) with torchvision's module and parameter names.

:class:`FeaturePyramidNetwork` and its extra blocks (:class:`LastLevelMaxPool`,
:class:`LastLevelP6P7`) have the arguments, initialisation and state dict keys of
``torchvision.ops.feature_pyramid_network``, so state dicts load either way with
``strict=True`` (older torchvision checkpoints, with ``inner_blocks.0.weight``
instead of ``inner_blocks.0.0.weight``, load too).

Example:
    >>> import torch
    >>> from collections import OrderedDict
    >>> fpn = FeaturePyramidNetwork([8, 16], 4, extra_blocks=LastLevelMaxPool())
    >>> x = OrderedDict(a=torch.rand(1, 8, 16, 16), b=torch.rand(1, 16, 8, 8))
    >>> [(k, tuple(v.shape)) for k, v in fpn(x).items()]
    [('a', (1, 4, 16, 16)), ('b', (1, 4, 8, 8)), ('pool', (1, 4, 4, 4))]
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.ops.misc import UpgradesStateDict

__all__ = ["ExtraFPNBlock", "FeaturePyramidNetwork", "LastLevelMaxPool", "LastLevelP6P7"]


def conv_norm_activation(
    in_channels: int,
    out_channels: int,
    kernel_size: int = 3,
    norm_layer: Callable[..., nn.Module] | None = None,
    activation_layer: Callable[..., nn.Module] | None = None,
) -> nn.Sequential:
    """Conv2d (padded to keep the size), then optional norm and activation, as one Sequential.

    The layout of torchvision's ``Conv2dNormActivation`` (stride 1): the convolution
    is ``[0]`` (``.0.weight`` in state dicts), with a bias only without a norm layer.

    Example:
        >>> block = conv_norm_activation(4, 8, activation_layer=nn.ReLU)
        >>> [type(m).__name__ for m in block], block[0].padding
        (['Conv2d', 'ReLU'], (1, 1))
    """
    layers: list[nn.Module] = [
        nn.Conv2d(
            in_channels,
            out_channels,
            kernel_size,
            padding=(kernel_size - 1) // 2,
            bias=norm_layer is None,
        )
    ]
    if norm_layer is not None:
        layers.append(norm_layer(out_channels))
    if activation_layer is not None:
        layers.append(activation_layer(inplace=True))
    return nn.Sequential(*layers)


class ExtraFPNBlock(nn.Module):
    """Base of the blocks that add levels after the FPN's own (P6, P7, a pooled level).

    ``forward(results, x, names)`` takes the FPN outputs, the FPN inputs and the
    names of the levels, and returns the extended outputs and names.

    Example:
        >>> class Same(ExtraFPNBlock):
        ...     def forward(self, results, x, names):
        ...         return results, names
        >>> Same()([1], [2], ["a"])
        ([1], ['a'])
    """

    def forward(
        self, results: list[Tensor], x: list[Tensor], names: list[str]
    ) -> tuple[list[Tensor], list[str]]:
        """The FPN outputs and level names, extended (the base class adds nothing).

        Example:
            >>> ExtraFPNBlock()([], [], ["a"])
            ([], ['a'])
        """
        return results, names


class LastLevelMaxPool(ExtraFPNBlock):
    """Add a level ``"pool"``: the last FPN output subsampled by 2 (a 1x1 max pool, stride 2).

    Example:
        >>> import torch
        >>> out, names = LastLevelMaxPool()([torch.rand(1, 2, 5, 5)], [], ["0"])
        >>> names, tuple(out[-1].shape)
        (['0', 'pool'], (1, 2, 3, 3))
    """

    def forward(
        self, x: list[Tensor], y: list[Tensor], names: list[str]
    ) -> tuple[list[Tensor], list[str]]:
        """``x`` and ``names`` with the pooled level appended (in place, as torchvision).

        Example:
            >>> import torch
            >>> LastLevelMaxPool()([torch.ones(1, 1, 2, 2)], [], ["0"])[0][1].shape
            torch.Size([1, 1, 1, 1])
        """
        names.append("pool")
        x.append(F.max_pool2d(x[-1], kernel_size=1, stride=2, padding=0))
        return x, names


class LastLevelP6P7(ExtraFPNBlock):
    """RetinaNet's extra levels: ``p6`` (3x3 stride-2 convolution) and ``p7`` (ReLU, then another).

    ``p6`` reads the last FPN output (P5) when ``in_channels == out_channels``, and
    the last backbone feature map (C5) otherwise, as torchvision's.

    Example:
        >>> import torch
        >>> block = LastLevelP6P7(8, 4)
        >>> p, names = block([torch.rand(1, 4, 8, 8)], [torch.rand(1, 8, 8, 8)], ["0"])
        >>> names, [tuple(t.shape) for t in p], block.use_P5
        (['0', 'p6', 'p7'], [(1, 4, 8, 8), (1, 4, 4, 4), (1, 4, 2, 2)], False)
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        for module in [self.p6, self.p7]:
            nn.init.kaiming_uniform_(module.weight, a=1)
            nn.init.constant_(module.bias, 0)
        self.use_P5 = in_channels == out_channels

    def forward(
        self, p: list[Tensor], c: list[Tensor], names: list[str]
    ) -> tuple[list[Tensor], list[str]]:
        """``p`` and ``names`` with P6 and P7 appended (in place, as torchvision).

        Example:
            >>> import torch
            >>> p, _ = LastLevelP6P7(2, 2)([torch.rand(1, 2, 4, 4)], [None], ["0"])
            >>> [t.shape[-1] for t in p]
            [4, 2, 1]
        """
        x = p[-1] if self.use_P5 else c[-1]
        p6 = _strided_conv(self.p6, x)
        p7 = _strided_conv(self.p7, F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names


def _strided_conv(conv: nn.Conv2d, x: Tensor) -> Tensor:
    """``conv(x)``; a 1x1 map in bfloat16 on CPU (or under its autocast) goes through in float32.

    oneDNN's bfloat16 weight gradient of a padded stride-2 convolution over a 1x1
    input reads uninitialised memory (torch 2.13 on CPU): NaN gradients at random.
    P6 and P7 of small images are such maps; float32 there costs nothing.

    Example:
        >>> conv = nn.Conv2d(2, 2, 3, 2, 1)
        >>> _strided_conv(conv, torch.rand(1, 2, 1, 1, dtype=torch.bfloat16)).dtype
        torch.bfloat16
    """
    autocast = torch.is_autocast_enabled("cpu")
    bfloat16 = x.dtype == torch.bfloat16 or (
        autocast and torch.get_autocast_dtype("cpu") == torch.bfloat16
    )
    if x.device.type != "cpu" or not bfloat16 or x.shape[-2:] != (1, 1):
        return conv(x)
    bias = None if conv.bias is None else conv.bias.float()
    with torch.autocast("cpu", enabled=False):
        weight = conv.weight.float()
        y = F.conv2d(x.float(), weight, bias, conv.stride, conv.padding, conv.dilation, conv.groups)
    return y.to(torch.bfloat16)


class FeaturePyramidNetwork(UpgradesStateDict):
    """An FPN over feature maps of increasing depth, as ``torchvision.ops.FeaturePyramidNetwork``.

    Each input level ``i`` goes through a 1x1 lateral convolution
    (``inner_blocks[i]``); from the deepest level up, the running top-down map is
    upsampled (nearest) to the next level's size and added to its lateral, and each
    sum goes through a 3x3 convolution (``layer_blocks[i]``). ``extra_blocks``
    (an :class:`ExtraFPNBlock`) may append levels.

    Args:
        in_channels_list: channels of each input level, in input order.
        out_channels: channels of every output level.
        extra_blocks: an :class:`ExtraFPNBlock`, or None for none.
        norm_layer: a norm layer after each convolution (then without bias), or None.

    Convolutions start Kaiming uniform (``a=1``) with zero biases, as torchvision's.

    Example:
        >>> import torch
        >>> fpn = FeaturePyramidNetwork([10, 20, 30], 5)
        >>> x = {"feat0": torch.rand(1, 10, 64, 64), "feat2": torch.rand(1, 20, 16, 16),
        ...      "feat3": torch.rand(1, 30, 8, 8)}
        >>> [(k, tuple(v.shape)) for k, v in fpn(x).items()]
        [('feat0', (1, 5, 64, 64)), ('feat2', (1, 5, 16, 16)), ('feat3', (1, 5, 8, 8))]
    """

    _version = 2

    def __init__(
        self,
        in_channels_list: list[int],
        out_channels: int,
        extra_blocks: ExtraFPNBlock | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            self.inner_blocks.append(
                conv_norm_activation(in_channels, out_channels, 1, norm_layer=norm_layer)
            )
            self.layer_blocks.append(
                conv_norm_activation(out_channels, out_channels, 3, norm_layer=norm_layer)
            )
        # Before extra_blocks is attached: its own initialisation stays as it is.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        if extra_blocks is not None and not isinstance(extra_blocks, ExtraFPNBlock):
            raise TypeError(
                f"extra_blocks should be of type ExtraFPNBlock not {type(extra_blocks)}"
            )
        self.extra_blocks = extra_blocks

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        """Version 1 had bare convolutions (``inner_blocks.0.weight``, now ``.0.0.weight``)."""
        if version is None or version < 2:
            for block in ["inner_blocks", "layer_blocks"]:
                for i in range(len(self.inner_blocks)):
                    for kind in ["weight", "bias"]:
                        old_key = f"{prefix}{block}.{i}.{kind}"
                        if old_key in state_dict:
                            state_dict[f"{prefix}{block}.{i}.0.{kind}"] = state_dict.pop(old_key)

    def forward(self, x: dict[str, Tensor]) -> dict[str, Tensor]:
        """The pyramid: one ``out_channels`` map per input level (then the extra levels).

        Example:
            >>> import torch
            >>> fpn = FeaturePyramidNetwork([3], 2)
            >>> list(fpn({"c5": torch.rand(1, 3, 4, 4)}))
            ['c5']
        """
        names = list(x.keys())
        features = list(x.values())
        if not features:
            raise ValueError("FeaturePyramidNetwork needs at least one feature map, got none")
        if len(features) != len(self.inner_blocks):
            raise ValueError(
                f"FeaturePyramidNetwork was built for {len(self.inner_blocks)} feature maps, "
                f"got {len(features)} ({names})"
            )
        last_inner = self.inner_blocks[-1](features[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(features) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](features[idx])
            top_down = F.interpolate(last_inner, size=inner_lateral.shape[-2:], mode="nearest")
            last_inner = inner_lateral + top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, features, names)
        return OrderedDict(zip(names, results, strict=True))
