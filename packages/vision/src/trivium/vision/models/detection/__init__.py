"""Object detection models with torchvision's builders, module names and state dict keys.

``trivium.vision.models.detection`` is the home of what ``torchvision.models.detection``
holds: the one-stage :class:`RetinaNet`, :class:`FCOS` and :class:`SSD` (with SSDlite's
head), the two-stage detectors on :class:`GeneralizedRCNN` (:class:`FasterRCNN` with
its :class:`RegionProposalNetwork` and :class:`RoIHeads`, :class:`MaskRCNN`,
:class:`KeypointRCNN`), their builders, and :class:`GeneralizedRCNNTransform` (the
resize-and-normalise step every detector shares).

Example:
    >>> import torch
    >>> from trivium.vision.models.detection import retinanet_resnet18_fpn
    >>> model = retinanet_resnet18_fpn(num_classes=3, weights_backbone=None).eval()
    >>> out = model([torch.rand(3, 64, 64)])
    >>> sorted(out[0])
    ['boxes', 'labels', 'scores']
"""

from trivium.vision.models.detection.faster_rcnn import (
    FasterRCNN,
    FastRCNNConvFCHead,
    FastRCNNPredictor,
    TwoMLPHead,
    fasterrcnn_mobilenet_v3_large_320_fpn,
    fasterrcnn_mobilenet_v3_large_fpn,
    fasterrcnn_resnet50_fpn,
    fasterrcnn_resnet50_fpn_v2,
)
from trivium.vision.models.detection.fcos import (
    FCOS,
    FCOSClassificationHead,
    FCOSHead,
    FCOSRegressionHead,
    fcos_resnet50_fpn,
)
from trivium.vision.models.detection.generalized_rcnn import GeneralizedRCNN
from trivium.vision.models.detection.keypoint_rcnn import (
    KeypointRCNN,
    KeypointRCNNHeads,
    KeypointRCNNPredictor,
    keypointrcnn_resnet50_fpn,
)
from trivium.vision.models.detection.mask_rcnn import (
    MaskRCNN,
    MaskRCNNHeads,
    MaskRCNNPredictor,
    maskrcnn_resnet50_fpn,
    maskrcnn_resnet50_fpn_v2,
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
from trivium.vision.models.detection.roi_heads import (
    RoIHeads,
    heatmaps_to_keypoints,
    paste_masks_in_image,
)
from trivium.vision.models.detection.rpn import RegionProposalNetwork, RPNHead
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
    "FastRCNNConvFCHead",
    "FastRCNNPredictor",
    "FasterRCNN",
    "GeneralizedRCNN",
    "GeneralizedRCNNTransform",
    "KeypointRCNN",
    "KeypointRCNNHeads",
    "KeypointRCNNPredictor",
    "MaskRCNN",
    "MaskRCNNHeads",
    "MaskRCNNPredictor",
    "RPNHead",
    "RegionProposalNetwork",
    "RetinaNet",
    "RetinaNetClassificationHead",
    "RetinaNetHead",
    "RetinaNetRegressionHead",
    "RoIHeads",
    "SSDClassificationHead",
    "SSDFeatureExtractorVGG",
    "SSDHead",
    "SSDLiteClassificationHead",
    "SSDLiteFeatureExtractorMobileNet",
    "SSDLiteHead",
    "SSDLiteRegressionHead",
    "SSDRegressionHead",
    "SSDScoringHead",
    "TwoMLPHead",
    "fasterrcnn_mobilenet_v3_large_320_fpn",
    "fasterrcnn_mobilenet_v3_large_fpn",
    "fasterrcnn_resnet50_fpn",
    "fasterrcnn_resnet50_fpn_v2",
    "fcos_resnet50_fpn",
    "heatmaps_to_keypoints",
    "keypointrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
    "paste_masks_in_image",
    "retinanet_resnet18_fpn",
    "retinanet_resnet34_fpn",
    "retinanet_resnet50_fpn",
    "retinanet_resnet50_fpn_v2",
    "ssd300_vgg16",
    "ssdlite320_mobilenet_v3_large",
]
