"""Speed of ``trivium.vision.models`` against torchvision's models, in one process.

Workloads, each at every thread count of ``--threads`` (default 1 and 2):

1. ``eval``: ResNet-50 forward in ``torch.inference_mode`` on a batch of 8 random
   3x224x224 float images.
2. ``train``: one ResNet-18 training step on 16 random 3x128x128 images (zero_grad,
   forward, cross-entropy, backward, SGD with momentum).
3. one per other family, named after its builder (``mobilenet_v2``,
   ``mobilenet_v3_large``, ``efficientnet_b0``, ``efficientnet_v2_s``,
   ``regnet_y_400mf``, ``convnext_tiny``, ``vit_b_16``, ``swin_t``, ``maxvit_t``):
   the same forward as ``eval``.

4. one eval forward per model of the other families, named after its builder, on
   small inputs: detection (``fasterrcnn_resnet50_fpn``, ``retinanet_resnet50_fpn``,
   ``fcos_resnet50_fpn``, ``ssdlite320_mobilenet_v3_large``, ``maskrcnn_resnet50_fpn``:
   one random 3x256x256 image, resized to 256 by the model (SSDlite: to its 320), score
   thresholds lowered so that random weights leave detections for the postprocessing),
   segmentation (``fcn_resnet50``, ``deeplabv3_mobilenet_v3_large``,
   ``lraspp_mobilenet_v3_large``: 1x3x160x160) and video (``r3d_18``, ``r2plus1d_18``:
   1x3x8x96x96; ``s3d``: 1x3x16x224x224, the least its pooling takes). The video
   models' channels-last is ``torch.channels_last_3d``.

torchvision's detection models call its C++ ``nms`` and ``roi_align``, which load in
the peers' virtualenv (``.venv-peers``, built by ``../shared/peers/setup_peers_venv.sh``):
the script re-runs itself there when they do not load here and that virtualenv
exists. Where they load nowhere, torchvision's ``nms`` runs trivium's kernel (as in
``benchmarks/detection.py``) and the two R-CNN rows, which need its ``roi_align``,
are left out.

Both models hold the same weights (torchvision's loads ours). The layers are the
same ops, so what can differ is the memory layout: ours is timed as the vision
guide (docs/guide/vision.md) recommends running it, converted to channels-last (the model with
``model.to(memory_format=torch.channels_last)`` and the input with
``x.contiguous(memory_format=torch.channels_last)``), against torchvision as its
documentation runs it (contiguous, NCHW). Two rows per workload are reported
without a target: both libraries in the same layout (contiguous, then
channels-last), where the ratio should be 1 up to noise.

Peers and timing are ``benchmarks/harness.py``'s. Ratio = peer time / our time
(above 1: we are faster).

Run from the repository root::

    .venv/bin/python benchmarks/models.py [--repeats N] [--min-time S] [--json PATH]
        [--only eval,train,...] [--threads 1,2] [--peers-python .venv-peers/bin/python]
"""

from __future__ import annotations

import os
import site

# Under the peers' virtualenv: trivium from the project's environment, on the path
# before trivium imports.
if os.environ.get("TRIVIUM_PROJECT_SITE"):
    site.addsitedir(os.environ["TRIVIUM_PROJECT_SITE"])

import argparse
import copy
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import detection
import harness
import torch
from torch import nn

from trivium.vision import models

CL = torch.channels_last
NCHW = torch.contiguous_format
LAYOUTS = {"channels-last": CL, "contiguous": NCHW}
# The forward workloads (8x3x224x224, inference mode): workload -> (builder, label).
FORWARDS = {
    "eval": ("resnet50", "ResNet-50"),
    "mobilenet_v2": ("mobilenet_v2", "MobileNetV2"),
    "mobilenet_v3_large": ("mobilenet_v3_large", "MobileNetV3-Large"),
    "efficientnet_b0": ("efficientnet_b0", "EfficientNet-B0"),
    "efficientnet_v2_s": ("efficientnet_v2_s", "EfficientNetV2-S"),
    "regnet_y_400mf": ("regnet_y_400mf", "RegNetY-400MF"),
    "convnext_tiny": ("convnext_tiny", "ConvNeXt-T"),
    "vit_b_16": ("vit_b_16", "ViT-B/16"),
    "swin_t": ("swin_t", "Swin-T"),
    "maxvit_t": ("maxvit_t", "MaxViT-T"),
}


