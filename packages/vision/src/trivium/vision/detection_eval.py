"""COCO detection metrics: the 12 standard AP/AR figures of predicted boxes.

:class:`CocoEvaluator` gathers a model's predictions image by image (as torchvision's
detection models return them: ``boxes`` XYXY, ``scores``, ``labels``) and runs the
COCO evaluation over them. The evaluation is the reference ``COCOeval`` of
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

__all__ = ["COCO_METRICS", "CocoEvaluator", "coco_backend"]

# The order of COCOeval.stats for bounding boxes.
COCO_METRICS = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip
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


class CocoEvaluator:
    """The COCO box AP/AR of predictions against a COCO ground truth.

    Args:
        coco_gt_or_annFile: the ground truth: a pycocotools (or faster-coco-eval)
            ``COCO`` object, a COCO dict, or the path of an ``instances_*.json``.
        iou_type: ``"bbox"`` (boxes are what the predictions hold).
        backend: ``"auto"`` (faster-coco-eval when installed, else pycocotools),
            ``"pycocotools"`` or ``"faster-coco-eval"``.
        verbose: print the evaluation's own log and table (quiet by default).

    :meth:`update` takes ``{image_id: {"boxes": [N, 4] XYXY, "scores": [N],
    "labels": [N]}}`` (tensors, arrays or lists; what a torchvision detection
    model returns, keyed by the target's ``image_id``). :meth:`summarize` evaluates
    the images given so far (all the ground truth's images when none was: no
    predictions score 0) and returns :data:`COCO_METRICS` as a dict; the
    evaluation object stays in ``coco_eval`` (per-class precision in its ``eval``).

    Example:
        >>> import torch
        >>> gt = {"images": [{"id": 7, "height": 32, "width": 32}], "annotations": [],
        ...       "categories": [{"id": 1, "name": "star"}]}
        >>> evaluator = CocoEvaluator(gt)
        >>> evaluator.update({7: {"boxes": torch.zeros(0, 4), "scores": torch.zeros(0),
        ...                       "labels": torch.zeros(0, dtype=torch.int64)}})
        >>> evaluator.summarize()["AP50"]  # no ground truth boxes: COCO's -1
        -1.0
    """

    def __init__(
        self,
        coco_gt_or_annFile: Any,
        iou_type: str = "bbox",
        *,
        backend: str = "auto",
        verbose: bool = False,
    ) -> None:
        if iou_type != "bbox":
            raise ValueError(f"iou_type must be 'bbox' (predictions are boxes), got {iou_type!r}")
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
        self._category_ids = {category["id"] for category in dataset["categories"]}
        self.coco_eval: Any = None
        self.reset()

    def reset(self) -> None:
        """Forget the predictions given so far.

        Example:
            >>> evaluator = CocoEvaluator({"images": [], "annotations": [], "categories": []})
            >>> evaluator.reset()
        """
        self._results: dict[int, list[dict]] = {}

    def update(self, predictions: Mapping[int, Mapping[str, Any]]) -> None:
        """Add the predictions of some images: ``{image_id: {"boxes", "scores", "labels"}}``.

        Boxes are XYXY in the image's pixels. An image may be given once; an id
        that is not a ground-truth image, a label that is not a category id, or
        arrays of mismatched lengths raise ``ValueError``.

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
        missing = {"boxes", "scores", "labels"} - set(prediction)
        if missing:
            raise ValueError(f"predictions[{image_id}] lacks {sorted(missing)}")
        boxes = _as_array(prediction["boxes"], "boxes", image_id).reshape(-1, 4)
        scores = _as_array(prediction["scores"], "scores", image_id).reshape(-1)
        labels = _as_array(prediction["labels"], "labels", image_id).reshape(-1)
        if not len(boxes) == len(scores) == len(labels):
            raise ValueError(
                f"predictions[{image_id}] has {len(boxes)} boxes, {len(scores)} scores "
                f"and {len(labels)} labels"
            )
        unknown = sorted({int(c) for c in labels} - self._category_ids)
        if unknown:
            raise ValueError(
                f"predictions[{image_id}] has labels {unknown} that are not category ids "
                f"of the ground truth {sorted(self._category_ids)}"
            )
        return [
            {
                "image_id": image_id,
                "category_id": int(label),
                "bbox": [float(x0), float(y0), float(x1 - x0), float(y1 - y0)],
                "score": float(score),
            }
            for (x0, y0, x1, y1), score, label in zip(boxes, scores, labels, strict=True)
        ]

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
        """Evaluate and return the 12 figures of :data:`COCO_METRICS` (floats; -1 where undefined).

        Example:
            >>> evaluator = CocoEvaluator({"images": [{"id": 1}], "annotations": [],
            ...                            "categories": [{"id": 1}]})
            >>> sorted(evaluator.summarize())[:3]
            ['AP', 'AP50', 'AP75']
        """
        coco_dt = self._predictions()
        with _quiet(self.verbose):
            coco_eval = self._eval_cls(self.coco_gt, coco_dt, self.iou_type)
            image_ids = sorted(self._results) or sorted(self._image_ids)
            coco_eval.params.imgIds = image_ids
            coco_eval.evaluate()
            coco_eval.accumulate()
            coco_eval.summarize()
        self.coco_eval = coco_eval
        return {name: float(v) for name, v in zip(COCO_METRICS, coco_eval.stats[:12], strict=True)}
