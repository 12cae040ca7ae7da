"""MNASNet B1 (Tan et al., 2018) with torchvision's builders, module names and init.

``mnasnet0_5``, ``mnasnet0_75``, ``mnasnet1_0`` and ``mnasnet1_3`` (depth multipliers)
as ``torchvision.models.mnasnet``: state dicts load either way with ``strict=True``,
including version-1 checkpoints (a fixed-width stem; torchvision's ``mnasnet0_5``
ImageNet weights), which rebuild the stem as torchvision does. ``weights=`` takes a
local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import mnasnet0_5
    >>> mnasnet0_5(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

import warnings
from typing import Any

from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights

MNASNET_BUILDERS = ("mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3")
__all__ = ["MNASNET_BUILDERS", "MNASNet"]
__all__ += MNASNET_BUILDERS

# The TensorFlow reference's BatchNorm decay of 0.9997.
_BN_MOMENTUM = 1 - 0.9997


class _InvertedResidual(nn.Module):
    """Expand (1x1), depthwise (``kernel_size``), project (1x1, no activation); a residual
    where the shape is kept."""

    def __init__(
        self,
        in_ch: int,
        out_ch: int,
        kernel_size: int,
        stride: int,
        expansion_factor: int,
        bn_momentum: float = 0.1,
    ) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if kernel_size not in (3, 5):
            raise ValueError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
        mid_ch = in_ch * expansion_factor
        self.apply_residual = in_ch == out_ch and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(in_ch, mid_ch, 1, bias=False),
            nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            nn.Conv2d(
                mid_ch,
                mid_ch,
                kernel_size,
                padding=kernel_size // 2,
                stride=stride,
                groups=mid_ch,
                bias=False,
            ),
            nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_ch, out_ch, 1, bias=False),
            nn.BatchNorm2d(out_ch, momentum=bn_momentum),
        )

    def forward(self, input: Tensor) -> Tensor:
        if self.apply_residual:
            return self.layers(input) + input
        return self.layers(input)


def _stack(
    in_ch: int,
    out_ch: int,
    kernel_size: int,
    stride: int,
    exp_factor: int,
    repeats: int,
    bn_momentum: float,
) -> nn.Sequential:
    if repeats < 1:
        raise ValueError(f"repeats should be >= 1, instead got {repeats}")
    # The first block changes the shape, so it has no residual.
    first = _InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, bn_momentum)
    rest = [
        _InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, bn_momentum)
        for _ in range(1, repeats)
    ]
    return nn.Sequential(first, *rest)


def _round_to_multiple_of(val: float, divisor: int, round_up_bias: float = 0.9) -> int:
    # Rounds up unless val is no more than 10% above the multiple below: (83, 8) -> 80,
    # (84, 8) -> 88.
    if not 0.0 < round_up_bias < 1.0:
        raise ValueError(
            f"round_up_bias should be greater than 0.0 and smaller than 1.0 "
            f"instead of {round_up_bias}"
        )
    new_val = max(divisor, int(val + divisor / 2) // divisor * divisor)
    return new_val if new_val >= round_up_bias * val else new_val + divisor


def _get_depths(alpha: float) -> list[int]:
    depths = [32, 16, 24, 40, 80, 96, 192, 320]
    return [_round_to_multiple_of(depth * alpha, 8) for depth in depths]


# The stacks after the stem: (kernel, stride, expansion, repeats), into depths[2:].
_STACKS = [(3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3), (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1)]


def _stem(width: int, out: int) -> list[nn.Module]:
    return [
        nn.Conv2d(3, width, 3, padding=1, stride=2, bias=False),
        nn.BatchNorm2d(width, momentum=_BN_MOMENTUM),
        nn.ReLU(inplace=True),
        nn.Conv2d(width, width, 3, padding=1, stride=1, groups=width, bias=False),
        nn.BatchNorm2d(width, momentum=_BN_MOMENTUM),
        nn.ReLU(inplace=True),
        nn.Conv2d(width, out, 1, padding=0, stride=1, bias=False),
        nn.BatchNorm2d(out, momentum=_BN_MOMENTUM),
    ]


class MNASNet(nn.Module):
    """MNASNet B1: ``layers`` (a separable stem, six stacks of inverted residuals and a
    1x1 convolution to 1280 channels), global average pooling and ``classifier``.

    Args:
        alpha: the depth multiplier (> 0): channel counts are scaled and rounded to 8.
        num_classes: outputs of the classifier.
        dropout: dropout before the classifier's linear layer.

    Initialisation is torchvision's: Kaiming normal (fan out) convolutions, BatchNorm
    weights 1 and biases 0, the linear layer Kaiming uniform (fan out, sigmoid gain).

    Example:
        >>> import torch
        >>> MNASNet(0.5, num_classes=3)(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 3])
    """

    # Version 2 scales the stem with alpha; version-1 checkpoints have a fixed stem.
    _version = 2

    def __init__(self, alpha: float, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        if alpha <= 0.0:
            raise ValueError(f"alpha should be greater than 0.0 instead of {alpha}")
        self.alpha = alpha
        self.num_classes = num_classes
        depths = _get_depths(alpha)
        layers = _stem(depths[0], depths[1])
        for i, (kernel, stride, expansion, repeats) in enumerate(_STACKS, start=1):
            layers.append(
                _stack(depths[i], depths[i + 1], kernel, stride, expansion, repeats, _BN_MOMENTUM)
            )
        layers += [
            nn.Conv2d(depths[7], 1280, 1, padding=0, stride=1, bias=False),
            nn.BatchNorm2d(1280, momentum=_BN_MOMENTUM),
            nn.ReLU(inplace=True),
        ]
        self.layers = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout, inplace=True), nn.Linear(1280, num_classes)
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_uniform_(m.weight, mode="fan_out", nonlinearity="sigmoid")
                nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W].

        Example:
            >>> import torch
            >>> mnasnet0_5(num_classes=2).eval()(torch.zeros(1, 3, 32, 32)).shape
            torch.Size([1, 2])
        """
        return self.classifier(self.layers(x).mean([2, 3]))

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
        # A state dict without metadata (a plain dict) is taken as the current version;
        # torchvision refuses it.
        version = local_metadata.get("version")
        if version not in (None, 1, 2):
            raise ValueError(f"version should be set to 1 or 2 instead of {version}")
        if version == 1 and self.alpha != 1.0:
            depths = _get_depths(self.alpha)
            v1_stem = [*_stem(32, 16), _stack(16, depths[2], *_STACKS[0], _BN_MOMENTUM)]
            for idx, layer in enumerate(v1_stem):
                self.layers[idx] = layer
            self._version = 1  # the model is now version 1, and is saved as such
            warnings.warn(
                "A new version of MNASNet model has been implemented. "
                "Your checkpoint was saved using the previous version. "
                "This checkpoint will load and work as before, but "
                "you may want to upgrade by training a newer model or "
                "transfer learning from an updated ImageNet checkpoint.",
                UserWarning,
                stacklevel=2,
            )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


