"""Questions about a flattened sample, for writing transforms: sizes, boxes, types.

``torchvision.transforms.v2``'s helpers with its names and results. ``flat_inputs``
is the list of a sample's leaves (``trivium.core.transform.flatten_inputs``, or
torch's ``tree_flatten``); images are plain tensors, ``tv_tensors.Image`` /
``Video`` and PIL images.

Example:
    >>> import torch
    >>> from trivium.vision import tv_tensors
    >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(4, 6))
    >>> query_size([tv_tensors.Image(torch.zeros(3, 4, 6)), boxes])
    (4, 6)
    >>> has_any([boxes, "label"], tv_tensors.BoundingBoxes), has_all([boxes], str)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trivium.vision import tv_tensors
from trivium.vision.transforms._image import is_pil
from trivium.vision.transforms.functional.meta import get_dimensions, get_size, is_pure_tensor

__all__ = [
    "check_type",
    "get_bounding_boxes",
    "get_keypoints",
    "has_all",
    "has_any",
    "query_chw",
    "query_size",
]

TypeOrCheck = type | Callable[[Any], bool]


def check_type(obj: Any, types_or_checks: tuple[TypeOrCheck, ...]) -> bool:
    """Whether ``obj`` is an instance of one of the types, or passes one of the checks.

    Example:
        >>> check_type(3, (str, lambda x: x > 2))
        True
    """
    return any(isinstance(obj, t) if isinstance(t, type) else bool(t(obj)) for t in types_or_checks)


def has_any(flat_inputs: list[Any], *types_or_checks: TypeOrCheck) -> bool:
    """Whether any leaf is of one of the types (or passes one of the checks).

    Example:
        >>> has_any([1, "a"], str), has_any([1], str)
        (True, False)
    """
    return any(check_type(x, types_or_checks) for x in flat_inputs)


def has_all(flat_inputs: list[Any], *types_or_checks: TypeOrCheck) -> bool:
    """Whether every one of the types (or checks) matches some leaf.

    Example:
        >>> has_all([1, "a"], int, str), has_all([1], int, str)
        (True, False)
    """
    return all(any(check_type(x, (t,)) for x in flat_inputs) for t in types_or_checks)


def _is_image_leaf(x: Any) -> bool:
    return is_pure_tensor(x) or is_pil(x) or isinstance(x, (tv_tensors.Image, tv_tensors.Video))


def _sized_leaf(x: Any) -> bool:
    sized = (tv_tensors.Mask, tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)
    return _is_image_leaf(x) or isinstance(x, sized)


def _one(found: set[tuple[int, ...]], what: str, dims: str) -> tuple[int, ...]:
    if not found:
        raise TypeError(f"No {what} was found in the sample")
    if len(found) > 1:
        shown = ", ".join(str(s) for s in sorted(found))
        raise ValueError(f"Found multiple {dims} dimensions in the sample: {shown}")
    return found.pop()


def query_chw(flat_inputs: list[Any]) -> tuple[int, int, int]:
    """``(channels, height, width)`` shared by the images and videos of the sample.

    Plain tensors count as images. No image: ``TypeError``; images of different
    sizes: ``ValueError``.

    Example:
        >>> import torch
        >>> query_chw([torch.zeros(2, 3, 4, 5), "label"])
        (3, 4, 5)
    """
    found = {tuple(get_dimensions(x)) for x in flat_inputs if _is_image_leaf(x)}
    c, h, w = _one(found, "image or video", "CxHxW")
    return c, h, w


def query_size(flat_inputs: list[Any]) -> tuple[int, int]:
    """``(height, width)`` shared by the images, videos, masks, boxes and key points.

    Boxes and key points give their ``canvas_size``; plain tensors count as images.
    None of them: ``TypeError``; different sizes: ``ValueError``.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> query_size([tv_tensors.Mask(torch.zeros(4, 5))])
        (4, 5)
    """
    found = {tuple(get_size(x)) for x in flat_inputs if _sized_leaf(x)}
    h, w = _one(found, "image, video, mask, bounding box or keypoint", "HxW")
    return h, w


def get_bounding_boxes(flat_inputs: list[Any]) -> tv_tensors.BoundingBoxes:
    """The (first) ``BoundingBoxes`` of the sample; none: ``ValueError``.

    Example:
        >>> from trivium.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(4, 4))
        >>> get_bounding_boxes(["image", boxes]) is boxes
        True
    """
    found = next((x for x in flat_inputs if isinstance(x, tv_tensors.BoundingBoxes)), None)
    if found is None:
        raise ValueError("No bounding boxes were found in the sample")
    return found


def get_keypoints(flat_inputs: list[Any]) -> tv_tensors.KeyPoints:
    """The (first) ``KeyPoints`` of the sample; none: ``ValueError``.

    Example:
        >>> from trivium.vision import tv_tensors
        >>> points = tv_tensors.KeyPoints([[0, 1]], canvas_size=(4, 4))
        >>> get_keypoints([points]) is points
        True
    """
    found = next((x for x in flat_inputs if isinstance(x, tv_tensors.KeyPoints)), None)
    if found is None:
        raise ValueError("No keypoints were found in the sample")
    return found