@dataclass(frozen=True)
class Family:
    """An eval workload of a detection, segmentation or video builder.

    ``kind`` is the subpackage of ``models`` (and of torchvision's) holding the builder,
    ``shape`` the input's (one image of ``shape`` for detection), ``kwargs`` what both
    builders are given beside ``weights=None`` (and ``weights_backbone=None``).
    """

    kind: str
    label: str
    shape: tuple[int, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_roi_align(self) -> bool:
        """Whether torchvision's side calls its C++ ``roi_align`` (the R-CNNs)."""
        return "box_score_thresh" in self.kwargs


# Random weights score every class near its prior: thresholds below it leave detections.
_RCNN = {"min_size": 256, "max_size": 256, "box_score_thresh": 0.005, "box_detections_per_img": 20}
_ONE_STAGE = {"min_size": 256, "max_size": 256, "score_thresh": 0.005}
FAMILIES = {
    "fasterrcnn_resnet50_fpn": Family("detection", "Faster R-CNN R50-FPN", (3, 256, 256), _RCNN),
    "retinanet_resnet50_fpn": Family("detection", "RetinaNet R50-FPN", (3, 256, 256), _ONE_STAGE),
    "fcos_resnet50_fpn": Family("detection", "FCOS R50-FPN", (3, 256, 256), _ONE_STAGE),
    "ssdlite320_mobilenet_v3_large": Family("detection", "SSDlite320 MobileNetV3", (3, 256, 256)),
    "maskrcnn_resnet50_fpn": Family("detection", "Mask R-CNN R50-FPN", (3, 256, 256), _RCNN),
    "fcn_resnet50": Family("segmentation", "FCN R50", (1, 3, 160, 160)),
    "deeplabv3_mobilenet_v3_large": Family(
        "segmentation", "DeepLabV3 MobileNetV3", (1, 3, 160, 160)
    ),
    "lraspp_mobilenet_v3_large": Family("segmentation", "LR-ASPP MobileNetV3", (1, 3, 160, 160)),
    "r3d_18": Family("video", "R3D-18", (1, 3, 8, 96, 96)),
    "r2plus1d_18": Family("video", "R(2+1)D-18", (1, 3, 8, 96, 96)),
    "s3d": Family("video", "S3D", (1, 3, 16, 224, 224)),
}
WORKLOADS = ["eval", "train", *list(FORWARDS)[1:], *FAMILIES]


def in_layout(model: nn.Module, fmt: torch.memory_format) -> nn.Module:
    """A copy of `model` (same weights) with its 4-d weights in memory format `fmt`."""
    return copy.deepcopy(model).to(memory_format=fmt)


def infer(model: nn.Module, x: torch.Tensor) -> Callable[[], torch.Tensor]:
    """Inference on `x`."""

    def run() -> torch.Tensor:
        with torch.inference_mode():
            return model(x)

    return run


def train_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> Callable[[], torch.Tensor]:
    """One SGD step (momentum 0.9) of `model` on `(x, y)`; returns the loss."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def step() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def sides_for(
    workload: str, tv: Any, checks: list[str]
) -> tuple[str, dict[str, Callable[[], torch.Tensor]]]:
    """The workload's label and its calls: ours and torchvision's, in both layouts."""
    torch.manual_seed(0)
    if workload in FORWARDS:
        builder, name = FORWARDS[workload]
        ours, theirs = getattr(models, builder)().eval(), getattr(tv.models, builder)().eval()
        x, label = torch.rand(8, 3, 224, 224), f"{name} eval forward, 8x3x224x224"
    else:
        ours, theirs = models.resnet18(), tv.models.resnet18()
        x, label = torch.rand(16, 3, 128, 128), "ResNet-18 training step, 16x3x128x128"
    theirs.load_state_dict(ours.state_dict())
    y = torch.randint(0, 1000, (x.shape[0],), generator=torch.Generator().manual_seed(0))
    calls = {}
    for lib, model in (("ours", ours), ("torchvision", theirs)):
        for tag, fmt in LAYOUTS.items():
            net, inp = in_layout(model, fmt), x.contiguous(memory_format=fmt)
            calls[f"{lib} {tag}"] = (
                infer(net, inp) if workload in FORWARDS else train_step(net, inp, y)
            )
    # The same result from the timed pair before timing it (first call: same weights).
    a, b = calls["ours channels-last"](), calls["torchvision contiguous"]()
    checks.append(
        f"{label}: max |ours channels-last - torchvision contiguous| = "
        f"{float((a - b).abs().max()):.1e} ({'logits' if workload in FORWARDS else 'loss'})"
    )
    return label, calls


def family_pair(name: str, family: Family, tv: Any) -> tuple[nn.Module, nn.Module]:
    """Our builder `name` and torchvision's, in eval mode, holding the same weights."""
    kwargs = dict(family.kwargs, weights=None)
    if family.kind != "video":  # torchvision's default would download ImageNet weights
        kwargs["weights_backbone"] = None
    torch.manual_seed(0)
    ours = getattr(getattr(models, family.kind), name)(**kwargs)
    theirs = getattr(getattr(tv.models, family.kind), name)(**kwargs)
    theirs.load_state_dict(ours.state_dict(), strict=True)
    return ours.eval(), theirs.eval()


def family_input(family: Family) -> Any:
    """The workload's input: a list of one image for detection, else a batch."""
    x = torch.rand(family.shape, generator=torch.Generator().manual_seed(0))
    return [x] if family.kind == "detection" else x


def family_layouts(family: Family) -> dict[str, torch.memory_format]:
    """The two layouts timed: contiguous and channels-last (3-d for the video models)."""
    last = torch.channels_last_3d if family.kind == "video" else CL
    return {"channels-last": last, "contiguous": NCHW}


def difference(family: Family, a: Any, b: Any) -> str:
    """How far two outputs of `family`'s models are apart, in words."""
    if family.kind == "detection":
        return detection.compare(a, b)
    if family.kind == "segmentation":
        a, b = a["out"], b["out"]
    return f"max |d| {float((a - b).abs().max()):.1e} (shape {tuple(a.shape)})"


def family_rows(
    name: str, tv: Any, args: argparse.Namespace, checks: list[str]
) -> list[harness.Row]:
    """Rows of the eval of builder `name` at every thread count."""
    family = FAMILIES[name]
    ours, theirs = family_pair(name, family, tv)
    x = family_input(family)
    calls = {}
    for lib, model in (("ours", ours), ("torchvision", theirs)):
        for tag, fmt in family_layouts(family).items():
            inp = x if family.kind == "detection" else x.contiguous(memory_format=fmt)
            calls[f"{lib} {tag}"] = infer(in_layout(model, fmt), inp)
    shape = "x".join(map(str, family.shape))
    label = (
        f"{family.label} ({name}) eval, {'1 image ' if family.kind == 'detection' else ''}{shape}"
    )
    a, b = calls["ours channels-last"](), calls["torchvision contiguous"]()
    checks.append(
        f"{label}: ours channels-last vs torchvision contiguous: {difference(family, a, b)}"
    )
    return harness.layout_rows_by_threads(label, calls, args)


def workload_rows(
    workload: str, tv: Any, args: argparse.Namespace, checks: list[str]
) -> list[harness.Row]:
    """Rows of one workload at every thread count."""
    if workload in FAMILIES:
        return family_rows(workload, tv, args, checks)
    label, calls = sides_for(workload, tv, checks)
    return harness.layout_rows_by_threads(label, calls, args)


def torchvision_native(tv: Any) -> bool:
    """Whether torchvision's C++ ``nms`` and ``roi_align`` run here."""
    try:
        tv.ops.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
        tv.ops.roi_align(torch.zeros(1, 1, 2, 2), [torch.zeros(1, 4)], 1)
    except Exception:  # its extension did not load: the ops are missing
        return False
    return True


def detection_ops(tv: Any, only: Sequence[str], argv: Sequence[str] | None, peers: str) -> str:
    """Make torchvision's detection ops available for the detection workloads in `only`.

    Re-runs the script under `peers` when they do not load here; where they load
    nowhere, torchvision's ``nms`` runs trivium's kernel and the R-CNN workloads are
    taken out of `only` (in place). Returns the header's line on the ops.
    """
    wanted = [w for w in only if w in FAMILIES and FAMILIES[w].kind == "detection"]
    if not wanted or torchvision_native(tv):
        return "torchvision's C++ nms and roi_align"
    harness.rerun_in_peers(__file__, peers, argv)
    detection.share_nms(tv)
    for w in [w for w in wanted if FAMILIES[w].needs_roi_align]:
        only.remove(w)
    return f"{detection.NMS_NOTE}; no C++ roi_align: the R-CNN rows are left out"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    return harness.parse_thread_counts_args(
        __doc__.splitlines()[0], WORKLOADS, argv, 5, peers_python=".venv-peers/bin/python"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads and print the table (and JSON with --json)."""
    run = harness.Session(parse_args(argv))
    tv = harness.peers.import_torchvision()
    info = harness.machine_info(run.args.threads, torchvision=harness.version(tv))
    if tv is not None:
        info["detection ops"] = detection_ops(tv, run.args.only, argv, run.args.peers_python)
    run.header("trivium.vision.models benchmark", info)
    if tv is None:
        print("torchvision is not installed: nothing to compare against")
        return 0
    for workload in WORKLOADS:
        if workload in run.args.only:
            run.rows += workload_rows(workload, tv, run.args, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
