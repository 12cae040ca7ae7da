"""Image classification models with torchvision's builders, module names and initialisation.

Classification: the ResNet family (``resnet18`` .. ``resnet152``, ResNeXt, Wide
ResNet), MobileNetV2, MobileNetV3 (large, small), EfficientNet (B0-B7, V2 S/M/L),
RegNet (X and Y), ConvNeXt (tiny .. large), ViT (B/16 .. H/14), Swin (T/S/B, V1 and
V2), MaxViT-T, VGG (11 .. 19, with and without BatchNorm), AlexNet, SqueezeNet (1.0,
1.1), ShuffleNetV2 (x0.5 .. x2.0), MNASNet (0.5 .. 1.3), DenseNet (121 .. 201),
GoogLeNet, Inception v3: state dicts load to and from ``torchvision.models`` of the same
names with ``strict=True``. ``weights=`` takes a local file path or a state dict
(nothing is downloaded). ``CLASSIFICATION_FAMILIES``
names the builders of each family. :class:`IntermediateLayerGetter` returns
intermediate feature maps for detection backbones.

Detection (also in :mod:`~trivium.vision.models.detection`), with torchvision's state
dict names: :class:`RetinaNet` (``retinanet_resnet50_fpn``, ``_v2``, and the smaller
``retinanet_resnet18_fpn`` / ``retinanet_resnet34_fpn``) and :class:`FCOS`
(``fcos_resnet50_fpn``) on a ResNet with a :class:`FeaturePyramidNetwork`
(``resnet_fpn_backbone``); :class:`SSD` (``ssd300_vgg16``,
``ssdlite320_mobilenet_v3_large``); :class:`FasterRCNN` (``fasterrcnn_resnet50_fpn``,
``_v2`` and the MobileNetV3 ones, on ``mobilenet_backbone``), :class:`MaskRCNN`
(``maskrcnn_resnet50_fpn``, ``_v2``) and :class:`KeypointRCNN`
(``keypointrcnn_resnet50_fpn``).

Example:
    >>> import torch
    >>> from trivium.vision.models import resnet50
    >>> model = resnet50(num_classes=10).eval()
    >>> model(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 10])
"""

