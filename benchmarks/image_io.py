"""Image I/O speed of ``trivium.vision.io`` against every peer that imports, in one process.

Peers: Pillow, PyTurboJPEG, simplejpeg, OpenCV, kornia-rs, ``torchvision.io`` and
torchcodec's image decoders.
The project's environment has Pillow and PyTurboJPEG; the others import in the
benchmark-only virtualenv ``.venv-peers`` (built by ``../shared/peers/setup_peers_venv.sh``).
When peers are missing here and that virtualenv exists, the script runs itself again
under its Python (``--peers-python``) with this environment's site-packages, where
trivium is installed, added after the peers' own: both sides then run in one process
on the same inputs.

What it measures (inputs are built at start-up from ``tests/assets/images``; the
1920x1280 "photo" is grace hopper resized with Pillow LANCZOS and saved as JPEG
quality 90, 4:2:0):

1. ``decode``: full-size JPEG decode to a uint8 RGB [C, H, W] tensor (517x606,
   960x720 4:2:2, 1920x1280). Every peer's array is wrapped as a [C, H, W] tensor view.
2. ``batch``: 200 JPEGs through ``decode_jpeg(list)`` on the ``trivium.core`` pool with
   2 threads, against each GIL-releasing peer on a 2-thread ``ThreadPoolExecutor``, and
   against our own call with 1 thread.
3. ``scaled``: DCT-scaled decode (1/2, 1/4, 1/8) against our full-size decode and the
   peers' scaled decodes (PyTurboJPEG ``scaling_factor``, Pillow ``draft``).
4. ``png``: PNG decode (1024x768 RGB and RGBA, 128x128 RGB).
5. ``encode``: JPEG encode at quality 90, 4:2:0 (517x606 and 1920x1280, as decoded;
   1920x1280 also from a [3, H, W]-contiguous tensor, each peer's call then including
   its copy to (H, W, C) order), every side with libjpeg's accurate DCT (ISLOW) and no
   Huffman optimisation: the defaults of OpenCV, Pillow, kornia-rs (TurboJPEG 3),
   torchvision and ours; PyTurboJPEG gets ``TJFLAG_ACCURATEDCT`` and simplejpeg
   ``fastdct=False``, since their TurboJPEG 2 and their own defaults pick the fast
   DCT. Output sizes are checked alike.
6. ``png_encode``: PNG encode of a 1024x768 RGB photo at zlib levels 6 and 1 (OpenCV
   ``IMWRITE_PNG_COMPRESSION``, Pillow ``compress_level``); sizes are reported.
7. ``webp``: WebP decode of the 1920x1280 photo saved by Pillow lossy (quality 90) and
   lossless, and of the photo with an alpha ramp (lossy, quality 90) to RGBA, against
   Pillow, OpenCV, torchvision's and torchcodec's ``decode_webp``.
8. ``webp_encode``: WebP encode of the 1920x1280 photo lossy at quality 90 and of the
   517x606 photo lossless (quality 70: the effort OpenCV's lossless call uses), method 4
   (libwebp's default) on every side, against Pillow and OpenCV; sizes are reported.

Each workload gives one row against its fastest peer (``best: ...``, with the target)
and one row per other peer. Every side is warmed up, then timed in ``--repeats``
repeats (default 7) of a loop of at least ``--min-time`` seconds (default 0.2), the
sides interleaved repeat by repeat; the median per-call time is reported. OpenCV and
torch run on 1 thread. The ratio is peer time / our time: above 1 means we are faster.

Run from the repository root::

    .venv/bin/python benchmarks/image_io.py [--repeats N] [--min-time S] [--json PATH]
        [--only decode,batch,scaled,png,encode,png_encode,webp,webp_encode]
        [--peers-python .venv-peers/bin/python]
"""

from __future__ import annotations

import os
import site

# Under the peers' virtualenv (see ``harness.rerun_under_peers``): trivium from the project's
# environment, whose site-packages must be on the path before trivium imports.
if os.environ.get("TRIVIUM_PROJECT_SITE"):
    site.addsitedir(os.environ["TRIVIUM_PROJECT_SITE"])

