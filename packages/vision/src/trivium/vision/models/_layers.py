"""Building blocks the classification models share, named and keyed as torchvision's ``ops.misc``.

Private to ``trivium.vision.models``: the same pieces are meant to come from
``trivium.vision.ops`` once it has them (``Conv2dNormActivation``,
``SqueezeExcitation``, ``StochasticDepth``, ``MLP``, ``Permute``); the state-dict keys
they give (``0``/``1``/``2`` for convolution, norm, activation; ``fc1``/``fc2`` for
squeeze-and-excitation) are what torchvision's checkpoints use.

Example:
    >>> import torch
    >>> block = Conv2dNormActivation(3, 8, stride=2)
    >>> block(torch.zeros(1, 3, 8, 8)).shape, [k for k in block.state_dict()][:2]
    (torch.Size([1, 8, 4, 4]), ['0.weight', '1.weight'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models.weights import (
    Weights,
    load_weights,
    num_classes_of,
    override_named_param,
)

__all__ = [
    "MLP",
    "Conv2dNormActivation",
    "Permute",
    "SqueezeExcitation",
    "StochasticDepth",
    "build_classifier",
    "make_divisible",
    "stochastic_depth",
]


def make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """``v`` rounded to the nearest multiple of ``divisor``, never below 90% of ``v``.

    The channel rounding of the MobileNet and EfficientNet papers' reference code.

    Example:
        >>> make_divisible(32 * 0.75, 8), make_divisible(10, 8), make_divisible(3, 8)
        (24, 16, 8)
    """
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Conv2dNormActivation(nn.Sequential):
    """Convolution, then an optional norm layer and activation (children ``0``, ``1``, ``2``).

    Padding defaults to ``(kernel_size - 1) // 2 * dilation`` (the size is kept at
    stride 1); the convolution has a bias only without a norm layer, unless ``bias``
    says otherwise. ``activation_layer`` is called with ``inplace=inplace`` (or no
    argument when ``inplace`` is None).

    Example:
        >>> import torch
        >>> Conv2dNormActivation(4, 4, kernel_size=1, activation_layer=None)[0].bias is None
        True
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int] = 3,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, int] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
    ) -> None:
        if padding is None:
            padding = _same_padding(kernel_size, dilation)
        if bias is None:
            bias = norm_layer is None
        layers: list[nn.Module] = [
            nn.Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,  # type: ignore[arg-type]
                dilation=dilation,
                groups=groups,
                bias=bias,
            )
        ]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels


def _same_padding(
    kernel_size: int | tuple[int, int], dilation: int | tuple[int, int]
) -> int | tuple[int, ...]:
    if isinstance(kernel_size, int) and isinstance(dilation, int):
        return (kernel_size - 1) // 2 * dilation
    kernels = (kernel_size,) * 2 if isinstance(kernel_size, int) else tuple(kernel_size)
    dilations = (dilation,) * len(kernels) if isinstance(dilation, int) else tuple(dilation)
    return tuple((k - 1) // 2 * d for k, d in zip(kernels, dilations, strict=True))


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation (Hu et al., 2017): channels scaled by a gate of their means.

    ``x * scale_activation(fc2(activation(fc1(avgpool(x)))))``, with ``fc1`` / ``fc2``
    1x1 convolutions through ``squeeze_channels``.

    Example:
        >>> import torch
        >>> SqueezeExcitation(8, 2)(torch.ones(1, 8, 3, 3)).shape
        torch.Size([1, 8, 3, 3])
    """

    def __init__(
        self,
        input_channels: int,
        squeeze_channels: int,
        activation: Callable[..., nn.Module] = nn.ReLU,
        scale_activation: Callable[..., nn.Module] = nn.Sigmoid,
    ) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, x: Tensor) -> Tensor:
        scale = self.activation(self.fc1(self.avgpool(x)))
        return self.scale_activation(self.fc2(scale))

    def forward(self, input: Tensor) -> Tensor:
        """``input`` [N, C, H, W] with each channel scaled by its gate.

        Example:
            >>> import torch
            >>> SqueezeExcitation(4, 2)(torch.zeros(1, 4, 2, 2)).abs().sum().item()
            0.0
        """
        return self._scale(input) * input


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    """Drops whole residual branches with probability ``p`` in training (Huang et al., 2016).

    ``mode="row"`` drops each sample's branch independently, ``"batch"`` the whole
    batch's at once; kept branches are scaled by ``1 / (1 - p)``. In eval, or with
    ``p=0``, ``input`` is returned as is.

    Example:
        >>> import torch
        >>> stochastic_depth(torch.ones(2, 3), 0.5, "row", training=False).sum().item()
        6.0
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = torch.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    """:func:`stochastic_depth` as a module (active in training mode only).

    Example:
        >>> import torch
        >>> StochasticDepth(0.2, "row").eval()(torch.ones(2, 2)).sum().item()
        4.0
    """

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input: Tensor) -> Tensor:
        """``input``, with branches dropped in training.

        Example:
            >>> import torch
            >>> StochasticDepth(1.0, "batch")(torch.ones(2)).sum().item()
            0.0
        """
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"


