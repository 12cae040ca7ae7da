"""Image I/O speed of ``trivium.vision.io`` against its peers, in one process.

What it measures (inputs are built at start-up from ``tests/assets/images``; the
1920x1280 "photo" is grace hopper resized with Pillow LANCZOS and saved as JPEG
quality 90, 4:2:0):

1. Full-size JPEG decode to a uint8 [C, H, W] tensor (517x606, 960x720, 1920x1280)
   against Pillow (``Image.open(...).convert("RGB")`` + ``torch.from_numpy(...).permute``),
   ``torchvision.io.decode_jpeg`` when importable, and PyTurboJPEG.
2. A batch of 200 JPEGs (500x600 .. 960x720) through ``decode_jpeg(list)`` on the
   ``trivium.core`` thread pool with 2 threads against the same call with 1 thread.
3. DCT-scaled decode (1/2, 1/4, 1/8) against our own full-size decode of the same
   file, and against PyTurboJPEG ``scaling_factor`` and Pillow ``draft`` at the
   same scale.
4. PNG decode (1024x768 RGB, 1024x768 RGBA, 128x128 RGB) against Pillow and
   ``torchvision.io.decode_png`` when importable.
5. JPEG encode of the 1920x1280 photo at quality 90 against Pillow (and PyTurboJPEG).

Every side is warmed up once, then timed in ``--repeats`` repeats (default 7) of a
loop sized to last at least ``--min-time`` seconds (default 0.2); the sides of a
workload are interleaved repeat by repeat, and the median per-call time is
reported. Each loop keeps only its latest result alive, for every side alike, and
the garbage collector is paused while a loop runs. The ratio is peer time / our
time: above 1 means we are faster.

Run from the repository root::

    .venv/bin/python benchmarks/image_io.py [--repeats N] [--min-time S] [--json PATH]
        [--only decode,batch,scaled,png,encode]
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import PIL
import torch
from harness import (
    Row,
    Side,
    benchmark_parser,
    cpu_busy_seconds,
    cpu_model,
    fmt_time,
    measure,
    parse_benchmark_args,
    print_header,
    report,
    row_from,
)
from PIL import Image, features

from trivium.core import get_num_threads, set_num_threads
from trivium.vision import _C
from trivium.vision.io import decode_jpeg, decode_png, encode_jpeg

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "tests" / "assets" / "images"
HOPPER_JPEG = IMAGES / "jpeg" / "tv-grace_hopper_517x606.jpg"
MJPEG_JPEG = IMAGES / "jpeg" / "jd-mjpeg.jpg"
HOPPER_PNG = IMAGES / "png" / "pil-hopper.png"

PHOTO_SIZE = (1920, 1280)  # (width, height)
PNG_SIZE = (1024, 768)
BATCH_SIZE = 200
SCALES = (2, 4, 8)  # decode at 1/k
SCALE_TARGETS = {2: None, 4: 1.2, 8: 1.5}

# Pillow's np.asarray gives a read-only array; torch warns once about wrapping it.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
# PyTurboJPEG turns libjpeg's "extraneous bytes before marker" (jd-mjpeg.jpg) into a warning.
warnings.filterwarnings("ignore", message="Corrupt JPEG data", module="turbojpeg")


# --------------------------------------------------------------------------- peers


@dataclass
class Peers:
    """The optional peer libraries and a line saying what became of each."""

    tvio: Any | None
    tvio_status: str
    turbo: Any | None
    turbo_status: str
    turbo_rgb: int = 0  # turbojpeg.TJPF_RGB
    turbo_420: int = 0  # turbojpeg.TJSAMP_420


def load_peers() -> Peers:
    """Import torchvision.io and PyTurboJPEG if they work here; record why not otherwise."""
    try:
        import torchvision
        import torchvision.io as tvio

        tv_status = f"torchvision {torchvision.__version__}"
    except Exception as e:  # a CUDA wheel on a CPU box fails in many ways
        tvio, tv_status = None, f"not importable: {type(e).__name__}: {e}"
    try:
        import turbojpeg

        turbo = turbojpeg.TurboJPEG()
        turbo_status = f"PyTurboJPEG {getattr(turbojpeg, '__version__', '?')}"
        constants = (turbojpeg.TJPF_RGB, turbojpeg.TJSAMP_420)
    except Exception as e:
        turbo, turbo_status, constants = None, f"not usable: {type(e).__name__}: {e}", (0, 0)
    return Peers(tvio, tv_status, turbo, turbo_status, *constants)


# ---------------------------------------------------------------------- machine info


def _mapped_libraries(*names: str) -> list[str]:
    """Real paths of the shared libraries mapped into this process whose names match."""
    found: set[str] = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if path.startswith("/") and any(n in os.path.basename(path) for n in names):
                    found.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(found)


def _dpkg_version(package: str) -> str | None:
    """The installed Debian package version, or None where dpkg is not available."""
    try:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def machine_info(peers: Peers) -> dict[str, str]:
    """Versions and CPU facts that the numbers depend on."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count() or 1
    ours_jpeg = f"libjpeg API {_C.jpeg_version}"
    built = getattr(_C, "libjpeg_turbo_version", None)  # the libjpeg-turbo _C was built on
    debian = _dpkg_version("libjpeg62-turbo")
    if built:
        ours_jpeg += f" (libjpeg-turbo {built})"
    elif debian:
        ours_jpeg += f" (system libjpeg-turbo {debian})"
    libs = _mapped_libraries("libjpeg", "libspng", "libturbojpeg", "libz.so")
    return {
        "cpu": f"{cpu_model()}; os.cpu_count()={os.cpu_count()}, usable={affinity}",
        "python": f"{platform.python_version()} ({platform.platform()})",
        "torch": torch.__version__,
        "numpy": np.__version__,
        "Pillow": (
            f"{PIL.__version__} (libjpeg-turbo {features.version('libjpeg_turbo')}, "
            f"zlib {features.version('zlib')})"
        ),
        "trivium jpeg": ours_jpeg,
        "trivium png": f"libspng {_C.spng_version}",
        "trivium threads": str(get_num_threads()),
        "torchvision.io": peers.tvio_status,
        "PyTurboJPEG": peers.turbo_status,
        "mapped libraries": ", ".join(libs) or "unknown",
    }


