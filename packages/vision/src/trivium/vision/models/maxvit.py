"""MaxViT (Tu et al., 2022): ``maxvit_t`` with torchvision's builder, module names and keys.

Each layer is an MBConv block followed by block (window) attention and grid
attention over fixed-size partitions, each attention with a relative position bias
and an MLP. Module names, state-dict keys and initialisation are torchvision's, so
its state dicts load with ``strict=True``; ``weights=`` takes a local file or a state
dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import maxvit_t
    >>> maxvit_t(num_classes=10).eval()(torch.zeros(1, 3, 224, 224)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models._utils import (
    build_classifier,
    relative_position_index,
    with_weights_doc,
)
from trivium.vision.models.weights import Weights
from trivium.vision.ops import Conv2dNormActivation, SqueezeExcitation, StochasticDepth

__all__ = [
    "MaxVit",
    "MaxVitBlock",
    "MaxVitLayer",
    "PartitionAttentionLayer",
    "RelativePositionalMultiHeadAttention",
    "maxvit_t",
]


def _conv_output_shape(
    size: tuple[int, int], kernel: int, stride: int, pad: int
) -> tuple[int, int]:
    return (
        (size[0] - kernel + 2 * pad) // stride + 1,
        (size[1] - kernel + 2 * pad) // stride + 1,
    )


def _block_input_shapes(input_size: tuple[int, int], n_blocks: int) -> list[tuple[int, int]]:
    """The feature-map size each block works at (after the stem and its own stride)."""
    shapes = []
    size = _conv_output_shape(input_size, 3, 2, 1)
    for _ in range(n_blocks):
        size = _conv_output_shape(size, 3, 2, 1)
        shapes.append(size)
    return shapes


def _linspace(stop: float, n: int) -> list[float]:
    """``numpy.linspace(0, stop, n)`` as floats (the same values, without NumPy)."""
    if n == 1:
        return [0.0]
    step = stop / (n - 1)
    return [i * step for i in range(n - 1)] + [float(stop)]


class MBConv(nn.Module):
    """MaxViT's MBConv: pre-norm, 1x1 expand, depthwise 3x3, SE, 1x1 project, plus a
    projected shortcut (average pooling where strided).

    Example:
        >>> import torch
        >>> block = MBConv(8, 16, 4, 0.25, 2, nn.GELU, nn.BatchNorm2d)
        >>> block(torch.zeros(1, 8, 8, 8)).shape
        torch.Size([1, 16, 4, 4])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        expansion_ratio: float,
        squeeze_ratio: float,
        stride: int,
        activation_layer: Callable[..., nn.Module],
        norm_layer: Callable[..., nn.Module],
        p_stochastic_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.proj: nn.Module
        if stride != 1 or in_channels != out_channels:
            proj: list[nn.Module] = [nn.Conv2d(in_channels, out_channels, 1, stride=1, bias=True)]
            if stride == 2:
                proj = [nn.AvgPool2d(kernel_size=3, stride=stride, padding=1), *proj]
            self.proj = nn.Sequential(*proj)
        else:
            self.proj = nn.Identity()
        mid = int(out_channels * expansion_ratio)
        self.stochastic_depth: nn.Module = (
            StochasticDepth(p_stochastic_dropout, mode="row")
            if p_stochastic_dropout
            else nn.Identity()
        )
        conv = partial(
            Conv2dNormActivation,
            activation_layer=activation_layer,
            norm_layer=norm_layer,
            inplace=None,
        )
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        layers["pre_norm"] = norm_layer(in_channels)
        layers["conv_a"] = conv(in_channels, mid, kernel_size=1, stride=1, padding=0)
        layers["conv_b"] = conv(mid, mid, kernel_size=3, stride=stride, padding=1, groups=mid)
        layers["squeeze_excitation"] = SqueezeExcitation(
            mid, int(out_channels * squeeze_ratio), activation=nn.SiLU
        )
        layers["conv_c"] = nn.Conv2d(mid, out_channels, kernel_size=1, bias=True)
        self.layers = nn.Sequential(layers)

    def forward(self, x: Tensor) -> Tensor:
        """The block's output.

        Example:
            >>> import torch
            >>> MBConv(4, 4, 4, 0.25, 1, nn.GELU, nn.BatchNorm2d)(torch.zeros(1, 4, 4, 4)).shape
            torch.Size([1, 4, 4, 4])
        """
        return self.proj(x) + self.stochastic_depth(self.layers(x))


