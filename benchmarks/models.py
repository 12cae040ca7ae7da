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
        [--only eval,train] [--threads 1,2]
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
WORKLOADS = ["eval", "train", *list(FORWARDS)[1:]]


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


def workload_rows(
    workload: str, tv: Any, args: argparse.Namespace, checks: list[str]
) -> list[harness.Row]:
    """Rows of one workload at every thread count."""
    label, calls = sides_for(workload, tv, checks)
    return harness.layout_rows_by_threads(label, calls, args)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    return harness.parse_thread_counts_args(__doc__.splitlines()[0], WORKLOADS, argv, 5)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads and print the table (and JSON with --json)."""
    run = harness.Session(parse_args(argv))
    tv = harness.peers.import_torchvision()
    run.header(
        "trivium.vision.models benchmark",
        harness.machine_info(run.args.threads, torchvision=harness.version(tv)),
    )
    if tv is None:
        print("torchvision is not installed: nothing to compare against")
        return 0
    for workload in WORKLOADS:
        if workload in run.args.only:
            run.rows += workload_rows(workload, tv, run.args, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