def torchvision_row(workload: str, timings: dict, peers: Peers, target: float) -> Row:
    """The torchvision comparison row, or a row saying why torchvision is absent."""
    if peers.tvio is not None:
        return row_from(workload, timings, "ours", "torchvision", target=target)
    return Row(workload, timings["ours"].median, f"torchvision {peers.tvio_status}", None, target)


# -------------------------------------------------------------------------- inputs


def jpeg_bytes(image: Image.Image, quality: int) -> bytes:
    """`image` saved by Pillow as a baseline 4:2:0 JPEG of the given quality."""
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality, subsampling="4:2:0")
    return buffer.getvalue()


def png_bytes(image: Image.Image) -> bytes:
    """`image` saved by Pillow as PNG with compress_level=6."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=6)
    return buffer.getvalue()


@dataclass
class Inputs:
    """Encoded test images, built once at start-up."""

    jpegs: dict[str, bytes]  # full-size decode workload, by label
    photo: bytes  # the 1920x1280 JPEG
    hopper: bytes  # grace hopper 517x606 JPEG
    batch: list[bytes]
    batch_sizes: list[tuple[int, int]]
    pngs: dict[str, bytes]


def build_inputs() -> Inputs:
    """Read the asset files and make the generated images with Pillow."""
    hopper = HOPPER_JPEG.read_bytes()
    mjpeg = MJPEG_JPEG.read_bytes()
    hopper_rgb = Image.open(io.BytesIO(hopper)).convert("RGB")
    photo_image = hopper_rgb.resize(PHOTO_SIZE, Image.Resampling.LANCZOS)
    photo = jpeg_bytes(photo_image, 90)

    # Batch: the two photo-sized assets plus re-encoded resizes of the photo.
    variants = [hopper, mjpeg]
    for size, quality in [
        ((640, 480), 85),
        ((600, 800), 90),
        ((800, 600), 75),
        ((720, 540), 95),
        ((500, 600), 80),
        ((960, 720), 90),
    ]:
        variants.append(jpeg_bytes(photo_image.resize(size, Image.Resampling.LANCZOS), quality))
    batch = [variants[i % len(variants)] for i in range(BATCH_SIZE)]
    batch_sizes = [Image.open(io.BytesIO(b)).size for b in variants]

    png_rgb = photo_image.resize(PNG_SIZE, Image.Resampling.LANCZOS)
    w, h = PNG_SIZE
    yy, xx = np.mgrid[0:h, 0:w]
    alpha = ((xx * 255 // (w - 1) + yy * 255 // (h - 1)) // 2).astype(np.uint8)
    png_rgba = png_rgb.copy()
    png_rgba.putalpha(Image.fromarray(alpha))
    pngs = {
        f"{w}x{h} RGB": png_bytes(png_rgb),
        f"{w}x{h} RGBA": png_bytes(png_rgba),
        "128x128 RGB (pil-hopper.png)": HOPPER_PNG.read_bytes(),
    }
    jpegs = {
        "517x606 (grace hopper)": hopper,
        "960x720 (jd-mjpeg, 4:2:2)": mjpeg,
        "1920x1280 (photo, q90)": photo,
    }
    return Inputs(jpegs, photo, hopper, batch, batch_sizes, pngs)


# ----------------------------------------------------------------- decode callables


def pil_to_tensor(image: Image.Image) -> torch.Tensor:
    """A [C, H, W] uint8 view of a Pillow image (np.asarray loads and copies it)."""
    array = np.asarray(image)
    if array.ndim == 2:
        array = array[:, :, None]
    return torch.from_numpy(array).permute(2, 0, 1)


def pil_decode(data: bytes, mode: str = "RGB") -> torch.Tensor:
    """Pillow decode as a dataset loader does it: open, convert, wrap as a tensor."""
    return pil_to_tensor(Image.open(io.BytesIO(data)).convert(mode))


def pil_draft_decode(data: bytes, size: tuple[int, int]) -> torch.Tensor:
    """Pillow's JPEG draft mode: libjpeg DCT scaling to at least `size` (w, h)."""
    image = Image.open(io.BytesIO(data))
    image.draft("RGB", size)
    return pil_to_tensor(image.convert("RGB"))