import argparse
import io
import platform
import sys
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import PIL
import torch
from harness import (
    Row,
    Session,
    Side,
    Timing,
    benchmark_parser,
    cpu_model,
    measure,
    parse_benchmark_args,
    rerun_under_peers,
    row_from,
)
from PIL import Image, features

from trivium.core import get_num_threads, set_num_threads
from trivium.vision import _C
from trivium.vision.io import (
    ImageReadMode,
    decode_jpeg,
    decode_png,
    decode_webp,
    encode_jpeg,
    encode_png,
    encode_webp,
)

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "tests" / "assets" / "images"
HOPPER_JPEG = IMAGES / "jpeg" / "tv-grace_hopper_517x606.jpg"
MJPEG_JPEG = IMAGES / "jpeg" / "jd-mjpeg.jpg"
HOPPER_PNG = IMAGES / "png" / "pil-hopper.png"
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
PEER_MODULES = ("turbojpeg", "simplejpeg", "cv2", "kornia_rs", "torchvision", "torchcodec")

PHOTO_SIZE = (1920, 1280)  # (width, height)
PNG_SIZE = (1024, 768)
BATCH_SIZE = 200
SCALES = (2, 4, 8)  # decode at 1/k
SCALE_TARGETS = {2: None, 4: 1.2, 8: 1.5}
QUALITY = 90
PNG_LEVELS = (6, 1)
WEBP_QUALITY = 90
WEBP_LOSSLESS_QUALITY = 70  # libwebp's simple lossless API (OpenCV's) uses this effort

# Pillow's np.asarray gives a read-only array; torch warns once about wrapping it.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
# PyTurboJPEG turns libjpeg's "extraneous bytes before marker" (jd-mjpeg.jpg) into a warning.
warnings.filterwarnings("ignore", message="Corrupt JPEG data", module="turbojpeg")


# --------------------------------------------------------------------------- peers


@dataclass
class Peers:
    """The peer libraries that work here (None where not), and a line for each."""

    turbo: Any = None
    turbojpeg: Any = None  # the module, for its constants
    simplejpeg: Any = None
    cv2: Any = None
    kornia: Any = None  # kornia_rs.io
    tvio: Any = None
    tcdec: Any = None  # torchcodec.decoders
    status: dict[str, str] = field(default_factory=dict)


def _load(peers: Peers, name: str, load: Callable[[], tuple[Any, str]]) -> Any:
    try:
        module, line = load()
    except Exception as e:  # a missing or broken install fails in many ways
        peers.status[name] = f"not usable: {type(e).__name__}: {e}"
        return None
    peers.status[name] = line
    return module


def _turbo() -> tuple[Any, str]:
    import turbojpeg

    turbojpeg.TurboJPEG()  # loads the shared library
    lib = ", ".join(_mapped_libraries("libturbojpeg")) or "?"
    return turbojpeg, f"PyTurboJPEG {turbojpeg.__version__} ({lib})"


def _cv2() -> tuple[Any, str]:
    import cv2

    cv2.setNumThreads(1)
    return cv2, f"OpenCV {cv2.__version__}"


def _kornia() -> tuple[Any, str]:
    import kornia_rs

    return kornia_rs.io, f"kornia-rs {kornia_rs.__version__}"


def _simplejpeg() -> tuple[Any, str]:
    import simplejpeg

    return simplejpeg, f"simplejpeg {simplejpeg.__version__}"


def _torchvision() -> tuple[Any, str]:
    import torchvision
    import torchvision.io as tvio

    tvio.decode_jpeg(encode_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8)))  # the C++ ops load
    return tvio, f"torchvision {torchvision.__version__}"


def _torchcodec() -> tuple[Any, str]:
    import torchcodec
    import torchcodec.decoders as tcdec

    tcdec.decode_png(encode_png(torch.zeros(3, 8, 8, dtype=torch.uint8)))  # the C++ ops load
    return tcdec, f"torchcodec {torchcodec.__version__}"


