"""Speed of the detection operators of ``trivium.vision.ops`` against torchvision's, in one process.

Workloads:

1. ``batched_nms``: 10,000 boxes of 80 categories at IoU 0.5, as a detector's
   post-processing sees them: boxes jittered around 300 objects in an 800x800
   image (so there is real suppression), each object's category on most of its
   boxes, random scores.
2. ``nms``: the same boxes, one category.
3. ``box_iou``: 1,000 x 1,000 float32 boxes.
4. ``roi_align`` / ``roi_pool``: 1,000 RoIs (16 to 316 px boxes in an 800x1088 image)
   over a 2x256x50x68 float32 feature map (stride 16), output 7x7, RoI Align with
   ``sampling_ratio=2``; forward, and backward (the backward op on a fixed gradient).
5. ``deform_conv2d``: a modulated 3x3 deformable convolution, 64 -> 64 channels over
   2x64x64x64 with padding 1 (a DCNv2 layer of a detection backbone): forward, and
   forward plus backward to input, offset, weight and mask.

Peers: torchvision's C++ ``nms`` / ``batched_nms`` where its extension loads (run
with the peers' virtualenv, ``.venv-peers``, for that: the script re-runs itself
there when torchvision's C++ ops do not load here and that virtualenv exists). Where
it does not (a CUDA build beside a CPU torch), the NMS rows compare against a
plain vectorised torch NMS (sort, then one IoU row per kept box), used two ways:
over boxes offset by category (the usual pure-torch batched NMS), and driven by
torchvision's own pure-Python ``batched_nms`` (its per-category loop at this
size). The header says which peer ran. ``box_iou`` is torchvision's pure-Python
function either way. The RoI and deform_conv2d rows need torchvision's C++ ops and are
left out without them. Every peer's result is checked equal to ours before timing.

Peers and timing are ``benchmarks/harness.py``'s. Ratio = peer time / our time
(above 1: we are faster).

Run from the repository root::

    .venv/bin/python benchmarks/detection_ops.py [--repeats N] [--min-time S] [--json PATH]
        [--only batched_nms,nms,box_iou,roi_align,roi_pool,deform_conv2d] [--threads N]
        [--peers-python .venv-peers/bin/python]
"""

from __future__ import annotations

import os
import site

# Under the peers' virtualenv: trivium from the project's environment, on the path
# before trivium imports.
if os.environ.get("TRIVIUM_PROJECT_SITE"):
    site.addsitedir(os.environ["TRIVIUM_PROJECT_SITE"])

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import harness
import torch

from trivium.vision import ops

WORKLOADS = ["batched_nms", "nms", "box_iou", "roi_align", "roi_pool", "deform_conv2d"]
IOU_THRESHOLD = 0.5


def detections(n: int = 10_000, objects: int = 300, classes: int = 80, seed: int = 0):
    """Boxes jittered around `objects` objects, their categories and random scores."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.rand(objects, 2, generator=g) * 800
    sizes = torch.rand(objects, 2, generator=g) * 180 + 20
    object_class = torch.randint(0, classes, (objects,), generator=g)
    which = torch.randint(0, objects, (n,), generator=g)
    wh = sizes[which] * (1 + 0.2 * torch.randn(n, 2, generator=g)).clamp(min=0.3)
    xy = centres[which] + 0.15 * sizes[which] * torch.randn(n, 2, generator=g)
    boxes = torch.cat((xy - wh / 2, xy + wh / 2), dim=1)
    stray = torch.rand(n, generator=g) < 0.3  # a third of the boxes guess another category
    idxs = torch.where(stray, torch.randint(0, classes, (n,), generator=g), object_class[which])
    return boxes, torch.rand(n, generator=g), idxs


def vectorised_nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """The plain pure-torch NMS: sort, then one vectorised IoU row per kept box."""
    order = torch.sort(scores, stable=True, descending=True).indices
    x1, y1, x2, y2 = boxes.unbind(1)
    areas = (x2 - x1) * (y2 - y1)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = (torch.minimum(x2[i], x2[rest]) - torch.maximum(x1[i], x1[rest])).clamp(min=0)
        h = (torch.minimum(y2[i], y2[rest]) - torch.maximum(y1[i], y1[rest])).clamp(min=0)
        inter = w * h
        iou = inter / (areas[i] + areas[rest] - inter)
        order = rest[~(iou > iou_threshold)]
    return torch.stack(keep) if keep else torch.empty(0, dtype=torch.int64)


def vectorised_batched_nms(boxes, scores, idxs, iou_threshold) -> torch.Tensor:
    """The usual pure-torch batched NMS: boxes offset by category, one NMS."""
    offsets = idxs.to(boxes) * (boxes.max() + 1)
    return vectorised_nms(boxes + offsets[:, None], scores, iou_threshold)


def torchvision_native(tv: Any) -> bool:
    """Whether torchvision's C++ nms runs here."""
    try:
        tv.ops.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
    except Exception:  # its extension did not load: the op is missing
        return False
    return True


