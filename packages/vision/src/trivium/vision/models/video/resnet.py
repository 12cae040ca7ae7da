"""3D ResNets for video (Tran et al., 2017): R3D, MC3 and R(2+1)D, as torchvision's.

The classes and builders of ``torchvision.models.video.resnet``: ``r3d_18`` (3D
convolutions throughout), ``mc3_18`` (3D in the first stage, 2D after) and
``r2plus1d_18`` (each 3D convolution split into a spatial and a temporal one). A
model takes clips [N, 3, T, H, W] and returns class scores [N, num_classes] (400:
Kinetics-400 by default). State dicts load to and from torchvision's with
``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models.video import r3d_18
    >>> model = r3d_18(num_classes=5).eval()
    >>> model(torch.zeros(1, 3, 4, 32, 32)).shape
    torch.Size([1, 5])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights

__all__ = [
    "BasicBlock",
    "BasicStem",
    "Bottleneck",
    "Conv2Plus1D",
    "Conv3DNoTemporal",
    "Conv3DSimple",
    "R2Plus1dStem",
    "VideoResNet",
    "mc3_18",
    "r2plus1d_18",
    "r3d_18",
]


class Conv3DSimple(nn.Conv3d):
    """A 3x3x3 convolution without bias, striding time and space alike (R3D).

    ``midplanes`` is unused (the signature every convolution maker shares).

    Example:
        >>> Conv3DSimple(3, 8, stride=2).stride
        (2, 2, 2)
    """

    def __init__(
        self,
        in_planes: int,
        out_planes: int,
        midplanes: int | None = None,
        stride: int = 1,
        padding: int = 1,
    ) -> None:
        super().__init__(
            in_channels=in_planes,
            out_channels=out_planes,
            kernel_size=(3, 3, 3),
            stride=stride,
            padding=padding,
            bias=False,
        )

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        """The stride of the shortcut's 1x1x1 convolution: ``stride`` in time and space.

        Example:
            >>> Conv3DSimple.get_downsample_stride(2)
            (2, 2, 2)
        """
        return stride, stride, stride


class Conv2Plus1D(nn.Sequential):
    """A 1x3x3 spatial convolution to ``midplanes``, BatchNorm, ReLU, then a 3x1x1 temporal one.

    Example:
        >>> import torch
        >>> Conv2Plus1D(3, 8, midplanes=6, stride=2)(torch.zeros(1, 3, 4, 8, 8)).shape
        torch.Size([1, 8, 2, 4, 4])
    """

    def __init__(
        self, in_planes: int, out_planes: int, midplanes: int, stride: int = 1, padding: int = 1
    ) -> None:
        super().__init__(
            nn.Conv3d(
                in_planes,
                midplanes,
                kernel_size=(1, 3, 3),
                stride=(1, stride, stride),
                padding=(0, padding, padding),
                bias=False,
            ),
            nn.BatchNorm3d(midplanes),
            nn.ReLU(inplace=True),
            nn.Conv3d(
                midplanes,
                out_planes,
                kernel_size=(3, 1, 1),
                stride=(stride, 1, 1),
                padding=(padding, 0, 0),
                bias=False,
            ),
        )

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        """The stride of the shortcut's 1x1x1 convolution: ``stride`` in time and space.

        Example:
            >>> Conv2Plus1D.get_downsample_stride(2)
            (2, 2, 2)
        """
        return stride, stride, stride


class Conv3DNoTemporal(nn.Conv3d):
    """A 1x3x3 convolution without bias: 2D per frame, striding space only (MC3's later stages).

    Example:
        >>> Conv3DNoTemporal(3, 8, stride=2).stride
        (1, 2, 2)
    """

    def __init__(
        self,
        in_planes: int,
        out_planes: int,
        midplanes: int | None = None,
        stride: int = 1,
        padding: int = 1,
    ) -> None:
        super().__init__(
            in_channels=in_planes,
            out_channels=out_planes,
            kernel_size=(1, 3, 3),
            stride=(1, stride, stride),
            padding=(0, padding, padding),
            bias=False,
        )

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        """The stride of the shortcut's 1x1x1 convolution: ``stride`` in space only.

        Example:
            >>> Conv3DNoTemporal.get_downsample_stride(2)
            (1, 2, 2)
        """
        return 1, stride, stride


ConvMaker = type[Conv3DSimple] | type[Conv3DNoTemporal] | type[Conv2Plus1D]


def _midplanes(inplanes: int, planes: int) -> int:
    # R(2+1)D's width between the spatial and temporal convolutions: the parameters of a
    # 3x3x3 convolution (Tran et al., 2017, eq. 1).
    return (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)


class BasicBlock(nn.Module):
    """Two convolutions of ``conv_builder`` (``conv1``, ``conv2``) and a shortcut.

    Example:
        >>> import torch
        >>> BasicBlock(8, 8, Conv3DSimple)(torch.zeros(1, 8, 2, 4, 4)).shape
        torch.Size([1, 8, 2, 4, 4])
    """

    expansion = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        conv_builder: Callable[..., nn.Module],
        stride: int = 1,
        downsample: nn.Module | None = None,
    ) -> None:
        midplanes = _midplanes(inplanes, planes)
        super().__init__()
        self.conv1 = nn.Sequential(
            conv_builder(inplanes, planes, midplanes, stride),
            nn.BatchNorm3d(planes),
            nn.ReLU(inplace=True),
        )
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes), nn.BatchNorm3d(planes))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        """relu(conv2(conv1(x)) + shortcut(x)).

        Example:
            >>> import torch
            >>> BasicBlock(4, 4, Conv3DNoTemporal)(torch.zeros(1, 4, 2, 3, 3)).sum().item()
            0.0
        """
        return _residual(self, self.conv2(self.conv1(x)), x)


class Bottleneck(nn.Module):
    """1x1x1, ``conv_builder`` and 1x1x1 convolutions (``conv1`` .. ``conv3``) and a shortcut;
    the output has ``4 * planes`` channels.

    Example:
        >>> import torch
        >>> Bottleneck(16, 4, Conv3DSimple)(torch.zeros(1, 16, 2, 3, 3)).shape
        torch.Size([1, 16, 2, 3, 3])
    """

    expansion = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        conv_builder: Callable[..., nn.Module],
        stride: int = 1,
        downsample: nn.Module | None = None,
    ) -> None:
        super().__init__()
        midplanes = _midplanes(inplanes, planes)
        self.conv1 = nn.Sequential(
            nn.Conv3d(inplanes, planes, kernel_size=1, bias=False),
            nn.BatchNorm3d(planes),
            nn.ReLU(inplace=True),
        )
        self.conv2 = nn.Sequential(
            conv_builder(planes, planes, midplanes, stride),
            nn.BatchNorm3d(planes),
            nn.ReLU(inplace=True),
        )
        self.conv3 = nn.Sequential(
            nn.Conv3d(planes, planes * self.expansion, kernel_size=1, bias=False),
            nn.BatchNorm3d(planes * self.expansion),
        )
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        """relu(conv3(conv2(conv1(x))) + shortcut(x)).

        Example:
            >>> import torch
            >>> Bottleneck(8, 2, Conv2Plus1D)(torch.ones(1, 8, 2, 3, 3)).min().item() >= 0
            True
        """
        return _residual(self, self.conv3(self.conv2(self.conv1(x))), x)


def _residual(block: BasicBlock | Bottleneck, out: Tensor, x: Tensor) -> Tensor:
    residual = x if block.downsample is None else block.downsample(x)
    out += residual
    return block.relu(out)


class BasicStem(nn.Sequential):
    """The R3D and MC3 stem: a 3x7x7 convolution (spatial stride 2) to 64 channels,
    BatchNorm, ReLU.

    Example:
        >>> import torch
        >>> BasicStem()(torch.zeros(1, 3, 2, 8, 8)).shape
        torch.Size([1, 64, 2, 4, 4])
    """

    def __init__(self) -> None:
        super().__init__(
            nn.Conv3d(
                3, 64, kernel_size=(3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False
            ),
            nn.BatchNorm3d(64),
            nn.ReLU(inplace=True),
        )


class R2Plus1dStem(nn.Sequential):
    """The R(2+1)D stem: a 1x7x7 spatial convolution (stride 2) to 45 channels and a 3x1x1
    temporal one to 64, each with BatchNorm and ReLU.

    Example:
        >>> import torch
        >>> R2Plus1dStem()(torch.zeros(1, 3, 2, 8, 8)).shape
        torch.Size([1, 64, 2, 4, 4])
    """

    def __init__(self) -> None:
        super().__init__(
            nn.Conv3d(
                3, 45, kernel_size=(1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False
            ),
            nn.BatchNorm3d(45),
            nn.ReLU(inplace=True),
            nn.Conv3d(
                45, 64, kernel_size=(3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0), bias=False
            ),
            nn.BatchNorm3d(64),
            nn.ReLU(inplace=True),
        )


class VideoResNet(nn.Module):
    """A ResNet for clips: ``stem``, stages ``layer1`` .. ``layer4`` (64, 128, 256, 512
    planes; strides 1, 2, 2, 2), ``avgpool`` over time and space, ``fc``.

    Args:
        block: :class:`BasicBlock` or :class:`Bottleneck`.
        conv_makers: the convolution class of each stage (4: :class:`Conv3DSimple`,
            :class:`Conv3DNoTemporal` or :class:`Conv2Plus1D`).
        layers: blocks per stage (4 numbers).
        stem: called with no argument for the stem (:class:`BasicStem`,
            :class:`R2Plus1dStem`).
        num_classes: outputs of ``fc``.
        zero_init_residual: start the last BatchNorm of every block at weight 0, so
            each block starts as the identity. (torchvision's attempts this for
            :class:`Bottleneck` only, where it fails, and leaves :class:`BasicBlock`.)

    Initialisation is torchvision's: Kaiming normal (fan out, ReLU) convolutions,
    BatchNorm weights 1 and biases 0, ``fc`` weights N(0, 0.01) and biases 0.

    Example:
        >>> import torch
        >>> model = VideoResNet(BasicBlock, [Conv3DSimple] * 4, [1, 1, 1, 1], BasicStem, 3)
        >>> model(torch.zeros(2, 3, 4, 16, 16)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        block: type[BasicBlock | Bottleneck],
        conv_makers: Sequence[ConvMaker],
        layers: list[int],
        stem: Callable[..., nn.Module],
        num_classes: int = 400,
        zero_init_residual: bool = False,
    ) -> None:
        super().__init__()
        if len(conv_makers) != 4 or len(layers) != 4:
            raise ValueError(
                "conv_makers and layers must give the 4 stages, got "
                f"{len(conv_makers)} conv_makers and layers={list(layers)}"
            )
        self.inplanes = 64
        self.stem = stem()
        self.layer1 = self._make_layer(block, conv_makers[0], 64, layers[0], stride=1)
        self.layer2 = self._make_layer(block, conv_makers[1], 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, conv_makers[2], 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, conv_makers[3], 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        self._init_weights(zero_init_residual)

    def _init_weights(self, zero_init_residual: bool) -> None:
        # Same order of random draws as torchvision: same seed, same weights.
        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.constant_(m.conv3[1].weight, 0)
                elif isinstance(m, BasicBlock):
                    nn.init.constant_(m.conv2[1].weight, 0)

    def _make_layer(
        self,
        block: type[BasicBlock | Bottleneck],
        conv_builder: ConvMaker,
        planes: int,
        blocks: int,
        stride: int = 1,
    ) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv3d(
                    self.inplanes,
                    planes * block.expansion,
                    kernel_size=1,
                    stride=conv_builder.get_downsample_stride(stride),
                    bias=False,
                ),
                nn.BatchNorm3d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, conv_builder, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, conv_builder) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for clips ``x`` [N, 3, T, H, W].

        Example:
            >>> import torch
            >>> model = VideoResNet(BasicBlock, [Conv2Plus1D] * 4, [1, 1, 1, 1], R2Plus1dStem, 2)
            >>> model(torch.zeros(2, 3, 2, 16, 16)).shape
            torch.Size([2, 2])
        """
        x = self.stem(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        return self.fc(x.flatten(1))


def _video_resnet(
    name: str,
    conv_makers: Sequence[ConvMaker],
    stem: Callable[..., nn.Module],
    weights: Weights | None,
    kwargs: dict[str, Any],
) -> VideoResNet:
    def make(**model_kwargs: Any) -> VideoResNet:
        return VideoResNet(BasicBlock, conv_makers, [2, 2, 2, 2], stem, **model_kwargs)

    return build_classifier(name, make, weights, kwargs, "fc.weight")  # type: ignore[return-value]


@with_weights_doc("VideoResNet")
def r3d_18(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VideoResNet:
    """R3D-18 (Tran et al., 2017): 3x3x3 convolutions in every stage, 33.4 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = r3d_18()
        >>> model.layer2[0].conv1[0].kernel_size, model.fc.out_features
        ((3, 3, 3), 400)
    """
    return _video_resnet("r3d_18", [Conv3DSimple] * 4, BasicStem, weights, kwargs)


@with_weights_doc("VideoResNet")
def mc3_18(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VideoResNet:
    """MC3-18 (Tran et al., 2017): 3D convolutions in the first stage, 2D (1x3x3) after;
    11.7 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = mc3_18()
        >>> model.layer1[0].conv1[0].kernel_size, model.layer2[0].conv1[0].kernel_size
        ((3, 3, 3), (1, 3, 3))
    """
    makers: list[ConvMaker] = [Conv3DSimple, Conv3DNoTemporal, Conv3DNoTemporal, Conv3DNoTemporal]
    return _video_resnet("mc3_18", makers, BasicStem, weights, kwargs)


@with_weights_doc("VideoResNet")
def r2plus1d_18(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> VideoResNet:
    """R(2+1)D-18 (Tran et al., 2017): each 3D convolution split into a spatial (1x3x3) and a
    temporal (3x1x1) one; 31.5 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = r2plus1d_18()
        >>> split = model.layer1[0].conv1[0]
        >>> split[0].kernel_size, split[3].kernel_size
        ((1, 3, 3), (3, 1, 1))
    """
    return _video_resnet("r2plus1d_18", [Conv2Plus1D] * 4, R2Plus1dStem, weights, kwargs)
