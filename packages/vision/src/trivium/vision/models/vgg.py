"""VGG (Simonyan and Zisserman, 2014) with torchvision's constructor, module names and init.

Stacks of 3x3 convolutions (with BatchNorm in the ``_bn`` variants) and max pooling,
then three fully connected layers. State dicts load to and from
``torchvision.models.vgg11`` .. ``vgg19_bn`` with ``strict=True``; ``weights=`` takes a
local file or a state dict (nothing is downloaded). :func:`vgg16`'s ``features`` is
the backbone of :func:`~trivium.vision.models.detection.ssd300_vgg16`.

Example:
    >>> import torch
    >>> with torch.device("meta"):
    ...     model = vgg11(num_classes=10)
    >>> model(torch.zeros(1, 3, 32, 32, device="meta")).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights

__all__ = [
    "VGG",
    "VGG_BUILDERS",
    "make_layers",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
]

# Configurations A, B, D, E of the paper's Table 1: channels, "M" a 2x2 max pool.
_CFGS: dict[str, list[str | int]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [
        *(64, 64, "M", 128, 128, "M"),
        *(256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"),
    ],
}

VGG_BUILDERS = (
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
)


class VGG(nn.Module):
    """VGG: ``features``, a 7x7 adaptive average pool and a three-layer ``classifier``.

    Args:
        features: the convolutional layers (see :func:`make_layers`), 512 channels out.
        num_classes: outputs of the last layer.
        init_weights: initialise as torchvision does (Kaiming normal convolutions,
            N(0, 0.01) linear layers); False leaves PyTorch's default init.
        dropout: dropout probability before each of the first two linear layers' outputs.

    Example:
        >>> import torch
        >>> model = VGG(make_layers([8, "M", 512, "M"]), num_classes=3).eval()
        >>> model(torch.zeros(2, 3, 16, 16)).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        features: nn.Module,
        num_classes: int = 1000,
        init_weights: bool = True,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits ``[N, num_classes]`` of images ``x`` ``[N, 3, H, W]``.

        Example:
            >>> import torch
            >>> VGG(make_layers([512, "M"]), num_classes=2)(torch.zeros(1, 3, 8, 8)).shape
            torch.Size([1, 2])
        """
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def make_layers(cfg: list[str | int], batch_norm: bool = False) -> nn.Sequential:
    """VGG's ``features``: a 3x3 conv (+ BatchNorm) + ReLU per number, a 2x2 max pool per "M".

    Args:
        cfg: output channels of each convolution, ``"M"`` for a max pool.
        batch_norm: put a BatchNorm2d after each convolution.

    Example:
        >>> [type(m).__name__ for m in make_layers([8, "M"], batch_norm=True)]
        ['Conv2d', 'BatchNorm2d', 'ReLU', 'MaxPool2d']
    """
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        if not isinstance(v, int):
            raise ValueError(f"cfg entries must be channel counts or 'M', got {v!r}")
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


def _vgg(name: str, cfg: str, batch_norm: bool, weights: Weights | None, kwargs: dict) -> VGG:
    if weights is not None:
        kwargs.setdefault("init_weights", False)  # the weights replace every value

    def make(**options: Any) -> VGG:
        return VGG(make_layers(_CFGS[cfg], batch_norm=batch_norm), **options)

    return build_classifier(name, make, weights, kwargs, "classifier.6.weight")


@with_weights_doc("VGG")
def vgg11(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 (configuration A): 133 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vgg11()
        >>> len([m for m in model.features if m.__class__.__name__ == "Conv2d"])
        8
    """
    return _vgg("vgg11", "A", False, weights, kwargs)


@with_weights_doc("VGG")
def vgg11_bn(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 with BatchNorm.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vgg11_bn()
        >>> type(model.features[1]).__name__
        'BatchNorm2d'
    """
    return _vgg("vgg11_bn", "A", True, weights, kwargs)


@with_weights_doc("VGG")
def vgg13(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 (configuration B).

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vgg13()
        >>> len([m for m in model.features if m.__class__.__name__ == "Conv2d"])
        10
    """
    return _vgg("vgg13", "B", False, weights, kwargs)


@with_weights_doc("VGG")
def vgg13_bn(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 with BatchNorm.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vgg13_bn()
        >>> len(model.features)
        35
    """
    return _vgg("vgg13_bn", "B", True, weights, kwargs)


@with_weights_doc("VGG")
def vgg16(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 (configuration D): 138 M parameters.

    Example:
        >>> import torch
        >>> with torch.device("meta"):  # the structure only, without the cost of an init
        ...     model = vgg16(num_classes=4)
        >>> model.classifier[6].weight.shape
        torch.Size([4, 4096])
    """
    return _vgg("vgg16", "D", False, weights, kwargs)


@with_weights_doc("VGG")
def vgg16_bn(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 with BatchNorm.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vgg16_bn()
        >>> len(model.features)
        44
    """
    return _vgg("vgg16_bn", "D", True, weights, kwargs)


@with_weights_doc("VGG")
def vgg19(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 (configuration E).

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vgg19()
        >>> len([m for m in model.features if m.__class__.__name__ == "Conv2d"])
        16
    """
    return _vgg("vgg19", "E", False, weights, kwargs)


@with_weights_doc("VGG")
def vgg19_bn(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 with BatchNorm.

    Example:
        >>> import torch
        >>> with torch.device("meta"):
        ...     model = vgg19_bn()
        >>> len(model.features)
        53
    """
    return _vgg("vgg19_bn", "E", True, weights, kwargs)