def _mnasnet(name: str, alpha: float, weights: Weights | None, kwargs: dict[str, Any]) -> MNASNet:
    def make(**model_kwargs: Any) -> MNASNet:
        return MNASNet(alpha, **model_kwargs)

    return build_classifier(name, make, weights, kwargs, "classifier.1.weight")  # type: ignore[return-value]


@with_weights_doc("MNASNet")
def mnasnet0_5(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 0.5: 2.2 M parameters.

    Example:
        >>> sum(p.numel() for p in mnasnet0_5().parameters())
        2218512
    """
    return _mnasnet("mnasnet0_5", 0.5, weights, kwargs)


@with_weights_doc("MNASNet")
def mnasnet0_75(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 0.75: 3.2 M parameters.

    Example:
        >>> mnasnet0_75().layers[0].out_channels
        24
    """
    return _mnasnet("mnasnet0_75", 0.75, weights, kwargs)


@with_weights_doc("MNASNet")
def mnasnet1_0(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 1.0: 4.4 M parameters.

    Example:
        >>> mnasnet1_0().layers[0].out_channels
        32
    """
    return _mnasnet("mnasnet1_0", 1.0, weights, kwargs)


@with_weights_doc("MNASNet")
def mnasnet1_3(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 1.3: 6.3 M parameters.

    Example:
        >>> mnasnet1_3().layers[0].out_channels
        40
    """
    return _mnasnet("mnasnet1_3", 1.3, weights, kwargs)
