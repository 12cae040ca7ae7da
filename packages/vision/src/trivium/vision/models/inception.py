"""Inception v3 (Szegedy et al., 2015) with torchvision's builder, module names and init.

As ``torchvision.models.inception_v3``: state dicts load either way with
``strict=True``; in training with ``aux_logits`` the model returns
:data:`InceptionOutputs` (the logits and the auxiliary head's), otherwise the logits.
Inputs are 299x299 (75x75 at least; the auxiliary head needs about 299).
``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import inception_v3
    >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
    ...     model = inception_v3(num_classes=10)
    >>> model.eval()(torch.zeros(1, 3, 299, 299, device="meta")).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models.googlenet import BasicConv2d, _build_with_aux, _transform_input
from trivium.vision.models.weights import Weights

__all__ = [
    "Inception3",
    "InceptionA",
    "InceptionAux",
    "InceptionB",
    "InceptionC",
    "InceptionD",
    "InceptionE",
    "InceptionOutputs",
    "inception_v3",
]

InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])
InceptionOutputs.__doc__ = """The training outputs of :class:`Inception3` with ``aux_logits``:
``logits`` and ``aux_logits`` (the head after ``Mixed_6e``), each [N, num_classes]."""
InceptionOutputs.__annotations__ = {"logits": Tensor, "aux_logits": Tensor | None}

ConvBlock = Callable[..., nn.Module]


def _avg_pool(x: Tensor) -> Tensor:
    return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)


class InceptionA(nn.Module):
    """Branches 1x1 (64), 1x1-5x5 (48, 64), 1x1-3x3-3x3 (64, 96, 96) and avg-pool-1x1
    (``pool_features``), concatenated.

    Example:
        >>> import torch
        >>> InceptionA(8, pool_features=4)(torch.zeros(1, 8, 5, 5)).shape
        torch.Size([1, 228, 5, 5])
    """

    def __init__(
        self, in_channels: int, pool_features: int, conv_block: ConvBlock | None = None
    ) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.branch1x1 = conv(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = conv(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = conv(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = conv(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv(96, 96, kernel_size=3, padding=1)
        self.branch_pool = conv(in_channels, pool_features, kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        """The branches' outputs concatenated along the channels.

        Example:
            >>> import torch
            >>> InceptionA(4, pool_features=2)(torch.zeros(1, 4, 3, 3)).shape
            torch.Size([1, 226, 3, 3])
        """
        branch5x5 = self.branch5x5_2(self.branch5x5_1(x))
        branch3x3dbl = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        outputs = [self.branch1x1(x), branch5x5, branch3x3dbl, self.branch_pool(_avg_pool(x))]
        return torch.cat(outputs, 1)


class InceptionB(nn.Module):
    """A grid reduction: a strided 3x3 (384), 1x1-3x3-strided 3x3 (64, 96, 96) and a 3x3
    max pool, concatenated.

    Example:
        >>> import torch
        >>> InceptionB(8)(torch.zeros(1, 8, 7, 7)).shape
        torch.Size([1, 488, 3, 3])
    """

    def __init__(self, in_channels: int, conv_block: ConvBlock | None = None) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.branch3x3 = conv(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = conv(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv(96, 96, kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        """The branches' outputs concatenated along the channels.

        Example:
            >>> import torch
            >>> InceptionB(4)(torch.zeros(1, 4, 5, 5)).shape
            torch.Size([1, 484, 2, 2])
        """
        branch3x3dbl = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
        return torch.cat([self.branch3x3(x), branch3x3dbl, branch_pool], 1)


class InceptionC(nn.Module):
    """Factorised 7x7 branches (1x7 and 7x1 convolutions of ``channels_7x7``), a 1x1 and an
    avg-pool-1x1 branch; 768 channels out.

    Example:
        >>> import torch
        >>> InceptionC(8, channels_7x7=4)(torch.zeros(1, 8, 3, 3)).shape
        torch.Size([1, 768, 3, 3])
    """

    def __init__(
        self, in_channels: int, channels_7x7: int, conv_block: ConvBlock | None = None
    ) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        c7 = channels_7x7
        row, col = (
            {"kernel_size": (1, 7), "padding": (0, 3)},
            {"kernel_size": (7, 1), "padding": (3, 0)},
        )
        self.branch1x1 = conv(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = conv(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = conv(c7, c7, **row)
        self.branch7x7_3 = conv(c7, 192, **col)
        self.branch7x7dbl_1 = conv(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = conv(c7, c7, **col)
        self.branch7x7dbl_3 = conv(c7, c7, **row)
        self.branch7x7dbl_4 = conv(c7, c7, **col)
        self.branch7x7dbl_5 = conv(c7, 192, **row)
        self.branch_pool = conv(in_channels, 192, kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        """The branches' outputs concatenated along the channels.

        Example:
            >>> import torch
            >>> InceptionC(4, channels_7x7=2)(torch.zeros(1, 4, 2, 2)).shape
            torch.Size([1, 768, 2, 2])
        """
        branch7x7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        branch7x7dbl = x
        for conv in (
            self.branch7x7dbl_1,
            self.branch7x7dbl_2,
            self.branch7x7dbl_3,
            self.branch7x7dbl_4,
            self.branch7x7dbl_5,
        ):
            branch7x7dbl = conv(branch7x7dbl)
        outputs = [self.branch1x1(x), branch7x7, branch7x7dbl, self.branch_pool(_avg_pool(x))]
        return torch.cat(outputs, 1)


class InceptionD(nn.Module):
    """A grid reduction: 1x1-strided 3x3 (192, 320), 1x1-1x7-7x1-strided 3x3 (192) and a
    3x3 max pool, concatenated.

    Example:
        >>> import torch
        >>> InceptionD(8)(torch.zeros(1, 8, 7, 7)).shape
        torch.Size([1, 520, 3, 3])
    """

    def __init__(self, in_channels: int, conv_block: ConvBlock | None = None) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.branch3x3_1 = conv(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = conv(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = conv(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = conv(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = conv(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = conv(192, 192, kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        """The branches' outputs concatenated along the channels.

        Example:
            >>> import torch
            >>> InceptionD(4)(torch.zeros(1, 4, 5, 5)).shape
            torch.Size([1, 516, 2, 2])
        """
        branch3x3 = self.branch3x3_2(self.branch3x3_1(x))
        branch7x7x3 = x
        for conv in (
            self.branch7x7x3_1,
            self.branch7x7x3_2,
            self.branch7x7x3_3,
            self.branch7x7x3_4,
        ):
            branch7x7x3 = conv(branch7x7x3)
        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
        return torch.cat([branch3x3, branch7x7x3, branch_pool], 1)


class InceptionE(nn.Module):
    """The last modules: 1x1 (320), 1x1 then parallel 1x3 and 3x1 (384 each), 1x1-3x3 then
    parallel 1x3 and 3x1 (384 each), avg-pool-1x1 (192); 2048 channels out.

    Example:
        >>> import torch
        >>> InceptionE(8)(torch.zeros(1, 8, 3, 3)).shape
        torch.Size([1, 2048, 3, 3])
    """

    def __init__(self, in_channels: int, conv_block: ConvBlock | None = None) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        row, col = (
            {"kernel_size": (1, 3), "padding": (0, 1)},
            {"kernel_size": (3, 1), "padding": (1, 0)},
        )
        self.branch1x1 = conv(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = conv(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = conv(384, 384, **row)
        self.branch3x3_2b = conv(384, 384, **col)
        self.branch3x3dbl_1 = conv(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = conv(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = conv(384, 384, **row)
        self.branch3x3dbl_3b = conv(384, 384, **col)
        self.branch_pool = conv(in_channels, 192, kernel_size=1)

    def forward(self, x: Tensor) -> Tensor:
        """The branches' outputs concatenated along the channels.

        Example:
            >>> import torch
            >>> InceptionE(4)(torch.zeros(1, 4, 2, 2)).shape
            torch.Size([1, 2048, 2, 2])
        """
        branch3x3 = self.branch3x3_1(x)
        branch3x3 = torch.cat([self.branch3x3_2a(branch3x3), self.branch3x3_2b(branch3x3)], 1)
        branch3x3dbl = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        branch3x3dbl = torch.cat(
            [self.branch3x3dbl_3a(branch3x3dbl), self.branch3x3dbl_3b(branch3x3dbl)], 1
        )
        outputs = [self.branch1x1(x), branch3x3, branch3x3dbl, self.branch_pool(_avg_pool(x))]
        return torch.cat(outputs, 1)


class InceptionAux(nn.Module):
    """The auxiliary classifier: 5x5 average pool (stride 3), 1x1 (128) and 5x5 (768)
    convolutions, global average pooling, ``fc``. Its ``conv1`` and ``fc`` carry the
    ``stddev`` of their initialisation (0.01, 0.001), as torchvision's.

    Example:
        >>> import torch
        >>> InceptionAux(8, 3).eval()(torch.zeros(1, 8, 17, 17)).shape
        torch.Size([1, 3])
    """

    def __init__(
        self, in_channels: int, num_classes: int, conv_block: ConvBlock | None = None
    ) -> None:
        super().__init__()
        conv = conv_block or BasicConv2d
        self.conv0 = conv(in_channels, 128, kernel_size=1)
        self.conv1 = conv(128, 768, kernel_size=5)
        self.conv1.stddev = 0.01  # type: ignore[assignment]
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001  # type: ignore[assignment]

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] from the ``Mixed_6e`` features ``x``.

        Example:
            >>> import torch
            >>> InceptionAux(4, 2).eval()(torch.zeros(2, 4, 17, 17)).shape
            torch.Size([2, 2])
        """
        x = self.conv1(self.conv0(F.avg_pool2d(x, kernel_size=5, stride=3)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1))