def load_peers() -> Peers:
    """Every peer that imports and runs here."""
    peers = Peers()
    peers.turbojpeg = _load(peers, "PyTurboJPEG", _turbo)
    if peers.turbojpeg is not None:
        peers.turbo = peers.turbojpeg.TurboJPEG()
    peers.simplejpeg = _load(peers, "simplejpeg", _simplejpeg)
    peers.cv2 = _load(peers, "OpenCV", _cv2)
    peers.kornia = _load(peers, "kornia-rs", _kornia)
    peers.tvio = _load(peers, "torchvision.io", _torchvision)
    peers.tcdec = _load(peers, "torchcodec", _torchcodec)
    return peers


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


def machine_info(peers: Peers) -> dict[str, str]:
    """Versions and CPU facts that the numbers depend on."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count() or 1
    ours_jpeg = f"libjpeg API {_C.jpeg_version}"
    built = getattr(_C, "libjpeg_turbo_version", None)  # the libjpeg-turbo _C was built on
    if built:
        ours_jpeg += f" (libjpeg-turbo {built})"
    return {
        "cpu": f"{cpu_model()}; os.cpu_count()={os.cpu_count()}, usable={affinity}",
        "python": f"{platform.python_version()} ({sys.executable})",
        "torch": f"{torch.__version__} (threads: {torch.get_num_threads()})",
        "numpy": np.__version__,
        "Pillow": (
            f"{PIL.__version__} (libjpeg-turbo {features.version('libjpeg_turbo')}, "
            f"zlib {features.version('zlib')})"
        ),
        "trivium jpeg": ours_jpeg,
        "trivium png": f"libspng {_C.spng_version} (decode), zlib (encode, decode fast path)",
        "trivium webp": f"libwebp {_C.webp_version}",
        "Pillow webp": f"libwebp {features.version('webp')}",
        "trivium threads": str(get_num_threads()),
        **peers.status,
        "mapped libraries": ", ".join(
            _mapped_libraries("libjpeg", "libspng", "libz.so", "libpng", "libwebp")
        )
        or "unknown",
    }


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
    webps: dict[str, tuple[bytes, int]]  # label -> (file, channels decoded)
    photo_image: Image.Image  # the 1920x1280 photo before JPEG coding
    hopper_image: Image.Image


def webp_bytes(image: Image.Image, **options: Any) -> bytes:
    """`image` saved by Pillow as WebP with `options` (quality, lossless, ...)."""
    buffer = io.BytesIO()
    image.save(buffer, "WEBP", **options)
    return buffer.getvalue()


def build_inputs() -> Inputs:
    """Read the asset files and make the generated images with Pillow."""
    hopper = HOPPER_JPEG.read_bytes()
    mjpeg = MJPEG_JPEG.read_bytes()
    hopper_rgb = Image.open(io.BytesIO(hopper)).convert("RGB")
    photo_image = hopper_rgb.resize(PHOTO_SIZE, Image.Resampling.LANCZOS)
    photo = jpeg_bytes(photo_image, QUALITY)

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
    ramp = np.repeat(
        (np.arange(PHOTO_SIZE[0]) * 255 // (PHOTO_SIZE[0] - 1))[None], PHOTO_SIZE[1], 0
    )
    photo_rgba = photo_image.copy()
    photo_rgba.putalpha(Image.fromarray(ramp.astype(np.uint8)))
    pw, ph = PHOTO_SIZE
    webps = {
        f"{pw}x{ph} lossy q{WEBP_QUALITY}": (webp_bytes(photo_image, quality=WEBP_QUALITY), 3),
        f"{pw}x{ph} lossless": (webp_bytes(photo_image, lossless=True), 3),
        f"{pw}x{ph} lossy q{WEBP_QUALITY} + alpha, to RGBA": (
            webp_bytes(photo_rgba, quality=WEBP_QUALITY),
            4,
        ),
        "517x606 lossy q90 (grace hopper)": (webp_bytes(hopper_rgb, quality=WEBP_QUALITY), 3),
    }
    jpegs = {
        "517x606 (grace hopper)": hopper,
        "960x720 (jd-mjpeg, 4:2:2)": mjpeg,
        "1920x1280 (photo, q90)": photo,
        # A tiny image: the time is the per-call work around the codec.
        "16x16 (per-call overhead)": jpeg_bytes(hopper_rgb.resize((16, 16)), QUALITY),
    }
    return Inputs(jpegs, photo, hopper, batch, batch_sizes, pngs, webps, photo_image, hopper_rgb)


# ----------------------------------------------------------------- decode callables


def chw(array: np.ndarray) -> torch.Tensor:
    """A [C, H, W] view of an (H, W[, C]) array, as our decoders return."""
    if array.ndim == 2:
        array = array[:, :, None]
    return torch.from_numpy(array).permute(2, 0, 1)


def pil_decode(data: bytes, mode: str = "RGB") -> torch.Tensor:
    """Pillow decode as a dataset loader does it: open, convert, wrap as a tensor."""
    return chw(np.asarray(Image.open(io.BytesIO(data)).convert(mode)))


def pil_draft_decode(data: bytes, size: tuple[int, int]) -> torch.Tensor:
    """Pillow's JPEG draft mode: libjpeg DCT scaling to at least `size` (w, h)."""
    image = Image.open(io.BytesIO(data))
    image.draft("RGB", size)
    return chw(np.asarray(image.convert("RGB")))


