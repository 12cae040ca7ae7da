"""COCO detection metrics: the standard AP/AR figures of predicted boxes, masks or keypoints.

:class:`CocoEvaluator` gathers a model's predictions image by image (as torchvision's
detection models return them: ``boxes`` XYXY, ``scores``, ``labels``, and Mask R-CNN's
``masks`` or Keypoint R-CNN's ``keypoints``) and runs the COCO evaluation over them:
``iou_type="bbox"`` and ``"segm"`` give the 12 figures of :data:`COCO_METRICS`,
``"keypoints"`` the 10 of :data:`KEYPOINT_METRICS`. The evaluation is the reference ``COCOeval`` of
pycocotools, or the same computation in C++ from faster-coco-eval when that is
installed (tested to give the same 12 figures). Both need
the ``detection`` extra: ``pip install 'trivium-vision[detection]'``.

Example:
    >>> import torch
    >>> gt = {
    ...     "images": [{"id": 1, "height": 64, "width": 64}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
    ...                      "bbox": [8.0, 8.0, 20.0, 30.0], "area": 600.0, "iscrowd": 0}],
    ...     "categories": [{"id": 1, "name": "circle"}],
    ... }
    >>> evaluator = CocoEvaluator(gt)
    >>> evaluator.update({1: {"boxes": torch.tensor([[8.0, 8.0, 28.0, 38.0]]),
    ...                       "scores": torch.tensor([0.9]), "labels": torch.tensor([1])}})
    >>> evaluator.summarize()["AP"]
    1.0
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

__all__ = ["COCO_METRICS", "IOU_TYPES", "KEYPOINT_METRICS", "CocoEvaluator", "coco_backend"]

#: The order of COCOeval.stats for boxes and masks (``iou_type`` "bbox" and "segm").
COCO_METRICS = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip
#: The order of COCOeval.stats for keypoints (OKS; no small objects, 20 detections per image).
KEYPOINT_METRICS = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")
#: What :class:`CocoEvaluator` evaluates: boxes, instance masks, person keypoints.
IOU_TYPES = ("bbox", "segm", "keypoints")
# What each iou_type reads from a prediction, beside scores and labels.
_PREDICTED = {"bbox": "boxes", "segm": "masks", "keypoints": "keypoints"}
_BACKENDS = ("auto", "pycocotools", "faster-coco-eval")


def _import_pycocotools() -> tuple[type, type]:
    from trivium.vision.datasets.coco import import_pycocotools

    coco, cocoeval = import_pycocotools("coco", "cocoeval", needed_by="COCO evaluation")
    return coco.COCO, cocoeval.COCOeval


def _import_faster() -> tuple[type, type]:
    from faster_coco_eval import COCO, COCOeval_faster

    return COCO, COCOeval_faster


def coco_backend(backend: str = "auto") -> str:
    """Which library ``backend`` evaluates with: ``"faster-coco-eval"`` or ``"pycocotools"``.

    ``"auto"`` takes faster-coco-eval when it imports, else pycocotools; naming one
    that is not installed raises ``ImportError`` naming the extra to install.

    Example:
        >>> coco_backend("pycocotools")
        'pycocotools'
        >>> coco_backend() in ("faster-coco-eval", "pycocotools")
        True
    """
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
    if backend in ("auto", "faster-coco-eval"):
        try:
            _import_faster()
            return "faster-coco-eval"
        except ImportError as e:
            if backend != "auto":
                raise ImportError(
                    "backend='faster-coco-eval' needs faster-coco-eval: "
                    "pip install 'trivium-vision[detection]'"
                ) from e
    _import_pycocotools()
    return "pycocotools"


def _classes(backend: str) -> tuple[type, type]:
    return _import_faster() if backend == "faster-coco-eval" else _import_pycocotools()


def _encode_rle(backend: str) -> Any:
    """The backend's ``mask.encode`` (Fortran-ordered uint8 ``[H, W, N]`` to RLE dicts)."""
    if backend == "faster-coco-eval":
        from faster_coco_eval.core import mask
    else:
        from trivium.vision.datasets.coco import import_pycocotools

        (mask,) = import_pycocotools("mask", needed_by="COCO mask evaluation")
    return mask.encode