class Inception3(nn.Module):
    """Inception v3: a convolutional stem (``Conv2d_1a_3x3`` .. ``Conv2d_4a_3x3``),
    ``Mixed_5b`` .. ``Mixed_7c``, global average pooling, dropout and ``fc``; the
    auxiliary classifier ``AuxLogits`` (after ``Mixed_6e``) runs in training.

    Args:
        num_classes: outputs of ``fc`` and the auxiliary classifier.
        aux_logits: build the auxiliary classifier (training returns
            :data:`InceptionOutputs` then).
        transform_input: map inputs normalised with ImageNet's mean and std to the
            [-1, 1] normalisation the original weights were trained with.
        inception_blocks: the classes of the convolution, InceptionA .. E and
            auxiliary blocks (7).
        init_weights: truncated normal convolutions and linear layers (std 0.1, or the
            module's ``stddev``), BatchNorm weights 1 and biases 0; False: PyTorch's
            defaults. None: True (torchvision warns that its default may change).
        dropout: dropout before ``fc``.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = Inception3(num_classes=3).train()
        ...     print([tuple(t.shape) for t in model(torch.zeros(2, 3, 299, 299))])
        [(2, 3), (2, 3)]
    """

    def __init__(
        self,
        num_classes: int = 1000,
        aux_logits: bool = True,
        transform_input: bool = False,
        inception_blocks: list[ConvBlock] | None = None,
        init_weights: bool | None = None,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        if inception_blocks is None:
            inception_blocks = [
                BasicConv2d,
                InceptionA,
                InceptionB,
                InceptionC,
                InceptionD,
                InceptionE,
                InceptionAux,
            ]
        if len(inception_blocks) != 7:
            raise ValueError(
                f"length of inception_blocks should be 7 instead of {len(inception_blocks)}"
            )
        conv, block_a, block_b, block_c, block_d, block_e, block_aux = inception_blocks
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.Conv2d_1a_3x3 = conv(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = conv(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = conv(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = conv(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = block_a(192, pool_features=32)
        self.Mixed_5c = block_a(256, pool_features=64)
        self.Mixed_5d = block_a(288, pool_features=64)
        self.Mixed_6a = block_b(288)
        self.Mixed_6b = block_c(768, channels_7x7=128)
        self.Mixed_6c = block_c(768, channels_7x7=160)
        self.Mixed_6d = block_c(768, channels_7x7=160)
        self.Mixed_6e = block_c(768, channels_7x7=192)
        self.AuxLogits: nn.Module | None = None
        if aux_logits:
            self.AuxLogits = block_aux(768, num_classes)
        self.Mixed_7a = block_d(768)
        self.Mixed_7b = block_e(1280)
        self.Mixed_7c = block_e(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(2048, num_classes)
        if init_weights is None or init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d | nn.Linear):
                    stddev = float(getattr(m, "stddev", 0.1))
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=stddev, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

    def _forward(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
        x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(self.maxpool1(x))))
        for name in ("Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a", "Mixed_6b", "Mixed_6c",
                     "Mixed_6d", "Mixed_6e"):  # fmt: skip
            x = getattr(self, name)(x)
        aux = self.AuxLogits(x) if self.AuxLogits is not None and self.training else None
        x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))
        x = torch.flatten(self.dropout(self.avgpool(x)), 1)
        return self.fc(x), aux

    def forward(self, x: Tensor) -> Tensor | InceptionOutputs:
        """The logits [N, num_classes]; in training with ``aux_logits``,
        :data:`InceptionOutputs` (the logits and the auxiliary head's).

        Example:
            >>> import torch
            >>> model = Inception3(num_classes=2, aux_logits=False, init_weights=False).eval()
            >>> model(torch.zeros(1, 3, 75, 75)).shape
            torch.Size([1, 2])
        """
        if self.transform_input:
            x = _transform_input(x)
        x, aux = self._forward(x)
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x


def inception_v3(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> Inception3:
    """Inception v3 (Szegedy et al., 2015): 27.2 M parameters with the auxiliary classifier.

    Args:
        weights: a local file path (str or os.PathLike) of a state dict saved with
            ``torch.save`` (torchvision's ``.pth`` downloads are such files), or the
            state dict itself; None (default): random initialisation. As with
            torchvision's weights, ``transform_input`` then defaults to True, and the
            auxiliary classifier the weights hold is kept unless ``aux_logits=False``
            (weights without it refuse ``aux_logits=True``, the default, with
            ``ValueError``: pass ``aux_logits=False``). The classifier size follows
            the weights. Nothing is downloaded: a torchvision weights enum or its name
            raises ``ValueError``.
        progress: accepted for torchvision compatibility and ignored (nothing is
            downloaded).
        **kwargs: passed to :class:`Inception3` (``num_classes``, ``aux_logits``, ...).

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only: no memory, no initialisation
        ...     model = inception_v3()
        >>> sum(p.numel() for p in model.parameters())
        27161264
    """
    return _build_with_aux(
        "inception_v3", Inception3, weights, kwargs, aux_modules=("AuxLogits",), aux_default=True
    )
