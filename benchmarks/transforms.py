"""Speed of ``trivium.vision.transforms`` against torchvision v2 and Pillow, in one process.

Workloads (inputs are built at start-up from the photos in ``tests/assets/images``:
64 "ImageNet-sized" JPEGs, 500x375 .. 640x480, cut and resized from them with
Pillow and saved at quality 90, 4:2:0):

1. ``pipeline``: the per-image training pipeline RandomResizedCrop(224) +
   RandomHorizontalFlip + ToDtype(float32, scale=True) + Normalize on decoded
   uint8 tensors, against the same pipeline of ``torchvision.transforms.v2``.
2. ``e2e``: from JPEG bytes to a normalised 224x224 float tensor. Ours: the fused
   ``DecodeRandomResizedCrop`` + the rest of the pipeline. Peers, each a pipeline a
   user could build: a full decode (simplejpeg, PyTurboJPEG, torchvision's
   ``decode_jpeg`` when its C++ extension loads, else our full-size ``decode_jpeg``)
   + the torchvision v2 modules; simplejpeg and PyTurboJPEG decoding at the smallest
   DCT scale whose crop still covers 224x224 (as DALI-style pipelines do), then v2;
   OpenCV (``cv2.imdecode``, the crop, ``cv2.resize`` INTER_AREA, flip, float32
   conversion and normalisation in NumPy, ``torch.from_numpy``), and INTER_LINEAR
   (not antialiased: reported, not a candidate for the best peer); Pillow +
   torchvision v1. Every side draws the same crop boxes and flips as ours (a
   generator seeded alike, :class:`Draws`), checked at start-up on the first images
   (close outputs), and each timed call runs a side over all 64 JPEGs with the
   draws started again from the seed: every side does the same images, boxes and
   flips. A peer that does not import is named and left out. The first row is
   against the fastest peer (target 1.3x); each side's thread CPU time per image is
   printed beside (it moves much less than wall time on a busy machine). Peers
   missing here (simplejpeg, OpenCV) import in ``.venv-peers``
   (``../shared/peers/setup_peers_venv.sh``): with ``e2e`` selected, the script
   runs itself again under that Python (``--peers-python``), with this
   environment's site-packages after its own.
3. ``per_sample``: every transform that takes ``per_sample=True``, on a
   [64, 3, 224, 224] batch (uint8, then float32 in [0, 1]) of the photos, against
   the same transform without ``per_sample`` applied image by image in a Python
   loop (``torch.stack`` of the results). Both sides draw the same parameters (two
   generators seeded alike). The two sides alternate which goes first repeat by
   repeat (at least 5 repeats); each row's ratio is printed as it is measured, with
   the median of the per-repeat ratios (each repeat's two sides ran back to back, so
   that one moves least with the machine's load). ``--cases`` picks rows by name;
   the per-sample table of the documentation's page is printed last.

Peers and timing are ``benchmarks/harness.py``'s. Ratio = peer time / our time
(above 1: we are faster).

Run from the repository root::

    .venv/bin/python benchmarks/transforms.py [--repeats N] [--min-time S] [--json PATH]
        [--only pipeline,e2e,per_sample] [--threads N] [--cases NAME,...]
        [--peers-python .venv-peers/bin/python]
"""

from __future__ import annotations

import os
import site

# Re-run under the peers' virtualenv (see ``harness.rerun_under_peers``): trivium from the
# project's environment, whose site-packages must be on the path before trivium imports.
if os.environ.get("TRIVIUM_PROJECT_SITE"):
    site.addsitedir(os.environ["TRIVIUM_PROJECT_SITE"])

import argparse
import importlib
import importlib.util
import io
import statistics
import sys
import time
from collections.abc import Callable, Sequence
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
from trivium.vision.transforms.geometry import random_resized_crop_box

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


# ------------------------------------------------------------------- e2e sides

E2E_SIZE = 224
# The modules of the e2e peers: those missing here import under --peers-python.
E2E_PEER_MODULES = ("simplejpeg", "turbojpeg", "cv2")
# OpenCV's bilinear resize without antialiasing: not the same result (it aliases when it
# shrinks), reported beside the others but not a candidate for the best peer.
E2E_ALIASED = "OpenCV INTER_LINEAR (no antialias)"