class RelativePositionalMultiHeadAttention(nn.Module):
    """Multi-head attention within each partition, with a relative position bias table.

    Example:
        >>> import torch
        >>> attn = RelativePositionalMultiHeadAttention(8, 4, 4)
        >>> attn(torch.zeros(1, 3, 4, 8)).shape
        torch.Size([1, 3, 4, 8])
    """

    def __init__(self, feat_dim: int, head_dim: int, max_seq_len: int) -> None:
        super().__init__()
        if feat_dim % head_dim != 0:
            raise ValueError(f"feat_dim: {feat_dim} must be divisible by head_dim: {head_dim}")
        self.n_heads = feat_dim // head_dim
        self.head_dim = head_dim
        self.size = int(math.sqrt(max_seq_len))
        self.max_seq_len = max_seq_len
        self.to_qkv = nn.Linear(feat_dim, self.n_heads * self.head_dim * 3)
        self.scale_factor = feat_dim**-0.5
        self.merge = nn.Linear(self.head_dim * self.n_heads, feat_dim)
        offsets = (2 * self.size - 1) * (2 * self.size - 1)
        self.relative_position_bias_table = nn.Parameter(
            torch.empty((offsets, self.n_heads), dtype=torch.float32)
        )
        self.register_buffer(
            "relative_position_index", relative_position_index(self.size, self.size)
        )
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def get_relative_positional_bias(self) -> Tensor:
        """The bias [1, heads, P, P] added to every partition's attention logits.

        Example:
            >>> RelativePositionalMultiHeadAttention(8, 4, 9).get_relative_positional_bias().shape
            torch.Size([1, 2, 9, 9])
        """
        index = self.relative_position_index.view(-1)
        bias = self.relative_position_bias_table[index].view(self.max_seq_len, self.max_seq_len, -1)
        return bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x: Tensor) -> Tensor:
        """Attention output [B, G, P, D] for partitions ``x`` [B, G, P, D].

        Example:
            >>> import torch
            >>> RelativePositionalMultiHeadAttention(4, 2, 4)(torch.zeros(2, 1, 4, 4)).shape
            torch.Size([2, 1, 4, 4])
        """
        b, g, p, d = x.shape
        heads, head_dim = self.n_heads, self.head_dim
        q, k, v = torch.chunk(self.to_qkv(x), 3, dim=-1)
        q = q.reshape(b, g, p, heads, head_dim).permute(0, 1, 3, 2, 4)
        k = k.reshape(b, g, p, heads, head_dim).permute(0, 1, 3, 2, 4)
        v = v.reshape(b, g, p, heads, head_dim).permute(0, 1, 3, 2, 4)
        k = k * self.scale_factor  # scaled by the feature width, as the reference does
        logits = torch.einsum("B G H I D, B G H J D -> B G H I J", q, k)
        weights = F.softmax(logits + self.get_relative_positional_bias(), dim=-1)
        out = torch.einsum("B G H I J, B G H J D -> B G H I D", weights, v)
        return self.merge(out.permute(0, 1, 3, 2, 4).reshape(b, g, p, d))