# The subpackages are attributes, as torchvision.models.detection is.
from trivium.vision.models import (  # noqa: F401
    convnext,
    densenet,
    detection,
    efficientnet,
    mnasnet,
    regnet,
    resnet,
    segmentation,
    shufflenetv2,
    swin_transformer,
    vgg,
    video,
    vision_transformer,
)
from trivium.vision.models._api import get_model, get_model_builder, list_models
from trivium.vision.models.alexnet import AlexNet, alexnet
from trivium.vision.models.backbone_utils import (
    BackboneWithFPN,
    mobilenet_backbone,
    resnet_fpn_backbone,
)
from trivium.vision.models.convnext import (
    ConvNeXt,
    convnext_base,
    convnext_large,
    convnext_small,
    convnext_tiny,
)
from trivium.vision.models.densenet import (
    DenseNet,
    densenet121,
    densenet161,
    densenet169,
    densenet201,
)
from trivium.vision.models.detection.faster_rcnn import (
    FasterRCNN,
    fasterrcnn_mobilenet_v3_large_320_fpn,
    fasterrcnn_mobilenet_v3_large_fpn,
    fasterrcnn_resnet50_fpn,
    fasterrcnn_resnet50_fpn_v2,
)
from trivium.vision.models.detection.fcos import FCOS, fcos_resnet50_fpn
from trivium.vision.models.detection.keypoint_rcnn import KeypointRCNN, keypointrcnn_resnet50_fpn
from trivium.vision.models.detection.mask_rcnn import (
    MaskRCNN,
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
from trivium.vision.models.detection.ssd import (
    SSD,
    ssd300_vgg16,
)
from trivium.vision.models.detection.ssdlite import (
    ssdlite320_mobilenet_v3_large,
)
from trivium.vision.models.efficientnet import (
    EfficientNet,
    efficientnet_b0,
    efficientnet_b1,
    efficientnet_b2,
    efficientnet_b3,
    efficientnet_b4,
    efficientnet_b5,
    efficientnet_b6,
    efficientnet_b7,
    efficientnet_v2_l,
    efficientnet_v2_m,
    efficientnet_v2_s,
)
from trivium.vision.models.feature_extraction import IntermediateLayerGetter
from trivium.vision.models.googlenet import GoogLeNet, GoogLeNetOutputs, googlenet
from trivium.vision.models.inception import Inception3, InceptionOutputs, inception_v3
from trivium.vision.models.maxvit import MaxVit, maxvit_t
from trivium.vision.models.mnasnet import (
    MNASNet,
    mnasnet0_5,
    mnasnet0_75,
    mnasnet1_0,
    mnasnet1_3,
)
from trivium.vision.models.mobilenetv2 import MobileNetV2, mobilenet_v2
from trivium.vision.models.mobilenetv3 import (
    MobileNetV3,
    mobilenet_v3_large,
    mobilenet_v3_small,
)
from trivium.vision.models.regnet import (
    RegNet,
    regnet_x_1_6gf,
    regnet_x_3_2gf,
    regnet_x_8gf,
    regnet_x_16gf,
    regnet_x_32gf,
    regnet_x_400mf,
    regnet_x_800mf,
    regnet_y_1_6gf,
    regnet_y_3_2gf,
    regnet_y_8gf,
    regnet_y_16gf,
    regnet_y_32gf,
    regnet_y_128gf,
    regnet_y_400mf,
    regnet_y_800mf,
)
from trivium.vision.models.resnet import (
    BasicBlock,
    Bottleneck,
    ResNet,
    resnet18,
    resnet34,
    resnet50,
    resnet101,
    resnet152,
    resnext50_32x4d,
    resnext101_32x8d,
    resnext101_64x4d,
    wide_resnet50_2,
    wide_resnet101_2,
)
from trivium.vision.models.shufflenetv2 import (
    ShuffleNetV2,
    shufflenet_v2_x0_5,
    shufflenet_v2_x1_0,
    shufflenet_v2_x1_5,
    shufflenet_v2_x2_0,
)
from trivium.vision.models.squeezenet import SqueezeNet, squeezenet1_0, squeezenet1_1
from trivium.vision.models.swin_transformer import (
    SwinTransformer,
    swin_b,
    swin_s,
    swin_t,
    swin_v2_b,
    swin_v2_s,
    swin_v2_t,
)
from trivium.vision.models.vgg import (
    VGG,
    vgg11,
    vgg11_bn,
    vgg13,
    vgg13_bn,
    vgg16,
    vgg16_bn,
    vgg19,
    vgg19_bn,
)
from trivium.vision.models.vision_transformer import (
    VisionTransformer,
    vit_b_16,
    vit_b_32,
    vit_h_14,
    vit_l_16,
    vit_l_32,
)
from trivium.vision.models.weights import load_weights
from trivium.vision.ops.feature_pyramid_network import (
    ExtraFPNBlock,
    FeaturePyramidNetwork,
    LastLevelMaxPool,
    LastLevelP6P7,
)

# The classification builders by family, in the order torchvision's documentation lists them.
CLASSIFICATION_FAMILIES: dict[str, tuple[str, ...]] = {
    "ResNet": resnet.RESNET_BUILDERS,
    "MobileNetV2": ("mobilenet_v2",),
    "MobileNetV3": ("mobilenet_v3_large", "mobilenet_v3_small"),
    "EfficientNet": efficientnet.EFFICIENTNET_BUILDERS,
    "RegNet": regnet.REGNET_BUILDERS,
    "ConvNeXt": convnext.CONVNEXT_BUILDERS,
    "VisionTransformer": vision_transformer.VIT_BUILDERS,
    "SwinTransformer": swin_transformer.SWIN_BUILDERS,
    "MaxVit": ("maxvit_t",),
    "VGG": vgg.VGG_BUILDERS,
    "AlexNet": ("alexnet",),
    "SqueezeNet": ("squeezenet1_0", "squeezenet1_1"),
    "ShuffleNetV2": shufflenetv2.SHUFFLENET_BUILDERS,
    "MNASNet": mnasnet.MNASNET_BUILDERS,
    "DenseNet": densenet.DENSENET_BUILDERS,
    "GoogLeNet": ("googlenet",),
    "Inception3": ("inception_v3",),
}

__all__ = [
    "CLASSIFICATION_FAMILIES",
    "FCOS",
    "SSD",
    "VGG",
    "AlexNet",
    "BackboneWithFPN",
    "BasicBlock",
    "Bottleneck",
    "ConvNeXt",
    "DenseNet",
    "EfficientNet",
    "ExtraFPNBlock",
    "FasterRCNN",
    "FeaturePyramidNetwork",
    "GoogLeNet",
    "GoogLeNetOutputs",
    "Inception3",
    "InceptionOutputs",
    "IntermediateLayerGetter",
    "KeypointRCNN",
    "LastLevelMaxPool",
    "LastLevelP6P7",
    "MNASNet",
    "MaskRCNN",
    "MaxVit",
    "MobileNetV2",
    "MobileNetV3",
    "RegNet",
    "ResNet",
    "RetinaNet",
    "RetinaNetClassificationHead",
    "RetinaNetHead",
    "RetinaNetRegressionHead",
    "ShuffleNetV2",
    "SqueezeNet",
    "SwinTransformer",
    "VisionTransformer",
    "alexnet",
    "convnext_base",
    "convnext_large",
    "convnext_small",
    "convnext_tiny",
    "densenet121",
    "densenet161",
    "densenet169",
    "densenet201",
    "efficientnet_b0",
    "efficientnet_b1",
    "efficientnet_b2",
    "efficientnet_b3",
    "efficientnet_b4",
    "efficientnet_b5",
    "efficientnet_b6",
    "efficientnet_b7",
    "efficientnet_v2_l",
    "efficientnet_v2_m",
    "efficientnet_v2_s",
    "fasterrcnn_mobilenet_v3_large_320_fpn",
    "fasterrcnn_mobilenet_v3_large_fpn",
    "fasterrcnn_resnet50_fpn",
    "fasterrcnn_resnet50_fpn_v2",
    "fcos_resnet50_fpn",
    "get_model",
    "get_model_builder",
    "googlenet",
    "inception_v3",
    "keypointrcnn_resnet50_fpn",
    "list_models",
    "load_weights",
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
    "maxvit_t",
    "mnasnet0_5",
    "mnasnet0_75",
    "mnasnet1_0",
    "mnasnet1_3",
    "mobilenet_backbone",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
    "regnet_x_1_6gf",
    "regnet_x_3_2gf",
    "regnet_x_8gf",
    "regnet_x_16gf",
    "regnet_x_32gf",
    "regnet_x_400mf",
    "regnet_x_800mf",
    "regnet_y_1_6gf",
    "regnet_y_3_2gf",
    "regnet_y_8gf",
    "regnet_y_16gf",
    "regnet_y_32gf",
    "regnet_y_128gf",
    "regnet_y_400mf",
    "regnet_y_800mf",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "resnet_fpn_backbone",
    "resnext50_32x4d",
    "resnext101_32x8d",
    "resnext101_64x4d",
    "retinanet_resnet18_fpn",
    "retinanet_resnet34_fpn",
    "retinanet_resnet50_fpn",
    "retinanet_resnet50_fpn_v2",
    "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0",
    "squeezenet1_0",
    "squeezenet1_1",
    "ssd300_vgg16",
    "ssdlite320_mobilenet_v3_large",
    "swin_b",
    "swin_s",
    "swin_t",
    "swin_v2_b",
    "swin_v2_s",
    "swin_v2_t",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
    "vit_b_16",
    "vit_b_32",
    "vit_h_14",
    "vit_l_16",
    "vit_l_32",
    "wide_resnet50_2",
    "wide_resnet101_2",
]