def tv_batched_over(tv: Any, nms_fn: Callable) -> Callable:
    """torchvision's pure-Python batched_nms with `nms_fn` as the NMS it calls."""

    def run(boxes, scores, idxs, iou_threshold):
        saved = tv.ops.boxes.nms
        tv.ops.boxes.nms = nms_fn
        try:
            return tv.ops.boxes.batched_nms(boxes, scores, idxs, iou_threshold)
        finally:
            tv.ops.boxes.nms = saved

    return run


def check_same(label: str, ours: torch.Tensor, theirs: torch.Tensor, checks: list[str]) -> None:
    same = ours.shape == theirs.shape and bool((ours == theirs).all())
    checks.append(f"{label}: {'same' if same else 'DIFFERENT'} result ({ours.numel()} kept)")


def nms_rows(workload: str, tv: Any, native: bool, args, checks: list[str]) -> list[harness.Row]:
    """Rows of the nms or batched_nms workload against every peer that runs here."""
    boxes, scores, idxs = detections()
    if workload == "batched_nms":
        label = "batched_nms, 10k boxes, 80 categories"
        calls = {"ours": lambda: ops.batched_nms(boxes, scores, idxs, IOU_THRESHOLD)}
        if native:
            peers = {
                "torchvision C++": lambda: tv.ops.batched_nms(boxes, scores, idxs, IOU_THRESHOLD)
            }
        else:
            peers = {
                "vectorised torch (offset trick)": lambda: vectorised_batched_nms(
                    boxes, scores, idxs, IOU_THRESHOLD
                ),
                "torchvision batched_nms over vectorised torch nms": lambda: tv_batched_over(
                    tv, vectorised_nms
                )(boxes, scores, idxs, IOU_THRESHOLD),
            }
    else:
        label = "nms, 10k boxes"
        calls = {"ours": lambda: ops.nms(boxes, scores, IOU_THRESHOLD)}
        if native:
            peers = {"torchvision C++": lambda: tv.ops.nms(boxes, scores, IOU_THRESHOLD)}
        else:
            peers = {"vectorised torch": lambda: vectorised_nms(boxes, scores, IOU_THRESHOLD)}
    calls.update(peers)
    expected = calls["ours"]()
    for name in peers:
        check_same(f"{label}: {name} vs ours", expected, calls[name](), checks)
    timings = harness.measure(
        [harness.Side(name, fn) for name, fn in calls.items()], args.repeats, args.min_time
    )
    return [harness.row_from(label, timings, "ours", name) for name in peers]


def box_iou_rows(tv: Any, args, checks: list[str]) -> list[harness.Row]:
    """box_iou on 1000 x 1000 boxes against torchvision's."""
    a, _, _ = detections(1000, seed=1)
    b, _, _ = detections(1000, seed=2)
    label = "box_iou, 1000 x 1000 float32"
    diff = float((ops.box_iou(a, b) - tv.ops.box_iou(a, b)).abs().max())
    checks.append(f"{label}: max |ours - torchvision| = {diff:.1e}")
    sides = [
        harness.Side("ours", lambda: ops.box_iou(a, b)),
        harness.Side("tv", lambda: tv.ops.box_iou(a, b)),
    ]
    timings = harness.measure(sides, args.repeats, args.min_time)
    return [harness.row_from(label, timings, "ours", "tv", "torchvision (Python)", target=1.0)]