class SwapAxes(nn.Module):
    """``torch.swapaxes(x, a, b)``.

    Example:
        >>> import torch
        >>> SwapAxes(-2, -3)(torch.zeros(1, 2, 3, 4)).shape
        torch.Size([1, 3, 2, 4])
    """

    def __init__(self, a: int, b: int) -> None:
        super().__init__()
        self.a = a
        self.b = b

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with axes ``a`` and ``b`` swapped.

        Example:
            >>> import torch
            >>> SwapAxes(0, 1)(torch.zeros(2, 3)).shape
            torch.Size([3, 2])
        """
        return torch.swapaxes(x, self.a, self.b)


class WindowPartition(nn.Module):
    """[B, C, H, W] -> [B, (H/p)(W/p), p*p, C]: non-overlapping p x p windows.

    Example:
        >>> import torch
        >>> WindowPartition()(torch.zeros(1, 3, 4, 6), 2).shape
        torch.Size([1, 6, 4, 3])
    """

    def forward(self, x: Tensor, p: int) -> Tensor:
        """The windows of ``x``.

        Example:
            >>> import torch
            >>> WindowPartition()(torch.zeros(1, 1, 2, 2), 1).shape
            torch.Size([1, 4, 1, 1])
        """
        b, c, h, w = x.shape
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, (h // p) * (w // p), p * p, c)


class WindowDepartition(nn.Module):
    """The inverse of :class:`WindowPartition`.

    Example:
        >>> import torch
        >>> WindowDepartition()(torch.zeros(1, 6, 4, 3), 2, 2, 3).shape
        torch.Size([1, 3, 4, 6])
    """

    def forward(self, x: Tensor, p: int, h_partitions: int, w_partitions: int) -> Tensor:
        """[B, C, H, W] from the windows ``x``.

        Example:
            >>> import torch
            >>> WindowDepartition()(torch.zeros(1, 4, 1, 1), 1, 2, 2).shape
            torch.Size([1, 1, 2, 2])
        """
        b, _, _, c = x.shape
        x = x.reshape(b, h_partitions, w_partitions, p, p, c).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, c, h_partitions * p, w_partitions * p)


class PartitionAttentionLayer(nn.Module):
    """Attention and MLP over partitions: ``"window"`` (local p x p windows) or ``"grid"``
    (a p x p grid spread over the whole map), each branch through stochastic depth.

    Example:
        >>> import torch
        >>> layer = PartitionAttentionLayer(8, 4, 2, "grid", (4, 4), 2, nn.GELU, nn.LayerNorm,
        ...                                 0.0, 0.0, 0.0)
        >>> layer(torch.zeros(1, 8, 4, 4)).shape
        torch.Size([1, 8, 4, 4])
    """

    def __init__(
        self,
        in_channels: int,
        head_dim: int,
        partition_size: int,
        partition_type: str,
        grid_size: tuple[int, int],
        mlp_ratio: int,
        activation_layer: Callable[..., nn.Module],
        norm_layer: Callable[..., nn.Module],
        attention_dropout: float,
        mlp_dropout: float,
        p_stochastic_dropout: float,
    ) -> None:
        super().__init__()
        if partition_type not in ("grid", "window"):
            raise ValueError(
                f"partition_type must be either 'grid' or 'window', got {partition_type!r}"
            )
        self.n_heads = in_channels // head_dim
        self.head_dim = head_dim
        self.n_partitions = grid_size[0] // partition_size
        self.partition_type = partition_type
        self.grid_size = grid_size
        if partition_type == "window":
            self.p, self.g = partition_size, self.n_partitions
        else:
            self.p, self.g = self.n_partitions, partition_size
        self.partition_op = WindowPartition()
        self.departition_op = WindowDepartition()
        grid = partition_type == "grid"
        self.partition_swap = SwapAxes(-2, -3) if grid else nn.Identity()
        self.departition_swap = SwapAxes(-2, -3) if grid else nn.Identity()
        self.attn_layer = nn.Sequential(
            norm_layer(in_channels),
            # partition_size ** 2 tokens either way: the grid's axes are swapped in
            RelativePositionalMultiHeadAttention(in_channels, head_dim, partition_size**2),
            nn.Dropout(attention_dropout),
        )
        self.mlp_layer = nn.Sequential(
            nn.LayerNorm(in_channels),
            nn.Linear(in_channels, in_channels * mlp_ratio),
            activation_layer(),
            nn.Linear(in_channels * mlp_ratio, in_channels),
            nn.Dropout(mlp_dropout),
        )
        self.stochastic_dropout = StochasticDepth(p_stochastic_dropout, mode="row")

    def forward(self, x: Tensor) -> Tensor:
        """The layer's output [B, C, H, W].

        Example:
            >>> import torch
            >>> layer = PartitionAttentionLayer(4, 2, 2, "window", (2, 2), 2, nn.GELU,
            ...                                 nn.LayerNorm, 0.0, 0.0, 0.0)
            >>> layer(torch.zeros(1, 4, 2, 2)).shape
            torch.Size([1, 4, 2, 2])
        """
        gh, gw = self.grid_size[0] // self.p, self.grid_size[1] // self.p
        torch._assert(
            self.grid_size[0] % self.p == 0 and self.grid_size[1] % self.p == 0,
            f"Grid size must be divisible by partition size. Got grid size of {self.grid_size} "
            f"and partition size of {self.p}",
        )
        x = self.partition_swap(self.partition_op(x, self.p))
        x = x + self.stochastic_dropout(self.attn_layer(x))
        x = x + self.stochastic_dropout(self.mlp_layer(x))
        return self.departition_op(self.departition_swap(x), self.p, gh, gw)


class MaxVitLayer(nn.Module):
    """MBConv, window attention, grid attention (``layers.MBconv``,
    ``layers.window_attention``, ``layers.grid_attention``).

    Example:
        >>> import torch
        >>> layer = MaxVitLayer(8, 8, 0.25, 4, 1, nn.BatchNorm2d, nn.GELU, 4, 2, 0.0, 0.0,
        ...                     0.0, 2, (4, 4))
        >>> layer(torch.zeros(1, 8, 4, 4)).shape
        torch.Size([1, 8, 4, 4])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        squeeze_ratio: float,
        expansion_ratio: float,
        stride: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        head_dim: int,
        mlp_ratio: int,
        mlp_dropout: float,
        attention_dropout: float,
        p_stochastic_dropout: float,
        partition_size: int,
        grid_size: tuple[int, int],
    ) -> None:
        super().__init__()
        attention = partial(
            PartitionAttentionLayer,
            in_channels=out_channels,
            head_dim=head_dim,
            partition_size=partition_size,
            grid_size=grid_size,
            mlp_ratio=mlp_ratio,
            activation_layer=activation_layer,
            norm_layer=nn.LayerNorm,
            attention_dropout=attention_dropout,
            mlp_dropout=mlp_dropout,
            p_stochastic_dropout=p_stochastic_dropout,
        )
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        layers["MBconv"] = MBConv(
            in_channels=in_channels,
            out_channels=out_channels,
            expansion_ratio=expansion_ratio,
            squeeze_ratio=squeeze_ratio,
            stride=stride,
            activation_layer=activation_layer,
            norm_layer=norm_layer,
            p_stochastic_dropout=p_stochastic_dropout,
        )
        layers["window_attention"] = attention(partition_type="window")
        layers["grid_attention"] = attention(partition_type="grid")
        self.layers = nn.Sequential(layers)

    def forward(self, x: Tensor) -> Tensor:
        """The layer's output.

        Example:
            >>> import torch
            >>> layer = MaxVitLayer(4, 8, 0.25, 4, 2, nn.BatchNorm2d, nn.GELU, 4, 2, 0.0, 0.0,
            ...                     0.0, 2, (2, 2))
            >>> layer(torch.zeros(1, 4, 4, 4)).shape
            torch.Size([1, 8, 2, 2])
        """
        return self.layers(x)


