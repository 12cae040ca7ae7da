"""AlexNet (Krizhevsky et al., 2012) with torchvision's builder, module names and init.

The one-GPU variant of "One weird trick" (Krizhevsky, 2014), as
``torchvision.models.alexnet``: state dicts load either way with ``strict=True``;
``weights=`` takes a local file or a state dict.

Example:
    >>> import torch
    >>> from trivium.vision.models import alexnet
    >>> alexnet(num_classes=10).eval()(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models._utils import build_classifier, with_weights_doc
from trivium.vision.models.weights import Weights

__all__ = ["AlexNet", "alexnet"]


class AlexNet(nn.Module):
    """Five convolutions (``features``), a 6x6 adaptive average pool and three linear layers
    with dropout (``classifier``).

    Args:
        num_classes: outputs of the last linear layer.
        dropout: dropout before each of the first two linear layers.

    Initialisation is PyTorch's default for every layer, as torchvision's.

    Example:
        >>> import torch
        >>> AlexNet(num_classes=3)(torch.zeros(2, 3, 63, 63)).shape
        torch.Size([2, 3])
    """

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        """Class scores [N, num_classes] for images ``x`` [N, 3, H, W] (H, W >= 63).

        Example:
            >>> import torch
            >>> AlexNet(num_classes=2).eval()(torch.zeros(1, 3, 64, 64)).shape
            torch.Size([1, 2])
        """
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


@with_weights_doc("AlexNet")
def alexnet(*, weights: Weights | None = None, progress: bool = True, **kwargs: Any) -> AlexNet:
    """AlexNet, the one-GPU variant of torchvision: 61.1 M parameters.

    Example:
        >>> sum(p.numel() for p in alexnet().parameters())
        61100840
    """
    return build_classifier("alexnet", AlexNet, weights, kwargs, "classifier.6.weight")  # type: ignore[return-value]