def turbo_decode(peers: Peers, data: bytes, k: int = 1) -> torch.Tensor:
    """PyTurboJPEG decode to RGB at 1/k."""
    scaling = None if k == 1 else (1, k)
    rgb = peers.turbojpeg.TJPF_RGB
    return chw(peers.turbo.decode(data, pixel_format=rgb, scaling_factor=scaling))


def as_tensor(data: bytes) -> torch.Tensor:
    """Encoded bytes as a 1-D uint8 tensor (what torchvision.io wants)."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def jpeg_decoders(peers: Peers, data: bytes) -> dict[str, Callable[[], torch.Tensor]]:
    """Every peer's full-size RGB decode of `data`, as a [C, H, W] tensor."""
    sides: dict[str, Callable[[], torch.Tensor]] = {"Pillow": lambda: pil_decode(data)}
    if peers.turbo is not None:
        sides["PyTurboJPEG"] = lambda: turbo_decode(peers, data)
    if peers.simplejpeg is not None:
        # strict=False: harmless libjpeg warnings (extraneous bytes) do not fail, as ours.
        sides["simplejpeg"] = lambda: chw(peers.simplejpeg.decode_jpeg(data, strict=False))
    if peers.cv2 is not None:
        cv2 = peers.cv2
        flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION
        encoded = np.frombuffer(data, np.uint8)
        sides["OpenCV"] = lambda: chw(cv2.imdecode(encoded, flags))
    if peers.kornia is not None:
        decoder = peers.kornia.ImageDecoder()
        sides["kornia-rs"] = lambda: chw(decoder.decode(data))
    if peers.tvio is not None:
        tensor = as_tensor(data)
        sides["torchvision"] = lambda: peers.tvio.decode_jpeg(tensor)
    return sides


def checked_sides(
    label: str,
    ours: torch.Tensor,
    sides: dict[str, Callable[[], Any]],
    checks: list[str],
) -> dict[str, Callable[[], Any]]:
    """The sides that decode `label`, each compared with ours in one check line."""
    working, notes = {}, []
    for name, fn in sides.items():
        try:
            notes.append(compare(name, ours, fn()))
            working[name] = fn
        except Exception as e:  # a peer that refuses a file is left out of its row
            notes.append(f"{name}: fails ({type(e).__name__}: {e}), left out")
    checks.append(f"{label} vs " + "; ".join(notes))
    return working


def compare(label: str, ours: torch.Tensor, theirs: torch.Tensor) -> str:
    """A one-line check that two decodes agree in shape (and how far in value)."""
    if tuple(ours.shape) != tuple(theirs.shape):
        return f"{label}: SHAPE MISMATCH ours {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    diff = (ours.to(torch.int16) - theirs.to(torch.int16)).abs()
    mean = float(diff.float().mean())
    return f"{label}: max |diff| {int(diff.max())}, mean {mean:.3f}"


# -------------------------------------------------------------------------- rows


def peer_rows(
    workload: str, timings: dict[str, Timing], peers: Sequence[str], target: float | None
) -> list[Row]:
    """The row against the fastest peer (with the target), then one per other peer."""
    ranked = sorted(peers, key=lambda name: timings[name].median)
    rows = [row_from(workload, timings, "ours", ranked[0], f"best: {ranked[0]}", target)]
    rows += [row_from(workload, timings, "ours", name) for name in ranked[1:]]
    return rows


