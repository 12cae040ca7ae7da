"""Memory-leak check of the image decoders on corrupt and valid files.

Decodes every file in ``tests/assets/images/corrupt`` thousands of times through
``trivium.vision.io`` (strict and ``strict=False``, full size, scaled, a region, a
mode that takes the row-conversion path, header only, and a batch holding a
corrupt item), catching ``DecodeError`` and anything else the library raises, plus
a few valid JPEG/PNG files (decode and encode). The process RSS (from
``/proc/self/statm``) is read after a warm-up and at checkpoints to the end; the
script exits 1 if it grew by more than ``--max-growth-mib`` (default 20 MiB).

Run from the repository root::

    .venv/bin/python benchmarks/leak_check.py [--iterations 3000] [--max-growth-mib 20]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import math
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import harness  # noqa: F401  (puts tests/ on sys.path, for image_assets)
import torch
from image_assets import CORRUPT_DIR, JPEG_DIR, PNG_DIR

import trivium.vision.io as vio
from trivium.core.errors import DecodeError

VALID = [
    *(JPEG_DIR / name for name in ("tv-grace_hopper_517x606.jpg", "jd-moz-jpg-progressive.jpg",
                                   "tv-cmyk_pytorch.jpg")),
    *(PNG_DIR / name for name in ("pil-hopper.png", "basi6a16.png", "tbrn2c08.png")),
]  # fmt: skip
MIB = 1 << 20

Op = Callable[[bytes], object]


def trim_heap() -> None:
    """Collect garbage and hand free malloc memory back to the OS (glibc), for steady readings.

    Without it the RSS swings by tens of MiB as glibc keeps or returns freed blocks
    (a damaged file here decodes to an 18 MB image).
    """
    gc.collect()
    with contextlib.suppress(AttributeError, OSError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def jpeg_ops() -> dict[str, Op]:
    """The JPEG calls run on each JPEG input, by name."""
    return {
        "strict": lambda b: vio.decode_jpeg(b),
        "lenient": lambda b: vio.decode_jpeg(b, strict=False),
        "scale 1/4": lambda b: vio.decode_jpeg(b, scale=Fraction(1, 4), strict=False),
        "roi": lambda b: vio.decode_jpeg(b, roi=(1, 1, 8, 8), strict=False),
        "gray+alpha": lambda b: vio.decode_jpeg(b, vio.ImageReadMode.GRAY_ALPHA, strict=False),
        "info": lambda b: vio.image_info(b),
    }


def png_ops() -> dict[str, Op]:
    """The PNG calls run on each PNG input, by name."""
    return {
        "strict": lambda b: vio.decode_png(b),
        "lenient": lambda b: vio.decode_png(b, strict=False),
        "gray": lambda b: vio.decode_png(b, vio.ImageReadMode.GRAY, strict=False),
        "float": lambda b: vio.decode_png(b, dtype=torch.float32, strict=False),
        "info": lambda b: vio.image_info(b),
    }


def ops_for(path: Path) -> dict[str, Op]:
    """The calls for a file, chosen by its extension (decode_image added for all)."""
    ops = jpeg_ops() if path.suffix.lower() in (".jpg", ".jpeg") else png_ops()
    ops["decode_image"] = lambda b: vio.decode_image(b, strict=False)
    return ops


def run_op(op: Op, data: bytes) -> str:
    """Run one call; the outcome is "ok" or the name of the exception raised."""
    try:
        op(data)
    except DecodeError as e:
        return type(e).__name__
    except Exception as e:  # anything else the library lets through is worth a look
        return f"{type(e).__module__}.{type(e).__name__}"
    return "ok"


def round_trip(data: bytes) -> None:
    """Decode a valid image, then encode it back (exercises the encoders too)."""
    image = vio.decode_image(data, vio.ImageReadMode.RGB, dtype=torch.uint8)
    vio.encode_jpeg(image, quality=80)
    vio.encode_png(image, compression_level=1)


@dataclass
class Task:
    """One call on one input, run every `stride`-th iteration."""

    file: str
    op: str
    fn: Op
    data: bytes
    stride: int = 1


def build_tasks(corrupt: list[Path], valid: list[Path]) -> list[Task]:
    """Every call on every corrupt file, a batch with a corrupt item, and the valid files."""
    tasks = [
        Task(path.name, name, op, path.read_bytes())
        for path in corrupt
        for name, op in ops_for(path).items()
    ]
    good_jpeg, bad_jpeg = valid[0].read_bytes(), corrupt[0].read_bytes()
    batch = [good_jpeg, bad_jpeg, good_jpeg]
    tasks.append(Task("<batch>", "decode_jpeg(list)", lambda _: vio.decode_jpeg(batch), b""))
    for path in valid:
        for name, op in ops_for(path).items():
            tasks.append(Task(path.name, name, op, path.read_bytes()))
        tasks.append(Task(path.name, "round trip", round_trip, path.read_bytes()))
    return tasks


def set_strides(tasks: list[Task], budget_s: float) -> None:
    """Run a call every k-th iteration when one call costs k times `budget_s` (warm)."""
    for task in tasks:
        run_op(task.fn, task.data)
        start = time.perf_counter()
        run_op(task.fn, task.data)
        cost = time.perf_counter() - start
        task.stride = max(1, math.ceil(cost / budget_s))


def one_iteration(tasks: list[Task], i: int, outcomes: Counter[tuple[str, str, str]]) -> None:
    """Run the tasks due at iteration `i`, counting their outcomes."""
    for task in tasks:
        if i % task.stride == 0:
            outcomes[(task.file, task.op, run_op(task.fn, task.data))] += 1


def summarize(
    outcomes: Counter[tuple[str, str, str]], tasks: list[Task], corrupt_only: bool
) -> list[str]:
    """One Markdown row per file: each call's outcome and how many times it ran."""
    valid_names = {t.file for t in tasks if t.op == "round trip"}
    per_file: dict[str, list[str]] = {}
    for (name, op, outcome), count in sorted(outcomes.items()):
        if corrupt_only and name in valid_names:
            continue
        per_file.setdefault(name, []).append(f"{op}: {outcome} ×{count}")
    lines = ["| file | outcome of each call ×times run |", "|---|---|"]
    lines += [f"| {name} | {'; '.join(cells)} |" for name, cells in per_file.items()]
    return lines


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3000, help="passes over the files")
    parser.add_argument("--warmup", type=int, default=50, help="passes before the baseline")
    parser.add_argument(
        "--budget-ms",
        type=float,
        default=0.5,
        help="a call costing k times this runs every k-th pass (keeps the run short)",
    )
    parser.add_argument("--max-growth-mib", type=float, default=20.0, help="allowed RSS growth")
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.warmup < 1 or args.budget_ms <= 0:
        parser.error("--iterations, --warmup and --budget-ms must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the loop, print the RSS table and outcomes; 1 if RSS grew past the bound."""
    args = parse_args(argv)
    corrupt = sorted(p for p in CORRUPT_DIR.iterdir() if p.is_file())
    tasks = build_tasks(corrupt, VALID)
    warnings.simplefilter("ignore")  # strict=False warns on every damaged decode
    torch.set_num_threads(1)  # no idle OpenMP workers spinning next to the loop

    started = time.perf_counter()
    set_strides(tasks, args.budget_ms / 1e3)
    for i in range(args.warmup):
        one_iteration(tasks, i, Counter())
    trim_heap()
    baseline = rss_bytes()
    checkpoints = {max(1, args.iterations * q // 4) for q in (1, 2, 3, 4)}
    table = [("after warm-up", baseline)]
    outcomes: Counter[tuple[str, str, str]] = Counter()
    for i in range(1, args.iterations + 1):
        one_iteration(tasks, i, outcomes)
        if i in checkpoints:
            trim_heap()
            table.append((f"after {i} iterations", rss_bytes()))
    elapsed = time.perf_counter() - started

    calls = sum(outcomes.values())
    strided = sorted({f"{t.file} {t.op} every {t.stride}" for t in tasks if t.stride > 1})
    print(
        f"# decoder leak check: {len(corrupt)} corrupt + {len(VALID)} valid files, "
        f"{len(tasks)} calls per pass, {args.warmup} warm-up + {args.iterations} passes, "
        f"{calls} calls counted, {elapsed:.1f} s\n"
    )
    print("| point | RSS after malloc_trim (MiB) | growth since warm-up (MiB) |")
    print("|---|---:|---:|")
    for label, rss in table:
        print(f"| {label} | {rss / MIB:.1f} | {(rss - baseline) / MIB:+.2f} |")
    growth = (table[-1][1] - baseline) / MIB
    print()
    print("\n".join(summarize(outcomes, tasks, corrupt_only=True)))
    if strided:
        print(
            f"\ncalls run only every k-th pass (cost > {args.budget_ms} ms): {'; '.join(strided)}"
        )
    unexpected = sorted({o for (_, _, o) in outcomes if o != "ok" and "." in o})
    failed_valid = sorted(
        {f"{f} {op}: {o}" for (f, op, o) in outcomes if f in {p.name for p in VALID} and o != "ok"}
    )
    if unexpected:
        print(f"exceptions that are not DecodeError: {', '.join(unexpected)}")
    if failed_valid:
        print(f"valid files that failed: {'; '.join(failed_valid)}")
    verdict = "PASS" if growth <= args.max_growth_mib else "FAIL"
    print(f"\nRSS growth {growth:+.2f} MiB (bound {args.max_growth_mib} MiB): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