def turbo_decode(peers: Peers, data: bytes, k: int = 1) -> torch.Tensor:
    """PyTurboJPEG decode to RGB at 1/k, wrapped as a [C, H, W] tensor."""
    scaling = None if k == 1 else (1, k)
    array = peers.turbo.decode(data, pixel_format=peers.turbo_rgb, scaling_factor=scaling)
    return torch.from_numpy(array).permute(2, 0, 1)


def as_tensor(data: bytes) -> torch.Tensor:
    """Encoded bytes as a 1-D uint8 tensor (what torchvision.io wants)."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def compare(label: str, ours: torch.Tensor, theirs: torch.Tensor) -> str:
    """A one-line check that two decodes agree in shape (and how far in value)."""
    if tuple(ours.shape) != tuple(theirs.shape):
        return f"{label}: SHAPE MISMATCH ours {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    diff = (ours.to(torch.int16) - theirs.to(torch.int16)).abs()
    mean = float(diff.float().mean())
    return f"{label}: shape {tuple(ours.shape)}, max |diff| {int(diff.max())}, mean {mean:.3f}"


# ------------------------------------------------------------------------ workloads


def bench_full_decode(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 1: full-size JPEG decode against Pillow, torchvision and PyTurboJPEG."""
    rows: list[Row] = []
    for label, data in inputs.jpegs.items():
        ours_out = decode_jpeg(data)
        checks.append(compare(f"decode {label} vs Pillow", ours_out, pil_decode(data)))
        sides = [
            Side("ours", lambda d=data: decode_jpeg(d)),
            Side("Pillow", lambda d=data: pil_decode(d)),
        ]
        if peers.tvio is not None:
            tensor = as_tensor(data)
            sides.append(Side("torchvision", lambda t=tensor: peers.tvio.decode_jpeg(t)))
        if peers.turbo is not None:
            checks.append(
                compare(f"decode {label} vs PyTurboJPEG", ours_out, turbo_decode(peers, data))
            )
            sides.append(Side("PyTurboJPEG", lambda d=data: turbo_decode(peers, d)))
        timings = measure(sides, repeats, min_time)
        workload = f"JPEG decode {label}"
        rows.append(row_from(workload, timings, "ours", "Pillow", target=1.0))
        rows.append(torchvision_row(workload, timings, peers, target=1.0))
        if peers.turbo is not None:
            rows.append(row_from(workload, timings, "ours", "PyTurboJPEG"))
    return rows


