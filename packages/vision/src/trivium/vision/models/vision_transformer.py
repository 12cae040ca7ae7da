"""Vision Transformer (Dosovitskiy et al., 2020): ViT-B/16, B/32, L/16, L/32, H/14.

Patches embedded by a strided convolution, a class token and learned position
embeddings, pre-norm encoder blocks (``nn.MultiheadAttention`` and a GELU MLP), and
a linear head on the class token. Module names, state-dict keys (the MLP's older
``linear_1`` / ``linear_2`` keys included) and initialisation are torchvision's, so
its state dicts load with ``strict=True``. ``weights=`` takes a local file or a state
dict; the image size follows the weights' position embeddings (torchvision's
384- and 518-pixel checkpoints load as such).

Example:
    >>> import torch
    >>> from trivium.vision.models import VisionTransformer
    >>> vit = VisionTransformer(32, 8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32)
    >>> vit(torch.zeros(1, 3, 32, 32)).shape
    torch.Size([1, 1000])
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import (
    build_classifier,
    init_transformer_mlp,
    with_weights_doc,
)
from trivium.vision.models.weights import Weights, load_weights, override_named_param
from trivium.vision.ops import MLP, Conv2dNormActivation

VIT_BUILDERS = ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14")
__all__ = [
    "VIT_BUILDERS",
    "ConvStemConfig",
    "Encoder",
    "EncoderBlock",
    "MLPBlock",
    "VisionTransformer",
]
__all__ += VIT_BUILDERS

_LAYER_NORM = partial(nn.LayerNorm, eps=1e-6)


class ConvStemConfig(NamedTuple):
    """One convolution of a convolutional stem (Xiao et al., 2021) in place of patchify.

    Example:
        >>> ConvStemConfig(64, 3, 2).norm_layer
        <class 'torch.nn.modules.batchnorm.BatchNorm2d'>
    """

    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Callable[..., nn.Module] = nn.BatchNorm2d
    activation_layer: Callable[..., nn.Module] = nn.ReLU


class MLPBlock(MLP):
    """The encoder's MLP: Linear, GELU, Dropout, Linear, Dropout (Xavier-uniform weights,
    N(0, 1e-6) biases). State dicts saved with the older ``linear_1`` / ``linear_2``
    names load too.

    Example:
        >>> [k for k in MLPBlock(8, 16, 0.0).state_dict()]
        ['0.weight', '0.bias', '3.weight', '3.bias']
    """

    _version = 2

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(
            in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout
        )
        init_transformer_mlp(self)

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Tensor],
        prefix: str,
        local_metadata: dict[str, Any],
        *args: Any,
    ) -> None:
        version = local_metadata.get("version")
        if version is None or version < 2:  # saved before the MLP took the ops.misc layout
            for i in range(2):
                for kind in ("weight", "bias"):
                    old_key = f"{prefix}linear_{i + 1}.{kind}"
                    if old_key in state_dict:
                        state_dict[f"{prefix}{3 * i}.{kind}"] = state_dict.pop(old_key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)


class EncoderBlock(nn.Module):
    """A pre-norm transformer block: ``x + attention(ln_1(x))``, then ``+ mlp(ln_2(.))``.

    Example:
        >>> import torch
        >>> EncoderBlock(2, 8, 16, 0.0, 0.0)(torch.zeros(1, 5, 8)).shape
        torch.Size([1, 5, 8])
    """

    def __init__(
        self,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float,
        attention_dropout: float,
        norm_layer: Callable[..., nn.Module] = _LAYER_NORM,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(
            hidden_dim, num_heads, dropout=attention_dropout, batch_first=True
        )
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: Tensor) -> Tensor:
        """The block's output for tokens ``input`` [N, L, hidden_dim].

        Example:
            >>> import torch
            >>> EncoderBlock(1, 4, 8, 0.0, 0.0)(torch.ones(2, 3, 4)).shape
            torch.Size([2, 3, 4])
        """
        torch._assert(
            input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}"
        )
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Position embeddings (N(0, 0.02)), dropout, ``num_layers`` blocks, a final norm.

    Example:
        >>> import torch
        >>> Encoder(5, 2, 2, 8, 16, 0.0, 0.0)(torch.zeros(1, 5, 8)).shape
        torch.Size([1, 5, 8])
    """

    def __init__(
        self,
        seq_length: int,
        num_layers: int,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float,
        attention_dropout: float,
        norm_layer: Callable[..., nn.Module] = _LAYER_NORM,
    ) -> None:
        super().__init__()
        # As BERT initialises its position embeddings.
        self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(
                num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer
            )
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: Tensor) -> Tensor:
        """Encoded tokens [N, L, hidden_dim].

        Example:
            >>> import torch
            >>> Encoder(3, 1, 1, 4, 8, 0.0, 0.0)(torch.zeros(2, 3, 4)).shape
            torch.Size([2, 3, 4])
        """
        torch._assert(
            input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}"
        )
        input = input + self.pos_embedding
        return self.ln(self.layers(self.dropout(input)))