class Draws:
    """The crop boxes and flips ours draws, in its order, from a generator seeded alike.

    Ours draws the box (``DecodeRandomResizedCrop``) and then the flip
    (``RandomHorizontalFlip``) from one generator; a peer calling this once per image
    gets the same box and flip for its n-th image as ours for its n-th. ``reset``
    seeds the generator again (ours' own when it is passed in).
    """

    def __init__(self, generator: torch.Generator | None = None) -> None:
        self.generator = generator if generator is not None else torch.Generator()
        self.reset()

    def reset(self) -> None:
        """Start the draws again from the seed."""
        self.generator.manual_seed(0)

    def __call__(self, height: int, width: int) -> tuple[tuple[int, int, int, int], bool]:
        box = random_resized_crop_box(height, width, generator=self.generator)
        return box, float(torch.rand((), generator=self.generator)) < 0.5


# One image of one side: the JPEG's bytes and the draws -> the normalised crop.
OneImage = Callable[[bytes, Draws], torch.Tensor]


def every_image(
    jpegs: list[bytes], one: OneImage, generator: torch.Generator | None = None
) -> Callable[[], torch.Tensor]:
    """A side whose every call runs ``one`` on all ``jpegs`` in order, the draws started
    again from the seed: every side and every call do the same images, boxes and flips
    (the time per image is the call's divided by ``len(jpegs)``)."""
    draws = Draws(generator)

    def run() -> torch.Tensor:
        draws.reset()
        for data in jpegs:
            out = one(data, draws)
        return out

    return run


def first_outputs(
    jpegs: list[bytes], one: OneImage, generator: torch.Generator | None = None
) -> list[torch.Tensor]:
    """``one``'s outputs for ``jpegs``, the draws from the seed."""
    draws = Draws(generator)
    return [one(data, draws) for data in jpegs]


def ours_one() -> tuple[OneImage, torch.Generator]:
    """Our fused pipeline as a side, and the generator it draws from."""
    generator = torch.Generator()
    fused = ours_pipeline(generator, fused_decode=True)
    return lambda data, draws: fused(data), generator


def dct_factor(box: Sequence[int]) -> int:
    """The largest libjpeg scale 1/k (k in 8, 4, 2, 1) whose scaled box still covers 224 x 224.

    What DALI-style pipelines (and Pillow's ``draft``) do: no margin over the output.
    """
    for k in (8, 4, 2):
        if box[2] // k >= E2E_SIZE and box[3] // k >= E2E_SIZE:
            return k
    return 1


def scaled_box(box: Sequence[int], k: int) -> tuple[int, int, int, int]:
    """``box`` in the pixels of a decode at 1/k."""
    return tuple(v // k for v in box)  # type: ignore[return-value]


def chw(array: np.ndarray) -> torch.Tensor:
    """A [C, H, W] view of an (H, W, C) array, as our decoders return."""
    return torch.from_numpy(array).permute(2, 0, 1)


def v2_tail(tv: Any) -> Callable[[torch.Tensor, Sequence[int], bool], torch.Tensor]:
    """torchvision v2 RandomResizedCrop + flip + ToDtype + Normalize on a box and flip drawn
    beforehand (by :class:`Draws`): the v2 modules, with the crop's ``make_params`` giving the box.
    """
    v2 = tv.transforms.v2

    class GivenBoxCrop(v2.RandomResizedCrop):
        box: Sequence[int] = (0, 0, 1, 1)

        def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
            return dict(zip(("top", "left", "height", "width"), self.box, strict=True))

    crop = GivenBoxCrop(E2E_SIZE, antialias=True)
    flip = v2.RandomHorizontalFlip(p=1.0)
    finish = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])

    def run(image: torch.Tensor, box: Sequence[int], flipped: bool) -> torch.Tensor:
        crop.box = box
        x = crop(image)
        return finish(flip(x) if flipped else x)

    return run


def chw_size(image: torch.Tensor) -> tuple[int, int]:
    """(height, width) of a [C, H, W] image."""
    return image.shape[-2], image.shape[-1]


