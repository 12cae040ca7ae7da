"""S3D (Xie et al., 2017): separable 3D Inception for video, as ``torchvision.models.video.s3d``.

Each 3D convolution of the Inception network is split into a spatial (1xkxk) and a
temporal (kx1x1) one. ``s3d`` takes clips [N, 3, T, H, W] of at least 14 frames of
224x224 (its final pooling covers 2x7x7 features) and returns class scores
[N, num_classes] (400: Kinetics-400 by default). State dicts load to and from
torchvision's with ``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models.video import s3d
    >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
    ...     model = s3d()
    >>> model(torch.zeros(1, 3, 16, 224, 224, device="meta")).shape
    torch.Size([1, 400])
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights
from trivium.vision.ops.misc import Conv3dNormActivation

__all__ = ["S3D", "SepInceptionBlock3D", "TemporalSeparableConv", "s3d"]


class TemporalSeparableConv(nn.Sequential):
    """A 1xkxk spatial and a kx1x1 temporal :class:`~trivium.vision.ops.Conv3dNormActivation`.

    Example:
        >>> import torch
        >>> conv = TemporalSeparableConv(3, 8, 3, 2, 1, nn.BatchNorm3d)
        >>> conv(torch.zeros(1, 3, 4, 8, 8)).shape
        torch.Size([1, 8, 2, 4, 4])
    """

    def __init__(
        self,
        in_planes: int,
        out_planes: int,
        kernel_size: int,
        stride: int,
        padding: int,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__(
            Conv3dNormActivation(
                in_planes,
                out_planes,
                kernel_size=(1, kernel_size, kernel_size),
                stride=(1, stride, stride),
                padding=(0, padding, padding),
                bias=False,
                norm_layer=norm_layer,
            ),
            Conv3dNormActivation(
                out_planes,
                out_planes,
                kernel_size=(kernel_size, 1, 1),
                stride=(stride, 1, 1),
                padding=(padding, 0, 0),
                bias=False,
                norm_layer=norm_layer,
            ),
        )


class SepInceptionBlock3D(nn.Module):
    """An Inception block of four branches, concatenated: a 1x1x1 convolution (``branch0``),
    two 1x1x1-then-separable-3x3x3 ones (``branch1``, ``branch2``), and a 3x3x3 max pool
    then 1x1x1 (``branch3``); ``b0_out + b1_out + b2_out + b3_out`` channels out.

    Example:
        >>> import torch
        >>> block = SepInceptionBlock3D(8, 2, 4, 4, 2, 2, 2, nn.BatchNorm3d)
        >>> block(torch.zeros(1, 8, 2, 4, 4)).shape
        torch.Size([1, 10, 2, 4, 4])
    """

    def __init__(
        self,
        in_planes: int,
        b0_out: int,
        b1_mid: int,
        b1_out: int,
        b2_mid: int,
        b2_out: int,
        b3_out: int,
        norm_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__()
        conv1 = partial(Conv3dNormActivation, kernel_size=1, stride=1, norm_layer=norm_layer)
        separable = partial(
            TemporalSeparableConv, kernel_size=3, stride=1, padding=1, norm_layer=norm_layer
        )
        self.branch0 = conv1(in_planes, b0_out)
        self.branch1 = nn.Sequential(conv1(in_planes, b1_mid), separable(b1_mid, b1_out))
        self.branch2 = nn.Sequential(conv1(in_planes, b2_mid), separable(b2_mid, b2_out))
        self.branch3 = nn.Sequential(
            nn.MaxPool3d(kernel_size=(3, 3, 3), stride=1, padding=1), conv1(in_planes, b3_out)
        )

    def forward(self, x: Tensor) -> Tensor:
        """The four branches' outputs concatenated along the channels.

        Example:
            >>> import torch
            >>> block = SepInceptionBlock3D(4, 1, 2, 2, 2, 3, 4, nn.BatchNorm3d)
            >>> block(torch.zeros(2, 4, 1, 3, 3)).shape
            torch.Size([2, 10, 1, 3, 3])
        """
        branches = (self.branch0, self.branch1, self.branch2, self.branch3)
        return torch.cat([branch(x) for branch in branches], 1)


# The Inception blocks' widths: (in, b0_out, b1_mid, b1_out, b2_mid, b2_out, b3_out).
_MIXED_3 = [(192, 64, 96, 128, 16, 32, 32), (256, 128, 128, 192, 32, 96, 64)]
_MIXED_4 = [
    (480, 192, 96, 208, 16, 48, 64),
    (512, 160, 112, 224, 24, 64, 64),
    (512, 128, 128, 256, 24, 64, 64),
    (512, 112, 144, 288, 32, 64, 64),
    (528, 256, 160, 320, 32, 128, 128),
]
_MIXED_5 = [(832, 256, 160, 320, 32, 128, 128), (832, 384, 192, 384, 48, 128, 128)]


class S3D(nn.Module):
    """S3D: ``features`` (separable stem and Inception blocks), ``avgpool`` (2x7x7, stride 1)
    and ``classifier`` (dropout, 1x1x1 convolution), averaged over what is left.

    Args:
        num_classes: outputs of the classifier.
        dropout: dropout before the classifier.
        norm_layer: default ``BatchNorm3d`` with ``eps=0.001``, ``momentum=0.001``.

    Initialisation is PyTorch's default for every layer, as torchvision's.

    Example:
        >>> import torch
        >>> S3D(num_classes=5).eval().features(torch.zeros(1, 3, 8, 32, 32)).shape
        torch.Size([1, 1024, 1, 1, 1])
    """

    def __init__(
        self,
        num_classes: int = 400,
        dropout: float = 0.2,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm3d, eps=0.001, momentum=0.001)

        def inception(widths: list[tuple[int, ...]]) -> list[nn.Module]:
            return [SepInceptionBlock3D(*w, norm_layer=norm_layer) for w in widths]  # type: ignore[misc]

        def pool(kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]):
            return nn.MaxPool3d(kernel_size=kernel, stride=stride, padding=padding)

        self.features = nn.Sequential(
            TemporalSeparableConv(3, 64, 7, 2, 3, norm_layer),
            pool((1, 3, 3), (1, 2, 2), (0, 1, 1)),
            Conv3dNormActivation(64, 64, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(64, 192, 3, 1, 1, norm_layer),
            pool((1, 3, 3), (1, 2, 2), (0, 1, 1)),
            *inception(_MIXED_3),
            pool((3, 3, 3), (2, 2, 2), (1, 1, 1)),
            *inception(_MIXED_4),
            pool((2, 2, 2), (2, 2, 2), (0, 0, 0)),
            *inception(_MIXED_5),
        )
        self.avgpool = nn.AvgPool3d(kernel_size=(2, 7, 7), stride=1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Conv3d(1024, num_classes, kernel_size=1, stride=1, bias=True),
        )

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for clips ``x`` [N, 3, T, H, W] (T >= 14, H, W >= 224).

        Example:
            >>> import torch
            >>> with torch.device("meta"):
            ...     model = S3D(num_classes=3)
            ...     print(model(torch.zeros(2, 3, 14, 224, 224)).shape)
            torch.Size([2, 3])
        """
        x = self.features(x)
        x = self.avgpool(x)
        x = self.classifier(x)
        return torch.mean(x, dim=(2, 3, 4))


@with_weights_doc("S3D")
def s3d(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> S3D:
    """S3D (Xie et al., 2017) for Kinetics-400: 8.3 M parameters.

    Example:
        >>> sum(p.numel() for p in s3d().parameters())
        8320048
    """
    return build_classifier("s3d", S3D, weights, kwargs, "classifier.1.weight")  # type: ignore[return-value]
