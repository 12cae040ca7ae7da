"""Per-image tensor pipeline: ours against hand-written torch ops and torchvision v2, one process.

The pipeline is RandomResizedCrop(224) + RandomHorizontalFlip + ToDtype(float32,
scale=True) + Normalize, applied to one decoded ``[3, H, W]`` uint8 image per call
(the 64 ImageNet-sized JPEGs of ``benchmarks/transforms.py``, decoded once). Sides:

* ``ours``: ``trivium.vision.transforms.Compose`` of the four transforms;
* ``torch``: the same steps written by hand with torch ops: the box drawn with
  torchvision's algorithm from a ``torch.Generator``, a slice, ``F.interpolate``
  (bilinear, antialiased, on the uint8 image), ``flip``, ``to(float32)`` and in-place
  ``div_`` / ``sub_`` / ``div_``;
* ``tv``: the same pipeline from ``torchvision.transforms.v2`` (its pure-Python
  transforms, see ``tests/peers.py``).

Timing is ``benchmarks/harness.py``'s. Ratio = peer time / our time (above 1: we
are faster).

Run from the repository root::

    .venv/bin/python benchmarks/transforms_pipeline.py [--repeats N] [--min-time S]
        [--json PATH] [--threads N]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence

import harness
import torch
import torch.nn.functional as F
from transforms import MEAN, STD, cycler, make_jpegs, ours_pipeline, tv_pipeline

from trivium.vision.io import decode_jpeg

WORKLOAD = "RandomResizedCrop 224 + flip + ToDtype + Normalize, one [3, H, W] uint8 image"


def hand_written(generator: torch.Generator) -> Callable[[torch.Tensor], torch.Tensor]:
    """The pipeline as torch ops written by hand (what a user would write without a library)."""
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    log_lo, log_hi = math.log(3 / 4), math.log(4 / 3)

    def box(height: int, width: int) -> tuple[int, int, int, int]:
        area = height * width
        for _ in range(10):
            target = area * torch.empty(1).uniform_(0.08, 1.0, generator=generator).item()
            aspect = math.exp(torch.empty(1).uniform_(log_lo, log_hi, generator=generator).item())
            w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
            if 0 < w <= width and 0 < h <= height:
                top = int(torch.randint(0, height - h + 1, (1,), generator=generator))
                left = int(torch.randint(0, width - w + 1, (1,), generator=generator))
                return top, left, h, w
        side = min(height, width)
        return (height - side) // 2, (width - side) // 2, side, side

    def run(img: torch.Tensor) -> torch.Tensor:
        top, left, h, w = box(img.shape[-2], img.shape[-1])
        crop = img[:, top : top + h, left : left + w].unsqueeze(0)
        x = F.interpolate(crop, size=(224, 224), mode="bilinear", antialias=True)[0]
        if torch.rand(1, generator=generator).item() < 0.5:
            x = x.flip(-1)
        return x.to(torch.float32).div_(255).sub_(mean).div_(std)

    return run


def bench(
    images: Sequence[torch.Tensor], tv: object | None, args: argparse.Namespace
) -> list[harness.Row]:
    """Time the three sides on the same image sequence, interleaved."""
    ours = ours_pipeline(torch.Generator().manual_seed(0))
    torch_ops = hand_written(torch.Generator().manual_seed(0))
    feeds = {name: cycler(images) for name in ("ours", "torch", "tv")}
    sides = [
        harness.Side("ours", lambda: ours(feeds["ours"]())),
        harness.Side("torch", lambda: torch_ops(feeds["torch"]())),
    ]
    if tv is not None:
        theirs = tv_pipeline(tv)
        sides.append(harness.Side("tv", lambda: theirs(feeds["tv"]())))
    t = harness.measure(sides, args.repeats, args.min_time)
    return [
        harness.row_from(WORKLOAD, t, "ours", "torch", "hand-written torch ops", target=1.0),
        harness.row_from(WORKLOAD, t, "ours", "tv", "torchvision v2", target=1.0),
    ]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = harness.benchmark_parser(
        __doc__.splitlines()[0], ["pipeline"], min_time=0.3, threads=1
    )
    return harness.parse_benchmark_args(parser, ["pipeline"], argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workload and print the table (and JSON with --json)."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    run = harness.Session(args)
    tv = harness.peers.import_torchvision()
    info = harness.machine_info(args.threads, torchvision=harness.version(tv))
    run.header("per-image tensor pipeline benchmark", info)
    images = [decode_jpeg(d) for d in make_jpegs()]
    run.rows += bench(images, tv, args)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
