"""Kernels of :mod:`trivium.vision.transforms`, named as in ``torchvision`` v2 functional.

Every kernel takes a tensor ``[..., C, H, W]`` (``uint8``, ``uint16`` or floating) and keeps
its device and dtype. Where a transform supports ``per_sample``, its kernel also
accepts a parameter tensor with one entry per image of the flattened batch.

Example:
    >>> import torch
    >>> from trivium.vision.transforms import functional as F
    >>> F.pil_to_tensor.__name__
    'pil_to_tensor'
"""

from trivium.vision.transforms._image import pil_to_tensor, to_pil_image
from trivium.vision.transforms.functional.color import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    autocontrast,
    equalize,
    invert,
    posterize,
    rgb_to_grayscale,
    solarize,
    to_grayscale,
)
from trivium.vision.transforms.functional.conversion import normalize, to_dtype, to_image
from trivium.vision.transforms.functional.erasing import erase
from trivium.vision.transforms.functional.filters import adjust_sharpness, gaussian_blur
from trivium.vision.transforms.functional.geometry import (
    center_crop,
    crop,
    crop_batched,
    five_crop,
    horizontal_flip,
    pad,
    resize,
    resized_crop,
    resized_crop_batched,
    ten_crop,
    vertical_flip,
)
from trivium.vision.transforms.functional.warp import affine, elastic, perspective, rotate
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = [
    "InterpolationMode",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "adjust_hue",
    "adjust_saturation",
    "adjust_sharpness",
    "affine",
    "autocontrast",
    "center_crop",
    "crop",
    "crop_batched",
    "elastic",
    "equalize",
    "erase",
    "five_crop",
    "gaussian_blur",
    "horizontal_flip",
    "invert",
    "normalize",
    "pad",
    "perspective",
    "pil_to_tensor",
    "posterize",
    "resize",
    "resized_crop",
    "resized_crop_batched",
    "rgb_to_grayscale",
    "rotate",
    "solarize",
    "ten_crop",
    "to_dtype",
    "to_grayscale",
    "to_image",
    "to_pil_image",
    "vertical_flip",
]
