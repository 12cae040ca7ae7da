"""Swin Transformer T/S/B (Liu et al., 2021) and Swin Transformer V2 T/S/B (Liu et al., 2022).

Patch embedding, stages of window-attention blocks (alternate blocks shift the
windows by half a window, with a mask for the tokens the shift wraps around) and
patch merging between stages. V2 puts the norms after attention and MLP, uses
scaled cosine attention and a continuous position bias from a small MLP. Module
names, state-dict keys and initialisation are torchvision's, so its state dicts
load with ``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import swin_t
    >>> swin_t(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models._utils import (
    build_classifier,
    init_transformer_mlp,
    relative_position_index,
    with_weights_doc,
)
from trivium.vision.models.weights import Weights
from trivium.vision.ops import MLP, Permute, StochasticDepth

SWIN_BUILDERS = ("swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b")
__all__ = [
    "SWIN_BUILDERS",
    "PatchMerging",
    "PatchMergingV2",
    "ShiftedWindowAttention",
    "ShiftedWindowAttentionV2",
    "SwinTransformer",
    "SwinTransformerBlock",
    "SwinTransformerBlockV2",
    "shifted_window_attention",
]
__all__ += SWIN_BUILDERS


def _patch_merging_pad(x: Tensor) -> Tensor:
    """[..., H, W, C] -> [..., H/2, W/2, 4C]: each 2x2 neighbourhood's tokens side by side
    (odd sizes padded with zeros)."""
    h, w, _ = x.shape[-3:]
    x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
    parts = [
        x[..., 0::2, 0::2, :],
        x[..., 1::2, 0::2, :],
        x[..., 0::2, 1::2, :],
        x[..., 1::2, 1::2, :],
    ]
    return torch.cat(parts, -1)


torch.fx.wrap("_patch_merging_pad")


class PatchMerging(nn.Module):
    """Halves the resolution and doubles the channels: 2x2 tokens concatenated, LayerNorm,
    Linear ``4C -> 2C``.

    Example:
        >>> import torch
        >>> PatchMerging(8)(torch.zeros(1, 5, 6, 8)).shape
        torch.Size([1, 3, 3, 16])
    """

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm) -> None:
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x: Tensor) -> Tensor:
        """Merged tokens [N, H/2, W/2, 2C] of ``x`` [N, H, W, C].

        Example:
            >>> import torch
            >>> PatchMerging(4)(torch.zeros(2, 4, 4, 4)).shape
            torch.Size([2, 2, 2, 8])
        """
        return self.reduction(self.norm(_patch_merging_pad(x)))


class PatchMergingV2(PatchMerging):
    """V2's patch merging: Linear ``4C -> 2C`` first, then LayerNorm of ``2C``.

    Example:
        >>> import torch
        >>> PatchMergingV2(8)(torch.zeros(1, 4, 4, 8)).shape
        torch.Size([1, 2, 2, 16])
    """

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm) -> None:
        super().__init__(dim, norm_layer)
        self.norm = norm_layer(2 * dim)

    def forward(self, x: Tensor) -> Tensor:
        """Merged tokens [N, H/2, W/2, 2C] of ``x`` [N, H, W, C].

        Example:
            >>> import torch
            >>> PatchMergingV2(4)(torch.zeros(1, 3, 3, 4)).shape
            torch.Size([1, 2, 2, 8])
        """
        return self.norm(self.reduction(_patch_merging_pad(x)))


def _get_relative_position_bias(
    relative_position_bias_table: Tensor, relative_position_index: Tensor, window_size: list[int]
) -> Tensor:
    n = window_size[0] * window_size[1]
    bias = relative_position_bias_table[relative_position_index].view(n, n, -1)
    return bias.permute(2, 0, 1).contiguous().unsqueeze(0)  # [1, heads, n, n]


torch.fx.wrap("_get_relative_position_bias")


def _shift_mask(
    x: Tensor, pad_h: int, pad_w: int, window_size: list[int], shift_size: list[int]
) -> Tensor:
    """[windows, n, n]: -100 between tokens of a shifted window that came from different
    regions of the image (the cyclic shift put them side by side), else 0."""
    regions = x.new_zeros((pad_h, pad_w))
    h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
    w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
    count = 0
    for h in h_slices:
        for w in w_slices:
            regions[h[0] : h[1], w[0] : w[1]] = count
            count += 1
    windows = (pad_h // window_size[0]) * (pad_w // window_size[1])
    regions = regions.view(
        pad_h // window_size[0], window_size[0], pad_w // window_size[1], window_size[1]
    )
    regions = regions.permute(0, 2, 1, 3).reshape(windows, window_size[0] * window_size[1])
    mask = regions.unsqueeze(1) - regions.unsqueeze(2)
    return mask.masked_fill(mask != 0, (-100.0)).masked_fill(mask == 0, 0.0)


def shifted_window_attention(
    input: Tensor,
    qkv_weight: Tensor,
    proj_weight: Tensor,
    relative_position_bias: Tensor,
    window_size: list[int],
    num_heads: int,
    shift_size: list[int],
    attention_dropout: float = 0.0,
    dropout: float = 0.0,
    qkv_bias: Tensor | None = None,
    proj_bias: Tensor | None = None,
    logit_scale: Tensor | None = None,
    training: bool = True,
) -> Tensor:
    """Multi-head self-attention within (shifted) windows of ``input`` [N, H, W, C].

    The input is padded to whole windows, cyclically shifted by ``shift_size``
    (no shift along a side one window covers), attended window by window with
    ``relative_position_bias`` added, and shifted back. With ``logit_scale`` the
    attention is V2's scaled cosine attention (and the key bias is not used).

    Example:
        >>> import torch
        >>> x = torch.randn(1, 4, 4, 8)
        >>> out = shifted_window_attention(x, torch.randn(24, 8), torch.randn(8, 8),
        ...     torch.zeros(1, 2, 4, 4), [2, 2], 2, [1, 1])
        >>> out.shape
        torch.Size([1, 4, 4, 8])
    """
    b, h, w, c = input.shape
    pad_r = (window_size[1] - w % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - h % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_h, pad_w, _ = x.shape
    shift_size = shift_size.copy()
    if window_size[0] >= pad_h:  # one window covers the side: nothing to shift
        shift_size[0] = 0
    if window_size[1] >= pad_w:
        shift_size[1] = 0
    shifted = sum(shift_size) > 0
    if shifted:
        x = torch.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    windows = (pad_h // window_size[0]) * (pad_w // window_size[1])
    x = x.view(
        b, pad_h // window_size[0], window_size[0], pad_w // window_size[1], window_size[1], c
    )
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b * windows, window_size[0] * window_size[1], c)
    if logit_scale is not None and qkv_bias is not None:
        qkv_bias = qkv_bias.clone()
        length = qkv_bias.numel() // 3
        qkv_bias[length : 2 * length].zero_()
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:  # scaled cosine attention
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * torch.clamp(logit_scale, max=math.log(100.0)).exp()
    else:
        attn = (q * (c // num_heads) ** -0.5).matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias
    if shifted:
        mask = _shift_mask(x, pad_h, pad_w, window_size, shift_size)
        attn = attn.view(x.size(0) // windows, windows, num_heads, x.size(1), x.size(1))
        attn = attn + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.size(1), x.size(1))
    attn = F.dropout(F.softmax(attn, dim=-1), p=attention_dropout, training=training)
    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), c)
    x = F.dropout(F.linear(x, proj_weight, proj_bias), p=dropout, training=training)
    x = x.view(
        b, pad_h // window_size[0], pad_w // window_size[1], window_size[0], window_size[1], c
    )
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b, pad_h, pad_w, c)
    if shifted:
        x = torch.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :h, :w, :].contiguous()


torch.fx.wrap("shifted_window_attention")


class ShiftedWindowAttention(nn.Module):
    """Window attention with a learned relative position bias table (Swin V1).

    Example:
        >>> import torch
        >>> attn = ShiftedWindowAttention(8, [2, 2], [1, 1], num_heads=2)
        >>> attn(torch.zeros(1, 4, 4, 8)).shape, attn.relative_position_bias_table.shape
        (torch.Size([1, 4, 4, 8]), torch.Size([9, 2]))
    """

    def __init__(
        self,
        dim: int,
        window_size: list[int],
        shift_size: list[int],
        num_heads: int,
        qkv_bias: bool = True,
        proj_bias: bool = True,
        attention_dropout: float = 0.0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError(
                f"window_size and shift_size must be of length 2, got {window_size}, {shift_size}"
            )
        self.window_size = window_size
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self) -> None:
        """The parameter of one bias per head and relative offset (truncated normal, 0.02).

        Example:
            >>> ShiftedWindowAttention(4, [3, 3], [0, 0], 1).relative_position_bias_table.shape
            torch.Size([25, 1])
        """
        offsets = (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1)
        self.relative_position_bias_table = nn.Parameter(torch.zeros(offsets, self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self) -> None:
        """The buffer mapping each pair of window positions to its relative offset's row.

        Example:
            >>> ShiftedWindowAttention(4, [2, 2], [0, 0], 1).relative_position_index.tolist()[:4]
            [4, 3, 1, 0]
        """
        index = relative_position_index(self.window_size[0], self.window_size[1])
        self.register_buffer("relative_position_index", index.flatten())

    def get_relative_position_bias(self) -> Tensor:
        """The bias [1, heads, n, n] added to the attention logits of every window.

        Example:
            >>> ShiftedWindowAttention(4, [2, 2], [0, 0], 2).get_relative_position_bias().shape
            torch.Size([1, 2, 4, 4])
        """
        return _get_relative_position_bias(
            self.relative_position_bias_table, self.relative_position_index, self.window_size
        )

    def forward(self, x: Tensor) -> Tensor:
        """Attention output [N, H, W, C] for tokens ``x`` [N, H, W, C].

        Example:
            >>> import torch
            >>> ShiftedWindowAttention(4, [2, 2], [0, 0], 1)(torch.zeros(1, 3, 3, 4)).shape
            torch.Size([1, 3, 3, 4])
        """
        return shifted_window_attention(
            x,
            self.qkv.weight,
            self.proj.weight,
            self.get_relative_position_bias(),
            self.window_size,
            self.num_heads,
            shift_size=self.shift_size,
            attention_dropout=self.attention_dropout,
            dropout=self.dropout,
            qkv_bias=self.qkv.bias,
            proj_bias=self.proj.bias,
            logit_scale=self.get_logit_scale(),
            training=self.training,
        )

    def get_logit_scale(self) -> Tensor | None:
        """V2's learned scale of the cosine attention logits; None: V1's dot product.

        Example:
            >>> ShiftedWindowAttention(4, [2, 2], [0, 0], 1).get_logit_scale() is None
            True
        """
        return None


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """V2's window attention: scaled cosine attention (``logit_scale``) and a continuous
    position bias from ``cpb_mlp`` over log-spaced relative coordinates.

    Example:
        >>> import torch
        >>> attn = ShiftedWindowAttentionV2(8, [2, 2], [1, 1], num_heads=2)
        >>> attn(torch.zeros(1, 4, 4, 8)).shape, attn.logit_scale.shape
        (torch.Size([1, 4, 4, 8]), torch.Size([2, 1, 1]))
    """

    def __init__(
        self,
        dim: int,
        window_size: list[int],
        shift_size: list[int],
        num_heads: int,
        qkv_bias: bool = True,
        proj_bias: bool = True,
        attention_dropout: float = 0.0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(
            dim, window_size, shift_size, num_heads, qkv_bias, proj_bias, attention_dropout, dropout
        )
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((num_heads, 1, 1))))
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, 512, bias=True),
            nn.ReLU(inplace=True),
            nn.Linear(512, num_heads, bias=False),
        )
        if qkv_bias:  # the key has no bias in V2
            length = self.qkv.bias.numel() // 3
            self.qkv.bias[length : 2 * length].data.zero_()

    def define_relative_position_bias_table(self) -> None:
        """The buffer of relative coordinates, scaled to [-8, 8] and log-spaced, that
        ``cpb_mlp`` maps to biases.

        Example:
            >>> ShiftedWindowAttentionV2(4, [2, 2], [0, 0], 1).relative_coords_table.shape
            torch.Size([1, 3, 3, 2])
        """
        hs = torch.arange(-(self.window_size[0] - 1), self.window_size[0], dtype=torch.float32)
        ws = torch.arange(-(self.window_size[1] - 1), self.window_size[1], dtype=torch.float32)
        table = torch.stack(torch.meshgrid([hs, ws], indexing="ij"))
        table = table.permute(1, 2, 0).contiguous().unsqueeze(0)  # [1, 2h-1, 2w-1, 2]
        table[:, :, :, 0] /= self.window_size[0] - 1
        table[:, :, :, 1] /= self.window_size[1] - 1
        table *= 8
        table = torch.sign(table) * torch.log2(torch.abs(table) + 1.0) / 3.0
        self.register_buffer("relative_coords_table", table)

    def get_relative_position_bias(self) -> Tensor:
        """The bias [1, heads, n, n], ``16 * sigmoid`` of the MLP's output.

        Example:
            >>> ShiftedWindowAttentionV2(4, [2, 2], [0, 0], 2).get_relative_position_bias().shape
            torch.Size([1, 2, 4, 4])
        """
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads)
        bias = _get_relative_position_bias(table, self.relative_position_index, self.window_size)
        return 16 * torch.sigmoid(bias)

    def get_logit_scale(self) -> Tensor | None:
        """The learned scale of the cosine attention logits (``logit_scale``, per head).

        Example:
            >>> ShiftedWindowAttentionV2(4, [2, 2], [0, 0], 2).get_logit_scale().shape
            torch.Size([2, 1, 1])
        """
        return self.logit_scale


class SwinTransformerBlock(nn.Module):
    """A pre-norm Swin block: ``x + attn(norm1(x))``, then ``+ mlp(norm2(.))``, each
    branch through stochastic depth.

    Example:
        >>> import torch
        >>> SwinTransformerBlock(8, 2, [2, 2], [1, 1])(torch.zeros(1, 4, 4, 8)).shape
        torch.Size([1, 4, 4, 8])
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: list[int],
        shift_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
        attn_layer: Callable[..., nn.Module] = ShiftedWindowAttention,
    ) -> None:
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(
            dim,
            window_size,
            shift_size,
            num_heads,
            attention_dropout=attention_dropout,
            dropout=dropout,
        )
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(
            dim,
            [int(dim * mlp_ratio), dim],
            activation_layer=nn.GELU,
            inplace=None,
            dropout=dropout,
        )
        init_transformer_mlp(self.mlp)

    def forward(self, x: Tensor) -> Tensor:
        """The block's output [N, H, W, C].

        Example:
            >>> import torch
            >>> SwinTransformerBlock(4, 1, [2, 2], [0, 0])(torch.zeros(2, 2, 2, 4)).shape
            torch.Size([2, 2, 2, 4])
        """
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformerBlockV2(SwinTransformerBlock):
    """V2's block: the norms after attention and MLP (``x + norm1(attn(x))``, ...).

    Example:
        >>> import torch
        >>> SwinTransformerBlockV2(8, 2, [2, 2], [1, 1])(torch.zeros(1, 4, 4, 8)).shape
        torch.Size([1, 4, 4, 8])
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: list[int],
        shift_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
        attn_layer: Callable[..., nn.Module] = ShiftedWindowAttentionV2,
    ) -> None:
        super().__init__(
            dim,
            num_heads,
            window_size,
            shift_size,
            mlp_ratio,
            dropout,
            attention_dropout,
            stochastic_depth_prob,
            norm_layer,
            attn_layer,
        )

    def forward(self, x: Tensor) -> Tensor:
        """The block's output [N, H, W, C].

        Example:
            >>> import torch
            >>> SwinTransformerBlockV2(4, 1, [2, 2], [0, 0])(torch.zeros(1, 2, 2, 4)).shape
            torch.Size([1, 2, 2, 4])
        """
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        return x + self.stochastic_depth(self.norm2(self.mlp(x)))


class SwinTransformer(nn.Module):
    """Swin Transformer: patch embedding, stages of blocks with patch merging between them,
    then ``norm``, ``permute``, ``avgpool``, ``flatten`` and ``head``.

    Args:
        patch_size: the patch embedding's kernel and stride ``[h, w]``.
        embed_dim: channels of the first stage (doubled at every merge).
        depths: blocks per stage.
        num_heads: attention heads per stage.
        window_size: the attention window ``[h, w]``.
        mlp_ratio: MLP width over token width.
        dropout: dropout after attention and in the MLPs.
        attention_dropout: dropout of the attention weights.
        stochastic_depth_prob: the drop probability reached by the last block.
        num_classes: outputs of the head.
        norm_layer: the norm layer (default LayerNorm, ``eps=1e-5``).
        block: the block class (default :class:`SwinTransformerBlock`).
        downsample_layer: the merging class (default :class:`PatchMerging`).

    Initialisation is torchvision's (linear weights truncated normal, std 0.02).

    Example:
        >>> import torch
        >>> model = SwinTransformer([4, 4], 16, [1, 1], [1, 2], [2, 2], num_classes=3)
        >>> model(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        patch_size: list[int],
        embed_dim: int,
        depths: list[int],
        num_heads: list[int],
        window_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.1,
        num_classes: int = 1000,
        norm_layer: Callable[..., nn.Module] | None = None,
        block: Callable[..., nn.Module] | None = None,
        downsample_layer: Callable[..., nn.Module] = PatchMerging,
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        block = block or SwinTransformerBlock
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-5)
        patches = (patch_size[0], patch_size[1])
        layers: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(3, embed_dim, kernel_size=patches, stride=patches),
                Permute([0, 2, 3, 1]),  # tokens [N, H, W, C] from here on
                norm_layer(embed_dim),
            )
        ]
        total = sum(depths)
        index = 0
        for i, depth in enumerate(depths):
            dim = embed_dim * 2**i
            stage = []
            for j in range(depth):
                stage.append(
                    block(
                        dim,
                        num_heads[i],
                        window_size=window_size,
                        shift_size=[0 if j % 2 == 0 else w // 2 for w in window_size],
                        mlp_ratio=mlp_ratio,
                        dropout=dropout,
                        attention_dropout=attention_dropout,
                        stochastic_depth_prob=stochastic_depth_prob * float(index) / (total - 1),
                        norm_layer=norm_layer,
                    )
                )
                index += 1
            layers.append(nn.Sequential(*stage))
            if i < len(depths) - 1:
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])  # back to [N, C, H, W]
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> SwinTransformer([4, 4], 8, [2], [1], [2, 2], num_classes=2)(
            ...     torch.zeros(1, 3, 16, 16)).shape
            torch.Size([1, 2])
        """
        x = self.permute(self.norm(self.features(x)))
        return self.head(self.flatten(self.avgpool(x)))


# (embed_dim, depths, heads, window, stochastic depth): the papers' Table 1 (V1) and
# torchvision's V2 recipes (8x8 windows).
_DESIGNS: dict[str, tuple[int, list[int], list[int], list[int], float]] = {
    "swin_t": (96, [2, 2, 6, 2], [3, 6, 12, 24], [7, 7], 0.2),
    "swin_s": (96, [2, 2, 18, 2], [3, 6, 12, 24], [7, 7], 0.3),
    "swin_b": (128, [2, 2, 18, 2], [4, 8, 16, 32], [7, 7], 0.5),
    "swin_v2_t": (96, [2, 2, 6, 2], [3, 6, 12, 24], [8, 8], 0.2),
    "swin_v2_s": (96, [2, 2, 18, 2], [3, 6, 12, 24], [8, 8], 0.3),
    "swin_v2_b": (128, [2, 2, 18, 2], [4, 8, 16, 32], [8, 8], 0.5),
}


def _swin(name: str, weights: Weights | None, kwargs: dict[str, Any]) -> SwinTransformer:
    embed_dim, depths, heads, window, sd_prob = _DESIGNS[name]
    kwargs.setdefault("stochastic_depth_prob", sd_prob)
    if name.startswith("swin_v2"):
        kwargs.setdefault("block", SwinTransformerBlockV2)
        kwargs.setdefault("downsample_layer", PatchMergingV2)
    make = partial(
        SwinTransformer,
        patch_size=[4, 4],
        embed_dim=embed_dim,
        depths=list(depths),
        num_heads=list(heads),
        window_size=list(window),
    )
    return build_classifier(name, make, weights, kwargs, "head.weight")  # type: ignore[return-value]


@with_weights_doc("SwinTransformer")
def swin_t(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Swin-T (Liu et al., 2021): 28.3 M parameters; 7x7 windows.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = swin_t()
        >>> model.head.out_features
        1000
    """
    return _swin("swin_t", weights, kwargs)


