"""ResNet, ResNeXt and Wide ResNet with torchvision's constructors, module names and init.

The classes and builders have the names, arguments and argument order of
``torchvision.models.resnet``, and every module, parameter and buffer has
torchvision's name and shape, so state dicts load either way with ``strict=True``.
Built from the same random seed, a model here and torchvision's have the same
initial weights.

``weights=`` differs: nothing is downloaded, so it takes a local file path or a
state dict (see :func:`~trivium.vision.models.weights.load_weights`).

Example:
    >>> import torch
    >>> from trivium.vision.models import resnet18
    >>> model = resnet18(num_classes=10).eval()
    >>> model(torch.zeros(2, 3, 64, 64)).shape
    torch.Size([2, 10])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from trivium.vision.models.weights import (
    Weights,
    load_weights,
    num_classes_of,
    override_named_param,
)

# The builders, named as torchvision's.
RESNET_BUILDERS = (
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "resnext50_32x4d",
    "resnext101_32x8d",
    "resnext101_64x4d",
    "wide_resnet50_2",
    "wide_resnet101_2",
)
__all__ = ["RESNET_BUILDERS", "BasicBlock", "Bottleneck", "ResNet", "conv1x1", "conv3x3"]
__all__ += RESNET_BUILDERS


def conv3x3(
    in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1
) -> nn.Conv2d:
    """A 3x3 convolution without bias, padded to keep the size at stride 1.

    Example:
        >>> conv3x3(16, 32, stride=2).padding
        (1, 1)
    """
    return nn.Conv2d(
        in_planes,
        out_planes,
        kernel_size=3,
        stride=stride,
        padding=dilation,
        groups=groups,
        bias=False,
        dilation=dilation,
    )


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """A 1x1 convolution without bias.

    Example:
        >>> conv1x1(16, 64).weight.shape
        torch.Size([64, 16, 1, 1])
    """
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class _BlockShape(NamedTuple):
    inplanes: int
    planes: int
    stride: int
    groups: int
    base_width: int
    dilation: int


class _Block(nn.Module):
    """What both blocks share: torchvision's constructor arguments and the shortcut."""

    expansion: int = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: nn.Module | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        shape = _BlockShape(inplanes, planes, stride, groups, base_width, dilation)
        self._layers(shape, norm_layer)
        self.downsample = downsample
        self.stride = stride

    def _layers(self, shape: _BlockShape, norm_layer: Callable[..., nn.Module]) -> None:
        raise NotImplementedError

    def _add_shortcut(self, out: Tensor, x: Tensor) -> Tensor:
        identity = x
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class BasicBlock(_Block):
    """Two 3x3 convolutions and a shortcut (ResNet-18/34), as torchvision's.

    ``downsample`` maps the input to the output's shape when they differ. Only
    ``groups=1``, ``base_width=64`` and ``dilation=1`` are supported, as in torchvision.

    Example:
        >>> import torch
        >>> BasicBlock(8, 8)(torch.zeros(1, 8, 5, 5)).shape
        torch.Size([1, 8, 5, 5])
    """

    expansion: int = 1

    def _layers(self, shape: _BlockShape, norm_layer: Callable[..., nn.Module]) -> None:
        if shape.groups != 1 or shape.base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if shape.dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(shape.inplanes, shape.planes, shape.stride)
        self.bn1 = norm_layer(shape.planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(shape.planes, shape.planes)
        self.bn2 = norm_layer(shape.planes)

    def forward(self, x: Tensor) -> Tensor:
        """The block's output: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)).

        Example:
            >>> import torch
            >>> BasicBlock(4, 4)(torch.zeros(1, 4, 3, 3)).sum().item()
            0.0
        """
        out = self.relu(self.bn1(self.conv1(x)))
        return self._add_shortcut(self.bn2(self.conv2(out)), x)


class Bottleneck(_Block):
    """1x1, 3x3 and 1x1 convolutions and a shortcut (ResNet-50 and deeper), as torchvision's.

    The stride sits on the 3x3 convolution (ResNet v1.5, as torchvision; the paper
    puts it on the first 1x1). The inner width is
    ``int(planes * base_width / 64) * groups``; the output has ``4 * planes`` channels.

    Example:
        >>> import torch
        >>> block = Bottleneck(16, 4)  # 16 -> 4 -> 4 -> 16 channels
        >>> block(torch.zeros(1, 16, 5, 5)).shape
        torch.Size([1, 16, 5, 5])
    """

    expansion: int = 4

    def _layers(self, shape: _BlockShape, norm_layer: Callable[..., nn.Module]) -> None:
        inplanes, planes, stride, groups, base_width, dilation = shape
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        """The block's output: relu(bn3(conv3(...(x))) + shortcut(x)).

        Example:
            >>> import torch
            >>> Bottleneck(8, 2)(torch.ones(1, 8, 3, 3)).min().item() >= 0
            True
        """
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self._add_shortcut(self.bn3(self.conv3(out)), x)


class ResNet(nn.Module):
    """A ResNet of ``block`` s, ``layers[i]`` of them in stage ``i + 1``, as torchvision's.

    Stem ``conv1`` (7x7, stride 2) / ``bn1`` / ``relu`` / ``maxpool``, stages
    ``layer1`` .. ``layer4`` (64, 128, 256, 512 planes; strides 1, 2, 2, 2), then
    ``avgpool`` and ``fc``. A detection backbone can call these children itself, or
    wrap the model in :class:`~trivium.vision.models.IntermediateLayerGetter`.

    Args:
        block: :class:`BasicBlock` or :class:`Bottleneck`.
        layers: blocks per stage (4 numbers).
        num_classes: outputs of ``fc``.
        zero_init_residual: start the last norm layer of every block at weight 0,
            so each block starts as the identity (Goyal et al., 2017).
        groups: groups of the 3x3 convolutions (ResNeXt).
        width_per_group: inner width per group at 64 planes (64: ResNet; 128: Wide ResNet).
        replace_stride_with_dilation: for ``layer2`` .. ``layer4``, whether to keep
            the resolution and dilate the convolutions instead of striding (segmentation).
        norm_layer: the norm layer, called with the channel count
            (default ``nn.BatchNorm2d``; e.g. :class:`~trivium.vision.ops.FrozenBatchNorm2d`).

    Initialisation is torchvision's: Kaiming normal (fan out, ReLU) convolutions,
    ``BatchNorm2d`` / ``GroupNorm`` weights 1 and biases 0, ``fc`` PyTorch's default.
    For speed on a CPU, convert the model and its input to channels-last
    (``model.to(memory_format=torch.channels_last)``; see the vision guide, docs/guide/vision.md).

    Example:
        >>> import torch
        >>> model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=5).eval()
        >>> model(torch.zeros(1, 3, 32, 32)).shape
        torch.Size([1, 5])
        >>> [name for name, _ in model.named_children()][:5]
        ['conv1', 'bn1', 'relu', 'maxpool', 'layer1']
    """

    def __init__(
        self,
        block: type[BasicBlock | Bottleneck],
        layers: list[int],
        num_classes: int = 1000,
        zero_init_residual: bool = False,
        groups: int = 1,
        width_per_group: int = 64,
        replace_stride_with_dilation: list[bool] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        if len(layers) != 4:
            raise ValueError(f"layers must give the blocks of 4 stages, got {list(layers)}")
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError(
                "replace_stride_with_dilation should be None "
                f"or a 3-element tuple, got {replace_stride_with_dilation}"
            )
        self.inplanes = 64
        self.dilation = 1
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        dilate = replace_stride_with_dilation
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=dilate[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=dilate[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=dilate[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        self._init_weights(zero_init_residual)

    def _init_weights(self, zero_init_residual: bool) -> None:
        # Same order of random draws as torchvision: same seed, same weights.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d | nn.GroupNorm):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                last = None
                if isinstance(m, Bottleneck):
                    last = m.bn3
                elif isinstance(m, BasicBlock):
                    last = m.bn2
                weight = getattr(last, "weight", None)
                if weight is not None:
                    nn.init.constant_(weight, 0)

    def _make_layer(
        self,
        block: type[BasicBlock | Bottleneck],
        planes: int,
        blocks: int,
        stride: int = 1,
        dilate: bool = False,
    ) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )
        layers = [
            block(
                self.inplanes,
                planes,
                stride,
                downsample,
                self.groups,
                self.base_width,
                previous_dilation,
                norm_layer,
            )
        ]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(
                block(
                    self.inplanes,
                    planes,
                    groups=self.groups,
                    base_width=self.base_width,
                    dilation=self.dilation,
                    norm_layer=norm_layer,
                )
            )
        return nn.Sequential(*layers)

    def _forward_impl(self, x: Tensor) -> Tensor:
        # Kept under torchvision's name: subclasses written for torchvision override it.
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> ResNet(BasicBlock, [1, 1, 1, 1], num_classes=3)(torch.zeros(2, 3, 8, 8)).shape
            torch.Size([2, 3])
        """
        return self._forward_impl(x)


def _resnet(
    name: str,
    block: type[BasicBlock | Bottleneck],
    layers: list[int],
    weights: Weights | None,
    kwargs: dict[str, Any],
    **fixed: int,
) -> ResNet:
    """The ``name`` architecture; ``fixed`` are the :class:`ResNet` arguments it sets."""
    for param, value in fixed.items():
        reason = f"{param}={value}" if param != "groups" else f"{value} groups"
        override_named_param(kwargs, param, value, f"{name} has {reason}")
    if kwargs.pop("pretrained", False):
        raise ValueError(
            f"{name}: pretrained=True (torchvision's deprecated argument) would download "
            "weights; pass weights= a local file path or a state dict instead"
        )
    state = None
    if weights is not None:
        state = load_weights(weights, name)
        classes = num_classes_of(state, "fc.weight")
        if classes is not None:
            override_named_param(
                kwargs, "num_classes", classes, f"the {name} weights' fc has {classes} outputs"
            )
    model = ResNet(block, layers, **kwargs)
    if state is not None:
        model.load_state_dict(state)
    return model


# How the builders take weights, once for all of them.
_WEIGHTS_DOC = """
    Args:
        weights: a local file path (str or os.PathLike) of a state dict saved with
            ``torch.save`` (torchvision's ``.pth`` downloads are such files), or the
            state dict itself; None (default): random initialisation. Nothing is
            downloaded: a torchvision weights enum or its name raises ``ValueError``,
            a missing file ``FileNotFoundError``. The classifier size follows the
            weights; ``num_classes`` given with weights whose ``fc`` differs raises
            ``ValueError``. Files are read with
            ``torch.load(path, map_location="cpu", weights_only=True)``.
        progress: accepted for torchvision compatibility and ignored: it shows a
            download bar there, and nothing is downloaded here.
        **kwargs: passed to :class:`ResNet` (``num_classes``, ``norm_layer``, ...).
"""


def _with_weights_doc(fn: Callable[..., ResNet]) -> Callable[..., ResNet]:
    summary, _, example = (fn.__doc__ or "").partition("\n\n")
    fn.__doc__ = f"{summary}\n{_WEIGHTS_DOC}\n{example}"
    return fn


@_with_weights_doc
def resnet18(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-18 (He et al., 2015): BasicBlock, [2, 2, 2, 2], 11.7 M parameters.

    Example:
        >>> import torch
        >>> resnet18(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
        torch.Size([1, 10])
    """
    return _resnet("resnet18", BasicBlock, [2, 2, 2, 2], weights, kwargs)


@_with_weights_doc
def resnet34(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-34 (He et al., 2015): BasicBlock, [3, 4, 6, 3], 21.8 M parameters.

    Example:
        >>> model = resnet34()
        >>> [len(model.layer3), model.fc.in_features]
        [6, 512]
    """
    return _resnet("resnet34", BasicBlock, [3, 4, 6, 3], weights, kwargs)


@_with_weights_doc
def resnet50(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-50 (v1.5, as torchvision): Bottleneck, [3, 4, 6, 3], 25.6 M parameters.

    Example:
        >>> import torch
        >>> model = resnet50()
        >>> torch.save(model.state_dict(), path := getfixture("tmp_path") / "r50.pth")
        >>> resnet50(weights=path).fc.weight.equal(model.fc.weight)
        True
    """
    return _resnet("resnet50", Bottleneck, [3, 4, 6, 3], weights, kwargs)


@_with_weights_doc
def resnet101(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-101 (v1.5, as torchvision): Bottleneck, [3, 4, 23, 3], 44.5 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = resnet101()
        >>> len(model.layer3)
        23
    """
    return _resnet("resnet101", Bottleneck, [3, 4, 23, 3], weights, kwargs)


@_with_weights_doc
def resnet152(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-152 (v1.5, as torchvision): Bottleneck, [3, 8, 36, 3], 60.2 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = resnet152()
        >>> len(model.layer3)
        36
    """
    return _resnet("resnet152", Bottleneck, [3, 8, 36, 3], weights, kwargs)


@_with_weights_doc
def resnext50_32x4d(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNeXt-50 32x4d (Xie et al., 2016): ResNet-50 with 32 groups of width 4.

    Example:
        >>> resnext50_32x4d().layer1[0].conv2.groups
        32
    """
    return _resnet(
        "resnext50_32x4d", Bottleneck, [3, 4, 6, 3], weights, kwargs, groups=32, width_per_group=4
    )


@_with_weights_doc
def resnext101_32x8d(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNeXt-101 32x8d (Xie et al., 2016): ResNet-101 with 32 groups of width 8.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = resnext101_32x8d()
        >>> model.layer1[0].conv2.weight.shape
        torch.Size([256, 8, 3, 3])
    """
    return _resnet(
        "resnext101_32x8d", Bottleneck, [3, 4, 23, 3], weights, kwargs, groups=32, width_per_group=8
    )


@_with_weights_doc
def resnext101_64x4d(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """ResNeXt-101 64x4d (Xie et al., 2016): ResNet-101 with 64 groups of width 4.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = resnext101_64x4d()
        >>> model.layer1[0].conv2.groups
        64
    """
    return _resnet(
        "resnext101_64x4d", Bottleneck, [3, 4, 23, 3], weights, kwargs, groups=64, width_per_group=4
    )


@_with_weights_doc
def wide_resnet50_2(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """Wide ResNet-50-2 (Zagoruyko & Komodakis, 2016): ResNet-50 with twice the inner width.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = wide_resnet50_2()
        >>> model.layer1[0].conv2.weight.shape
        torch.Size([128, 128, 3, 3])
    """
    return _resnet(
        "wide_resnet50_2", Bottleneck, [3, 4, 6, 3], weights, kwargs, width_per_group=128
    )


@_with_weights_doc
def wide_resnet101_2(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ResNet:
    """Wide ResNet-101-2 (Zagoruyko & Komodakis, 2016): ResNet-101 with twice the inner width.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = wide_resnet101_2()
        >>> len(model.layer3)
        23
    """
    return _resnet(
        "wide_resnet101_2", Bottleneck, [3, 4, 23, 3], weights, kwargs, width_per_group=128
    )
