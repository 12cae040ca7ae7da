"""Transforms of the boxes alone: sanitize, clamp and convert ``BoundingBoxes``.

``torchvision.transforms.v2``'s names, arguments and results. They act on the
``tv_tensors.BoundingBoxes`` of a sample (and, for ``SanitizeBoundingBoxes``, on
the labels and masks that go with the boxes); everything else passes through.

Example:
    >>> import torch
    >>> from trivium.vision import tv_tensors
    >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 5, 5], [2, 2, 2, 9]], format="XYXY",
    ...                                  canvas_size=(10, 10))
    >>> out = SanitizeBoundingBoxes()({"boxes": boxes, "labels": torch.tensor([1, 2])})
    >>> out["boxes"].tolist(), out["labels"].tolist()
    ([[0, 0, 5, 5]], [1])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from trivium.core import Transform
from trivium.core.transform import flatten_inputs
from trivium.vision import tv_tensors
from trivium.vision.transforms.functional.geometry import (
    clamp_bounding_boxes,
    convert_bounding_box_format,
)
from trivium.vision.transforms.functional.keypoints import clamp_keypoints, sanitize_keypoints
from trivium.vision.transforms.functional.misc import valid_boxes_mask
from trivium.vision.tv_tensors import BoundingBoxFormat, _as_format

__all__ = [
    "ClampBoundingBoxes",
    "ClampKeyPoints",
    "ConvertBoundingBoxFormat",
    "SanitizeBoundingBoxes",
    "SanitizeKeyPoints",
    "SetClampingMode",
]


class ConvertBoundingBoxFormat(Transform):
    """Convert the sample's ``BoundingBoxes`` to ``format`` (a ``BoundingBoxFormat`` or its name).

    Example:
        >>> from trivium.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[1, 2, 3, 4]], format="XYWH", canvas_size=(9, 9))
        >>> ConvertBoundingBoxFormat("XYXY")(boxes).tolist()
        [[1, 2, 4, 6]]
    """

    def __init__(self, format: BoundingBoxFormat | str) -> None:
        super().__init__()
        self.format = _as_format(format)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Convert one input if it holds boxes, else return it unchanged.

        Example:
            >>> ConvertBoundingBoxFormat("CXCYWH").transform("label", {})
            'label'
        """
        if not isinstance(inpt, tv_tensors.BoundingBoxes):
            return inpt
        return convert_bounding_box_format(inpt, new_format=self.format)


class ClampBoundingBoxes(Transform):
    """Clamp the sample's ``BoundingBoxes`` to their canvas.

    ``clamping_mode``: "auto" (the boxes' own mode), "soft", "hard" or None (no change).

    Example:
        >>> from trivium.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[-3, 2, 12, 5]], format="XYXY", canvas_size=(8, 10))
        >>> ClampBoundingBoxes()(boxes).tolist()
        [[0, 2, 10, 5]]
    """

    def __init__(self, clamping_mode: str | None = "auto") -> None:
        super().__init__()
        if clamping_mode not in ("auto", "soft", "hard", None):
            raise ValueError(
                f"ClampBoundingBoxes: clamping_mode must be auto, soft, hard or None, "
                f"got {clamping_mode!r}"
            )
        self.clamping_mode = clamping_mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Clamp one input if it holds boxes, else return it unchanged.

        Example:
            >>> ClampBoundingBoxes().transform(3, {})
            3
        """
        if not isinstance(inpt, tv_tensors.BoundingBoxes):
            return inpt
        return clamp_bounding_boxes(inpt, clamping_mode=self.clamping_mode)


def _default_labels(sample: Any) -> Any:
    """torchvision's rule: the "labels" key (else the first key containing "label") of the
    sample's dict, or of the second item of an (image, target) pair."""
    if isinstance(sample, (tuple, list)):
        if len(sample) < 2:
            raise ValueError(
                "SanitizeBoundingBoxes: the default labels_getter needs a dict or an "
                "(image, target) pair; pass labels_getter=None or a callable"
            )
        sample = sample[1]
    if isinstance(sample, torch.Tensor) and not isinstance(sample, tv_tensors.TVTensor):
        return sample
    if not isinstance(sample, Mapping):
        raise ValueError(
            f"SanitizeBoundingBoxes: the default labels_getter needs a dict, or a pair whose "
            f"second item is a dict or a tensor, got {type(sample).__name__}"
        )
    keys = [k for k in sample if isinstance(k, str)]
    key = next((k for k in keys if k.lower() == "labels"), None)
    key = key or next((k for k in keys if "label" in k.lower()), None)
    if key is None:
        raise ValueError(
            "SanitizeBoundingBoxes: no labels key in the sample; pass a callable as "
            "labels_getter, or labels_getter=None when there are no labels"
        )
    return sample[key]