def bench_batch(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 2: decode_jpeg(list of 200) with 2 pool threads against 1 thread.

    As a control of what the machine allows, the same batch is also decoded with
    PyTurboJPEG (which releases the GIL) on 2 against 1 Python threads.
    """
    before = get_num_threads()
    batch = inputs.batch

    def use_threads(n: int) -> Callable[[], None]:
        def setup() -> None:
            set_num_threads(n)
            decode_jpeg(batch[:4])  # start the pool's threads outside the timed loop

        return setup

    sides = [
        Side("2 threads", lambda: decode_jpeg(batch), use_threads(2)),
        Side("1 thread", lambda: decode_jpeg(batch), use_threads(1)),
    ]
    pools = [ThreadPoolExecutor(n, thread_name_prefix="bench") for n in (2, 1)]
    if peers.turbo is not None:
        for n, pool in zip((2, 1), pools, strict=True):
            sides.append(
                Side(
                    f"PyTurboJPEG {n}",
                    lambda p=pool: list(p.map(lambda d: turbo_decode(peers, d), batch)),
                )
            )
    try:
        timings = measure(sides, repeats, min_time)
    finally:
        set_num_threads(before)
        for pool in pools:
            pool.shutdown()
    sizes = sorted(set(inputs.batch_sizes))
    checks.append(f"batch: {len(batch)} JPEGs cycling {len(sizes)} images, sizes (w, h) {sizes}")
    if peers.turbo is not None:
        one, two = timings["PyTurboJPEG 1"].median, timings["PyTurboJPEG 2"].median
        checks.append(
            f"batch control, PyTurboJPEG on a ThreadPoolExecutor: 1 thread {fmt_time(one)}, "
            f"2 threads {fmt_time(two)}: {one / two:.2f}x (what this machine gave two threads)"
        )
    return [
        row_from(
            f"batch decode_jpeg(list of {len(batch)}), 2 threads",
            timings,
            "2 threads",
            "1 thread",
            "ours, 1 thread",
            target=1.7,
        )
    ]


def bench_scaled(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 3: DCT-scaled decode against our full decode and the peers' scaled decodes."""
    rows: list[Row] = []
    for label, data in [("1920x1280", inputs.photo), ("517x606", inputs.hopper)]:
        full = decode_jpeg(data)
        h, w = full.shape[1:]
        sides = [Side("full", lambda d=data: decode_jpeg(d))]
        for k in SCALES:
            scale = Fraction(1, k)
            ours_out = decode_jpeg(data, scale=scale)
            sides.append(Side(f"ours 1/{k}", lambda d=data, s=scale: decode_jpeg(d, scale=s)))
            if peers.turbo is not None:
                checks.append(
                    compare(
                        f"1/{k} {label} vs PyTurboJPEG",
                        ours_out,
                        turbo_decode(peers, data, k),
                    )
                )
                sides.append(
                    Side(f"PyTurboJPEG 1/{k}", lambda d=data, k=k: turbo_decode(peers, d, k))
                )
            size = (w // k, h // k)
            checks.append(
                compare(f"1/{k} {label} vs Pillow draft", ours_out, pil_draft_decode(data, size))
            )
            sides.append(Side(f"Pillow draft 1/{k}", lambda d=data, s=size: pil_draft_decode(d, s)))
        timings = measure(sides, repeats, min_time)
        for k in SCALES:
            workload = f"scaled JPEG decode 1/{k}, {label}"
            ours = f"ours 1/{k}"
            rows.append(
                row_from(workload, timings, ours, "full", "ours full-size", SCALE_TARGETS[k])
            )
            if peers.turbo is not None:
                rows.append(row_from(workload, timings, ours, f"PyTurboJPEG 1/{k}"))
            rows.append(row_from(workload, timings, ours, f"Pillow draft 1/{k}"))
    return rows


def bench_png(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 4: PNG decode against Pillow and torchvision."""
    rows: list[Row] = []
    for label, data in inputs.pngs.items():
        ours_out = decode_png(data)
        mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[ours_out.shape[0]]
        checks.append(compare(f"PNG {label} vs Pillow", ours_out, pil_decode(data, mode)))
        sides = [
            Side("ours", lambda d=data: decode_png(d)),
            Side("Pillow", lambda d=data, m=mode: pil_decode(d, m)),
        ]
        if peers.tvio is not None:
            tensor = as_tensor(data)
            sides.append(Side("torchvision", lambda t=tensor: peers.tvio.decode_png(t)))
        timings = measure(sides, repeats, min_time)
        workload = f"PNG decode {label}"
        rows.append(row_from(workload, timings, "ours", "Pillow", target=1.0))
        rows.append(torchvision_row(workload, timings, peers, target=1.2))
    return rows


def bench_encode(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 5: JPEG encode of the 1920x1280 photo at quality 90."""
    chw = decode_jpeg(inputs.photo)  # our decode's [C, H, W] (channels-last view)
    hwc = np.ascontiguousarray(chw.permute(1, 2, 0).numpy())

    def pil_encode() -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(hwc).save(buffer, "JPEG", quality=90)
        return buffer.getvalue()

    sides = [Side("ours", lambda: encode_jpeg(chw, quality=90)), Side("Pillow", pil_encode)]
    if peers.turbo is not None:

        def turbo_encode() -> bytes:
            return peers.turbo.encode(
                hwc, quality=90, pixel_format=peers.turbo_rgb, jpeg_subsample=peers.turbo_420
            )

        sides.append(Side("PyTurboJPEG", turbo_encode))
    ours_size, pil_size = len(encode_jpeg(chw, quality=90)), len(pil_encode())
    checks.append(f"encode 1920x1280 q90: ours {ours_size} bytes, Pillow {pil_size} bytes")
    timings = measure(sides, repeats, min_time)
    workload = "JPEG encode 1920x1280 q90"
    rows = [row_from(workload, timings, "ours", "Pillow", target=1.0)]
    if peers.turbo is not None:
        rows.append(row_from(workload, timings, "ours", "PyTurboJPEG"))
    return rows


# ----------------------------------------------------------------------------- main


Workload = Callable[[Inputs, Peers, int, float, list[str]], list[Row]]
WORKLOADS: dict[str, Workload] = {
    "decode": bench_full_decode,
    "batch": bench_batch,
    "scaled": bench_scaled,
    "png": bench_png,
    "encode": bench_encode,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = benchmark_parser(__doc__.splitlines()[0], list(WORKLOADS))
    return parse_benchmark_args(parser, list(WORKLOADS), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every workload, print machine info and the table, optionally write JSON."""
    args = parse_args(argv)
    started, cpu_start = time.perf_counter(), cpu_busy_seconds()
    peers = load_peers()
    info = machine_info(peers)
    print_header("trivium.vision.io benchmark", info, args)
    inputs = build_inputs()
    checks: list[str] = []
    rows: list[Row] = []
    for name, bench in WORKLOADS.items():
        if name in args.only:
            rows += bench(inputs, peers, args.repeats, args.min_time, checks)
    report(rows, checks, info, args, started, cpu_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
