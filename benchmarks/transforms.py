"""Speed of ``trivium.vision.transforms`` against torchvision v2 and Pillow, in one process.

Workloads (inputs are built at start-up from the photos in ``tests/assets/images``:
64 "ImageNet-sized" JPEGs, 500x375 .. 640x480, cut and resized from them with
Pillow and saved at quality 90, 4:2:0):

1. ``pipeline``: the per-image training pipeline RandomResizedCrop(224) +
   RandomHorizontalFlip + ToDtype(float32, scale=True) + Normalize on decoded
   uint8 tensors, against the same pipeline of ``torchvision.transforms.v2``.
2. ``e2e``: from JPEG bytes to a normalised 224x224 float tensor. Ours: the fused
   ``DecodeRandomResizedCrop`` + the rest of the pipeline. Peers: a full decode +
   the torchvision v2 pipeline (torchvision's own ``decode_jpeg`` when its C++
   extension loads, else our full-size ``decode_jpeg`` — a stand-in at least as
   fast) and the classic Pillow pipeline (``Image.open`` + torchvision v1
   RandomResizedCrop / RandomHorizontalFlip / ToTensor / Normalize on PIL images,
   or the same steps written with Pillow when torchvision is absent).
3. ``per_sample``: every transform that takes ``per_sample=True``, on a
   [64, 3, 224, 224] batch (uint8, then float32 in [0, 1]) of the photos, against
   the same transform without ``per_sample`` applied image by image in a Python
   loop (``torch.stack`` of the results). Both sides draw the same parameters (two
   generators seeded alike). The two sides alternate which goes first repeat by
   repeat (at least 5 repeats); each row's ratio is printed as it is measured, with
   the median of the per-repeat ratios (each repeat's two sides ran back to back, so
   that one moves least with the machine's load). ``--cases`` picks rows by name;
   ``--snippet PATH`` writes the per-sample table as the Markdown fragment of the
   documentation (``docs/snippets/benchmarks/transforms-per-sample.md``).

Peers and timing are ``benchmarks/harness.py``'s. Ratio = peer time / our time
(above 1: we are faster).

Run from the repository root::

    .venv/bin/python benchmarks/transforms.py [--repeats N] [--min-time S] [--json PATH]
        [--only pipeline,e2e,per_sample] [--threads N] [--cases NAME,...] [--snippet PATH]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import harness
import numpy as np
import PIL
import torch
from harness import Row, Side, Timing, fmt_time
from image_assets import JPEG_DIR
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.io import decode_jpeg

PHOTOS = [
    JPEG_DIR / name
    for name in ("tv-grace_hopper_517x606.jpg", "ljt-testorig.jpg", "pil-hopper.jpg",
                 "tv-rgb_pytorch.jpg")
]  # fmt: skip
NUM_IMAGES = 64
SIZES = [(500, 375), (640, 480), (500, 333), (375, 500), (640, 427), (480, 640)]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


# -------------------------------------------------------------------------- inputs


def make_jpegs(seed: int = 0) -> list[bytes]:
    """NUM_IMAGES JPEGs of ImageNet-like sizes cut from the asset photos (q90, 4:2:0)."""
    rng = np.random.default_rng(seed)
    photos = [Image.open(p).convert("RGB") for p in PHOTOS]
    out = []
    for i in range(NUM_IMAGES):
        photo = photos[i % len(photos)]
        w, h = photo.size
        cw, ch = int(w * rng.uniform(0.6, 1.0)), int(h * rng.uniform(0.6, 1.0))
        x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        size = SIZES[i % len(SIZES)]
        image = photo.crop((x, y, x + cw, y + ch)).resize(size, Image.LANCZOS)
        buf = io.BytesIO()
        image.save(buf, "JPEG", quality=90, subsampling=2)
        out.append(buf.getvalue())
    return out


def cycler(items: Sequence[Any]) -> Callable[[], Any]:
    """A function returning the items one after the other, forever."""
    state = {"i": 0}

    def next_item() -> Any:
        item = items[state["i"] % len(items)]
        state["i"] += 1
        return item

    return next_item


# ------------------------------------------------------------------------ pipelines


def ours_pipeline(generator: torch.Generator, fused_decode: bool = False) -> T.Compose:
    """RandomResizedCrop(224) + flip + ToDtype + Normalize, ours.

    With ``fused_decode`` the pipeline takes JPEG bytes: ``DecodeRandomResizedCrop``
    stands for the crop.
    """
    crop = T.DecodeRandomResizedCrop if fused_decode else T.RandomResizedCrop
    return T.Compose(
        [
            crop(224, generator=generator),
            T.RandomHorizontalFlip(generator=generator),
            T.ToDtype(torch.float32, scale=True),
            T.Normalize(MEAN, STD),
        ]
    )


def tv_pipeline(tv: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """The same pipeline from torchvision.transforms.v2."""
    v2 = tv.transforms.v2
    return v2.Compose(
        [
            v2.RandomResizedCrop(224, antialias=True),
            v2.RandomHorizontalFlip(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(MEAN, STD),
        ]
    )


def pil_pipeline(tv: Any | None) -> Callable[[bytes], torch.Tensor]:
    """The classic Pillow pipeline: open, RandomResizedCrop, flip, ToTensor, Normalize."""
    if tv is not None:
        v1 = tv.transforms
        steps = v1.Compose(
            [
                v1.RandomResizedCrop(224),
                v1.RandomHorizontalFlip(),
                v1.ToTensor(),
                v1.Normalize(MEAN, STD),
            ]
        )
        return lambda data: steps(Image.open(io.BytesIO(data)).convert("RGB"))
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    rng = np.random.default_rng(0)

    def run(data: bytes) -> torch.Tensor:
        image = Image.open(io.BytesIO(data)).convert("RGB")
        w, h = image.size
        side = int(min(w, h) * rng.uniform(0.3, 1.0))
        x, y = int(rng.integers(0, w - side + 1)), int(rng.integers(0, h - side + 1))
        image = image.resize((224, 224), Image.BILINEAR, box=(x, y, x + side, y + side))
        if rng.random() < 0.5:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)
        array = np.asarray(image, dtype=np.float32) / 255.0
        return (torch.from_numpy(array).permute(2, 0, 1) - mean) / std

    return run


# ------------------------------------------------------------------------ workloads


def bench_pipeline(jpegs: list[bytes], tv: Any | None, args: argparse.Namespace) -> list[Row]:
    images = [decode_jpeg(d) for d in jpegs]
    next_image = cycler(images)
    ours = ours_pipeline(torch.Generator().manual_seed(0))
    sides = [Side("ours", lambda: ours(next_image()))]
    if tv is not None:
        theirs = tv_pipeline(tv)
        sides.append(Side("tv", lambda: theirs(next_image())))
    t = harness.measure(sides, args.repeats, args.min_time)
    name = "RandomResizedCrop 224 + flip + ToDtype + Normalize, per uint8 image"
    return [harness.row_from(name, t, "ours", "tv", "torchvision v2", 1.0)]


def bench_e2e(jpegs: list[bytes], tv: Any | None, args: argparse.Namespace) -> list[Row]:
    next_jpeg = cycler(jpegs)
    fused = ours_pipeline(torch.Generator().manual_seed(0), fused_decode=True)
    pil = pil_pipeline(tv)
    sides = [Side("ours", lambda: fused(next_jpeg())), Side("pil", lambda: pil(next_jpeg()))]
    decoder = "our decode_jpeg"
    if tv is not None:
        theirs = tv_pipeline(tv)
        try:
            tv.io.decode_jpeg(torch.frombuffer(bytearray(jpegs[0]), dtype=torch.uint8))
            decode, decoder = tv.io.decode_jpeg, "torchvision decode_jpeg"
        except Exception:  # the C++ decoder is not available: our full decode stands in
            decode = decode_jpeg
        sides.append(
            Side(
                "tv",
                lambda: theirs(decode(torch.frombuffer(bytearray(next_jpeg()), dtype=torch.uint8))),
            )
        )
    t = harness.measure(sides, args.repeats, args.min_time)
    name = "JPEG bytes → normalised 224x224 (fused DecodeRandomResizedCrop)"
    tv_label = f"{decoder} + tv v2" if tv is not None else "torchvision"
    pil_label = "Pillow + tv v1 transforms" if tv is not None else "Pillow (same steps)"
    return [
        harness.row_from(name, t, "ours", "tv", tv_label, 2.0),
        harness.row_from(name, t, "ours", "pil", pil_label, 3.0),
    ]


def per_sample_cases(dtype: torch.dtype) -> dict[str, Callable[..., Any]]:
    """Every transform that takes ``per_sample``, as a factory of keyword arguments."""
    threshold = 128 if dtype == torch.uint8 else 0.5  # on the image's scale
    return {
        "RandomResizedCrop(224)": lambda **kw: T.RandomResizedCrop(224, **kw),
        "RandomCrop(192, padding=16)": lambda **kw: T.RandomCrop(192, padding=16, **kw),
        "RandomHorizontalFlip": lambda **kw: T.RandomHorizontalFlip(**kw),
        "RandomVerticalFlip": lambda **kw: T.RandomVerticalFlip(**kw),
        "RandomAffine(15, (0.1, 0.1), (0.9, 1.1))": lambda **kw: T.RandomAffine(
            15, (0.1, 0.1), (0.9, 1.1), **kw
        ),
        "RandomRotation(30)": lambda **kw: T.RandomRotation(30, **kw),
        "RandomPerspective(0.3)": lambda **kw: T.RandomPerspective(0.3, **kw),
        "ElasticTransform()": lambda **kw: T.ElasticTransform(**kw),
        "ColorJitter(0.4, 0.4, 0.4, 0.1)": lambda **kw: T.ColorJitter(0.4, 0.4, 0.4, 0.1, **kw),
        "GaussianBlur(9, (0.1, 2.0))": lambda **kw: T.GaussianBlur(9, (0.1, 2.0), **kw),
        "RandomErasing(p=1)": lambda **kw: T.RandomErasing(1.0, **kw),
        "RandomGrayscale(p=0.5)": lambda **kw: T.RandomGrayscale(0.5, **kw),
        "RandomInvert": lambda **kw: T.RandomInvert(**kw),
        "RandomPosterize(4)": lambda **kw: T.RandomPosterize(4, **kw),
        "RandomSolarize(128 or 0.5)": lambda **kw: T.RandomSolarize(threshold, **kw),
        "RandomAdjustSharpness(2)": lambda **kw: T.RandomAdjustSharpness(2.0, **kw),
        "RandomAutocontrast": lambda **kw: T.RandomAutocontrast(**kw),
        "RandomEqualize": lambda **kw: T.RandomEqualize(**kw),
    }


PER_SAMPLE_SHAPE = "[64, 3, 224, 224]"
PER_SAMPLE_MIN_REPEATS = 5


def measure_alternating(sides: Sequence[Side], repeats: int, min_time: float) -> dict[str, Timing]:
    """:func:`harness.measure` with the order of the sides reversed every other repeat.

    Whichever side runs first in a repeat meets the state the other left (caches,
    freed memory, the load of that moment); alternating spreads that over both.
    """
    numbers = {}
    for side in sides:
        side.fn()  # warm-up
        numbers[side.name] = harness.calls_for(side.fn, min_time)
    samples: dict[str, list[float]] = {side.name: [] for side in sides}
    for r in range(repeats):
        for side in sides if r % 2 == 0 else sides[::-1]:
            samples[side.name].append(harness.loop_time(side.fn, numbers[side.name]))
    return {name: Timing(samples[name], numbers[name]) for name in samples}


def paired_ratio(ours: Timing, peer: Timing) -> float:
    """The median over repeats of peer time / our time (the two ran back to back)."""
    return statistics.median(p / o for o, p in zip(ours.samples, peer.samples, strict=True))


def wanted(name: str, cases: list[str]) -> bool:
    """Whether ``--cases`` (substrings, any case; empty: all) selects the row ``name``."""
    return not cases or any(c.lower() in name.lower() for c in cases)


def bench_per_sample(jpegs: list[bytes], tv: Any | None, args: argparse.Namespace) -> list[Row]:
    crop = T.CenterCrop(224)
    batch = torch.stack([crop(T.Resize(256)(decode_jpeg(d))) for d in jpegs])
    repeats = max(args.repeats, PER_SAMPLE_MIN_REPEATS)
    rows = []
    for dtype in (torch.uint8, torch.float32):
        x = batch if dtype == torch.uint8 else batch.to(dtype) / 255
        for name, make in per_sample_cases(dtype).items():
            if not wanted(name, args.cases):
                continue
            # Two generators seeded alike: both sides draw the same stream of parameters.
            batched = make(per_sample=True, generator=torch.Generator().manual_seed(0))
            single = make(generator=torch.Generator().manual_seed(0))
            sides = [
                Side("ours", lambda b=batched, x=x: b(x)),
                Side("loop", lambda s=single, x=x: torch.stack([s(img) for img in x])),
            ]
            t = measure_alternating(sides, repeats, args.min_time)
            label = f"{name}, per_sample=True on {PER_SAMPLE_SHAPE} {str(dtype)[6:]}"
            row = Row(label, t["ours"].median, "image by image", t["loop"].median, 1.0)
            row.samples = {"ours": t["ours"].samples, "peer": t["loop"].samples}
            print(
                f"{label}: {fmt_time(row.ours_s)} vs loop {fmt_time(row.peer_s)}, "
                f"{row.ratio:.2f}x (paired {paired_ratio(t['ours'], t['loop']):.2f}x) "
                f"{row.status}",
                flush=True,
            )
            rows.append(row)
    return rows


SNIPPET_INTRO = """\
How `per_sample=True` runs on the CPU (the batched kernel on chunks of one to four
images, the same result as one batched call, bit for bit) is in the
[vision guide](guide/vision.md#transforms).
"""

SNIPPET_NOTES = """\
- RandomResizedCrop on uint8 crops and resizes the whole batch in one native call
  (torch's antialiased uint8 arithmetic, bit for bit, on the channel planes where
  they lie); the loop's torch kernel repacks every channel-first crop to RGBA and
  back, which costs more than the filtering. On float32 the per-sample path gains
  from drawing all the boxes at once.
- ElasticTransform smooths its noise with banded matrix products on both sides, one
  product per four images on the per-sample side against one per image in the loop;
  the grid sampling and the draw cost the same either way, so its margin is small.
- Flips and RandomInvert write each run of images drawn alike straight into the
  output (flipped, inverted or copied): one pass, where the loop's results are
  copied again by `torch.stack`. Crops and erasing take slices of
  one image instead of a gather or a mask. GaussianBlur, RandomAffine and
  RandomRotation take four images per chunk (GaussianBlur's depthwise convolutions
  vectorise across their 12 channels; the grid's fixed costs are shared).
- Rows whose work is about one copy of the batch (flips, RandomInvert) move most
  between runs: each side page-faults its 9.6 MB (uint8) or 38 MB (float32) output
  in on some calls and not on others. Setting
  `MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736` makes glibc
  keep freed memory, so the ratios compare the work alone; the command line above
  shows whether it was set.
"""


def per_sample_table(rows: list[Row]) -> str:
    """The per-sample rows as one line per transform, uint8 and float32 side by side."""
    by_name: dict[str, dict[str, Row]] = {}
    for row in rows:
        name, dtype = row.workload.rsplit(f", per_sample=True on {PER_SAMPLE_SHAPE} ", 1)
        by_name.setdefault(name, {})[dtype] = row
    lines = [
        "| transform | uint8: per_sample | loop | ratio | float32: per_sample | loop | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, pair in by_name.items():
        cells = []
        for dtype in ("uint8", "float32"):
            row = pair.get(dtype)
            if row is None or row.ratio is None:
                cells += ["—", "—", "—"]
            else:
                cells += [fmt_time(row.ours_s), fmt_time(row.peer_s), f"{row.ratio:.2f}x"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Settings of the environment the fragment's command line shows when they are set.
SNIPPET_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS")


def write_snippet(path: Path, rows: list[Row], argv: Sequence[str], load: str) -> None:
    """The documentation fragment: how it was made, the table, where the time goes."""
    env = [f"{k}={os.environ[k]}" for k in SNIPPET_ENV if k in os.environ]
    command = " ".join([*env, ".venv/bin/python benchmarks/transforms.py", *argv])
    repeats = rows[0].samples and len(rows[0].samples["ours"])
    text = (
        f"{SNIPPET_INTRO}\n"
        f"`{command}` (one torch thread; the 64 photos resized and center-cropped to a\n"
        f"{PER_SAMPLE_SHAPE} batch, uint8, then float32 in [0, 1]; against the same transform\n"
        "without `per_sample` applied image by image and stacked, drawing the same\n"
        f"parameters from a generator seeded alike; medians of {repeats} repeats, the two\n"
        f"sides alternating which goes first; {harness.cpu_model()}; {load}):\n\n"
        f"{per_sample_table(rows)}\n\n{SNIPPET_NOTES}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")


WORKLOADS = {"pipeline": bench_pipeline, "e2e": bench_e2e, "per_sample": bench_per_sample}


# ----------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = harness.benchmark_parser(
        __doc__.splitlines()[0], list(WORKLOADS), min_time=0.3, threads=1
    )
    parser.add_argument(
        "--cases",
        default="",
        help="per_sample rows whose transform names contain one of these (comma-separated)",
    )
    parser.add_argument(
        "--snippet",
        type=Path,
        default=None,
        help="write the per_sample table as a Markdown fragment to this path",
    )
    args = harness.parse_benchmark_args(parser, list(WORKLOADS), argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads and print the table (and JSON with --json)."""
    run = harness.Session(parse_args(argv))
    torch.set_num_threads(run.args.threads)
    tv = harness.peers.import_torchvision()
    info = harness.machine_info(
        run.args.threads, torchvision=harness.version(tv), Pillow=PIL.__version__
    )
    run.header("trivium.vision.transforms benchmark", info)
    jpegs = make_jpegs()
    per_sample: list[Row] = []
    for name, bench in WORKLOADS.items():
        if name in run.args.only:
            done = bench(jpegs, tv, run.args)
            run.rows += done
            if name == "per_sample":
                per_sample = done
    status = run.report()
    if run.args.snippet is not None and per_sample:
        load = harness.other_load(run.cpu_start, time.perf_counter() - run.started)
        write_snippet(run.args.snippet, per_sample, sys.argv[1:] if argv is None else argv, load)
    return status


if __name__ == "__main__":
    sys.exit(main())