@contextlib.contextmanager
def _quiet(verbose: bool):
    """Silence pycocotools' prints unless ``verbose``."""
    if verbose:
        yield
        return
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _ground_truth(source: Any) -> dict:
    """The COCO dataset dict of a COCO object, a dict or an annotation file."""
    if isinstance(source, dict):
        return source
    if hasattr(source, "dataset") and isinstance(source.dataset, dict):
        return source.dataset
    if isinstance(source, str | os.PathLike):
        with open(source, encoding="utf-8") as f:
            return json.load(f)
    raise TypeError(
        "coco_gt_or_annFile must be a COCO object, a COCO dict or an annotation file path, "
        f"got {type(source).__name__}"
    )


def _as_array(value: Any, name: str, image_id: int) -> np.ndarray:
    if not isinstance(value, torch.Tensor | np.ndarray | list | tuple):
        raise TypeError(
            f"predictions[{image_id}][{name!r}] must be a tensor, got {type(value).__name__}"
        )
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().double().numpy()
    return np.asarray(value, dtype=np.float64)


def _binary_masks(value: Any, image_id: int, size: tuple[int, int] | None) -> np.ndarray:
    """``[N, 1, H, W]`` or ``[N, H, W]`` masks as uint8 ``[N, H, W]``: probabilities
    (floats) above 0.5, other dtypes nonzero; ``size`` the image's ``(H, W)`` if known."""
    if not isinstance(value, torch.Tensor | np.ndarray):
        raise TypeError(
            f"predictions[{image_id}]['masks'] must be a tensor, got {type(value).__name__}"
        )
    masks = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
    if masks.ndim == 4 and masks.shape[1] == 1:
        masks = masks[:, 0]
    if masks.ndim != 3:
        raise ValueError(
            f"predictions[{image_id}]['masks'] must be [N, 1, H, W] or [N, H, W], "
            f"got shape {tuple(masks.shape)}"
        )
    if size is not None and tuple(masks.shape[1:]) != size:
        raise ValueError(
            f"predictions[{image_id}]['masks'] are {masks.shape[1]}x{masks.shape[2]} but the "
            f"image is {size[0]}x{size[1]}: masks must be pasted into the image, as the "
            f"models return them"
        )
    binary = masks > 0.5 if np.issubdtype(masks.dtype, np.floating) else masks != 0
    return binary.astype(np.uint8)


