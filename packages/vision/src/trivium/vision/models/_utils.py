"""What the classification builders share: channel rounding, weights loading, the weights doc.

The layers they are made of (``Conv2dNormActivation``, ``SqueezeExcitation``,
``StochasticDepth``, ``MLP``, ``Permute``) are :mod:`trivium.vision.ops`'.

Example:
    >>> make_divisible(20, 8)
    24
"""

from __future__ import annotations

from collections.abc import Callable
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
    "WEIGHTS_DOC",
    "build_classifier",
    "init_transformer_mlp",
    "make_divisible",
    "relative_position_index",
    "with_weights_doc",
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


def relative_position_index(height: int, width: int) -> Tensor:
    """``[h*w, h*w]``: the row of each pair of window positions' relative offset in a
    ``(2h-1) * (2w-1)`` table of biases (Swin's and MaxViT's attention).

    Example:
        >>> relative_position_index(2, 2).flatten().tolist()[:4]
        [4, 3, 1, 0]
    """
    coords = torch.stack(torch.meshgrid([torch.arange(height), torch.arange(width)], indexing="ij"))
    flat = coords.flatten(1)
    relative = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
    relative[:, :, 0] += height - 1
    relative[:, :, 1] += width - 1
    relative[:, :, 0] *= 2 * width - 1
    return relative.sum(-1)


def init_transformer_mlp(mlp: nn.Module) -> None:
    """The transformers' MLP initialisation (ViT's, Swin's): Xavier-uniform weights,
    N(0, 1e-6) biases of every ``nn.Linear`` in ``mlp``.

    Example:
        >>> mlp = nn.Sequential(nn.Linear(4, 8))
        >>> init_transformer_mlp(mlp)
        >>> float(mlp[0].bias.detach().abs().max()) < 1e-4
        True
    """
    for m in mlp.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.normal_(m.bias, std=1e-6)