@with_weights_doc("SwinTransformer")
def swin_s(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Swin-S (Liu et al., 2021): 49.6 M parameters; 7x7 windows.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = swin_s()
        >>> model.head.out_features
        1000
    """
    return _swin("swin_s", weights, kwargs)


@with_weights_doc("SwinTransformer")
def swin_b(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Swin-B (Liu et al., 2021): 87.8 M parameters; 7x7 windows.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = swin_b()
        >>> model.head.out_features
        1000
    """
    return _swin("swin_b", weights, kwargs)


@with_weights_doc("SwinTransformer")
def swin_v2_t(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Swin-V2-T (Liu et al., 2022): 28.4 M parameters; 8x8 windows.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = swin_v2_t()
        >>> model.head.out_features
        1000
    """
    return _swin("swin_v2_t", weights, kwargs)


@with_weights_doc("SwinTransformer")
def swin_v2_s(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Swin-V2-S (Liu et al., 2022): 49.7 M parameters; 8x8 windows.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = swin_v2_s()
        >>> model.head.out_features
        1000
    """
    return _swin("swin_v2_s", weights, kwargs)


@with_weights_doc("SwinTransformer")
def swin_v2_b(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> SwinTransformer:
    """Swin-V2-B (Liu et al., 2022): 87.9 M parameters; 8x8 windows.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = swin_v2_b()
        >>> model.head.out_features
        1000
    """
    return _swin("swin_v2_b", weights, kwargs)