class VisionTransformer(nn.Module):
    """ViT: patch embedding ``conv_proj``, ``class_token``, ``encoder``, ``heads``.

    Args:
        image_size: the side of the (square) input images; a multiple of ``patch_size``.
        patch_size: the side of a patch.
        num_layers: encoder blocks.
        num_heads: attention heads.
        hidden_dim: token width.
        mlp_dim: hidden width of the MLPs.
        dropout: dropout after attention, in the MLPs and on the embeddings.
        attention_dropout: dropout of the attention weights.
        num_classes: outputs of the head.
        representation_size: if given, a Linear + Tanh "pre-logits" layer of this width
            before the head.
        norm_layer: the norm layer (default LayerNorm with ``eps=1e-6``).
        conv_stem_configs: a convolutional stem (:class:`ConvStemConfig` s) in place of
            the patchify convolution.

    Initialisation is torchvision's (the head starts at zero).

    Example:
        >>> import torch
        >>> vit = VisionTransformer(16, 4, 1, 2, 8, 16, num_classes=3)
        >>> vit(torch.zeros(2, 3, 16, 16)).shape, vit.seq_length
        (torch.Size([2, 3]), 17)
    """

    def __init__(
        self,
        image_size: int,
        patch_size: int,
        num_layers: int,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        num_classes: int = 1000,
        representation_size: int | None = None,
        norm_layer: Callable[..., nn.Module] = _LAYER_NORM,
        conv_stem_configs: list[ConvStemConfig] | None = None,
    ) -> None:
        super().__init__()
        if image_size % patch_size != 0:
            raise ValueError(
                f"image_size={image_size} is not a multiple of patch_size={patch_size}"
            )
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        self.conv_proj = _patch_embedding(patch_size, hidden_dim, conv_stem_configs)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        seq_length = (image_size // patch_size) ** 2 + 1  # the patches and the class token
        self.encoder = Encoder(
            seq_length,
            num_layers,
            num_heads,
            hidden_dim,
            mlp_dim,
            dropout,
            attention_dropout,
            norm_layer,
        )
        self.seq_length = seq_length
        heads: OrderedDict[str, nn.Module] = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)
        self._init_weights()

    def _init_weights(self) -> None:
        if isinstance(self.conv_proj, nn.Conv2d):
            kh, kw = self.conv_proj.kernel_size
            fan_in = self.conv_proj.in_channels * kh * kw
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            if self.conv_proj.bias is not None:
                nn.init.zeros_(self.conv_proj.bias)
        else:
            last = self.conv_proj.conv_last
            nn.init.normal_(last.weight, mean=0.0, std=math.sqrt(2.0 / last.out_channels))
            if last.bias is not None:
                nn.init.zeros_(last.bias)
        pre_logits = getattr(self.heads, "pre_logits", None)
        if isinstance(pre_logits, nn.Linear):
            nn.init.trunc_normal_(pre_logits.weight, std=math.sqrt(1 / pre_logits.in_features))
            nn.init.zeros_(pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x: Tensor) -> Tensor:
        n, _, h, w = x.shape
        p = self.patch_size
        torch._assert(
            h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!"
        )
        torch._assert(
            w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!"
        )
        x = self.conv_proj(x)  # [n, hidden_dim, h / p, w / p]
        x = x.reshape(n, self.hidden_dim, (h // p) * (w // p))
        return x.permute(0, 2, 1)  # tokens [n, patches, hidden_dim]

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, image_size, image_size].

        Example:
            >>> import torch
            >>> VisionTransformer(8, 4, 1, 1, 4, 8, num_classes=2)(torch.zeros(1, 3, 8, 8)).shape
            torch.Size([1, 2])
        """
        x = self._process_input(x)
        class_token = self.class_token.expand(x.shape[0], -1, -1)
        x = self.encoder(torch.cat([class_token, x], dim=1))
        return self.heads(x[:, 0])


def _patch_embedding(
    patch_size: int, hidden_dim: int, conv_stem_configs: list[ConvStemConfig] | None
) -> nn.Module:
    if conv_stem_configs is None:
        return nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
    stem = nn.Sequential()
    channels = 3
    for i, cnf in enumerate(conv_stem_configs):
        stem.add_module(
            f"conv_bn_relu_{i}",
            Conv2dNormActivation(
                in_channels=channels,
                out_channels=cnf.out_channels,
                kernel_size=cnf.kernel_size,
                stride=cnf.stride,
                norm_layer=cnf.norm_layer,
                activation_layer=cnf.activation_layer,
            ),
        )
        channels = cnf.out_channels
    stem.add_module("conv_last", nn.Conv2d(channels, hidden_dim, kernel_size=1))
    return stem


# (patch, layers, heads, hidden, mlp): the paper's Table 1.
_DESIGNS = {
    "vit_b_16": (16, 12, 12, 768, 3072),
    "vit_b_32": (32, 12, 12, 768, 3072),
    "vit_l_16": (16, 24, 16, 1024, 4096),
    "vit_l_32": (32, 24, 16, 1024, 4096),
    "vit_h_14": (14, 32, 16, 1280, 5120),
}


def _vision_transformer(
    name: str, weights: Weights | None, kwargs: dict[str, Any]
) -> VisionTransformer:
    patch, layers, heads, hidden, mlp = _DESIGNS[name]
    if weights is not None:
        weights = load_weights(weights, name)
        pos = weights.get("encoder.pos_embedding")
        if pos is not None and pos.dim() == 3:
            side = math.isqrt(pos.shape[1] - 1)  # the patches per side the weights were trained at
            reason = f"the {name} weights' position embeddings are for {side * patch}-pixel images"
            override_named_param(kwargs, "image_size", side * patch, reason)
    image_size = kwargs.pop("image_size", 224)

    def make(**model_kwargs: Any) -> VisionTransformer:
        return VisionTransformer(image_size, patch, layers, heads, hidden, mlp, **model_kwargs)

    return build_classifier(name, make, weights, kwargs, "heads.head.weight")  # type: ignore[return-value]


@with_weights_doc("VisionTransformer")
def vit_b_16(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> VisionTransformer:
    """ViT-B/16: 12 layers of width 768, 16-pixel patches; 86.6 M parameters.

    ``image_size`` (default 224, or what the weights were trained at) is the input size.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vit_b_16(image_size=448)
        >>> model.seq_length
        785
    """
    return _vision_transformer("vit_b_16", weights, kwargs)


@with_weights_doc("VisionTransformer")
def vit_b_32(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> VisionTransformer:
    """ViT-B/32: 12 layers of width 768, 32-pixel patches; 88.2 M parameters.

    ``image_size`` (default 224, or what the weights were trained at) is the input size.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vit_b_32(image_size=448)
        >>> model.seq_length
        197
    """
    return _vision_transformer("vit_b_32", weights, kwargs)


@with_weights_doc("VisionTransformer")
def vit_l_16(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> VisionTransformer:
    """ViT-L/16: 24 layers of width 1024, 16-pixel patches; 304.3 M parameters.

    ``image_size`` (default 224, or what the weights were trained at) is the input size.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vit_l_16(image_size=448)
        >>> model.seq_length
        785
    """
    return _vision_transformer("vit_l_16", weights, kwargs)


@with_weights_doc("VisionTransformer")
def vit_l_32(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> VisionTransformer:
    """ViT-L/32: 24 layers of width 1024, 32-pixel patches; 306.5 M parameters.

    ``image_size`` (default 224, or what the weights were trained at) is the input size.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vit_l_32(image_size=448)
        >>> model.seq_length
        197
    """
    return _vision_transformer("vit_l_32", weights, kwargs)


@with_weights_doc("VisionTransformer")
def vit_h_14(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> VisionTransformer:
    """ViT-H/14: 32 layers of width 1280, 14-pixel patches; 632.0 M parameters.

    ``image_size`` (default 224, or what the weights were trained at) is the input size.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vit_h_14(image_size=448)
        >>> model.seq_length
        1025
    """
    return _vision_transformer("vit_h_14", weights, kwargs)