def decode_then(
    decode: Callable[[bytes], Any],
    tail: Callable[..., torch.Tensor],
    size_of: Callable[[Any], tuple[int, int]] = chw_size,
) -> OneImage:
    """A full decode, then ``tail(image, box, flipped)`` with the box and flip drawn for
    the decoded image's ``size_of`` (height, width)."""

    def one(data: bytes, draws: Draws) -> torch.Tensor:
        image = decode(data)
        return tail(image, *draws(*size_of(image)))

    return one


def scaled_decode_then(
    size_of: Callable[[bytes], tuple[int, int]],
    decode: Callable[[bytes, int], torch.Tensor],
    tail: Callable[..., torch.Tensor],
) -> OneImage:
    """The box drawn from the header's size, the JPEG decoded at the smallest scale 1/k
    that still covers the output (:func:`dct_factor`), then ``tail``."""

    def one(data: bytes, draws: Draws) -> torch.Tensor:
        box, flipped = draws(*size_of(data))
        k = dct_factor(box)
        return tail(decode(data, k), scaled_box(box, k), flipped)

    return one


def pil_tail(tv: Any | None) -> Callable[[Image.Image, Sequence[int], bool], torch.Tensor]:
    """The classic Pillow pipeline's steps on a drawn box: torchvision v1's functional
    resized_crop / hflip / to_tensor / normalize, or the same steps in Pillow and torch."""
    if tv is not None:
        f = tv.transforms.functional

        def v1(image: Image.Image, box: Sequence[int], flipped: bool) -> torch.Tensor:
            image = f.resized_crop(image, *box, [E2E_SIZE, E2E_SIZE])
            return f.normalize(f.to_tensor(f.hflip(image) if flipped else image), MEAN, STD)

        return v1
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)

    def steps(image: Image.Image, box: Sequence[int], flipped: bool) -> torch.Tensor:
        top, left, height, width = box
        pil_box = (left, top, left + width, top + height)
        image = image.resize((E2E_SIZE, E2E_SIZE), Image.BILINEAR, box=pil_box)
        if flipped:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)
        array = np.asarray(image, dtype=np.float32) / 255.0
        return (torch.from_numpy(array).permute(2, 0, 1) - mean) / std

    return steps


def pil_side(tv: Any | None) -> OneImage:
    """Pillow open + convert, then :func:`pil_tail` on the drawn box."""

    def decode(data: bytes) -> Image.Image:
        return Image.open(io.BytesIO(data)).convert("RGB")

    return decode_then(decode, pil_tail(tv), lambda image: (image.height, image.width))


def opencv_tail(cv2: Any, interpolation: int) -> Callable[..., torch.Tensor]:
    """OpenCV's steps on an (H, W, 3) RGB array: crop, ``cv2.resize``, flip, then the
    uint8 -> float32 conversion and normalisation in NumPy, wrapped by ``torch.from_numpy``."""
    mean = np.array(MEAN, np.float32) * 255
    inv_std = 1 / (np.array(STD, np.float32) * 255)

    def run(array: np.ndarray, box: Sequence[int], flipped: bool) -> torch.Tensor:
        top, left, height, width = box
        crop = array[top : top + height, left : left + width]
        small = cv2.resize(crop, (E2E_SIZE, E2E_SIZE), interpolation=interpolation)
        x = (small[:, ::-1] if flipped else small).astype(np.float32)
        np.subtract(x, mean, out=x)
        np.multiply(x, inv_std, out=x)
        return chw(x)

    return run


def opencv_side(cv2: Any, interpolation: int) -> OneImage:
    """``cv2.imdecode`` to RGB, then :func:`opencv_tail`."""
    flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION

    def decode(data: bytes) -> np.ndarray:
        return cv2.imdecode(np.frombuffer(data, np.uint8), flags)

    tail = opencv_tail(cv2, interpolation)
    return decode_then(decode, tail, lambda array: array.shape[:2])


def optional_module(name: str) -> Callable[[], Any]:
    """An importer for :func:`harness.load_peer`: the module, or None when not installed."""

    def load() -> Any:
        try:
            return importlib.import_module(name)
        except ImportError:
            return None

    return load


