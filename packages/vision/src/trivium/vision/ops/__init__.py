"""Operators and small layers for vision models, named as in ``torchvision.ops``.

- boxes (``boxes.py``): ``box_convert``, ``box_area``, ``box_iou``,
  ``generalized_box_iou``, ``distance_box_iou``, ``complete_box_iou``,
  ``masks_to_boxes``, ``clip_boxes_to_image``, ``remove_small_boxes``,
  ``nms`` and ``batched_nms`` (custom ops ``torch.ops.trivium.nms`` and
  ``torch.ops.trivium.batched_nms_keep``, usable inside ``torch.compile``);
- detection (``anchors.py``, ``image_list.py``, ``box_coder.py``, ``focal_loss.py``,
  ``giou_loss.py``): ``AnchorGenerator``, ``ImageList``, ``BoxCoder``, ``Matcher`` (as
  in ``torchvision.models.detection``), ``sigmoid_focal_loss``,
  ``generalized_box_iou_loss``, ``distance_box_iou_loss`` and ``complete_box_iou_loss``
  (``diou_loss.py``);
- RoI pooling (``roi.py``, kernels and custom ops in ``roi_kernels.py``): ``roi_align``,
  ``roi_pool``, ``ps_roi_align``, ``ps_roi_pool`` and their modules ``RoIAlign``,
  ``RoIPool``, ``PSRoIAlign``, ``PSRoIPool``; ``MultiScaleRoIAlign`` over a feature
  pyramid with its ``LevelMapper`` (``poolers.py``);
- layers (``misc.py``, ``stochastic_depth.py``, ``drop_block.py``): ``FrozenBatchNorm2d``,
  ``Conv2dNormActivation``, ``Conv3dNormActivation``, ``SqueezeExcitation``, ``MLP``,
  ``Permute``, ``StochasticDepth`` / ``stochastic_depth``, ``DropBlock2d`` /
  ``DropBlock3d`` / ``drop_block2d`` / ``drop_block3d``;
- deformable convolution (``deform_conv.py``): ``deform_conv2d`` and ``DeformConv2d``.

Example:
    >>> import torch
    >>> from trivium.vision.ops import FrozenBatchNorm2d, nms
    >>> FrozenBatchNorm2d(8)(torch.zeros(1, 8, 4, 4)).shape
    torch.Size([1, 8, 4, 4])
    >>> nms(torch.tensor([[0.0, 0, 2, 2], [0, 0, 2, 1]]), torch.tensor([0.5, 0.9]), 0.6).tolist()
    [1, 0]
"""

from trivium.vision.ops.anchors import AnchorGenerator, DefaultBoxGenerator
from trivium.vision.ops.box_coder import BoxCoder, BoxLinearCoder, Matcher, SSDMatcher
from trivium.vision.ops.boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    complete_box_iou,
    distance_box_iou,
    generalized_box_iou,
    masks_to_boxes,
    nms,
    remove_small_boxes,
)
from trivium.vision.ops.deform_conv import DeformConv2d, deform_conv2d
from trivium.vision.ops.diou_loss import complete_box_iou_loss, distance_box_iou_loss
from trivium.vision.ops.drop_block import DropBlock2d, DropBlock3d, drop_block2d, drop_block3d
from trivium.vision.ops.feature_pyramid_network import FeaturePyramidNetwork
from trivium.vision.ops.focal_loss import sigmoid_focal_loss
from trivium.vision.ops.giou_loss import generalized_box_iou_loss
from trivium.vision.ops.image_list import ImageList
from trivium.vision.ops.misc import (
    MLP,
    Conv2dNormActivation,
    Conv3dNormActivation,
    FrozenBatchNorm2d,
    Permute,
    SqueezeExcitation,
)
from trivium.vision.ops.poolers import LevelMapper, MultiScaleRoIAlign
from trivium.vision.ops.roi import (
    PSRoIAlign,
    PSRoIPool,
    RoIAlign,
    RoIPool,
    ps_roi_align,
    ps_roi_pool,
    roi_align,
    roi_pool,
)
from trivium.vision.ops.stochastic_depth import StochasticDepth, stochastic_depth

__all__ = [
    "MLP",
    "AnchorGenerator",
    "BoxCoder",
    "BoxLinearCoder",
    "Conv2dNormActivation",
    "Conv3dNormActivation",
    "DefaultBoxGenerator",
    "DeformConv2d",
    "DropBlock2d",
    "DropBlock3d",
    "FeaturePyramidNetwork",
    "FrozenBatchNorm2d",
    "ImageList",
    "LevelMapper",
    "Matcher",
    "MultiScaleRoIAlign",
    "PSRoIAlign",
    "PSRoIPool",
    "Permute",
    "RoIAlign",
    "RoIPool",
    "SSDMatcher",
    "SqueezeExcitation",
    "StochasticDepth",
    "batched_nms",
    "box_area",
    "box_convert",
    "box_iou",
    "clip_boxes_to_image",
    "complete_box_iou",
    "complete_box_iou_loss",
    "deform_conv2d",
    "distance_box_iou",
    "distance_box_iou_loss",
    "drop_block2d",
    "drop_block3d",
    "generalized_box_iou",
    "generalized_box_iou_loss",
    "masks_to_boxes",
    "nms",
    "ps_roi_align",
    "ps_roi_pool",
    "remove_small_boxes",
    "roi_align",
    "roi_pool",
    "sigmoid_focal_loss",
    "stochastic_depth",
]