def _labels_getter(labels_getter: Any) -> Callable[[Any], Any]:
    if labels_getter == "default":
        return _default_labels
    if labels_getter is None:
        return lambda sample: None
    if callable(labels_getter):
        return labels_getter
    raise ValueError(
        f"SanitizeBoundingBoxes: labels_getter must be 'default', a callable or None, "
        f"got {labels_getter!r}"
    )


def _labels_of(labels: Any) -> tuple[torch.Tensor, ...]:
    """What a labels getter returned, as a tuple of tensors (none for None)."""
    if labels is None:
        return ()
    labels = (labels,) if isinstance(labels, torch.Tensor) else labels
    if not isinstance(labels, (tuple, list)) or not all(
        isinstance(x, torch.Tensor) for x in labels
    ):
        raise ValueError(
            f"labels_getter: labels must be a tensor, a tuple of tensors or None, "
            f"got {type(labels).__name__}"
        )
    return tuple(labels)


class SanitizeBoundingBoxes(Transform):
    """Drop boxes smaller than ``min_size`` (width or height) or ``min_area``, or off the canvas.

    A rotated box counts its own sides and needs all 4 corners on the canvas.

    The labels found by ``labels_getter`` and the sample's ``Mask`` (one per box)
    lose the same rows. ``labels_getter``: "default" (a "labels" key of the sample's
    dict, or of the target of an (image, target) pair), a callable taking the sample
    and returning a tensor or a tuple of tensors, or None (boxes and masks only).
    The sample holds exactly one ``BoundingBoxes``.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 4, 4], [1, 1, 1.5, 3]], format="XYXY",
        ...                                  canvas_size=(8, 8))
        >>> img, target = SanitizeBoundingBoxes()(torch.zeros(3, 8, 8),
        ...                                       {"boxes": boxes, "labels": torch.tensor([5, 6])})
        >>> target["boxes"].shape[0], target["labels"].tolist()
        (1, [5])
    """

    def __init__(
        self,
        min_size: float = 1.0,
        min_area: float = 1.0,
        labels_getter: Callable[[Any], Any] | str | None = "default",
    ) -> None:
        super().__init__()
        if min_size < 1:
            raise ValueError(f"SanitizeBoundingBoxes: min_size must be >= 1, got {min_size}")
        if min_area < 1:
            raise ValueError(f"SanitizeBoundingBoxes: min_area must be >= 1, got {min_area}")
        self.min_size = min_size
        self.min_area = min_area
        self.labels_getter = labels_getter
        self._get_labels = _labels_getter(labels_getter)

    def forward(self, *inputs: Any) -> Any:
        """Drop the invalid boxes and their labels and masks (see the class docstring)."""
        flat, rebuild = flatten_inputs(self, inputs)
        labels = _labels_of(self._get_labels(inputs if len(inputs) > 1 else inputs[0]))
        boxes = _the_boxes(flat)
        for label in labels:
            if label.shape[0] != boxes.shape[0]:
                raise ValueError(
                    f"SanitizeBoundingBoxes: {boxes.shape[0]} boxes but labels of shape "
                    f"{tuple(label.shape)}; they must match"
                )
        valid = valid_boxes_mask(
            boxes, boxes.format, boxes.canvas_size, self.min_size, self.min_area
        )
        params = {"valid": valid, "labels": labels}
        return rebuild([self.transform(x, params) for x in flat])

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Keep the valid rows of boxes, masks and labels; other inputs pass through.

        Example:
            >>> import torch
            >>> SanitizeBoundingBoxes().transform("img", {"valid": torch.tensor([True]),
            ...                                           "labels": ()})
            'img'
        """
        is_label = any(inpt is label for label in params["labels"])
        if not (is_label or isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask))):
            return inpt
        try:
            out = inpt[params["valid"]]
        except IndexError:  # e.g. a semantic mask [H, W], not one per box
            return inpt
        return out if is_label else tv_tensors.wrap(out, like=inpt)


def _the_boxes(flat: list[Any]) -> tv_tensors.BoundingBoxes:
    found = [x for x in flat if isinstance(x, tv_tensors.BoundingBoxes)]
    if len(found) != 1:
        raise ValueError(
            f"SanitizeBoundingBoxes: the sample must hold exactly one BoundingBoxes, "
            f"found {len(found)}"
        )
    return found[0]


class ClampKeyPoints(Transform):
    """Clamp the sample's ``KeyPoints`` into their canvas (torchvision v2's ``ClampKeyPoints``).

    Example:
        >>> from trivium.vision import tv_tensors
        >>> points = tv_tensors.KeyPoints([[-3, 2], [12, 5]], canvas_size=(8, 10))
        >>> ClampKeyPoints()(points).tolist()
        [[0, 2], [9, 5]]
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Clamp one input if it holds key points, else return it unchanged.

        Example:
            >>> ClampKeyPoints().transform("label", {})
            'label'
        """
        if not isinstance(inpt, tv_tensors.KeyPoints):
            return inpt
        return clamp_keypoints(inpt)


class SanitizeKeyPoints(Transform):
    """Drop the key points (or rows of them: polygons, skeletons) that leave the canvas.

    The labels found by ``labels_getter`` lose the same rows: None (the default, as
    torchvision's), "default" (a "labels" key of the sample's dict, or of the target
    of an (image, target) pair) or a callable returning a tensor or a tuple of them.
    The sample holds exactly one ``KeyPoints``.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> points = tv_tensors.KeyPoints([[1, 1], [9, 2]], canvas_size=(8, 8))
        >>> out = SanitizeKeyPoints(labels_getter="default")(
        ...     {"points": points, "labels": torch.tensor([5, 6])})
        >>> out["points"].tolist(), out["labels"].tolist()
        ([[1, 1]], [5])
    """

    def __init__(self, labels_getter: Callable[[Any], Any] | str | None = None) -> None:
        super().__init__()
        self.labels_getter = labels_getter
        self._get_labels = _labels_getter(labels_getter)

    def forward(self, *inputs: Any) -> Any:
        """Drop the points off the canvas and their labels (see the class docstring)."""
        flat, rebuild = flatten_inputs(self, inputs)
        labels = _labels_of(self._get_labels(inputs if len(inputs) > 1 else inputs[0]))
        found = [x for x in flat if isinstance(x, tv_tensors.KeyPoints)]
        if len(found) != 1:
            raise ValueError(
                f"SanitizeKeyPoints: the sample must hold exactly one KeyPoints, found {len(found)}"
            )
        points = found[0]
        for label in labels:
            if label.shape[0] != points.shape[0]:
                raise ValueError(
                    f"SanitizeKeyPoints: {points.shape[0]} rows of key points but labels of "
                    f"shape {tuple(label.shape)}; they must match"
                )
        _, valid = sanitize_keypoints(points)
        params = {"valid": valid, "labels": labels}
        return rebuild([self.transform(x, params) for x in flat])

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Keep the valid rows of key points and labels; other inputs pass through.

        Example:
            >>> import torch
            >>> SanitizeKeyPoints().transform("img", {"valid": torch.tensor([True]), "labels": ()})
            'img'
        """
        is_label = any(inpt is label for label in params["labels"])
        if is_label:
            return inpt[params["valid"]]
        if isinstance(inpt, tv_tensors.KeyPoints):
            return tv_tensors.wrap(inpt.as_subclass(torch.Tensor)[params["valid"]], like=inpt)
        return inpt


class SetClampingMode(Transform):
    """Set the ``clamping_mode`` of the sample's ``BoundingBoxes`` for the transforms after it.

    ``clamping_mode`` is "soft", "hard" or None (see ``tv_tensors.BoundingBoxes``); the
    boxes come back as a copy with the new mode, everything else passes through.

    Example:
        >>> from trivium.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(4, 4))
        >>> SetClampingMode("hard")(boxes).clamping_mode
        'hard'
    """

    def __init__(self, clamping_mode: str | None) -> None:
        super().__init__()
        if clamping_mode not in ("soft", "hard", None):
            raise ValueError(
                f"SetClampingMode: clamping_mode must be soft, hard or None, got {clamping_mode!r}"
            )
        self.clamping_mode = clamping_mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """A copy of boxes with the new mode; other inputs unchanged.

        Example:
            >>> SetClampingMode(None).transform("label", {})
            'label'
        """
        if not isinstance(inpt, tv_tensors.BoundingBoxes):
            return inpt
        return tv_tensors.wrap(
            inpt.as_subclass(torch.Tensor).clone(), like=inpt, clamping_mode=self.clamping_mode
        )
