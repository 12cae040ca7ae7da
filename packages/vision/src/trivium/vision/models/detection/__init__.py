"""Object detection models with torchvision's builders, module names and state dict keys.

``trivium.vision.models.detection`` is the home of what ``torchvision.models.detection``
holds: :class:`RetinaNet`, :class:`FCOS`, :class:`SSD` (with SSDlite's head) and their
builders, and :class:`GeneralizedRCNNTransform` (the resize-and-normalise step every
detector shares).

Example:
    >>> import torch
    >>> from trivium.vision.models.detection import retinanet_resnet18_fpn
    >>> model = retinanet_resnet18_fpn(num_classes=3, weights_backbone=None).eval()
    >>> out = model([torch.rand(3, 64, 64)])
    >>> sorted(out[0])
    ['boxes', 'labels', 'scores']
"""

from trivium.vision.models.detection.fcos import (
    FCOS,
    FCOSClassificationHead,
    FCOSHead,
    FCOSRegressionHead,
    fcos_resnet50_fpn,
)
from trivium.vision.models.detection.retinanet import (
    RetinaNet,
    RetinaNetClassificationHead,
    RetinaNetHead,
    RetinaNetRegressionHead,
    retinanet_resnet18_fpn,
    retinanet_resnet34_fpn,
    retinanet_resnet50_fpn,
    retinanet_resnet50_fpn_v2,
)
from trivium.vision.models.detection.ssd import (
    SSD,
    SSDClassificationHead,
    SSDFeatureExtractorVGG,
    SSDHead,
    SSDRegressionHead,
    SSDScoringHead,
    ssd300_vgg16,
)
from trivium.vision.models.detection.ssdlite import (
    SSDLiteClassificationHead,
    SSDLiteFeatureExtractorMobileNet,
    SSDLiteHead,
    SSDLiteRegressionHead,
    ssdlite320_mobilenet_v3_large,
)
from trivium.vision.models.detection.transform import GeneralizedRCNNTransform

__all__ = [
    "FCOS",
    "SSD",
    "FCOSClassificationHead",
    "FCOSHead",
    "FCOSRegressionHead",
    "GeneralizedRCNNTransform",
    "RetinaNet",
    "RetinaNetClassificationHead",
    "RetinaNetHead",
    "RetinaNetRegressionHead",
    "SSDClassificationHead",
    "SSDFeatureExtractorVGG",
    "SSDHead",
    "SSDLiteClassificationHead",
    "SSDLiteFeatureExtractorMobileNet",
    "SSDLiteHead",
    "SSDLiteRegressionHead",
    "SSDRegressionHead",
    "SSDScoringHead",
    "fcos_resnet50_fpn",
    "retinanet_resnet18_fpn",
    "retinanet_resnet34_fpn",
    "retinanet_resnet50_fpn",
    "retinanet_resnet50_fpn_v2",
    "ssd300_vgg16",
    "ssdlite320_mobilenet_v3_large",
]