class MLP(nn.Sequential):
    """Linear layers of widths ``hidden_channels``, each but the last followed by norm,
    activation and dropout; the last by dropout only.

    Example:
        >>> import torch
        >>> MLP(4, [8, 2], activation_layer=nn.GELU)(torch.zeros(3, 4)).shape
        torch.Size([3, 2])
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: Sequence[int],
        norm_layer: Callable[..., nn.Module] | None = None,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        inplace: bool | None = None,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        params: dict[str, Any] = {} if inplace is None else {"inplace": inplace}
        layers: list[nn.Module] = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            if activation_layer is not None:
                layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


class Permute(nn.Module):
    """``torch.permute`` of its input by ``dims``.

    Example:
        >>> import torch
        >>> Permute([0, 2, 3, 1])(torch.zeros(1, 3, 4, 5)).shape
        torch.Size([1, 4, 5, 3])
    """

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with its dimensions in the order ``dims``.

        Example:
            >>> import torch
            >>> Permute([1, 0])(torch.zeros(2, 3)).shape
            torch.Size([3, 2])
        """
        return torch.permute(x, self.dims)


def build_classifier(
    name: str,
    make: Callable[..., nn.Module],
    weights: Weights | None,
    kwargs: dict[str, Any],
    classifier_key: str,
) -> nn.Module:
    """``make(**kwargs)`` with ``weights`` loaded, as every builder of the families does.

    torchvision's deprecated ``pretrained=True`` is refused (it would download);
    the weights fix ``num_classes`` from ``state[classifier_key]`` (a different
    ``num_classes`` given raises ``ValueError``).

    Example:
        >>> model = build_classifier("demo", nn.Linear, None, {"in_features": 2,
        ...     "out_features": 3}, "weight")
        >>> model.weight.shape
        torch.Size([3, 2])
    """
    if kwargs.pop("pretrained", False):
        raise ValueError(
            f"{name}: pretrained=True (torchvision's deprecated argument) would download "
            "weights; pass weights= a local file path or a state dict instead"
        )
    state = None
    if weights is not None:
        state = load_weights(weights, name)
        classes = num_classes_of(state, classifier_key)
        if classes is not None:
            override_named_param(
                kwargs,
                "num_classes",
                classes,
                f"the {name} weights' classifier has {classes} outputs",
            )
    model = make(**kwargs)
    if state is not None:
        model.load_state_dict(state)
    return model


# How the builders take weights, added to each builder's docstring.
WEIGHTS_DOC = """
    Args:
        weights: a local file path (str or os.PathLike) of a state dict saved with
            ``torch.save`` (torchvision's ``.pth`` downloads are such files), or the
            state dict itself; None (default): random initialisation. Nothing is
            downloaded: a torchvision weights enum or its name raises ``ValueError``,
            a missing file ``FileNotFoundError``. The classifier size follows the
            weights; ``num_classes`` given with weights whose classifier differs raises
            ``ValueError``.
        progress: accepted for torchvision compatibility and ignored (nothing is downloaded).
        **kwargs: passed to the model class ({cls}: ``num_classes``, ``norm_layer``, ...).
"""


def with_weights_doc(cls: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator putting :data:`WEIGHTS_DOC` between a builder's summary and example.

    Example:
        >>> @with_weights_doc("Demo")
        ... def demo():
        ...     '''Demo.
        ...
        ...     Example:
        ...         >>> 1
        ...         1
        ...     '''
        >>> "weights:" in demo.__doc__
        True
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        summary, _, example = (fn.__doc__ or "").partition("\n\n")
        fn.__doc__ = f"{summary}\n{WEIGHTS_DOC.format(cls=cls)}\n{example}"
        return fn

    return decorate