def time_against(
    workload: str,
    ours: Callable[[], object],
    peers: dict[str, Callable[[], object]],
    repeats: int,
    min_time: float,
    target: float | None,
) -> list[Row]:
    """Time ours against every peer, interleaved; the rows of :func:`peer_rows`."""
    sides = [Side("ours", ours)] + [Side(name, fn) for name, fn in peers.items()]
    return peer_rows(workload, measure(sides, repeats, min_time), list(peers), target)


# ------------------------------------------------------------------------ workloads


def bench_full_decode(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 1: full-size JPEG decode against every peer."""
    rows: list[Row] = []
    for label, data in inputs.jpegs.items():
        ours_out = decode_jpeg(data)
        sides = checked_sides(f"decode {label}", ours_out, jpeg_decoders(peers, data), checks)
        rows += time_against(
            f"JPEG decode {label}", lambda d=data: decode_jpeg(d), sides, repeats, min_time, 1.0
        )
    return rows


def bench_batch(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 2: decode_jpeg(list of 200) with 2 pool threads, against peers on 2 threads."""
    before = get_num_threads()
    batch = inputs.batch

    def use_threads(n: int) -> Callable[[], None]:
        def setup() -> None:
            set_num_threads(n)
            decode_jpeg(batch[:4])  # start the pool's threads outside the timed loop

        return setup

    pool = ThreadPoolExecutor(2, thread_name_prefix="bench")
    sides = [
        Side("ours", lambda: decode_jpeg(batch), use_threads(2)),
        Side("ours, 1 thread", lambda: decode_jpeg(batch), use_threads(1)),
    ]
    # The peers that release the GIL while decoding, each on the same 2-thread pool.
    decoders: dict[str, Callable[[bytes], torch.Tensor]] = {}
    if peers.turbo is not None:
        decoders["PyTurboJPEG"] = lambda d: turbo_decode(peers, d)
    if peers.simplejpeg is not None:
        decoders["simplejpeg"] = lambda d: chw(peers.simplejpeg.decode_jpeg(d, strict=False))
    if peers.cv2 is not None:
        flags = peers.cv2.IMREAD_COLOR_RGB | peers.cv2.IMREAD_IGNORE_ORIENTATION
        decoders["OpenCV"] = lambda d: chw(peers.cv2.imdecode(np.frombuffer(d, np.uint8), flags))
    for name, decode_one in decoders.items():
        sides.append(Side(name, lambda f=decode_one: list(pool.map(f, batch))))
    peer_names = list(decoders)
    try:
        timings = measure(sides, repeats, min_time)
    finally:
        set_num_threads(before)
        pool.shutdown()
    sizes = sorted(set(inputs.batch_sizes))
    checks.append(f"batch: {len(batch)} JPEGs cycling {len(sizes)} images, sizes (w, h) {sizes}")
    workload = f"batch decode_jpeg(list of {len(batch)}), 2 threads"
    rows = peer_rows(workload, timings, peer_names, 1.0) if peer_names else []
    rows.append(row_from(workload, timings, "ours", "ours, 1 thread", target=1.7))
    return rows


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
                theirs = turbo_decode(peers, data, k)
                checks.append(compare(f"1/{k} {label} vs PyTurboJPEG", ours_out, theirs))
                sides.append(
                    Side(f"PyTurboJPEG 1/{k}", lambda d=data, k=k: turbo_decode(peers, d, k))
                )
            size = (w // k, h // k)
            theirs = pil_draft_decode(data, size)
            checks.append(compare(f"1/{k} {label} vs Pillow draft", ours_out, theirs))
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


def png_decoders(peers: Peers, data: bytes, channels: int) -> dict[str, Callable[[], object]]:
    """Every peer's PNG decode of `data` to `channels` (1, 3 or 4) as a [C, H, W] tensor."""
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    sides: dict[str, Callable[[], object]] = {"Pillow": lambda: pil_decode(data, mode)}
    if peers.cv2 is not None:
        cv2 = peers.cv2
        encoded = np.frombuffer(data, np.uint8)
        if channels == 3:
            flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION
            sides["OpenCV"] = lambda: chw(cv2.imdecode(encoded, flags))
        elif channels == 4:  # BGRA, then RGBA as the others give
            sides["OpenCV"] = lambda: chw(
                cv2.cvtColor(cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED), cv2.COLOR_BGRA2RGBA)
            )
    if peers.tvio is not None:
        tensor = as_tensor(data)
        sides["torchvision"] = lambda: peers.tvio.decode_png(tensor)
    return sides


def bench_png(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 4: PNG decode against every peer."""
    rows: list[Row] = []
    for label, data in inputs.pngs.items():
        ours_out = decode_png(data)
        decoders = png_decoders(peers, data, ours_out.shape[0])
        sides = checked_sides(f"PNG {label}", ours_out, decoders, checks)
        rows += time_against(
            f"PNG decode {label}", lambda d=data: decode_png(d), sides, repeats, min_time, 1.2
        )
    return rows


def jpeg_encoders(
    peers: Peers, image: torch.Tensor, from_planes: bool = False
) -> dict[str, Callable[[], object]]:
    """Every peer's JPEG encode of `image` at QUALITY, 4:2:0, accurate DCT, no optimisation.

    With `from_planes`, `image` is a [3, H, W]-contiguous tensor and each call includes
    the copy a peer needs to (H, W, C) order (torch's permute copy, the fastest here).
    """
    if from_planes:

        def hwc() -> np.ndarray:
            return image.permute(1, 2, 0).contiguous().numpy()

        def bgr() -> np.ndarray:
            return image.flip(0).permute(1, 2, 0).contiguous().numpy()
    else:
        hwc_array = np.ascontiguousarray(image.permute(1, 2, 0).numpy())
        bgr_array = np.ascontiguousarray(hwc_array[:, :, ::-1])  # OpenCV's own layout

        def hwc() -> np.ndarray:
            return hwc_array

        def bgr() -> np.ndarray:
            return bgr_array

    def pil_encode() -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(hwc()).save(buffer, "JPEG", quality=QUALITY, subsampling="4:2:0")
        return buffer.getvalue()

    sides: dict[str, Callable[[], object]] = {"Pillow": pil_encode}
    if peers.turbo is not None:
        tj = peers.turbojpeg
        sides["PyTurboJPEG"] = lambda: peers.turbo.encode(
            hwc(), QUALITY, tj.TJPF_RGB, tj.TJSAMP_420, tj.TJFLAG_ACCURATEDCT
        )
    if peers.simplejpeg is not None:
        sides["simplejpeg"] = lambda: peers.simplejpeg.encode_jpeg(
            hwc(), QUALITY, "RGB", "420", fastdct=False
        )
    if peers.cv2 is not None:
        params = [peers.cv2.IMWRITE_JPEG_QUALITY, QUALITY]
        sides["OpenCV"] = lambda: peers.cv2.imencode(".jpg", bgr(), params)[1]
    if peers.kornia is not None:
        sides["kornia-rs"] = lambda: peers.kornia.encode_image_jpegturbo(hwc(), QUALITY, "4:2:0")
    if peers.tvio is not None:
        sides["torchvision"] = lambda: peers.tvio.encode_jpeg(image, QUALITY)
    return sides


def encoded_size(result: object) -> int:
    """Bytes of an encoder's output (bytes, an array or a tensor)."""
    if isinstance(result, torch.Tensor):
        return result.numel()
    if isinstance(result, np.ndarray):
        return result.nbytes
    return len(result)  # type: ignore[arg-type]


def bench_encode(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 5: JPEG encode of the 517x606 and 1920x1280 photos at quality 90, 4:2:0,
    as decoded (a [C, H, W] view of (H, W, C) memory) and as a [3, H, W]-contiguous tensor.
    """
    rows: list[Row] = []
    cases = [("517x606", inputs.hopper, False), ("1920x1280", inputs.photo, False)]
    cases.append(("1920x1280 [3, H, W]-contiguous", inputs.photo, True))
    for label, data, from_planes in cases:
        image = decode_jpeg(data)  # a [C, H, W] view of [H, W, C] memory, as decoded
        if from_planes:
            image = image.contiguous()
        sides = jpeg_encoders(peers, image, from_planes)
        sizes = {"ours": encoded_size(encode_jpeg(image, QUALITY))}
        sizes.update({name: encoded_size(fn()) for name, fn in sides.items()})
        checks.append(f"encode {label} q{QUALITY} bytes: {sizes}")
        rows += time_against(
            f"JPEG encode {label} q{QUALITY}",
            lambda i=image: encode_jpeg(i, QUALITY),
            sides,
            repeats,
            min_time,
            1.0,
        )
    return rows


def png_encoders(peers: Peers, image: torch.Tensor, level: int) -> dict[str, Callable[[], object]]:
    """Every peer's PNG encode of an RGB `image` at zlib `level`."""
    hwc = np.ascontiguousarray(image.permute(1, 2, 0).numpy())

    def pil_encode() -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(hwc).save(buffer, "PNG", compress_level=level)
        return buffer.getvalue()

    sides: dict[str, Callable[[], object]] = {"Pillow": pil_encode}
    if peers.cv2 is not None:
        bgr = np.ascontiguousarray(hwc[:, :, ::-1])
        params = [peers.cv2.IMWRITE_PNG_COMPRESSION, level]
        sides["OpenCV"] = lambda: peers.cv2.imencode(".png", bgr, params)[1]
    if peers.tvio is not None:
        sides["torchvision"] = lambda: peers.tvio.encode_png(image, level)
    return sides


def bench_png_encode(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 6: PNG encode of a 1024x768 RGB photo at zlib levels 6 and 1."""
    image = decode_png(inputs.pngs[f"{PNG_SIZE[0]}x{PNG_SIZE[1]} RGB"])
    rows: list[Row] = []
    for level in PNG_LEVELS:
        ours = encode_png(image, level)
        exact = torch.equal(decode_png(ours), image)
        sides = png_encoders(peers, image, level)
        sizes = {"ours": ours.numel()} | {name: encoded_size(fn()) for name, fn in sides.items()}
        checks.append(f"PNG encode level {level} bytes: {sizes}; ours decodes exactly: {exact}")
        rows += time_against(
            f"PNG encode {PNG_SIZE[0]}x{PNG_SIZE[1]} RGB, level {level}",
            lambda lv=level: encode_png(image, lv),
            sides,
            repeats,
            min_time,
            1.0,
        )
    return rows


def webp_decoders(peers: Peers, data: bytes, channels: int) -> dict[str, Callable[[], object]]:
    """Every peer's WebP decode of `data` to RGB or RGBA (`channels`) as a [C, H, W] tensor."""
    mode = {3: "RGB", 4: "RGBA"}[channels]
    sides: dict[str, Callable[[], object]] = {"Pillow": lambda: pil_decode(data, mode)}
    if peers.cv2 is not None:
        cv2 = peers.cv2
        encoded = np.frombuffer(data, np.uint8)
        if channels == 3:
            flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION
            sides["OpenCV"] = lambda: chw(cv2.imdecode(encoded, flags))
        else:  # BGRA, then RGBA as the others give
            sides["OpenCV"] = lambda: chw(
                cv2.cvtColor(cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED), cv2.COLOR_BGRA2RGBA)
            )
    tensor = as_tensor(data)
    if peers.tvio is not None:
        tv_mode = (
            peers.tvio.ImageReadMode.RGB if channels == 3 else peers.tvio.ImageReadMode.RGB_ALPHA
        )
        sides["torchvision"] = lambda: peers.tvio.decode_webp(tensor, tv_mode)
    if peers.tcdec is not None:
        tc_mode = "RGB" if channels == 3 else "RGB_ALPHA"
        sides["torchcodec"] = lambda: peers.tcdec.decode_webp(tensor, mode=tc_mode)
    return sides


def bench_webp(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 7: WebP decode (lossy, lossless, lossy with alpha) against every peer."""
    rows: list[Row] = []
    for label, (data, channels) in inputs.webps.items():
        mode = ImageReadMode.RGB if channels == 3 else ImageReadMode.RGB_ALPHA
        ours_out = decode_webp(data, mode)
        decoders = webp_decoders(peers, data, channels)
        sides = checked_sides(f"WebP {label} ({len(data):,} bytes)", ours_out, decoders, checks)
        rows += time_against(
            f"WebP decode {label}",
            lambda d=data, m=mode: decode_webp(d, m),
            sides,
            repeats,
            min_time,
            1.0,
        )
    return rows


def webp_encoders(
    peers: Peers, image: torch.Tensor, quality: int, lossless: bool
) -> dict[str, Callable[[], object]]:
    """Every peer's WebP encode of an RGB `image` (libwebp's method 4 on every side)."""
    hwc = np.ascontiguousarray(image.permute(1, 2, 0).numpy())

    def pil_encode() -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(hwc).save(buffer, "WEBP", quality=quality, lossless=lossless, method=4)
        return buffer.getvalue()

    sides: dict[str, Callable[[], object]] = {"Pillow": pil_encode}
    if peers.cv2 is not None and (not lossless or quality == WEBP_LOSSLESS_QUALITY):
        bgr = np.ascontiguousarray(hwc[:, :, ::-1])
        # OpenCV: a quality above 100 asks for lossless.
        params = [peers.cv2.IMWRITE_WEBP_QUALITY, 101 if lossless else quality]
        sides["OpenCV"] = lambda: peers.cv2.imencode(".webp", bgr, params)[1]
    return sides


def bench_webp_encode(
    inputs: Inputs, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 8: WebP encode, lossy (1920x1280, quality 90) and lossless (517x606)."""
    rows: list[Row] = []
    w, h = PHOTO_SIZE
    cases = [
        (f"{w}x{h} lossy q{WEBP_QUALITY}", inputs.photo_image, WEBP_QUALITY, False),
        ("517x606 lossless", inputs.hopper_image, WEBP_LOSSLESS_QUALITY, True),
    ]
    for label, picture, quality, lossless in cases:
        image = torch.from_numpy(np.asarray(picture).copy()).permute(2, 0, 1)
        ours = encode_webp(image, quality, lossless)
        decoded = decode_webp(ours)
        quality_note = (
            f"decodes exactly: {torch.equal(decoded, image)}"
            if lossless
            else f"PSNR {psnr_db(decoded, image):.2f} dB"
        )
        sides = webp_encoders(peers, image, quality, lossless)
        sizes = {"ours": ours.numel()} | {name: encoded_size(fn()) for name, fn in sides.items()}
        checks.append(f"WebP encode {label} bytes: {sizes}; ours {quality_note}")
        rows += time_against(
            f"WebP encode {label}",
            lambda i=image, q=quality, ll=lossless: encode_webp(i, q, ll),
            sides,
            repeats,
            min_time,
            1.0,
        )
    return rows


def psnr_db(a: torch.Tensor, b: torch.Tensor) -> float:
    """PSNR of two uint8 images in dB."""
    mse = float(((a.double() - b.double()) ** 2).mean())
    return float("inf") if mse == 0 else 10 * float(np.log10(255.0**2 / mse))


# ----------------------------------------------------------------------------- main


Workload = Callable[[Inputs, Peers, int, float, list[str]], list[Row]]
WORKLOADS: dict[str, Workload] = {
    "decode": bench_full_decode,
    "batch": bench_batch,
    "scaled": bench_scaled,
    "png": bench_png,
    "encode": bench_encode,
    "png_encode": bench_png_encode,
    "webp": bench_webp,
    "webp_encode": bench_webp_encode,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = benchmark_parser(__doc__.splitlines()[0], list(WORKLOADS))
    parser.add_argument(
        "--peers-python",
        default=str(PEERS_PYTHON),
        help="the peers' virtualenv Python to run under when peers are missing here ('' : never)",
    )
    return parse_benchmark_args(parser, list(WORKLOADS), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every workload, print machine info and the table, optionally write JSON."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    rerun_under_peers(__file__, PEER_MODULES, args.peers_python, argv)
    run = Session(args)
    torch.set_num_threads(1)
    peers = load_peers()
    run.header("trivium.vision.io benchmark", machine_info(peers))
    inputs = build_inputs()
    for name, bench in WORKLOADS.items():
        if name in args.only:
            run.rows += bench(inputs, peers, args.repeats, args.min_time, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
