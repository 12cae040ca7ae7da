"""What the segmentation models share: the backbone-and-heads model and the builders' arguments.

Example:
    >>> import torch
    >>> from torch import nn
    >>> # The backbone returns a dict of feature maps; here the image itself as "out".
    >>> model = _SimpleSegmentationModel(lambda x: {"out": x}, nn.Conv2d(3, 2, 1))
    >>> model(torch.zeros(1, 3, 8, 8))["out"].shape
    torch.Size([1, 2, 8, 8])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

from torch import Tensor, nn
from torch.nn import functional as F

from trivium.vision.models.weights import Weights, load_weights, num_classes_of

__all__: list[str] = []

# Pascal VOC's 20 classes and the background: what torchvision's weights predict.
_DEFAULT_CLASSES = 21


class _SimpleSegmentationModel(nn.Module):
    """``backbone`` (a dict of feature maps), then ``classifier`` on ``"out"`` and the
    optional ``aux_classifier`` on ``"aux"``, each upsampled to the input's size."""

    __constants__: ClassVar[list[str]] = ["aux_classifier"]

    def __init__(
        self,
        backbone: nn.Module | Callable[[Tensor], dict[str, Tensor]],
        classifier: nn.Module,
        aux_classifier: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """``{"out": [N, num_classes, H, W]}`` and, with an aux classifier, ``"aux"`` alike.

        Example:
            >>> import torch
            >>> from torch import nn
            >>> model = _SimpleSegmentationModel(lambda x: {"out": x[..., ::2, ::2]}, nn.Identity())
            >>> model(torch.zeros(1, 3, 6, 6))["out"].shape
            torch.Size([1, 3, 6, 6])
        """
        size = x.shape[-2:]
        features = self.backbone(x)
        result: dict[str, Tensor] = OrderedDict()
        out = self.classifier(features["out"])
        result["out"] = F.interpolate(out, size=size, mode="bilinear", align_corners=False)
        if self.aux_classifier is not None:
            aux = self.aux_classifier(features["aux"])
            result["aux"] = F.interpolate(aux, size=size, mode="bilinear", align_corners=False)
        return result


class _BuildArgs(NamedTuple):
    """A builder's arguments once the whole model's weights have fixed what they fix."""

    state: dict[str, Tensor] | None
    num_classes: int
    aux_loss: bool
    weights_backbone: Weights | None


def _build_args(
    name: str,
    weights: Weights | None,
    num_classes: int | None,
    aux_loss: bool | None,
    weights_backbone: Weights | None,
    kwargs: Mapping[str, Any],
    classifier_key: str,
) -> _BuildArgs:
    """As torchvision's builders: the model's weights replace the backbone's and fix
    ``num_classes`` and ``aux_loss`` (here read from the state dict); 21 classes by default."""
    kwargs = dict(kwargs)
    for legacy in ("pretrained", "pretrained_backbone"):
        if kwargs.pop(legacy, False):
            raise ValueError(
                f"{name}: {legacy}=True (torchvision's deprecated argument) would download "
                "weights; pass weights= / weights_backbone= a local file path or a state dict"
            )
    if kwargs:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
    state = None
    if weights is not None:
        state = load_weights(weights, name)
        weights_backbone = None
        classes = num_classes_of(state, classifier_key)
        if classes is not None:
            num_classes = _fixed("num_classes", num_classes, classes, name)
        has_aux = any(key.startswith("aux_classifier.") for key in state)
        aux_loss = _fixed("aux_loss", aux_loss, has_aux, name)
    if num_classes is None:
        num_classes = _DEFAULT_CLASSES
    return _BuildArgs(state, num_classes, bool(aux_loss), weights_backbone)


def _mobilenet_v3_stages(features: nn.Sequential) -> tuple[int, int]:
    """The indices in a MobileNetV3's ``features`` of C2 (output stride 8) and C5 (the last).

    The stages end before each strided block (``_is_cn``); the stem and the last
    layer are always stage ends.
    """
    ends = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)]
    ends.append(len(features) - 1)
    return ends[-4], ends[-1]


def _fixed(param: str, given: Any, expected: Any, name: str) -> Any:
    if given is not None and given != expected:
        raise ValueError(f"{param}={given!r} was given, but the {name} weights have {expected!r}")
    return expected


def _loaded(model: nn.Module, state: dict[str, Tensor] | None) -> nn.Module:
    if state is not None:
        model.load_state_dict(state)
    return model


# How the builders take their arguments, added to each builder's docstring.
_BUILDER_DOC = """
    Args:
        weights: the whole model's weights: a local file path (str or os.PathLike) of
            a state dict saved with ``torch.save`` (torchvision's ``.pth`` downloads are
            such files), or the state dict itself; None (default): random
            initialisation. Nothing is downloaded: a torchvision weights enum or its
            name raises ``ValueError``. The weights fix ``num_classes``{aux_fixed};
            other values given with them raise ``ValueError``.
        progress: accepted for torchvision compatibility and ignored (nothing is
            downloaded).
        num_classes: classes including the background (default 21, Pascal VOC's).
        {aux_doc}weights_backbone: the backbone's ImageNet weights (a local path or a state
            dict), ignored when ``weights`` is given. Default None, where torchvision's
            default downloads them.
        **kwargs: none are taken (torchvision ignores them; here they raise ``TypeError``).
"""

_AUX_DOC = """aux_loss: add the auxiliary classifier (``"aux"`` in the output), for the
            auxiliary loss of training. Default: no auxiliary classifier.
        """


def _with_builder_doc(aux: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        summary, _, example = (fn.__doc__ or "").partition("\n\n")
        doc = _BUILDER_DOC.format(
            aux_doc=_AUX_DOC if aux else "",
            aux_fixed=" and ``aux_loss`` (whether they hold ``aux_classifier``)" if aux else "",
        )
        fn.__doc__ = f"{summary}\n{doc}\n{example}"
        return fn

    return decorate
