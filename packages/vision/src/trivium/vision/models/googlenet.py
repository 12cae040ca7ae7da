"""GoogLeNet (Inception v1, Szegedy et al., 2014) with torchvision's builder, names and init.

As ``torchvision.models.googlenet``: state dicts load either way with ``strict=True``;
in training with ``aux_logits`` the model returns :data:`GoogLeNetOutputs` (the
logits and the two auxiliary heads'), otherwise the logits. ``weights=`` takes a
local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import googlenet
    >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
    ...     model = googlenet(num_classes=10)
    >>> model.eval()(torch.zeros(1, 3, 224, 224, device="meta")).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models.weights import Weights, load_weights, num_classes_of

__all__ = [
    "BasicConv2d",
    "GoogLeNet",
    "GoogLeNetOutputs",
    "Inception",
    "InceptionAux",
    "googlenet",
]

GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])
GoogLeNetOutputs.__doc__ = """The training outputs of :class:`GoogLeNet` with ``aux_logits``:
``logits``, ``aux_logits2`` (the head after ``inception4d``), ``aux_logits1`` (after
``inception4a``), each [N, num_classes]."""
GoogLeNetOutputs.__annotations__ = {
    "logits": Tensor,
    "aux_logits2": Tensor | None,
    "aux_logits1": Tensor | None,
}


class BasicConv2d(nn.Module):
    """A convolution without bias (``conv``, ``kwargs`` passed on), BatchNorm (``bn``,
    eps 0.001) and ReLU.

    Example:
        >>> import torch
        >>> BasicConv2d(3, 8, kernel_size=3, padding=1)(torch.zeros(1, 3, 5, 5)).shape
        torch.Size([1, 8, 5, 5])
    """

    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        """relu(bn(conv(x))).

        Example:
            >>> import torch
            >>> BasicConv2d(2, 2, kernel_size=1)(-torch.ones(1, 2, 2, 2)).min().item() >= 0
            True
        """
        return F.relu(self.bn(self.conv(x)), inplace=True)


class Inception(nn.Module):
    """An Inception module: 1x1 (``branch1``), 1x1-then-3x3 (``branch2``, ``branch3``; the
    second is the paper's 5x5, a 3x3 as in torchvision) and max-pool-then-1x1 (``branch4``)
    branches, concatenated.

    Example:
        >>> import torch
        >>> Inception(8, 2, 2, 4, 2, 4, 2)(torch.zeros(1, 8, 5, 5)).shape
        torch.Size([1, 12, 5, 5])
    """

    def __init__(
        self,
        in_channels: int,
        ch1x1: int,
        ch3x3red: int,
        ch3x3: int,
        ch5x5red: int,
        ch5x5: int,
        pool_proj: int,
        conv_block: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.branch1 = conv(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(
            conv(in_channels, ch3x3red, kernel_size=1),
            conv(ch3x3red, ch3x3, kernel_size=3, padding=1),
        )
        self.branch3 = nn.Sequential(
            conv(in_channels, ch5x5red, kernel_size=1),
            conv(ch5x5red, ch5x5, kernel_size=3, padding=1),
        )
        self.branch4 = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
            conv(in_channels, pool_proj, kernel_size=1),
        )

    def forward(self, x: Tensor) -> Tensor:
        """The four branches' outputs concatenated along the channels.

        Example:
            >>> import torch
            >>> Inception(4, 1, 1, 1, 1, 1, 1)(torch.zeros(2, 4, 3, 3)).shape
            torch.Size([2, 4, 3, 3])
        """
        branches = (self.branch1, self.branch2, self.branch3, self.branch4)
        return torch.cat([branch(x) for branch in branches], 1)


class InceptionAux(nn.Module):
    """An auxiliary classifier: 4x4 adaptive average pool, 1x1 convolution to 128, two
    linear layers (``fc1`` to 1024, ReLU, dropout, ``fc2``).

    Example:
        >>> import torch
        >>> InceptionAux(16, 5).eval()(torch.zeros(2, 16, 7, 7)).shape
        torch.Size([2, 5])
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        conv_block: Callable[..., nn.Module] | None = None,
        dropout: float = 0.7,
    ) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.conv = conv(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] from the features ``x``.

        Example:
            >>> import torch
            >>> InceptionAux(4, 2).eval()(torch.zeros(1, 4, 4, 4)).shape
            torch.Size([1, 2])
        """
        x = torch.flatten(self.conv(F.adaptive_avg_pool2d(x, (4, 4))), 1)
        x = self.dropout(F.relu(self.fc1(x), inplace=True))
        return self.fc2(x)


def _transform_input(x: Tensor) -> Tensor:
    # Inputs normalised with ImageNet's mean and std, renormalised to mean 0.5, std 0.5 per
    # channel ([-1, 1]): what the original GoogLeNet and Inception v3 weights were trained on.
    x_ch0 = torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
    x_ch1 = torch.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
    x_ch2 = torch.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
    return torch.cat((x_ch0, x_ch1, x_ch2), 1)


# (in, 1x1, 3x3 reduce, 3x3, "5x5" reduce, "5x5", pool projection) of each Inception module.
_INCEPTIONS = {
    "inception3a": (192, 64, 96, 128, 16, 32, 32),
    "inception3b": (256, 128, 128, 192, 32, 96, 64),
    "inception4a": (480, 192, 96, 208, 16, 48, 64),
    "inception4b": (512, 160, 112, 224, 24, 64, 64),
    "inception4c": (512, 128, 128, 256, 24, 64, 64),
    "inception4d": (512, 112, 144, 288, 32, 64, 64),
    "inception4e": (528, 256, 160, 320, 32, 128, 128),
    "inception5a": (832, 256, 160, 320, 32, 128, 128),
    "inception5b": (832, 384, 192, 384, 48, 128, 128),
}


class GoogLeNet(nn.Module):
    """GoogLeNet: a convolutional stem, nine Inception modules with max pools between
    stages, global average pooling, dropout and ``fc``; auxiliary classifiers ``aux1``
    (after ``inception4a``) and ``aux2`` (after ``inception4d``) run in training.

    Args:
        num_classes: outputs of ``fc`` and the auxiliary classifiers.
        aux_logits: build the auxiliary classifiers (training returns
            :data:`GoogLeNetOutputs` then).
        transform_input: map inputs normalised with ImageNet's mean and std to the
            [-1, 1] normalisation the original weights were trained with.
        init_weights: truncated normal (std 0.01) convolutions and linear layers,
            BatchNorm weights 1 and biases 0; False: PyTorch's defaults. None: True
            (torchvision warns that its default may change; here it is simply True).
        blocks: the classes of the convolution, Inception and auxiliary blocks (3).
        dropout: dropout before ``fc``.
        dropout_aux: dropout in the auxiliary classifiers.

    Example:
        >>> import torch
        >>> model = GoogLeNet(num_classes=3, aux_logits=True).train()
        >>> [tuple(t.shape) for t in model(torch.zeros(2, 3, 64, 64))]
        [(2, 3), (2, 3), (2, 3)]
    """

    __constants__: ClassVar[list[str]] = ["aux_logits", "transform_input"]

    def __init__(
        self,
        num_classes: int = 1000,
        aux_logits: bool = True,
        transform_input: bool = False,
        init_weights: bool | None = None,
        blocks: list[Callable[..., nn.Module]] | None = None,
        dropout: float = 0.2,
        dropout_aux: float = 0.7,
    ) -> None:
        super().__init__()
        if blocks is None:
            blocks = [BasicConv2d, Inception, InceptionAux]
        if len(blocks) != 3:
            raise ValueError(f"blocks length should be 3 instead of {len(blocks)}")
        conv_block, inception_block, inception_aux_block = blocks
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.conv1 = conv_block(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv_block(64, 64, kernel_size=1)
        self.conv3 = conv_block(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        for name in ("inception3a", "inception3b"):
            setattr(self, name, inception_block(*_INCEPTIONS[name]))
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        for name in ("inception4a", "inception4b", "inception4c", "inception4d", "inception4e"):
            setattr(self, name, inception_block(*_INCEPTIONS[name]))
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
        for name in ("inception5a", "inception5b"):
            setattr(self, name, inception_block(*_INCEPTIONS[name]))
        self.aux1: nn.Module | None = None
        self.aux2: nn.Module | None = None
        if aux_logits:
            self.aux1 = inception_aux_block(512, num_classes, dropout=dropout_aux)
            self.aux2 = inception_aux_block(528, num_classes, dropout=dropout_aux)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)
        if init_weights is None or init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d | nn.Linear):
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=0.01, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

    def _aux(self, head: nn.Module | None, x: Tensor) -> Tensor | None:
        return head(x) if head is not None and self.training else None

    def _forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor | None]:
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.inception4a(x)
        aux1 = self._aux(self.aux1, x)
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self._aux(self.aux2, x)
        x = self.maxpool4(self.inception4e(x))
        x = self.inception5b(self.inception5a(x))
        x = self.dropout(torch.flatten(self.avgpool(x), 1))
        return self.fc(x), aux2, aux1

    def forward(self, x: Tensor) -> Tensor | GoogLeNetOutputs:
        """The logits [N, num_classes]; in training with ``aux_logits``,
        :data:`GoogLeNetOutputs` (the logits and both auxiliary heads').

        Example:
            >>> import torch
            >>> GoogLeNet(num_classes=2, aux_logits=False).eval()(torch.zeros(1, 3, 32, 32)).shape
            torch.Size([1, 2])
        """
        if self.transform_input:
            x = _transform_input(x)
        x, aux2, aux1 = self._forward(x)
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x


def googlenet(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> GoogLeNet:
    """GoogLeNet (Inception v1, Szegedy et al., 2014): 6.6 M parameters without the
    auxiliary classifiers.

    Args:
        weights: a local file path (str or os.PathLike) of a state dict saved with
            ``torch.save`` (torchvision's ``.pth`` downloads are such files), or the
            state dict itself; None (default): random initialisation. As with
            torchvision's weights, ``transform_input`` then defaults to True, and the
            auxiliary classifiers the weights hold are loaded, then dropped unless
            ``aux_logits=True`` (which weights without them refuse, ``ValueError``).
            The classifier size follows the weights. Nothing is downloaded: a
            torchvision weights enum or its name raises ``ValueError``.
        progress: accepted for torchvision compatibility and ignored (nothing is
            downloaded).
        **kwargs: passed to :class:`GoogLeNet` (``num_classes``, ``aux_logits``, ...).

    Example:
        >>> model = googlenet(num_classes=5)
        >>> model.aux_logits, model.fc.out_features
        (True, 5)
        >>> googlenet(weights=model.state_dict()).aux1 is None  # dropped, as torchvision
        True
    """
    return _build_with_aux(
        "googlenet", GoogLeNet, weights, kwargs, aux_modules=("aux1", "aux2"), aux_default=False
    )


def _build_with_aux(
    name: str,
    cls: Callable[..., nn.Module],
    weights: Weights | None,
    kwargs: dict[str, Any],
    aux_modules: tuple[str, ...],
    aux_default: bool,
) -> Any:
    """torchvision's builder for GoogLeNet and Inception v3: with weights, ``transform_input``
    defaults to True and the auxiliary heads the weights hold are loaded, then dropped
    unless ``aux_logits`` (default ``aux_default``) asks for them."""
    if kwargs.pop("pretrained", False):
        raise ValueError(
            f"{name}: pretrained=True (torchvision's deprecated argument) would download "
            "weights; pass weights= a local file path or a state dict instead"
        )
    if weights is None:
        return cls(**kwargs)
    state = load_weights(weights, name)
    want_aux = kwargs.get("aux_logits", aux_default)
    has_aux = any(key.startswith(f"{aux_modules[0]}.") for key in state)
    if want_aux and not has_aux:
        raise ValueError(
            f"aux_logits=True was given, but the {name} weights have no {'/'.join(aux_modules)}"
        )
    kwargs.setdefault("transform_input", True)
    kwargs["aux_logits"] = has_aux
    kwargs["init_weights"] = False
    classes = num_classes_of(state, "fc.weight")
    if classes is not None and kwargs.setdefault("num_classes", classes) != classes:
        raise ValueError(
            f"num_classes={kwargs['num_classes']} was given, but the {name} weights' "
            f"classifier has {classes} outputs"
        )
    model = cls(**kwargs)
    model.load_state_dict(state)
    if has_aux and not want_aux:
        model.aux_logits = False
        for module in aux_modules:
            setattr(model, module, None)
    return model