class MaxVitBlock(nn.Module):
    """A stage: ``n_layers`` :class:`MaxVitLayer` s, the first of stride 2.

    Example:
        >>> block = MaxVitBlock(8, 16, 0.25, 4, nn.BatchNorm2d, nn.GELU, 8, 2, 0.0, 0.0, 2,
        ...                     (8, 8), 2, [0.0, 0.1])
        >>> block.grid_size, len(block.layers)
        ((4, 4), 2)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        squeeze_ratio: float,
        expansion_ratio: float,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        head_dim: int,
        mlp_ratio: int,
        mlp_dropout: float,
        attention_dropout: float,
        partition_size: int,
        input_grid_size: tuple[int, int],
        n_layers: int,
        p_stochastic: list[float],
    ) -> None:
        super().__init__()
        if len(p_stochastic) != n_layers:
            raise ValueError(
                f"p_stochastic must have length n_layers={n_layers}, got {p_stochastic}."
            )
        self.layers = nn.ModuleList()
        self.grid_size = _conv_output_shape(input_grid_size, kernel=3, stride=2, pad=1)
        for idx, p in enumerate(p_stochastic):
            self.layers.append(
                MaxVitLayer(
                    in_channels=in_channels if idx == 0 else out_channels,
                    out_channels=out_channels,
                    squeeze_ratio=squeeze_ratio,
                    expansion_ratio=expansion_ratio,
                    stride=2 if idx == 0 else 1,
                    norm_layer=norm_layer,
                    activation_layer=activation_layer,
                    head_dim=head_dim,
                    mlp_ratio=mlp_ratio,
                    mlp_dropout=mlp_dropout,
                    attention_dropout=attention_dropout,
                    partition_size=partition_size,
                    grid_size=self.grid_size,
                    p_stochastic_dropout=p,
                )
            )

    def forward(self, x: Tensor) -> Tensor:
        """The stage's output.

        Example:
            >>> import torch
            >>> block = MaxVitBlock(4, 8, 0.25, 4, nn.BatchNorm2d, nn.GELU, 4, 2, 0.0, 0.0, 2,
            ...                     (4, 4), 1, [0.0])
            >>> block(torch.zeros(1, 4, 4, 4)).shape
            torch.Size([1, 8, 2, 2])
        """
        for layer in self.layers:
            x = layer(x)
        return x


class MaxVit(nn.Module):
    """MaxViT: a two-convolution stem, the stages (``blocks``), then the classifier
    (pool, flatten, LayerNorm, Linear, Tanh, Linear).

    Args:
        input_size: the input's (height, width); every stage's size must be a multiple
            of ``partition_size`` (``ValueError`` otherwise).
        stem_channels: channels of the stem.
        partition_size: the side of the attention windows and grid.
        block_channels: channels per stage.
        block_layers: layers per stage.
        head_dim: width of an attention head.
        stochastic_depth_prob: the drop probability of the last layer (linear from 0).
        norm_layer: the convolutions' norm (default BatchNorm2d, ``eps=1e-3``,
            ``momentum=0.01``).
        activation_layer: the activation (default GELU).
        squeeze_ratio: SE width over the MBConv output width.
        expansion_ratio: MBConv expansion.
        mlp_ratio: MLP width over the token width.
        mlp_dropout: dropout in the MLPs.
        attention_dropout: dropout after attention.
        num_classes: outputs of the classifier.

    Example:
        >>> import torch
        >>> model = MaxVit((32, 32), 8, 2, [8, 16], [1, 1], 4, 0.0, num_classes=3)
        >>> model(torch.zeros(1, 3, 32, 32)).shape
        torch.Size([1, 3])
    """

    def __init__(
        self,
        input_size: tuple[int, int],
        stem_channels: int,
        partition_size: int,
        block_channels: list[int],
        block_layers: list[int],
        head_dim: int,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module] | None = None,
        activation_layer: Callable[..., nn.Module] = nn.GELU,
        squeeze_ratio: float = 0.25,
        expansion_ratio: float = 4,
        mlp_ratio: int = 4,
        mlp_dropout: float = 0.0,
        attention_dropout: float = 0.0,
        num_classes: int = 1000,
    ) -> None:
        super().__init__()
        # The reference implementation's BatchNorm settings.
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)
        sizes = _block_input_shapes(input_size, len(block_channels))
        for idx, size in enumerate(sizes):
            if size[0] % partition_size != 0 or size[1] % partition_size != 0:
                raise ValueError(
                    f"Input size {size} of block {idx} is not divisible by partition size "
                    f"{partition_size}. Consider changing the partition size or the input size.\n"
                    f"Current configuration yields the following block input sizes: {sizes}."
                )
        self.stem = nn.Sequential(
            Conv2dNormActivation(
                3,
                stem_channels,
                3,
                stride=2,
                norm_layer=norm_layer,
                activation_layer=activation_layer,
                bias=False,
                inplace=None,
            ),
            Conv2dNormActivation(
                stem_channels,
                stem_channels,
                3,
                stride=1,
                norm_layer=None,
                activation_layer=None,
                bias=True,
            ),
        )
        grid = _conv_output_shape(input_size, kernel=3, stride=2, pad=1)
        self.partition_size = partition_size
        self.blocks = nn.ModuleList()
        probs = _linspace(stochastic_depth_prob, sum(block_layers))
        start = 0
        ins = [stem_channels, *block_channels[:-1]]
        for in_ch, out_ch, n in zip(ins, block_channels, block_layers, strict=True):
            self.blocks.append(
                MaxVitBlock(
                    in_channels=in_ch,
                    out_channels=out_ch,
                    squeeze_ratio=squeeze_ratio,
                    expansion_ratio=expansion_ratio,
                    norm_layer=norm_layer,
                    activation_layer=activation_layer,
                    head_dim=head_dim,
                    mlp_ratio=mlp_ratio,
                    mlp_dropout=mlp_dropout,
                    attention_dropout=attention_dropout,
                    partition_size=partition_size,
                    input_grid_size=grid,
                    n_layers=n,
                    p_stochastic=probs[start : start + n],
                )
            )
            grid = self.blocks[-1].grid_size
            start += n
        width = block_channels[-1]
        self.classifier = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.LayerNorm(width),
            nn.Linear(width, width),
            nn.Tanh(),
            nn.Linear(width, num_classes, bias=False),
        )
        self._init_weights()

    def _init_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W] of ``input_size``.

        Example:
            >>> import torch
            >>> MaxVit((16, 16), 4, 1, [8], [1], 4, 0.0, num_classes=2)(
            ...     torch.zeros(1, 3, 16, 16)).shape
            torch.Size([1, 2])
        """
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.classifier(x)


@with_weights_doc("MaxVit")
def maxvit_t(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> MaxVit:
    """MaxViT-T (Tu et al., 2022): 30.9 M parameters; ``input_size`` default (224, 224).

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = maxvit_t()
        >>> [len(block.layers) for block in model.blocks]
        [2, 2, 5, 2]
    """
    input_size = kwargs.pop("input_size", (224, 224))
    kwargs.setdefault("stochastic_depth_prob", 0.2)
    make = partial(
        MaxVit,
        input_size=input_size,
        stem_channels=64,
        partition_size=7,
        block_channels=[64, 128, 256, 512],
        block_layers=[2, 2, 5, 2],
        head_dim=32,
    )
    return build_classifier("maxvit_t", make, weights, kwargs, "classifier.5.weight")  # type: ignore[return-value]