def simplejpeg_sides(simplejpeg: Any, tail: Callable[..., torch.Tensor]) -> dict[str, OneImage]:
    """simplejpeg's full and scaled decodes, then ``tail``."""

    def size_of(data: bytes) -> tuple[int, int]:
        return simplejpeg.decode_jpeg_header(data)[:2]

    def decode(data: bytes, k: int = 1) -> torch.Tensor:
        if k == 1:
            return chw(simplejpeg.decode_jpeg(data))
        height, width = size_of(data)
        smallest = {"min_height": -(-height // k), "min_width": -(-width // k), "min_factor": k}
        return chw(simplejpeg.decode_jpeg(data, **smallest))

    return {
        "simplejpeg + tv v2": decode_then(decode, tail),
        "simplejpeg scaled + tv v2": scaled_decode_then(size_of, decode, tail),
    }


def turbojpeg_sides(turbojpeg: Any, tail: Callable[..., torch.Tensor]) -> dict[str, OneImage]:
    """PyTurboJPEG's full and scaled decodes, then ``tail``."""
    turbo, rgb = turbojpeg.TurboJPEG(), turbojpeg.TJPF_RGB

    def size_of(data: bytes) -> tuple[int, int]:
        width, height = turbo.decode_header(data)[:2]
        return height, width

    def decode(data: bytes, k: int = 1) -> torch.Tensor:
        scaling = None if k == 1 else (1, k)
        return chw(turbo.decode(data, pixel_format=rgb, scaling_factor=scaling))

    return {
        "PyTurboJPEG + tv v2": decode_then(decode, tail),
        "PyTurboJPEG scaled + tv v2": scaled_decode_then(size_of, decode, tail),
    }


def opencv_sides(cv2: Any, tail: Any) -> dict[str, OneImage]:
    """OpenCV's pipeline with INTER_AREA and INTER_LINEAR (``tail`` is not used)."""
    cv2.setNumThreads(1)
    return {
        "OpenCV INTER_AREA": opencv_side(cv2, cv2.INTER_AREA),
        E2E_ALIASED: opencv_side(cv2, cv2.INTER_LINEAR),
    }


# Each peer library: (name, module, its sides, whether they need torchvision v2), and
# the names of its sides (rows saying why when the library is missing).
E2E_LIBRARIES = (
    ("simplejpeg", "simplejpeg", simplejpeg_sides, True),
    ("PyTurboJPEG", "turbojpeg", turbojpeg_sides, True),
    ("OpenCV", "cv2", opencv_sides, False),
)
E2E_LIBRARY_SIDES = {
    "simplejpeg": ("simplejpeg + tv v2", "simplejpeg scaled + tv v2"),
    "PyTurboJPEG": ("PyTurboJPEG + tv v2", "PyTurboJPEG scaled + tv v2"),
    "OpenCV": ("OpenCV INTER_AREA", E2E_ALIASED),
}


def torchvision_sides(jpegs: list[bytes], tv: Any | None) -> dict[str, OneImage]:
    """A full decode (torchvision's, else ours) + tv v2, and Pillow + tv v1 (or the same
    steps in Pillow when torchvision is missing)."""
    if tv is None:
        return {"Pillow (same steps)": pil_side(None)}
    try:
        tv.io.decode_jpeg(torch.frombuffer(bytearray(jpegs[0]), dtype=torch.uint8))
        decode, decoder = tv.io.decode_jpeg, "torchvision decode_jpeg"
    except Exception:  # the C++ decoder is not available: our full decode stands in
        decode, decoder = decode_jpeg, "our decode_jpeg"

    def tensor_decode(data: bytes) -> torch.Tensor:
        return decode(torch.frombuffer(bytearray(data), dtype=torch.uint8))

    return {
        f"{decoder} + tv v2": decode_then(tensor_decode, v2_tail(tv)),
        "Pillow + tv v1": pil_side(tv),
    }


def e2e_peer_sides(
    jpegs: list[bytes], tv: Any | None
) -> tuple[dict[str, OneImage], dict[str, str], list[str]]:
    """Every peer side that works here, why each other one is missing, and a line per
    peer library saying what loaded."""
    sides, missing, lines = torchvision_sides(jpegs, tv), {}, []
    tail = None if tv is None else v2_tail(tv)
    for label, module, make, needs_tv in E2E_LIBRARIES:
        library, line = harness.load_peer(optional_module(module))
        lines.append(f"{label}: {line}")
        if library is None or (needs_tv and tail is None):
            why = line if library is None else "torchvision not installed"
            missing.update(dict.fromkeys(E2E_LIBRARY_SIDES[label], why))
        else:
            sides.update(make(library, tail))
    return sides, missing, lines


E2E_CHECK_IMAGES = 16


def check_same_draws(jpegs: list[bytes], peers: dict[str, OneImage]) -> list[str]:
    """Each peer's first images against ours: the same boxes and flips give close
    outputs (the decoders and resize filters differ a little)."""
    jpegs = jpegs[:E2E_CHECK_IMAGES]
    expected = first_outputs(jpegs, *ours_one())
    lines = []
    for name, one in peers.items():
        got = first_outputs(jpegs, one)
        worst = max(float((g - e).abs().mean()) for g, e in zip(got, expected, strict=True))
        if worst > 0.1:  # a different box or flip moves whole regions: a mean of ~0.3-1
            raise AssertionError(f"e2e {name}: not the crops ours draws (mean |diff| {worst:.3f})")
        lines.append(f"{name}: mean |diff| <= {worst:.3f} (normalised units)")
    return lines


def thread_cpu_times(sides: Sequence[Side], repeats: int) -> dict[str, float]:
    """The median thread CPU seconds per call of each side, the sides taking turns.

    CPU time leaves out the time other processes hold the cores: on a busy machine
    its ratios move much less than wall-clock ones.
    """
    samples: dict[str, list[float]] = {side.name: [] for side in sides}
    for _ in range(repeats):
        for side in sides:
            start = time.thread_time()
            side.fn()
            samples[side.name].append(time.thread_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def per_image(timing: Timing, images: int) -> Timing:
    """A timing of calls over ``images`` images as a timing per image."""
    return Timing([s / images for s in timing.samples], timing.number)


def bench_e2e(jpegs: list[bytes], tv: Any | None, args: argparse.Namespace) -> list[Row]:
    peers, missing, lines = e2e_peer_sides(jpegs, tv)
    for line in lines + check_same_draws(jpegs, peers):
        print(f"- e2e {line}", flush=True)
    sides = [Side("ours", every_image(jpegs, *ours_one()))]
    sides += [Side(name, every_image(jpegs, one)) for name, one in peers.items()]
    n = len(jpegs)
    t = {k: per_image(v, n) for k, v in harness.measure(sides, args.repeats, args.min_time).items()}
    name = "JPEG bytes → normalised 224x224 (fused DecodeRandomResizedCrop)"
    candidates = sorted((p for p in peers if p != E2E_ALIASED), key=lambda p: t[p].median)
    best = candidates[0]
    cpu = {k: v / n for k, v in thread_cpu_times(sides, args.repeats).items()}
    for p in candidates:
        print(f"- e2e thread CPU time per image: ours {fmt_time(cpu['ours'])}, {p} "
              f"{fmt_time(cpu[p])}: {cpu[p] / cpu['ours']:.2f}x", flush=True)  # fmt: skip
    rows = [harness.row_from(name, t, "ours", best, f"best peer pipeline: {best}", 1.3)]
    rows += [harness.row_from(name, t, "ours", p) for p in candidates[1:]]
    if E2E_ALIASED in peers:
        rows.append(harness.row_from(name, t, "ours", E2E_ALIASED))
    rows += [harness.row_from(name, t, "ours", p, missing=why) for p, why in missing.items()]
    return rows


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
        "--peers-python",
        default=str(PEERS_PYTHON),
        help="the peers' virtualenv Python to run e2e under when its peers are missing here "
        "('': never)",
    )
    args = harness.parse_benchmark_args(parser, list(WORKLOADS), argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    return args


PEERS_PYTHON = harness.ROOT / ".venv-peers" / "bin" / "python"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads and print the table (and JSON with --json)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if "e2e" in args.only:
        harness.rerun_under_peers(__file__, E2E_PEER_MODULES, args.peers_python, argv)
    run = harness.Session(args)
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
    if per_sample:  # the table of docs/benchmarks/transforms-per-sample.md
        print(per_sample_table(per_sample))
    return status


if __name__ == "__main__":
    sys.exit(main())