class CocoEvaluator:
    """The COCO AP/AR of predicted boxes, masks or keypoints against a COCO ground truth.

    Args:
        coco_gt_or_annFile: the ground truth: a pycocotools (or faster-coco-eval)
            ``COCO`` object, a COCO dict, or the path of an ``instances_*.json``
            (``person_keypoints_*.json`` for keypoints).
        iou_type: what is evaluated (:data:`IOU_TYPES`): ``"bbox"`` (the predictions'
            ``boxes``), ``"segm"`` (their ``masks``, against the ground truth's
            polygons or RLE) or ``"keypoints"`` (their ``keypoints``, by COCO's object
            keypoint similarity with its per-keypoint sigmas).
        backend: ``"auto"`` (faster-coco-eval when installed, else pycocotools),
            ``"pycocotools"`` or ``"faster-coco-eval"``.
        verbose: print the evaluation's own log and table (quiet by default).

    :meth:`update` takes ``{image_id: prediction}``, a prediction being what a
    torchvision detection model returns for the image (tensors, arrays or lists),
    keyed by the target's ``image_id``: ``scores`` [N] and ``labels`` [N] with, by
    ``iou_type``, ``boxes`` [N, 4] XYXY, ``masks`` [N, 1, H, W] (Mask R-CNN's
    probabilities pasted into the image: above 0.5 is the object; bool or uint8
    masks are taken as they are) or ``keypoints`` [N, 17, 3] (x, y, visibility).
    Masks are encoded as RLE, as torchvision's reference evaluation does.
    :meth:`summarize` evaluates the images given so far (all the ground truth's
    images when none was: no predictions score 0) and returns :data:`COCO_METRICS`
    (:data:`KEYPOINT_METRICS` for keypoints) as a dict; the evaluation object stays
    in ``coco_eval`` (per-class precision in its ``eval``).

    Example:
        >>> import torch
        >>> gt = {"images": [{"id": 7, "height": 32, "width": 32}], "annotations": [],
        ...       "categories": [{"id": 1, "name": "star"}]}
        >>> evaluator = CocoEvaluator(gt)
        >>> evaluator.update({7: {"boxes": torch.zeros(0, 4), "scores": torch.zeros(0),
        ...                       "labels": torch.zeros(0, dtype=torch.int64)}})
        >>> evaluator.summarize()["AP50"]  # no ground truth boxes: COCO's -1
        -1.0
        >>> square = [[4.0, 4.0, 20.0, 4.0, 20.0, 20.0, 4.0, 20.0]]
        >>> gt["annotations"] = [{"id": 1, "image_id": 7, "category_id": 1, "iscrowd": 0,
        ...                       "segmentation": square, "area": 256.0,
        ...                       "bbox": [4.0, 4.0, 16.0, 16.0]}]
        >>> masks = torch.zeros(1, 1, 32, 32)
        >>> masks[..., 4:20, 4:20] = 0.9
        >>> segm = CocoEvaluator(gt, "segm")
        >>> segm.update({7: {"masks": masks, "scores": [0.8], "labels": [1]}})
        >>> segm.summarize()["AP"]
        1.0
    """

    def __init__(
        self,
        coco_gt_or_annFile: Any,
        iou_type: str = "bbox",
        *,
        backend: str = "auto",
        verbose: bool = False,
    ) -> None:
        if iou_type not in IOU_TYPES:
            raise ValueError(f"iou_type must be one of {IOU_TYPES}, got {iou_type!r}")
        self.iou_type = iou_type
        self.backend = coco_backend(backend)
        self.verbose = verbose
        self._coco_cls, self._eval_cls = _classes(self.backend)
        dataset = copy.deepcopy(_ground_truth(coco_gt_or_annFile))
        for key in ("images", "annotations", "categories"):
            if not isinstance(dataset.get(key), list):
                raise ValueError(f"the ground truth has no {key!r} list")
        with _quiet(verbose):
            self.coco_gt = self._coco_cls()
            self.coco_gt.dataset = dataset
            self.coco_gt.createIndex()
        self._image_ids = {image["id"] for image in dataset["images"]}
        self._sizes = {
            image["id"]: (int(image["height"]), int(image["width"]))
            for image in dataset["images"]
            if "height" in image and "width" in image
        }
        self._category_ids = {category["id"] for category in dataset["categories"]}
        self.coco_eval: Any = None
        self.reset()

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The names :meth:`summarize` returns, in COCOeval's order.

        Example:
            >>> gt = {"images": [], "annotations": [], "categories": []}
            >>> CocoEvaluator(gt, "keypoints").metric_names[:3]
            ('AP', 'AP50', 'AP75')
        """
        return KEYPOINT_METRICS if self.iou_type == "keypoints" else COCO_METRICS

    def reset(self) -> None:
        """Forget the predictions given so far.

        Example:
            >>> evaluator = CocoEvaluator({"images": [], "annotations": [], "categories": []})
            >>> evaluator.reset()
        """
        self._results: dict[int, list[dict]] = {}

    def update(self, predictions: Mapping[int, Mapping[str, Any]]) -> None:
        """Add the predictions of some images: ``{image_id: {"boxes", "scores", "labels"}}``.

        Boxes are XYXY in the image's pixels (``masks`` or ``keypoints`` in place of
        ``boxes`` for ``iou_type`` "segm" or "keypoints"; see the class docstring). An
        image may be given once; an id that is not a ground-truth image, a label that
        is not a category id, arrays of mismatched lengths, masks of another size than
        the image or keypoints not ``[N, 17, 3]`` raise ``ValueError``.

        Example:
            >>> evaluator = CocoEvaluator({"images": [{"id": 1}], "annotations": [],
            ...                            "categories": [{"id": 3}]})
            >>> evaluator.update({1: {"boxes": [[0, 0, 4, 4]], "scores": [0.5], "labels": [3]}})
        """
        for image_id, prediction in predictions.items():
            image_id = int(image_id)
            if image_id not in self._image_ids:
                raise ValueError(f"image_id {image_id} is not an image of the ground truth")
            if image_id in self._results:
                raise ValueError(f"image_id {image_id} was already given to update()")
            self._results[image_id] = self._detections(image_id, prediction)

    def _detections(self, image_id: int, prediction: Mapping[str, Any]) -> list[dict]:
        key = _PREDICTED[self.iou_type]
        missing = {key, "scores", "labels"} - set(prediction)
        if missing:
            raise ValueError(f"predictions[{image_id}] lacks {sorted(missing)}")
        scores = _as_array(prediction["scores"], "scores", image_id).reshape(-1)
        labels = _as_array(prediction["labels"], "labels", image_id).reshape(-1)
        if self.iou_type == "bbox":
            objects = self._boxes(image_id, prediction["boxes"])
        elif self.iou_type == "segm":
            objects = self._masks(image_id, prediction["masks"])
        else:
            objects = self._keypoints(image_id, prediction["keypoints"])
        if not len(objects) == len(scores) == len(labels):
            raise ValueError(
                f"predictions[{image_id}] has {len(objects)} {key}, {len(scores)} scores "
                f"and {len(labels)} labels"
            )
        unknown = sorted({int(c) for c in labels} - self._category_ids)
        if unknown:
            raise ValueError(
                f"predictions[{image_id}] has labels {unknown} that are not category ids "
                f"of the ground truth {sorted(self._category_ids)}"
            )
        return [
            {"image_id": image_id, "category_id": int(label), **found, "score": float(score)}
            for found, score, label in zip(objects, scores, labels, strict=True)
        ]

    @staticmethod
    def _boxes(image_id: int, value: Any) -> list[dict]:
        boxes = _as_array(value, "boxes", image_id).reshape(-1, 4)
        return [
            {"bbox": [float(x0), float(y0), float(x1 - x0), float(y1 - y0)]}
            for x0, y0, x1, y1 in boxes
        ]

    def _masks(self, image_id: int, value: Any) -> list[dict]:
        masks = _binary_masks(value, image_id, self._sizes.get(image_id))
        if not len(masks):
            return []
        rles = _encode_rle(self.backend)(np.asfortranarray(masks.transpose(1, 2, 0)))
        for rle in rles:  # str counts, as in a COCO results file
            if isinstance(rle["counts"], bytes):
                rle["counts"] = rle["counts"].decode("ascii")
        return [{"segmentation": rle} for rle in rles]

    @staticmethod
    def _keypoints(image_id: int, value: Any) -> list[dict]:
        keypoints = _as_array(value, "keypoints", image_id)
        if keypoints.ndim != 3 or keypoints.shape[1:] != (17, 3):
            raise ValueError(
                f"predictions[{image_id}]['keypoints'] must be [N, 17, 3] (x, y, visibility "
                f"of COCO's 17 person keypoints, whose OKS sigmas COCOeval holds), "
                f"got shape {tuple(keypoints.shape)}"
            )
        return [{"keypoints": [float(v) for v in points.reshape(-1)]} for points in keypoints]

    def _predictions(self) -> Any:
        results = [r for image in self._results.values() for r in image]
        with _quiet(self.verbose):
            if results:
                return self.coco_gt.loadRes(results)
            empty = self._coco_cls()  # loadRes refuses an empty list
            empty.dataset = {
                "images": list(self.coco_gt.dataset["images"]),
                "categories": copy.deepcopy(self.coco_gt.dataset["categories"]),
                "annotations": [],
            }
            empty.createIndex()
            return empty

    def summarize(self) -> dict[str, float]:
        """Evaluate and return :attr:`metric_names` with their figures (floats; -1 where undefined).

        Example:
            >>> evaluator = CocoEvaluator({"images": [{"id": 1}], "annotations": [],
            ...                            "categories": [{"id": 1}]})
            >>> sorted(evaluator.summarize())[:3]
            ['AP', 'AP50', 'AP75']
        """
        coco_dt = self._predictions()
        names = self.metric_names
        with _quiet(self.verbose):
            coco_eval = self._eval_cls(self.coco_gt, coco_dt, self.iou_type)
            image_ids = sorted(self._results) or sorted(self._image_ids)
            coco_eval.params.imgIds = image_ids
            coco_eval.evaluate()
            coco_eval.accumulate()
            coco_eval.summarize()
        self.coco_eval = coco_eval
        return {
            name: float(v) for name, v in zip(names, coco_eval.stats[: len(names)], strict=True)
        }
