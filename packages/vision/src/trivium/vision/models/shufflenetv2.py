"""ShuffleNetV2 (Ma et al., 2018) with torchvision's builders, module names and init.

``shufflenet_v2_x0_5`` .. ``shufflenet_v2_x2_0`` as ``torchvision.models.shufflenetv2``:
state dicts load either way with ``strict=True``; ``weights=`` takes a local file
or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import shufflenet_v2_x0_5
    >>> shufflenet_v2_x0_5(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights

SHUFFLENET_BUILDERS = (
    "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0",
)
__all__ = ["SHUFFLENET_BUILDERS", "InvertedResidual", "ShuffleNetV2", "channel_shuffle"]
__all__ += SHUFFLENET_BUILDERS


def channel_shuffle(x: Tensor, groups: int) -> Tensor:
    """``x`` [N, C, H, W] with its channels interleaved across ``groups`` groups.

    Example:
        >>> import torch
        >>> channel_shuffle(torch.arange(4.0).view(1, 4, 1, 1), 2).flatten().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """
    batchsize, num_channels, height, width = x.size()
    x = x.view(batchsize, groups, num_channels // groups, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, num_channels, height, width)


class InvertedResidual(nn.Module):
    """ShuffleNetV2's unit: at stride 1, half the channels pass and half go through
    ``branch2``; at stride 2 both ``branch1`` and ``branch2`` see all of them. The halves
    are concatenated and channel-shuffled.

    Not MobileNet's block of the same name (each module has one, as in torchvision).

    Example:
        >>> import torch
        >>> InvertedResidual(8, 16, stride=2)(torch.zeros(1, 8, 4, 4)).shape
        torch.Size([1, 16, 2, 2])
    """

    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()
        if not 1 <= stride <= 3:
            raise ValueError(f"illegal stride value {stride}: must be 1, 2 or 3")
        self.stride = stride
        branch_features = oup // 2
        if stride == 1 and inp != branch_features << 1:
            raise ValueError(
                f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. "
                "If stride == 1 then inp should be equal to oup // 2 << 1."
            )
        if stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=stride, padding=1),
                nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(
                inp if stride > 1 else branch_features,
                branch_features,
                kernel_size=1,
                stride=1,
                padding=0,
                bias=False,
            ),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            self.depthwise_conv(
                branch_features, branch_features, kernel_size=3, stride=stride, padding=1
            ),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(
                branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False
            ),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    @staticmethod
    def depthwise_conv(
        i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False
    ) -> nn.Conv2d:
        """A depthwise convolution (``groups=i``).

        Example:
            >>> InvertedResidual.depthwise_conv(8, 8, 3).groups
            8
        """
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x: Tensor) -> Tensor:
        """The unit's output [N, oup, H / stride, W / stride].

        Example:
            >>> import torch
            >>> InvertedResidual(8, 8, stride=1)(torch.zeros(1, 8, 3, 3)).shape
            torch.Size([1, 8, 3, 3])
        """
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNetV2: ``conv1`` and ``maxpool``, ``stage2`` .. ``stage4`` of units, ``conv5``,
    global average pooling and ``fc``.

    Args:
        stages_repeats: units per stage (3 numbers).
        stages_out_channels: channels of ``conv1``, the three stages and ``conv5`` (5 numbers).
        num_classes: outputs of ``fc``.
        inverted_residual: the unit class (default :class:`InvertedResidual`).

    Initialisation is PyTorch's default for every layer, as torchvision's.

    Example:
        >>> import torch
        >>> model = ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 128], num_classes=3)
        >>> model(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        stages_repeats: list[int],
        stages_out_channels: list[int],
        num_classes: int = 1000,
        inverted_residual: Callable[..., nn.Module] = InvertedResidual,
    ) -> None:
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels
        channels = stages_out_channels[0]
        self.conv1 = nn.Sequential(
            nn.Conv2d(3, channels, 3, 2, 1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
        )
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.stage2: nn.Sequential
        self.stage3: nn.Sequential
        self.stage4: nn.Sequential
        stages = zip((2, 3, 4), stages_repeats, stages_out_channels[1:4], strict=True)
        for index, repeats, out_channels in stages:
            units = [inverted_residual(channels, out_channels, 2)]
            units += [inverted_residual(out_channels, out_channels, 1) for _ in range(repeats - 1)]
            setattr(self, f"stage{index}", nn.Sequential(*units))
            channels = out_channels
        last = stages_out_channels[-1]
        self.conv5 = nn.Sequential(
            nn.Conv2d(channels, last, 1, 1, 0, bias=False),
            nn.BatchNorm2d(last),
            nn.ReLU(inplace=True),
        )
        self.fc = nn.Linear(last, num_classes)

    def _forward_impl(self, x: Tensor) -> Tensor:
        # Kept under torchvision's name: subclasses written for torchvision override it.
        x = self.maxpool(self.conv1(x))
        x = self.stage4(self.stage3(self.stage2(x)))
        x = self.conv5(x).mean([2, 3])
        return self.fc(x)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> shufflenet_v2_x0_5(num_classes=2).eval()(torch.zeros(1, 3, 32, 32)).shape
            torch.Size([1, 2])
        """
        return self._forward_impl(x)


_CHANNELS = {
    "shufflenet_v2_x0_5": [24, 48, 96, 192, 1024],
    "shufflenet_v2_x1_0": [24, 116, 232, 464, 1024],
    "shufflenet_v2_x1_5": [24, 176, 352, 704, 1024],
    "shufflenet_v2_x2_0": [24, 244, 488, 976, 2048],
}


def _shufflenetv2(name: str, weights: Weights | None, kwargs: dict[str, Any]) -> ShuffleNetV2:
    def make(**model_kwargs: Any) -> ShuffleNetV2:
        return ShuffleNetV2([4, 8, 4], _CHANNELS[name], **model_kwargs)

    return build_classifier(name, make, weights, kwargs, "fc.weight")  # type: ignore[return-value]


@with_weights_doc("ShuffleNetV2")
def shufflenet_v2_x0_5(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """ShuffleNetV2 with 0.5x output channels: 1.4 M parameters.

    Example:
        >>> sum(p.numel() for p in shufflenet_v2_x0_5().parameters())
        1366792
    """
    return _shufflenetv2("shufflenet_v2_x0_5", weights, kwargs)


@with_weights_doc("ShuffleNetV2")
def shufflenet_v2_x1_0(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """ShuffleNetV2 with 1.0x output channels: 2.3 M parameters.

    Example:
        >>> shufflenet_v2_x1_0().stage2[0].branch1[2].out_channels
        58
    """
    return _shufflenetv2("shufflenet_v2_x1_0", weights, kwargs)


@with_weights_doc("ShuffleNetV2")
def shufflenet_v2_x1_5(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """ShuffleNetV2 with 1.5x output channels: 3.5 M parameters.

    Example:
        >>> shufflenet_v2_x1_5().conv5[0].in_channels
        704
    """
    return _shufflenetv2("shufflenet_v2_x1_5", weights, kwargs)


@with_weights_doc("ShuffleNetV2")
def shufflenet_v2_x2_0(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ShuffleNetV2:
    """ShuffleNetV2 with 2.0x output channels and a 2048-channel ``conv5``: 7.4 M parameters.

    Example:
        >>> shufflenet_v2_x2_0().fc.in_features
        2048
    """
    return _shufflenetv2("shufflenet_v2_x2_0", weights, kwargs)
