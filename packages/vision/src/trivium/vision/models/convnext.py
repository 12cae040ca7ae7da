"""ConvNeXt tiny/small/base/large (Liu et al., 2022) with torchvision's builders and names.

Stages of 7x7 depthwise blocks (LayerNorm, an inverted MLP with GELU, a learned
layer scale, stochastic depth) between strided 2x2 downsampling convolutions.
Module names, state-dict keys and initialisation are torchvision's, so its state
dicts load with ``strict=True``; ``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import convnext_tiny
    >>> convnext_tiny(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights
from trivium.vision.ops import Conv2dNormActivation, Permute, StochasticDepth

CONVNEXT_BUILDERS = ("convnext_tiny", "convnext_small", "convnext_base", "convnext_large")
__all__ = ["CONVNEXT_BUILDERS", "CNBlock", "CNBlockConfig", "ConvNeXt", "LayerNorm2d"]
__all__ += CONVNEXT_BUILDERS


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an [N, C, H, W] tensor.

    Example:
        >>> import torch
        >>> x = torch.randn(2, 4, 3, 3)
        >>> torch.allclose(LayerNorm2d(4)(x).mean(1), torch.zeros(2, 3, 3), atol=1e-6)
        True
    """

    def forward(self, x: Tensor) -> Tensor:
        """``x`` normalised over its channel dimension.

        Example:
            >>> import torch
            >>> LayerNorm2d(3)(torch.ones(1, 3, 2, 2)).abs().sum().item()
            0.0
        """
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """ConvNeXt's block: depthwise 7x7, LayerNorm, Linear 4x, GELU, Linear, layer scale,
    stochastic depth, plus the input.

    Example:
        >>> import torch
        >>> CNBlock(8, 1e-6, 0.0)(torch.zeros(1, 8, 5, 5)).shape
        torch.Size([1, 8, 5, 5])
    """

    def __init__(
        self,
        dim: int,
        layer_scale: float,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),  # channels last for the norm and the linear layers
            norm_layer(dim),
            nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input: Tensor) -> Tensor:
        """The block's output.

        Example:
            >>> import torch
            >>> x = torch.randn(1, 4, 3, 3)
            >>> torch.allclose(CNBlock(4, 0.0, 0.0)(x), x)  # a zero layer scale: the identity
            True
        """
        result = self.stochastic_depth(self.layer_scale * self.block(input))
        return result + input


class CNBlockConfig:
    """A stage: ``num_layers`` blocks of ``input_channels``, then a downsampling to
    ``out_channels`` (None: the last stage, no downsampling).

    Example:
        >>> CNBlockConfig(96, 192, 3)
        CNBlockConfig(input_channels=96, out_channels=192, num_layers=3)
    """

    def __init__(self, input_channels: int, out_channels: int | None, num_layers: int) -> None:
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(input_channels={self.input_channels}, "
            f"out_channels={self.out_channels}, num_layers={self.num_layers})"
        )


