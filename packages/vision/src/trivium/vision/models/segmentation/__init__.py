"""Semantic segmentation models with torchvision's builders, module names and state dict keys.

``trivium.vision.models.segmentation`` is the home of what
``torchvision.models.segmentation`` holds: :class:`FCN` (``fcn_resnet50``,
``fcn_resnet101``), :class:`DeepLabV3` (``deeplabv3_resnet50``,
``deeplabv3_resnet101``, ``deeplabv3_mobilenet_v3_large``) and :class:`LRASPP`
(``lraspp_mobilenet_v3_large``), on dilated backbones. A model returns
``{"out": scores}`` (and ``"aux"`` with ``aux_loss=True``), [N, num_classes, H, W] at
the input's size. State dicts load to and from torchvision's with ``strict=True``;
``weights=`` / ``weights_backbone=`` take a local file or a state dict (nothing is
downloaded).

Example:
    >>> import torch
    >>> from trivium.vision.models.segmentation import lraspp_mobilenet_v3_large
    >>> model = lraspp_mobilenet_v3_large(num_classes=3).eval()
    >>> model(torch.zeros(1, 3, 32, 32))["out"].argmax(1).shape  # a class per pixel
    torch.Size([1, 32, 32])
"""

from trivium.vision.models.segmentation.deeplabv3 import (
    DeepLabV3,
    deeplabv3_mobilenet_v3_large,
    deeplabv3_resnet50,
    deeplabv3_resnet101,
)
from trivium.vision.models.segmentation.fcn import FCN, fcn_resnet50, fcn_resnet101
from trivium.vision.models.segmentation.lraspp import LRASPP, lraspp_mobilenet_v3_large

__all__ = [
    "FCN",
    "LRASPP",
    "DeepLabV3",
    "deeplabv3_mobilenet_v3_large",
    "deeplabv3_resnet50",
    "deeplabv3_resnet101",
    "fcn_resnet50",
    "fcn_resnet101",
    "lraspp_mobilenet_v3_large",
]