def roi_inputs(k: int = 1000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A 2x256x50x68 feature map (stride 16 of 800x1088) and k [K, 5] RoIs of 16-316 px."""
    g = torch.Generator().manual_seed(seed)
    features = torch.randn(2, 256, 50, 68, generator=g)
    xy = torch.rand(k, 2, generator=g) * torch.tensor([1088.0, 800.0])
    wh = torch.rand(k, 2, generator=g) * 300 + 16
    index = torch.randint(0, 2, (k, 1), generator=g).float()
    return features, torch.cat((index, xy, xy + wh), dim=1)


def check_close(label: str, ours: torch.Tensor, theirs: torch.Tensor, checks: list[str]) -> None:
    diff = float((ours.double() - theirs.double()).abs().max()) if ours.numel() else 0.0
    checks.append(f"{label}: max |ours - torchvision| = {diff:.1e}")


def roi_rows(workload: str, tv: Any, args, checks: list[str]) -> list[harness.Row]:
    """RoI Align or RoI Pool, forward and backward, against torchvision's C++ kernels."""
    x, rois = roi_inputs()
    n, c, h, w = x.shape
    scale, size = 1 / 16, 7
    ours_ops, their_ops = torch.ops.trivium, torch.ops.torchvision
    grad = torch.randn(rois.shape[0], c, size, size, generator=torch.Generator().manual_seed(1))
    if workload == "roi_align":
        fwd_args = (x, rois, scale, size, size, 2, False)
        bwd_args = (grad, rois, scale, size, size, n, c, h, w, 2, False)
        forward = {
            "ours": lambda: ours_ops.roi_align(*fwd_args),
            "tv": lambda: their_ops.roi_align(*fwd_args),
        }
        backward = {
            "ours": lambda: ours_ops.roi_align_backward(*bwd_args),
            "tv": lambda: their_ops._roi_align_backward(*bwd_args),
        }
        label = "roi_align, 1000 RoIs, 256x50x68, 7x7, sampling_ratio 2"
    else:
        _, argmax = ours_ops.roi_pool(x, rois, scale, size, size)
        _, tv_argmax = their_ops.roi_pool(x, rois, scale, size, size)
        forward = {
            "ours": lambda: ours_ops.roi_pool(x, rois, scale, size, size)[0],
            "tv": lambda: their_ops.roi_pool(x, rois, scale, size, size)[0],
        }
        backward = {
            "ours": lambda: ours_ops.roi_pool_backward(grad, rois, argmax, n, c, h, w),
            "tv": lambda: their_ops._roi_pool_backward(
                grad, rois, tv_argmax, scale, size, size, n, c, h, w
            ),
        }
        label = "roi_pool, 1000 RoIs, 256x50x68, 7x7"
    rows = []
    for direction, calls in (("forward", forward), ("backward", backward)):
        check_close(f"{label} {direction}", calls["ours"](), calls["tv"](), checks)
        sides = [harness.Side(name, fn) for name, fn in calls.items()]
        timings = harness.measure(sides, args.repeats, args.min_time)
        rows.append(
            harness.row_from(f"{label}, {direction}", timings, "ours", "tv", "torchvision C++")
        )
    return rows


def deform_conv_rows(tv: Any, args, checks: list[str]) -> list[harness.Row]:
    """A DCNv2 layer, forward and forward + backward, against torchvision's C++ kernel."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 64, 64, 64, generator=g)
    weight = torch.randn(64, 64, 3, 3, generator=g) * 0.05
    offset = torch.randn(2, 18, 64, 64, generator=g) * 2
    mask = torch.rand(2, 9, 64, 64, generator=g)
    bias = torch.randn(64, generator=g)
    label = "deform_conv2d, 2x64x64x64, 3x3, 64 out, with mask"

    def forward(fn: Callable) -> Callable[[], torch.Tensor]:
        return lambda: fn(x, offset, weight, bias, padding=(1, 1), mask=mask)

    def both(fn: Callable) -> Callable[[], torch.Tensor]:
        def run() -> torch.Tensor:
            leaves = [t.clone().requires_grad_() for t in (x, offset, weight, mask)]
            out = fn(leaves[0], leaves[1], leaves[2], bias, padding=(1, 1), mask=leaves[3])
            out.sum().backward()
            return torch.cat([t.grad.flatten() for t in leaves])

        return run

    rows = []
    for direction, make in (("forward", forward), ("forward + backward", both)):
        calls = {"ours": make(ops.deform_conv2d), "tv": make(tv.ops.deform_conv2d)}
        check_close(f"{label} {direction}", calls["ours"](), calls["tv"](), checks)
        sides = [harness.Side(name, fn) for name, fn in calls.items()]
        timings = harness.measure(sides, args.repeats, args.min_time)
        rows.append(
            harness.row_from(f"{label}, {direction}", timings, "ours", "tv", "torchvision C++")
        )
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = harness.benchmark_parser(__doc__.splitlines()[0], WORKLOADS, threads=1)
    parser.add_argument(
        "--peers-python",
        default=".venv-peers/bin/python",
        help="the peers' virtualenv, where torchvision's C++ ops load ('' : stay here)",
    )
    return harness.parse_benchmark_args(parser, WORKLOADS, argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads and print the table (and JSON with --json)."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    run = harness.Session(args)
    tv = harness.peers.import_torchvision()
    native = tv is not None and torchvision_native(tv)
    if not native:
        harness.rerun_in_peers(__file__, args.peers_python, argv)
    peer = (
        "torchvision C++ nms"
        if native
        else "vectorised torch NMS (torchvision's C++ nms does not load)"
    )
    info = harness.machine_info(args.threads, torchvision=harness.version(tv), **{"NMS peer": peer})
    run.header("trivium.vision.ops detection benchmark", info)
    if tv is None:
        print("torchvision is not installed: nothing to compare against")
        return 0
    for workload in WORKLOADS:
        if workload not in args.only:
            continue
        if workload == "box_iou":
            run.rows += box_iou_rows(tv, args, run.checks)
        elif workload in ("roi_align", "roi_pool", "deform_conv2d"):
            if native and workload == "deform_conv2d":
                run.rows += deform_conv_rows(tv, args, run.checks)
            elif native:
                run.rows += roi_rows(workload, tv, args, run.checks)
            else:
                print(f"{workload}: left out (torchvision's C++ ops do not load here)")
        else:
            run.rows += nms_rows(workload, tv, native, args, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
