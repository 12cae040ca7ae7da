"""Image transforms as modules, with the names and arguments of ``torchvision.transforms.v2``.

Transforms take tensors ``[..., C, H, W]`` (``uint8``, ``uint16`` or floating, any batch shape,
on any device), PIL images and :mod:`trivium.vision.tv_tensors` (images, boxes,
masks), in samples of any nesting (``(image, {"boxes": ..., "labels": ...})``);
other inputs (labels, ...) pass through. Random
transforms take ``generator=`` and, where noted, ``per_sample=True`` to draw
independent parameters for every image of a batch. The kernels live in
:mod:`trivium.vision.transforms.functional`.

Example:
    >>> import torch
    >>> from trivium.vision import transforms as T
    >>> img = torch.zeros(3, 8, 8, dtype=torch.uint8)
    >>> T.Compose([T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True)])(img).dtype
    torch.float32

A torchvision script's ``from torchvision.transforms import v2`` (and
``torchvision.transforms.v2.functional``) reads the same names here: ``v2`` is this
module itself, under the name torchvision gives it::

    >>> from trivium.vision.transforms import v2
    >>> from trivium.vision.transforms.v2 import functional as F
    >>> v2 is T, F is T.functional
    (True, True)
"""

import sys

from trivium.core import RandomApply, RandomChoice, RandomOrder, Transform
from trivium.vision.transforms import functional
from trivium.vision.transforms._base import Compose, ImageTransform
from trivium.vision.transforms._dispatch import register_kernel
from trivium.vision.transforms.auto_augment import (
    AugMix,
    AutoAugment,
    AutoAugmentPolicy,
    RandAugment,
    TrivialAugmentWide,
)
from trivium.vision.transforms.boxes import (
    ClampBoundingBoxes,
    ClampKeyPoints,
    ConvertBoundingBoxFormat,
    SanitizeBoundingBoxes,
    SanitizeKeyPoints,
    SetClampingMode,
)
from trivium.vision.transforms.color import (
    RGB,
    ColorJitter,
    GaussianBlur,
    Grayscale,
    RandomAdjustSharpness,
    RandomAutocontrast,
    RandomChannelPermutation,
    RandomEqualize,
    RandomGrayscale,
    RandomInvert,
    RandomPhotometricDistort,
    RandomPosterize,
    RandomSolarize,
)
from trivium.vision.transforms.conversion import (
    ConvertImageDtype,
    Lambda,
    Normalize,
    PILToTensor,
    ToDtype,
    ToImage,
    ToPILImage,
    ToPureTensor,
    ToTensor,
)
from trivium.vision.transforms.detection_geometry import (
    RandomIoUCrop,
    RandomResize,
    RandomShortestSize,
    RandomZoomOut,
    ScaleJitter,
)
from trivium.vision.transforms.erasing import RandomErasing
from trivium.vision.transforms.fused_decode import (
    DecodeCenterCrop,
    DecodeRandomResizedCrop,
    DecodeResize,
)
from trivium.vision.transforms.geometry import (
    CenterCrop,
    FiveCrop,
    Pad,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomVerticalFlip,
    Resize,
    TenCrop,
)
from trivium.vision.transforms.interpolation import InterpolationMode
from trivium.vision.transforms.misc import (
    JPEG,
    GaussianNoise,
    Identity,
    LinearTransformation,
    UniformTemporalSubsample,
)
from trivium.vision.transforms.mixing import CutMix, MixUp
from trivium.vision.transforms.presets import ImageClassificationEval, ImageClassificationTrain
from trivium.vision.transforms.query import (
    check_type,
    get_bounding_boxes,
    get_keypoints,
    has_all,
    has_any,
    query_chw,
    query_size,
)
from trivium.vision.transforms.warp import (
    ElasticTransform,
    RandomAffine,
    RandomPerspective,
    RandomRotation,
)

__all__ = [
    "JPEG",
    "RGB",
    "AugMix",
    "AutoAugment",
    "AutoAugmentPolicy",
    "CenterCrop",
    "ClampBoundingBoxes",
    "ClampKeyPoints",
    "ColorJitter",
    "Compose",
    "ConvertBoundingBoxFormat",
    "ConvertImageDtype",
    "CutMix",
    "DecodeCenterCrop",
    "DecodeRandomResizedCrop",
    "DecodeResize",
    "ElasticTransform",
    "FiveCrop",
    "GaussianBlur",
    "GaussianNoise",
    "Grayscale",
    "Identity",
    "ImageClassificationEval",
    "ImageClassificationTrain",
    "ImageTransform",
    "InterpolationMode",
    "Lambda",
    "LinearTransformation",
    "MixUp",
    "Normalize",
    "PILToTensor",
    "Pad",
    "RandAugment",
    "RandomAdjustSharpness",
    "RandomAffine",
    "RandomApply",
    "RandomAutocontrast",
    "RandomChannelPermutation",
    "RandomChoice",
    "RandomCrop",
    "RandomEqualize",
    "RandomErasing",
    "RandomGrayscale",
    "RandomHorizontalFlip",
    "RandomInvert",
    "RandomIoUCrop",
    "RandomOrder",
    "RandomPerspective",
    "RandomPhotometricDistort",
    "RandomPosterize",
    "RandomResize",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomShortestSize",
    "RandomSolarize",
    "RandomVerticalFlip",
    "RandomZoomOut",
    "Resize",
    "SanitizeBoundingBoxes",
    "SanitizeKeyPoints",
    "ScaleJitter",
    "SetClampingMode",
    "TenCrop",
    "ToDtype",
    "ToImage",
    "ToPILImage",
    "ToPureTensor",
    "ToTensor",
    "Transform",
    "TrivialAugmentWide",
    "UniformTemporalSubsample",
    "check_type",
    "functional",
    "get_bounding_boxes",
    "get_keypoints",
    "has_all",
    "has_any",
    "query_chw",
    "query_size",
    "register_kernel",
]


# The same module under torchvision's name for it (an alias, not a module of its own):
# ``trivium.vision.transforms.v2`` and ``from trivium.vision.transforms import v2``.
v2 = sys.modules[__name__]
sys.modules[f"{__name__}.v2"] = v2
