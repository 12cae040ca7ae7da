"""The whole input pipeline: an ImageNet-style epoch through each loader, threads and processes.

What it measures (every input is generated at start-up in a temp dir):

1. **images**: ``--images`` JPEGs (default 2000) of 375..500 x 500, quality 90 (photos from
   ``tests/assets/images/jpeg`` resized with Pillow) in an ImageFolder tree of 8
   classes; each side reads ``--epochs`` shuffled epochs (default 1) of RandomResizedCrop(224) →
   horizontal flip → scale and normalise to float32 → batches of 64 → a no-op step
   (the batch's shape is checked):

   - ``torch``: torch's ``DataLoader`` (worker processes) over torchvision's
     ``ImageFolder`` with ``transforms.v2`` (``RandomResizedCrop``,
     ``RandomHorizontalFlip``, ``ToImage``, ``ToDtype(float32, scale=True)``,
     ``Normalize``), torchvision's pure-Python code through ``tests/peers.py``;
   - ``spdl``: SPDL's thread pipeline (``spdl.pipeline.PipelineBuilder``) with its own
     image decode (``spdl.io.load_image`` with an FFmpeg ``crop,scale,hflip`` filter
     per image, the same crop draws), batches normalised in torch; run by the
     Python given with ``--spdl-python`` (a virtualenv with ``spdl-io``), left out
     otherwise;
   - ``dali``: DALI's CPU pipeline (``device_id=None``, ``num_threads`` = the worker
     count): ``fn.readers.file`` (its shuffle buffer), ``fn.decoders.image_random_crop``
     (torchvision's scale and ratio ranges), ``fn.resize``, ``fn.crop_mirror_normalize``
     with a coin-flip mirror, batches handed to torch by ``DALIGenericIterator``; run by
     the Python given with ``--dali-python`` (a virtualenv with ``nvidia-dali-cuda120``),
     left out otherwise;
   - ``ffcv``: FFCV's ``Loader`` (``num_workers`` threads, ``order=RANDOM``) over a
     ``.beton`` file the first run writes (JPEG, quality 90; not timed), with its
     ``RandomResizedCropRGBImageDecoder``, ``RandomHorizontalFlip``, ``NormalizeImage``
     and ``ToTorchImage(channels_last=False)``; its pipeline compiles (Numba) at the
     first ``iter()``; run by the Python given with ``--ffcv-python``, left out otherwise;
   - ``trivium-process`` / ``trivium-thread``: ``trivium.data.DataLoader`` over
     ``trivium.vision.datasets.ImageFolder`` (encoded bytes) with the classification
     pipeline's ``TrainBatch(224)`` as ``collate_fn`` (fused decode-and-crop, flip,
     normalise into the batch), ``worker_type="process"`` and ``"thread"``.

   Each side runs in a fresh Python process per worker count (1, 2 and 4, or
   ``--workers``), with torch's default ``persistent_workers=False``; the parent
   samples the memory (RSS and PSS, ``smaps_rollup``) of the whole process tree (main and
   workers) every 20 ms. Reported: images per second over all epochs (worker starts
   included), CPU time per image (user + system of the process and its workers,
   from the first ``iter()`` to the end), the peak RSS and PSS of the tree (RSS
   counts a shared page once per process that maps it, PSS splits it between them),
   and the time from the first ``iter(loader)`` to the first batch.
2. **flat** (memory that stays flat): pytorch#13246's dataset, a list of
   ``--objects`` small Python dicts (default 200000) read one per sample, in 2
   workers over ``--flat-epochs`` epochs (default 3); the tree's peak RSS per epoch
   for torch's ``DataLoader`` and ``trivium.data.DataLoader`` with processes and
   with threads. Worker processes touch every dict's reference count, so each
   forked worker comes to copy the pages of the list it read (copy-on-read); threads
   share the one copy.

Run from the repository root::

    .venv/bin/python benchmarks/loader.py [--images 2000] [--epochs 1] [--workers 1,2,4]
        [--spdl-python PATH] [--dali-python PATH] [--ffcv-python PATH] [--only images,flat]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import harness
import numpy as np
import torch
from PIL import Image

PHOTOS = harness.ROOT / "tests" / "assets" / "images" / "jpeg"
CROP, BATCH, CLASSES = 224, 64, 8
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
SIDES = ("torch", "spdl", "dali", "ffcv", "trivium-process", "trivium-thread")
FLAT_SIDES = ("torch", "trivium-process", "trivium-thread")
WORKLOADS = ("images", "flat")
SAMPLE_S = 0.02


# ---------------------------------------------------------------------- inputs


def make_image_folder(root: Path, count: int) -> None:
    """``count`` JPEGs of 375..500 x 500 in ``root/class<k>/`` (resized photos)."""
    photos = []
    for path in sorted(PHOTOS.glob("*.jp*g")):
        try:
            with Image.open(path) as image:
                if min(image.size) >= 200 and image.mode in ("RGB", "L"):
                    photos.append(image.convert("RGB"))
        except (OSError, ValueError):  # the assets include unusual JPEGs Pillow refuses
            continue
    rng = np.random.default_rng(0)
    for i in range(count):
        size = (500, int(rng.integers(375, 501))) if i % 2 else (int(rng.integers(375, 501)), 500)
        image = photos[i % len(photos)].resize(size, Image.Resampling.BILINEAR)
        path = root / f"class{i % CLASSES}" / f"img{i:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, "JPEG", quality=90)


# ---------------------------------------------------------------------- the sides (child)


def torch_loader(root: str, workers: int) -> Iterable[Any]:
    tv = harness.peers.import_torchvision()
    if tv is None:
        raise SystemExit("torchvision is not installed")
    from torchvision.transforms import v2

    transform = v2.Compose([
        v2.RandomResizedCrop(CROP, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(MEAN, STD),
    ])  # fmt: skip
    dataset = tv.datasets.ImageFolder(root, transform=transform)
    return torch.utils.data.DataLoader(dataset, BATCH, shuffle=True, num_workers=workers)


def trivium_loader(root: str, workers: int, worker_type: str) -> Iterable[Any]:
    from trivium.data import DataLoader
    from trivium.pipelines.vision.classification_data import TrainBatch
    from trivium.vision.datasets import ImageFolder
    from trivium.vision.io import read_file

    dataset = ImageFolder(root, loader=read_file)
    return DataLoader(dataset, BATCH, shuffle=True, num_workers=workers, seed=0,
                      collate_fn=TrainBatch(CROP), worker_type=worker_type)  # fmt: skip


def rrc_filter(path: str, rng: random.Random) -> str:
    """An FFmpeg filter for torchvision's RandomResizedCrop box of ``path``, and a flip."""
    with Image.open(path) as image:  # the header only
        width, height = image.size
    area = width * height
    box = None
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))
        w, h = round((target * ratio) ** 0.5), round((target / ratio) ** 0.5)
        if 0 < w <= width and 0 < h <= height:
            box = (rng.randint(0, width - w), rng.randint(0, height - h), w, h)
            break
    if box is None:
        side = min(width, height)
        box = ((width - side) // 2, (height - side) // 2, side, side)
    x, y, w, h = box
    flip = ",hflip" if rng.random() < 0.5 else ""
    return f"crop={w}:{h}:{x}:{y},scale={CROP}:{CROP}:flags=bilinear{flip},format=rgb24"


def spdl_loader(root: str, workers: int) -> Iterable[Any]:
    import spdl.io
    from spdl.pipeline import PipelineBuilder

    files = sorted(str(p) for p in Path(root).glob("class*/*.jpg"))
    mean = torch.tensor(MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD).view(1, 3, 1, 1) * 255

    def decode(item: tuple[str, int]) -> tuple[torch.Tensor, int]:
        path, seed = item
        buffer = spdl.io.load_image(path, filter_desc=rrc_filter(path, random.Random(seed)))
        return spdl.io.to_torch(buffer), int(Path(path).parent.name.removeprefix("class"))

    def collate(items: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.stack([image for image, _ in items]).permute(0, 3, 1, 2).float()
        return (images - mean) / std, torch.tensor([label for _, label in items])

    class Epochs:
        def __init__(self) -> None:
            self.epoch = 0

        def __iter__(self) -> Any:
            order = list(range(len(files)))
            random.Random(self.epoch).shuffle(order)
            self.epoch += 1
            source = [(files[i], self.epoch * len(files) + i) for i in order]
            pipeline = (
                PipelineBuilder()
                .add_source(source)
                .pipe(decode, concurrency=workers)
                .aggregate(BATCH)
                .pipe(collate)
                .add_sink(2)
                .build(num_threads=workers)
            )
            with pipeline.auto_stop():
                yield from pipeline.get_iterator()

    return Epochs()


def dali_loader(root: str, workers: int) -> Iterable[Any]:
    """DALI's CPU pipeline over ``root``'s ImageFolder tree; (images, labels) torch batches."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    @pipeline_def(batch_size=BATCH, num_threads=workers, device_id=None, seed=0)
    def pipeline() -> Any:
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="reader")
        images = fn.decoders.image_random_crop(
            jpegs, device="cpu", output_type=types.RGB, random_area=[0.08, 1.0],
            random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10,
        )  # fmt: skip
        images = fn.resize(images, resize_x=CROP, resize_y=CROP, antialias=True)
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT, output_layout="CHW", mean=[255 * m for m in MEAN],
            std=[255 * s for s in STD], mirror=fn.random.coin_flip(),
        )  # fmt: skip
        return images, labels

    def make() -> Iterable[Any]:
        return DALIGenericIterator(
            pipeline(), ["images", "labels"], reader_name="reader",
            last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True,
        )  # fmt: skip

    return MadeAtFirstIter(make, lambda out: (out[0]["images"], out[0]["labels"].view(-1)))


class ImageFiles:
    """``root``'s ImageFolder tree as (RGB image, label) samples, for FFCV's writer."""

    def __init__(self, root: str) -> None:
        self.files = sorted(Path(root).glob("class*/*.jpg"))

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> tuple[Image.Image, int]:
        with Image.open(self.files[i]) as image:
            return image.convert("RGB"), int(self.files[i].parent.name.removeprefix("class"))


def ffcv_loader(root: str, workers: int) -> Iterable[Any]:
    """FFCV's ``Loader`` over ``root`` written once (JPEG, quality 90) to ``root``.beton."""
    # Numba's thread pool is sized at import, by default to the CPU count
    os.environ["NUMBA_NUM_THREADS"] = str(max(workers, os.cpu_count() or 1))
    from ffcv.fields import IntField, RGBImageField
    from ffcv.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import (
        NormalizeImage,
        RandomHorizontalFlip,
        Squeeze,
        ToTensor,
        ToTorchImage,
    )
    from ffcv.writer import DatasetWriter

    beton = str(Path(root).with_suffix(".beton"))
    if not Path(beton).exists():  # by the first run, before its timed part
        fields = {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()}
        writer = DatasetWriter(beton, fields, num_workers=len(os.sched_getaffinity(0)))
        writer.from_indexed_dataset(ImageFiles(root))
    crop = RandomResizedCropRGBImageDecoder((CROP, CROP), scale=(0.08, 1), ratio=(3 / 4, 4 / 3))
    normalize = NormalizeImage(np.array(MEAN) * 255, np.array(STD) * 255, np.float32)
    pipelines = {
        "image": [crop, RandomHorizontalFlip(), normalize, ToTensor(),
                  ToTorchImage(channels_last=False)],
        "label": [IntDecoder(), ToTensor(), Squeeze()],
    }  # fmt: skip

    def make() -> Iterable[Any]:
        return Loader(beton, BATCH, num_workers=workers, order=OrderOption.RANDOM,
                      drop_last=False, seed=0, pipelines=pipelines)  # fmt: skip

    return MadeAtFirstIter(make, lambda batch: batch)


class MadeAtFirstIter:
    """A loader made (its threads started, its code compiled) at the first ``iter()``, timed.

    Each batch it yields goes through ``convert`` into (images, labels).
    """

    def __init__(self, make: Callable[[], Iterable[Any]], convert: Callable[[Any], Any]) -> None:
        self.make, self.convert = make, convert
        self.loader: Iterable[Any] | None = None

    def __iter__(self) -> Iterator[Any]:
        if self.loader is None:
            self.loader = self.make()
        return map(self.convert, self.loader)


def make_loader(side: str, root: str, workers: int) -> Iterable[Any]:
    if side == "torch":
        return torch_loader(root, workers)
    if side == "spdl":
        return spdl_loader(root, workers)
    if side == "dali":
        return dali_loader(root, workers)
    if side == "ffcv":
        return ffcv_loader(root, workers)
    return trivium_loader(root, workers, side.removeprefix("trivium-"))


class ManyObjects(torch.utils.data.Dataset):
    """pytorch#13246's dataset: the samples in a list of many small Python objects."""

    def __init__(self, n: int) -> None:
        self.rows = [{"id": i, "name": f"sample-{i:08d}", "label": i % 10} for i in range(n)]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> torch.Tensor:
        row = self.rows[i]
        return torch.tensor([row["id"], row["label"]])


def flat_loader(side: str, objects: int) -> Iterable[Any]:
    dataset = ManyObjects(objects)
    if side == "torch":
        return torch.utils.data.DataLoader(dataset, 256, shuffle=True, num_workers=2)
    from trivium.data import DataLoader

    worker_type = side.removeprefix("trivium-")
    return DataLoader(dataset, 256, shuffle=True, num_workers=2, worker_type=worker_type)


def cpu_seconds() -> float:
    """User + system CPU of this process and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_child(args: argparse.Namespace) -> None:
    """One side, one worker count: print a line per epoch's end, then the totals (JSON)."""
    if args.child != "trivium-thread":  # its main thread only receives batches
        torch.set_num_threads(1)
    if args.workload == "flat":
        loader = flat_loader(args.child, args.objects)
    else:
        loader = make_loader(args.child, args.root, args.workers)
    emit({"event": "ready", "t": time.monotonic()})
    images, first = 0, None
    start, cpu_start = time.monotonic(), cpu_seconds()
    for epoch in range(args.epochs):
        set_epoch = getattr(loader, "set_epoch", None)
        if set_epoch is not None:
            set_epoch(epoch)
        for batch in loader:
            if first is None:
                first = time.monotonic() - start
            images += step(batch, args.workload)
        emit({"event": "epoch", "epoch": epoch, "t": time.monotonic()})
    wall = time.monotonic() - start
    del loader
    gc.collect()
    for child in __import__("multiprocessing").active_children():
        child.join()
    emit({"event": "done", "images": images, "wall_s": wall, "first_s": first,
          "cpu_s": cpu_seconds() - cpu_start})  # fmt: skip


def step(batch: Any, workload: str) -> int:
    """The no-op model step: check the batch, count its samples."""
    if workload == "flat":
        return len(batch)
    images, labels = batch
    if images.dtype != torch.float32 or tuple(images.shape[1:]) != (3, CROP, CROP):
        raise AssertionError(f"bad batch {images.dtype} {tuple(images.shape)}")
    return len(labels)


def emit(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


# ---------------------------------------------------------------------- measuring (parent)


def tree_memory_kib(pid: int) -> tuple[int, int]:
    """RSS and PSS of ``pid`` and all its descendants, in KiB ((0, 0) once it is gone).

    RSS counts a page shared by several processes (libraries, shared-memory batches)
    once per process; PSS splits it between them, so the tree's PSS is its memory.
    """
    rss = pss = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
                    break
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):  # gone meanwhile
            continue
    return rss, pss


def measure(command: Sequence[str]) -> dict[str, Any]:
    """Run one side in a child process, sampling its tree's RSS; its report and the RSS."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    events: list[dict[str, Any]] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("{"):
                events.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    samples: list[tuple[float, int, int]] = []
    while child.poll() is None:
        samples.append((time.monotonic(), *tree_memory_kib(child.pid)))
        time.sleep(SAMPLE_S)
    reader.join()
    if child.returncode != 0 or not events or events[-1]["event"] != "done":
        return {"error": f"exit {child.returncode}"}
    ready = next(e["t"] for e in events if e["event"] == "ready")
    ends = [e["t"] for e in events if e["event"] == "epoch"]
    bounds = list(zip([ready, *ends[:-1]], ends, strict=True))
    per_epoch = [max((r for t, r, _ in samples if a <= t <= b), default=0) for a, b in bounds]
    pss = max((p for t, _, p in samples if ready <= t), default=0)
    return {**events[-1], "peak_kib": max(per_epoch), "epoch_kib": per_epoch, "pss_kib": pss}


def child_command(python: str, side: str, args: argparse.Namespace, **extra: Any) -> list[str]:
    command = [python, str(Path(__file__).resolve()), "--child", side]
    for key, value in extra.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    return command


# ---------------------------------------------------------------------- the table


def mib(kib: float) -> str:
    return f"{kib / 1024:.0f}"


def ratio(result: dict[str, Any], base: dict[str, Any], key: str) -> str:
    """``result[key]`` over torch's (below 1: less than torch)."""
    return f"{result[key] / base[key]:.2f}x" if base.get(key) else "—"


def image_rows(results: dict[tuple[str, int], dict[str, Any]], workers: Sequence[int]) -> str:
    lines = [
        "| loader | workers | img/s | vs torch | CPU ms/img | peak RSS MiB (tree) | "
        "RSS vs torch | peak PSS MiB (tree) | PSS vs torch | first batch ms | first vs torch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in workers:
        base = results.get(("torch", w), {})
        for side in SIDES:
            r = results.get((side, w))
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {side} | {w} | {r['error']} | | | | | | | | |")
                continue
            rate = r["images"] / r["wall_s"]
            cells = [side, str(w), f"{rate:.0f}"]
            if "error" not in base and base:
                cells.append(f"{rate / (base['images'] / base['wall_s']):.2f}x")
            else:
                cells.append("—")
            cells.append(f"{1000 * r['cpu_s'] / r['images']:.2f}")
            cells.append(mib(r["peak_kib"]))
            cells.append(
                f"{r['peak_kib'] / base['peak_kib']:.2f}x" if base.get("peak_kib") else "—"
            )
            cells.append(mib(r["pss_kib"]))
            cells.append(ratio(r, base, "pss_kib"))
            cells.append(f"{1000 * r['first_s']:.0f}")
            cells.append(ratio(r, base, "first_s"))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def flat_rows(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| loader (2 workers) | samples/s | vs torch | CPU µs/sample | RSS per epoch MiB (tree) |",
        "|---|---:|---:|---:|---|",
    ]
    base = results.get("torch", {})
    for side, r in results.items():
        if "error" in r:
            lines.append(f"| {side} | {r['error']} | | | |")
            continue
        per_epoch = " / ".join(mib(k) for k in r["epoch_kib"])
        rate = r["images"] / r["wall_s"]
        versus = f"{rate * base['wall_s'] / base['images']:.2f}x" if "wall_s" in base else ""
        cpu = 1e6 * r["cpu_s"] / r["images"]
        lines.append(f"| {side} | {rate:.0f} | {versus} | {cpu:.1f} | {per_epoch} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    parser.add_argument("--objects", type=int, default=200_000, help="flat: the list's length")
    parser.add_argument("--flat-epochs", type=int, default=3)
    parser.add_argument("--spdl-python", default="", help="a Python with spdl-io installed")
    parser.add_argument("--dali-python", default="", help="a Python with nvidia-dali installed")
    parser.add_argument("--ffcv-python", default="", help="a Python with ffcv installed")
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--sides", default=",".join(SIDES))
    # what a child process is told
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--workload", default="images", help=argparse.SUPPRESS)
    parser.add_argument("--root", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.only = [w for w in args.only.split(",") if w]
    args.sides = [s for s in args.sides.split(",") if s]
    if set(args.only) - set(WORKLOADS) or set(args.sides) - set(SIDES):
        parser.error(f"workloads: {WORKLOADS}; sides: {SIDES}")
    if not args.child:
        args.workers = [int(w) for w in args.workers.split(",") if w]
    else:
        args.workers = int(args.workers)
    return args


def peer_version(python: str, package: str) -> str | None:
    """The version of ``package`` installed for ``python`` (None: no Python or no package)."""
    if not python:
        return None
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        run_child(args)
        return 0
    started, cpu_start = time.perf_counter(), harness.cpu_busy_seconds()
    tv = harness.peers.import_torchvision()
    spdl = peer_version(args.spdl_python, "spdl-io")
    dali = peer_version(args.dali_python, "nvidia-dali-cuda120")
    ffcv = peer_version(args.ffcv_python, "ffcv")
    info = harness.machine_info(
        torch.get_num_threads(),
        cpus=str(len(os.sched_getaffinity(0))),
        torchvision=harness.version(tv),
        spdl=f"spdl-io {spdl}" if spdl else "not given (--spdl-python)",
        dali=f"nvidia-dali-cuda120 {dali}" if dali else "not given (--dali-python)",
        ffcv=f"ffcv {ffcv}" if ffcv else "not given (--ffcv-python)",
    )
    harness.print_header("The input pipeline: loaders, threads and processes", info,
                         "one run per side and worker count, each in a fresh process")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        if "images" in args.only:
            root = Path(tmp) / "train"
            make_image_folder(root, args.images)
            results: dict[tuple[str, int], dict[str, Any]] = {}
            peers = {"spdl": (args.spdl_python, spdl), "dali": (args.dali_python, dali),
                     "ffcv": (args.ffcv_python, ffcv)}  # fmt: skip
            for w in args.workers:
                for side in args.sides:
                    python, version = peers.get(side, (sys.executable, "ours"))
                    if not version:
                        continue
                    command = child_command(python, side, args, workers=w, root=root,
                                            epochs=args.epochs)  # fmt: skip
                    results[(side, w)] = measure(command)
                    print(f"{side} x{w}: {results[(side, w)]}", file=sys.stderr, flush=True)
            print(f"### {args.images} JPEGs ~500x375, RandomResizedCrop 224 + flip + normalise, "
                  f"batches of {BATCH}, {args.epochs} epochs\n")  # fmt: skip
            print(image_rows(results, args.workers) + "\n")
        if "flat" in args.only:
            flat: dict[str, dict[str, Any]] = {}
            for side in FLAT_SIDES:
                command = child_command(sys.executable, side, args, workload="flat",
                                        workers=2, objects=args.objects,
                                        epochs=args.flat_epochs)  # fmt: skip
                flat[side] = measure(command)
                print(f"flat {side}: {flat[side]}", file=sys.stderr, flush=True)
            print(f"### Memory over epochs: a list of {args.objects} small dicts, "
                  f"{args.flat_epochs} epochs, batches of 256\n")  # fmt: skip
            print(flat_rows(flat) + "\n")
    elapsed = time.perf_counter() - started
    print(f"Total run {elapsed:.0f} s; {harness.other_load(cpu_start, elapsed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