class ConvNeXt(nn.Module):
    """ConvNeXt: a 4x4 patchify stem, the stages with their downsamplings, then the head.

    Args:
        block_setting: the stages (:class:`CNBlockConfig` s).
        stochastic_depth_prob: the drop probability of the last block; block ``i`` of
            ``n`` drops with ``stochastic_depth_prob * i / (n - 1)``.
        layer_scale: the initial layer scale of every block.
        num_classes: outputs of the classifier.
        block: the block class (default :class:`CNBlock`).
        norm_layer: the norm of the stem, downsamplings and head (default
            :class:`LayerNorm2d` with ``eps=1e-6``).
        **kwargs: ignored (as in torchvision).

    Children are torchvision's: ``features``, ``avgpool``, ``classifier`` (norm,
    flatten, linear). Initialisation: convolution and linear weights truncated
    normal (std 0.02), biases 0.

    Example:
        >>> import torch
        >>> setting = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)]
        >>> ConvNeXt(setting, num_classes=3)(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        block_setting: Sequence[CNBlockConfig],
        stochastic_depth_prob: float = 0.0,
        layer_scale: float = 1e-6,
        num_classes: int = 1000,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        if not all(isinstance(s, CNBlockConfig) for s in block_setting):
            raise TypeError("The block_setting should be List[CNBlockConfig]")
        block = block or CNBlock
        norm_layer = norm_layer or partial(LayerNorm2d, eps=1e-6)
        stem = Conv2dNormActivation(
            3,
            block_setting[0].input_channels,
            kernel_size=4,
            stride=4,
            padding=0,
            norm_layer=norm_layer,
            activation_layer=None,
            bias=True,
        )
        layers: list[nn.Module] = [stem]
        total = sum(cnf.num_layers for cnf in block_setting)
        index = 0
        for cnf in block_setting:
            stage = []
            for _ in range(cnf.num_layers):
                p = stochastic_depth_prob * index / (total - 1.0)
                stage.append(block(cnf.input_channels, layer_scale, p))
                index += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(
                    nn.Sequential(
                        norm_layer(cnf.input_channels),
                        nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2),
                    )
                )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        width = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(
            norm_layer(width), nn.Flatten(1), nn.Linear(width, num_classes)
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def _forward_impl(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)))

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> setting = [CNBlockConfig(8, None, 2)]
            >>> ConvNeXt(setting, num_classes=2)(torch.zeros(1, 3, 16, 16)).shape
            torch.Size([1, 2])
        """
        return self._forward_impl(x)


# (channels, blocks) per stage and the default stochastic depth: the paper's Section 3.
_DESIGNS: dict[str, tuple[tuple[int, ...], tuple[int, ...], float]] = {
    "convnext_tiny": ((96, 192, 384, 768), (3, 3, 9, 3), 0.1),
    "convnext_small": ((96, 192, 384, 768), (3, 3, 27, 3), 0.4),
    "convnext_base": ((128, 256, 512, 1024), (3, 3, 27, 3), 0.5),
    "convnext_large": ((192, 384, 768, 1536), (3, 3, 27, 3), 0.5),
}


def _convnext(name: str, weights: Weights | None, kwargs: dict[str, Any]) -> ConvNeXt:
    widths, depths, sd_prob = _DESIGNS[name]
    outs = [*widths[1:], None]
    setting = [CNBlockConfig(w, o, d) for w, o, d in zip(widths, outs, depths, strict=True)]
    kwargs.setdefault("stochastic_depth_prob", sd_prob)
    return build_classifier(  # type: ignore[return-value]
        name, partial(ConvNeXt, setting), weights, kwargs, "classifier.2.weight"
    )


@with_weights_doc("ConvNeXt")
def convnext_tiny(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt-T (Liu et al., 2022): 28.6 M parameters; stochastic depth 0.1.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = convnext_tiny()
        >>> model.classifier[2].out_features
        1000
    """
    return _convnext("convnext_tiny", weights, kwargs)


@with_weights_doc("ConvNeXt")
def convnext_small(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt-S: 50.2 M parameters; stochastic depth 0.4.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = convnext_small()
        >>> model.classifier[2].out_features
        1000
    """
    return _convnext("convnext_small", weights, kwargs)


@with_weights_doc("ConvNeXt")
def convnext_base(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt-B: 88.6 M parameters; stochastic depth 0.5.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = convnext_base()
        >>> model.classifier[2].out_features
        1000
    """
    return _convnext("convnext_base", weights, kwargs)


@with_weights_doc("ConvNeXt")
def convnext_large(
    *, weights: Weights | None = None, progress: bool = True, **kwargs: Any
) -> ConvNeXt:
    """ConvNeXt-L: 197.8 M parameters; stochastic depth 0.5.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = convnext_large()
        >>> model.classifier[2].out_features
        1000
    """
    return _convnext("convnext_large", weights, kwargs)
