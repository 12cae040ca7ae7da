"""torchvision's detection models with its ``nms`` op, shared by the detection model tests.

torchvision's detection models are its pure-Python code (see ``peers.py``); only its
``nms`` is a C++ op, absent here. :func:`torchvision_with_nms` registers
``torchvision::nms`` with an independent NumPy greedy NMS (:func:`numpy_nms`) and
tells torchvision its extension is there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy as np
import pytest
import torch
from peers import require_torchvision

__all__ = ["numpy_nms", "torchvision_with_nms"]


def numpy_nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy NMS: stable descending sort, suppress IoU > threshold (float64 arithmetic)."""
    boxes = dets.detach().cpu().numpy().astype(np.float64)
    order = np.argsort(-scores.detach().cpu().numpy(), kind="stable")
    x1, y1, x2, y2 = boxes.T
    area = (x2 - x1) * (y2 - y1)
    suppressed = np.zeros(len(order), dtype=bool)
    keep = []
    for i in order:
        if suppressed[i]:
            continue
        keep.append(i)
        w = np.clip(np.minimum(x2[i], x2) - np.maximum(x1[i], x1), 0, None)
        h = np.clip(np.minimum(y2[i], y2) - np.maximum(y1[i], y1), 0, None)
        inter = w * h
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (area[i] + area - inter)
        suppressed |= iou > iou_threshold
    return torch.as_tensor(np.array(keep, dtype=np.int64), device=dets.device)


def _register_torchvision_nms() -> None:
    try:
        torch.ops.torchvision.nms  # noqa: B018 (present where torchvision's extension loads)
    except (AttributeError, RuntimeError):
        torch.library.define(
            "torchvision::nms", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"
        )
        torch.library.impl("torchvision::nms", "cpu")(numpy_nms)


@contextmanager
def torchvision_with_nms() -> Iterator[ModuleType]:
    """torchvision (or a skip) whose ``ops.nms`` works, for the block's duration."""
    torchvision = require_torchvision()
    _register_torchvision_nms()
    with pytest.MonkeyPatch.context() as mp:
        # torchvision checks for its extension before calling torch.ops.torchvision.nms.
        mp.setattr(torchvision.extension, "_has_ops", lambda: True)
        yield torchvision
