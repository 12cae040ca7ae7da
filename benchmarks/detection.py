"""Speed of ``trivium.vision.models`` RetinaNet against torchvision's, in one process.

Workload ``eval``: ``retinanet_resnet50_fpn`` forward in ``torch.inference_mode``
on 2 random 3x800x800 float images (resize to 800, normalise, backbone, FPN,
heads, anchors, decoding, NMS, boxes mapped back), at every thread count of
``--threads`` (default 1 and 2).

Both models hold the same weights, in the layout of torchvision's published COCO
checkpoint (a ResNet-50 with FrozenBatchNorm2d, P3-P7 FPN): ours is built with
``weights_backbone=`` and torchvision's from its own pieces, which then loads our
state dict. The class logits' weights are drawn wider than at initialisation so
that each image has detections for the postprocessing to work on.

torchvision's ``nms`` is a C++ op that does not load here; the script registers
``torchvision::nms`` over trivium's kernel (``torch.ops.trivium.nms``), so both
sides run the same NMS and the difference is everything else.

As in ``benchmarks/models.py``, ours is timed as the vision guide (docs/guide/vision.md) recommends
running it on a CPU, converted to channels-last
(``model.to(memory_format=torch.channels_last)``), against torchvision as its
documentation runs it (contiguous). Two rows per thread count have no target:
both libraries contiguous, then both channels-last.

Peers and timing are ``benchmarks/harness.py``'s. Ratio = peer time / our time
(above 1: we are faster).

Run from the repository root::

    .venv/bin/python benchmarks/detection.py [--repeats N] [--json PATH] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable, Sequence
from typing import Any

import harness
import torch
from torch import nn

from trivium.vision import models

WORKLOADS = ["eval"]
LAYOUTS = {"channels-last": torch.channels_last, "contiguous": torch.contiguous_format}
NMS_NOTE = (
    "torchvision's nms runs trivium's kernel (torchvision::nms registered over "
    "torch.ops.trivium.nms): both sides use the same NMS"
)

Detections = list[dict[str, torch.Tensor]]


def share_nms(tv: Any) -> None:
    """Give torchvision an ``nms`` op (its C++ one may not load): trivium's kernel."""
    try:
        torch.ops.torchvision.nms  # noqa: B018 (present where the extension loads)
        return
    except (AttributeError, RuntimeError):
        pass
    torch.library.define(
        "torchvision::nms", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"
    )
    torch.library.impl("torchvision::nms", "cpu")(lambda b, s, t: torch.ops.trivium.nms(b, s, t))
    tv.extension._has_ops = lambda: True


def build_pair(tv: Any) -> tuple[nn.Module, nn.Module]:
    """Our retinanet_resnet50_fpn and torchvision's, frozen-BN backbones, the same weights."""
    torch.manual_seed(0)
    ours = models.retinanet_resnet50_fpn(weights_backbone=models.resnet50().state_dict())
    with torch.no_grad():
        ours.head.classification_head.cls_logits.weight.normal_(
            0.0, 0.03, generator=torch.Generator().manual_seed(1)
        )
    detection = tv.models.detection
    body = tv.models.resnet50(norm_layer=tv.ops.misc.FrozenBatchNorm2d)
    extra = tv.ops.feature_pyramid_network.LastLevelP6P7(256, 256)
    backbone = detection.backbone_utils._resnet_fpn_extractor(
        body, 3, returned_layers=[2, 3, 4], extra_blocks=extra
    )
    theirs = detection.RetinaNet(backbone, 91)
    theirs.load_state_dict(ours.state_dict(), strict=True)
    return ours.eval(), theirs.eval()


def infer(model: nn.Module, images: list[torch.Tensor]) -> Callable[[], Detections]:
    """Detection on `images`."""

    def run() -> Detections:
        with torch.inference_mode():
            return model(images)

    return run


def unmatched(x: dict[str, torch.Tensor], y: dict[str, torch.Tensor]) -> float:
    """The largest distance from a detection in `x` to the nearest same-label one in `y`.

    Box and score distances are combined (max of both); near-equal scores may come
    out in either order, so detections are matched as sets, not by position.
    """
    if len(x["boxes"]) == 0:
        return 0.0
    box = (x["boxes"][:, None, :] - y["boxes"][None, :, :]).abs().amax(dim=2)
    score = (x["scores"][:, None] - y["scores"][None, :]).abs()
    distance = torch.maximum(box, score).masked_fill(
        x["labels"][:, None] != y["labels"][None, :], float("inf")
    )
    return float(distance.amin(dim=1).max())


def compare(a: Detections, b: Detections) -> str:
    """How far two detection lists are apart: by position, and matched as sets."""
    parts = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x["boxes"].shape != y["boxes"].shape:
            parts.append(f"image {i}: {len(x['boxes'])} vs {len(y['boxes'])} detections")
            continue
        box = float((x["boxes"] - y["boxes"]).abs().max()) if len(x["boxes"]) else 0.0
        score = float((x["scores"] - y["scores"]).abs().max()) if len(x["scores"]) else 0.0
        labels = "equal" if torch.equal(x["labels"], y["labels"]) else "differ"
        parts.append(
            f"image {i}: {len(x['boxes'])} detections, by position max |d box| {box:.1e} "
            f"|d score| {score:.1e}, labels {labels}; "
            f"as sets max distance {max(unmatched(x, y), unmatched(y, x)):.1e}"
        )
    return "; ".join(parts)


def eval_rows(tv: Any, args: argparse.Namespace, checks: list[str]) -> list[harness.Row]:
    """The eval workload's rows at every thread count."""
    ours, theirs = build_pair(tv)
    g = torch.Generator().manual_seed(0)
    images = [torch.rand(3, 800, 800, generator=g) for _ in range(2)]
    calls = {}
    for lib, model in (("ours", ours), ("torchvision", theirs)):
        for tag, fmt in LAYOUTS.items():
            calls[f"{lib} {tag}"] = infer(copy.deepcopy(model).to(memory_format=fmt), images)
    reference = calls["torchvision contiguous"]()
    for name in ("ours channels-last", "ours contiguous"):
        checks.append(f"{name} vs torchvision contiguous: {compare(calls[name](), reference)}")
    checks.append(NMS_NOTE)
    label = "retinanet_resnet50_fpn eval, 2 images 3x800x800"
    return harness.layout_rows_by_threads(label, calls, args)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    return harness.parse_thread_counts_args(__doc__.splitlines()[0], WORKLOADS, argv, 3)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workload and print the table (and JSON with --json)."""
    run = harness.Session(parse_args(argv))
    tv = harness.peers.import_torchvision()
    info = harness.machine_info(run.args.threads, torchvision=harness.version(tv), nms=NMS_NOTE)
    run.header("trivium.vision.models detection benchmark", info)
    if tv is None:
        print("torchvision is not installed: nothing to compare against")
        return 0
    share_nms(tv)
    if "eval" in run.args.only:
        run.rows += eval_rows(tv, run.args, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
