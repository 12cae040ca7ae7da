"""Small layers the models share, named as in ``torchvision.ops.misc``.

Module names and state-dict keys are torchvision's, so a torchvision layer's
``state_dict()`` loads into its counterpart here with ``strict=True``.

Example:
    >>> import torch
    >>> FrozenBatchNorm2d(3)(torch.ones(1, 3, 2, 2)).shape
    torch.Size([1, 3, 2, 2])
    >>> Conv2dNormActivation(3, 8)(torch.ones(1, 3, 4, 4)).shape
    torch.Size([1, 8, 4, 4])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

__all__ = [
    "MLP",
    "Conv2dNormActivation",
    "Conv3dNormActivation",
    "ConvNormActivation",
    "FrozenBatchNorm2d",
    "Permute",
    "SqueezeExcitation",
]


class UpgradesStateDict(nn.Module):
    """A module that rewrites older state dicts (by their saved ``version``) before loading.

    A subclass overrides :meth:`upgrade_state_dict`; ``version`` is the one the
    state dict was saved with (None: saved before versions were recorded).

    Example:
        >>> import torch
        >>> class Renamed(UpgradesStateDict):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.register_buffer("new", torch.zeros(1))
        ...     def upgrade_state_dict(self, state_dict, prefix, version):
        ...         if prefix + "old" in state_dict:
        ...             state_dict[prefix + "new"] = state_dict.pop(prefix + "old")
        >>> Renamed().load_state_dict({"old": torch.ones(1)})
        <All keys matched successfully>
    """

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        """Rewrite ``state_dict``'s keys under ``prefix`` in place (default: nothing)."""

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        self.upgrade_state_dict(state_dict, prefix, local_metadata.get("version"))
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class FrozenBatchNorm2d(UpgradesStateDict):
    """BatchNorm2d whose statistics and affine parameters are fixed buffers, as torchvision's.

    ``y = (x - running_mean) / sqrt(running_var + eps) * weight + bias`` per channel,
    in training mode too: nothing is learnt or updated. Detection backbones use it
    in place of ``nn.BatchNorm2d`` (``resnet50(norm_layer=FrozenBatchNorm2d)``), since
    their small batches give poor statistics. The buffers are ``weight``, ``bias``,
    ``running_mean`` and ``running_var``; ``eps`` is a plain attribute, as in
    torchvision, so state dicts load either way. Loading a ``BatchNorm2d`` state
    dict drops its ``num_batches_tracked``.

    Example:
        >>> import torch
        >>> bn = torch.nn.BatchNorm2d(2).eval()
        >>> frozen = FrozenBatchNorm2d(2)
        >>> frozen.load_state_dict(bn.state_dict())
        <All keys matched successfully>
        >>> x = torch.randn(1, 2, 3, 3)
        >>> torch.allclose(frozen(x), bn(x), atol=1e-6)
        True
    """

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        """Drop a ``BatchNorm2d`` state dict's ``num_batches_tracked``."""
        state_dict.pop(prefix + "num_batches_tracked", None)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` [N, C, H, W] with the frozen statistics.

        Example:
            >>> import torch
            >>> FrozenBatchNorm2d(1, eps=0.0)(torch.full((1, 1, 1, 1), 2.0)).item()
            2.0
        """
        # The same arithmetic as torchvision, in the same order, for equal outputs.
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


def _ntuple(x: Any, n: int) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, Sequence) else (x,) * n


def _same_padding(
    kernel_size: int | Sequence[int], dilation: int | Sequence[int]
) -> int | tuple[int, ...]:
    """torchvision's default padding: ``(kernel_size - 1) // 2 * dilation`` per axis."""
    if isinstance(kernel_size, int) and isinstance(dilation, int):
        return (kernel_size - 1) // 2 * dilation
    dims = len(kernel_size) if isinstance(kernel_size, Sequence) else len(dilation)
    k, d = _ntuple(kernel_size, dims), _ntuple(dilation, dims)
    return tuple((k[i] - 1) // 2 * d[i] for i in range(dims))


class ConvNormActivation(nn.Sequential):
    """Convolution, then a norm layer, then an activation: modules ``0``, ``1``, ``2``.

    The base of :class:`Conv2dNormActivation` and :class:`Conv3dNormActivation`
    (use those; as in torchvision this one warns when built directly).

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the convolution's kernel size.
        stride: the convolution's stride.
        padding: the convolution's padding; None: ``(kernel_size - 1) // 2 * dilation``.
        groups: the convolution's groups.
        norm_layer: called with ``out_channels``; None: no norm layer.
        activation_layer: called with ``inplace=inplace``; None: no activation.
        dilation: the convolution's dilation.
        inplace: the activation's ``inplace`` argument (None: not passed).
        bias: the convolution's bias; None: a bias only without a norm layer.
        conv_layer: the convolution class.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     print(len(ConvNormActivation(3, 4)))
        3
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...] = 3,
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, ...] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
        conv_layer: Callable[..., nn.Module] = nn.Conv2d,
    ) -> None:
        if padding is None:
            padding = _same_padding(kernel_size, dilation)
        if bias is None:
            bias = norm_layer is None
        layers = [
            conv_layer(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation=dilation,
                groups=groups,
                bias=bias,
            )
        ]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            params = {} if inplace is None else {"inplace": inplace}
            layers.append(activation_layer(**params))
        super().__init__(*layers)
        self.out_channels = out_channels
        if self.__class__ == ConvNormActivation:
            warnings.warn(
                "Don't use ConvNormActivation directly, please use Conv2dNormActivation and "
                "Conv3dNormActivation instead.",
                stacklevel=2,
            )


class Conv2dNormActivation(ConvNormActivation):
    """``Conv2d`` -> norm (``BatchNorm2d``) -> activation (``ReLU``), as torchvision's.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel size (3).
        stride: the stride (1).
        padding: the padding; None: ``(kernel_size - 1) // 2 * dilation`` ("same" at stride 1).
        groups: the convolution's groups.
        norm_layer: called with ``out_channels``; None: no norm layer.
        activation_layer: called with ``inplace=inplace``; None: no activation.
        dilation: the dilation.
        inplace: the activation's ``inplace`` argument (None: not passed).
        bias: the convolution's bias; None: a bias only without a norm layer.

    Example:
        >>> import torch
        >>> block = Conv2dNormActivation(3, 16, stride=2, activation_layer=torch.nn.SiLU)
        >>> block(torch.ones(1, 3, 8, 8)).shape
        torch.Size([1, 16, 4, 4])
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
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            groups,
            norm_layer,
            activation_layer,
            dilation,
            inplace,
            bias,
            nn.Conv2d,
        )


class Conv3dNormActivation(ConvNormActivation):
    """``Conv3d`` -> norm (``BatchNorm3d``) -> activation (``ReLU``), as torchvision's.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel size (3).
        stride: the stride (1).
        padding: the padding; None: ``(kernel_size - 1) // 2 * dilation``.
        groups: the convolution's groups.
        norm_layer: called with ``out_channels``; None: no norm layer.
        activation_layer: called with ``inplace=inplace``; None: no activation.
        dilation: the dilation.
        inplace: the activation's ``inplace`` argument (None: not passed).
        bias: the convolution's bias; None: a bias only without a norm layer.

    Example:
        >>> import torch
        >>> Conv3dNormActivation(3, 4, kernel_size=(1, 3, 3))(torch.ones(1, 3, 2, 5, 5)).shape
        torch.Size([1, 4, 2, 5, 5])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int, int] = 3,
        stride: int | tuple[int, int, int] = 1,
        padding: int | tuple[int, int, int] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm3d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, int, int] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            groups,
            norm_layer,
            activation_layer,
            dilation,
            inplace,
            bias,
            nn.Conv3d,
        )


class SqueezeExcitation(nn.Module):
    """Squeeze-and-Excitation (Hu et al.), as torchvision's: the input scaled per channel.

    ``scale = scale_activation(fc2(activation(fc1(avgpool(x)))))``, ``fc1`` / ``fc2``
    1x1 convolutions through ``squeeze_channels``.

    Args:
        input_channels: the input's channels.
        squeeze_channels: the bottleneck's channels.
        activation: ``delta`` of eq. 3 (``ReLU``).
        scale_activation: ``sigma`` of eq. 3 (``Sigmoid``).

    Example:
        >>> import torch
        >>> SqueezeExcitation(8, 2)(torch.ones(1, 8, 4, 4)).shape
        torch.Size([1, 8, 4, 4])
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

    def _scale(self, input: Tensor) -> Tensor:
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` [N, C, H, W] scaled by its per-channel excitation."""
        return self._scale(input) * input


class MLP(nn.Sequential):
    """A multi-layer perceptron, as torchvision's: Linear [-> norm] -> activation -> Dropout
    per hidden layer, then Linear -> Dropout.

    Args:
        in_channels: the input features.
        hidden_channels: the width of each layer; the last is the output's.
        norm_layer: called with each hidden width; None: no norm layer.
        activation_layer: the activation (``ReLU``).
        inplace: the activation's and dropout's ``inplace`` (None: their defaults).
        bias: the linear layers' bias.
        dropout: the dropout probability.

    Example:
        >>> import torch
        >>> MLP(4, [8, 2])(torch.ones(3, 4)).shape
        torch.Size([3, 2])
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: list[int],
        norm_layer: Callable[..., nn.Module] | None = None,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        inplace: bool | None = None,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        if not hidden_channels:
            raise ValueError("hidden_channels must name at least one layer, got []")
        params = {} if inplace is None else {"inplace": inplace}
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
    """The input with its dimensions permuted to ``dims`` (a view), as torchvision's.

    Args:
        dims: the new order of the dimensions.

    Example:
        >>> import torch
        >>> Permute([0, 2, 3, 1])(torch.ones(1, 3, 4, 5)).shape
        torch.Size([1, 4, 5, 3])
    """

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        """``x`` permuted."""
        return torch.permute(x, self.dims)
