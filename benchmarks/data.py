"""``trivium.data`` speed and memory against bare pyarrow, HF ``datasets`` and Pillow.

What it measures (every input is generated at start-up in a temp dir):

1. **Parquet → dict of tensors**: 200k rows of (int64 ``label``, 128 x float32
   ``feat`` as a fixed-size list), row groups of 8192, read by
   ``ParquetSource(...).to_tensors()`` against a bare ``pq.ParquetFile.iter_batches``
   + ``to_numpy`` + ``torch.from_numpy`` loop (the limit). Target ≥ 0.9x.
2. **ArrowDataset random access**: single rows ``ds[i]`` at random indices of the
   same data in a memory-mapped IPC file, against HF ``datasets``
   (``Dataset.from_file`` of the same IPC data, target ≥ 2x) when it is installed,
   and against ``pyarrow.Table.slice(i, 1).to_pylist()`` per row (target ≥ 5x).
3. **Image training stream**: 256 ImageNet-sized JPEGs (photos from
   ``tests/assets/images/jpeg`` resized to 375..500 x 500 with Pillow, quality 90) in
   an image folder, converted with ``trivium-data convert image-folder``, read as
   batches of 32 by ``trivium.data.DataLoader`` with 2 workers: decode + random
   resized crop to 224 through ``decode_jpeg(roi=..., scale=...)`` (only the crop
   region, at a reduced DCT scale) + ``interpolate``. Against a Pillow Dataset over
   the same files (open, RGB, RandomResizedCrop with the same crop box, bilinear
   resize to 224, to tensor) in torch's DataLoader with 2 workers. Target ≥ 2x.
   Ours runs twice: with ``trivium.vision.transforms.DecodeRandomResizedCrop`` (when
   importable) and with a crop composed here from ``decode_jpeg(roi=..., scale=...)``
   restricted to the 1/8, 1/4, 1/2 scales + uint8 ``interpolate``.
   (torchvision cannot be imported here.)
4. **Memory**: an ``ArrowDataset`` of 64 MB and of 256 MB read in a shuffled epoch
   by 4 torch DataLoader workers; each worker's private dirty memory
   (``Private_Dirty`` in ``/proc/<pid>/smaps_rollup``: pages copied or written by
   that process, which is what copy-on-read of Python objects would grow) near the end
   of the epoch. Target: it grows by less than 5% of the dataset's growth.

Timed sides are warmed up once, then run ``--repeats`` times (default 5), interleaved
repeat by repeat, each a loop lasting at least ``--min-time`` seconds (default 0.3);
the median is reported. Ratio = peer time / our time (> 1: we are faster).

Run from the repository root::

    .venv/bin/python benchmarks/data.py [--repeats N] [--min-time S] [--json PATH]
        [--only parquet,random,images,memory]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from PIL import Image

from trivium.data import ArrowDataset, DataLoader, ParquetSource
from trivium.data.convert import convert_image_folder

ROOT = Path(__file__).resolve().parents[1]
PHOTOS = ROOT / "tests" / "assets" / "images" / "jpeg"
FEAT = 128
PARQUET_ROWS = 200_000
RANDOM_READS = 2_000
NUM_IMAGES = 256
CROP = 224

warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


@dataclass
class Row:
    """One line of the result table."""

    workload: str
    ours_ms: float | None
    peer: str
    peer_ms: float | None
    target: str
    ratio: float | None = None
    status: str = ""
    note: str = ""

    def finish(self, minimum: float | None) -> Row:
        if self.ours_ms and self.peer_ms:
            self.ratio = self.peer_ms / self.ours_ms
            if minimum is not None:
                self.status = "ok" if self.ratio >= minimum else "FAIL"
        return self


def timed(sides: dict[str, Callable[[], Any]], repeats: int, min_time: float) -> dict[str, float]:
    """Median seconds per call of each side; sides interleaved repeat by repeat."""
    loops = {}
    for name, fn in sides.items():
        fn()  # warm up
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < min_time / 3 or n == 0:
            fn()
            n += 1
        per_call = (time.perf_counter() - start) / n
        loops[name] = max(1, int(min_time / max(per_call, 1e-9)))
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(repeats):
        for name, fn in sides.items():
            gc.disable()
            try:
                start = time.perf_counter()
                for _ in range(loops[name]):
                    fn()
                samples[name].append((time.perf_counter() - start) / loops[name])
            finally:
                gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


# -------------------------------------------------------------------- inputs


def write_feature_parquet(path: Path, rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    feat = rng.standard_normal((rows, FEAT), dtype=np.float32)
    table = pa.table(
        {
            "label": rng.integers(0, 1000, rows),
            "feat": pa.FixedSizeListArray.from_arrays(pa.array(feat.ravel()), FEAT),
        }
    )
    pq.write_table(table, path, row_group_size=8192, compression="snappy")
    return table


def write_ipc(path: Path, table: pa.Table) -> None:
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table, max_chunksize=65_536)


def make_image_folder(root: Path) -> list[Path]:
    photos = []
    for path in sorted(PHOTOS.glob("*.jp*g")):
        try:
            with Image.open(path) as image:
                if min(image.size) >= 200 and image.mode in ("RGB", "L"):
                    photos.append(image.convert("RGB"))
        except (OSError, ValueError):  # the assets include unusual JPEGs Pillow refuses
            continue
    rng = np.random.default_rng(0)
    files = []
    for i in range(NUM_IMAGES):
        size = (500, int(rng.integers(375, 501))) if i % 2 else (int(rng.integers(375, 501)), 500)
        image = photos[i % len(photos)].resize(size, Image.Resampling.BICUBIC)
        path = root / f"class{i % 8}" / f"img{i:04d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, "JPEG", quality=90)
        files.append(path)
    return files


# ----------------------------------------------------------------- workloads


def bench_parquet(tmp: Path, repeats: int, min_time: float, notes: list[str]) -> list[Row]:
    path = tmp / "features.parquet"
    write_feature_parquet(path, PARQUET_ROWS)
    batch_size = 8192

    def ours() -> int:
        total = 0
        for batch in ParquetSource(path, batch_size=batch_size).to_tensors(["label", "feat"]):
            total += batch["feat"].shape[0]
        return total

    def bare() -> int:
        total = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
            label = torch.from_numpy(batch.column("label").to_numpy())
            feat = batch.column("feat").flatten().to_numpy().reshape(-1, FEAT)
            total += torch.from_numpy(feat).shape[0] + 0 * len(label)
        return total

    assert ours() == bare() == PARQUET_ROWS
    first = next(iter(ParquetSource(path).to_tensors(["label", "feat"])))
    ref = pq.read_table(path).slice(0, 8192)
    same = torch.equal(
        first["feat"], torch.from_numpy(np.stack(ref["feat"].to_numpy(zero_copy_only=False)))
    )
    notes.append(f"parquet: first batch equal to pyarrow's: {same}")
    t = timed({"ours": ours, "bare": bare}, repeats, min_time)
    mb = path.stat().st_size / 1e6
    name = f"Parquet -> dict of tensors ({PARQUET_ROWS} rows, {mb:.0f} MB), per epoch"
    return [
        Row(
            name, t["ours"] * 1e3, "pyarrow iter_batches+to_numpy", t["bare"] * 1e3, "≥ 0.9x"
        ).finish(0.9)
    ]


def bench_random(tmp: Path, repeats: int, min_time: float, notes: list[str]) -> list[Row]:
    rows = 100_000
    table = write_feature_parquet(tmp / "r.parquet", rows)
    ipc = tmp / "r.arrow"
    write_ipc(ipc, table)
    ds = ArrowDataset(ipc, format="torch")
    ds_np = ArrowDataset(ipc, format="numpy")
    mapped = pa.ipc.open_file(pa.memory_map(str(ipc))).read_all()
    order = np.random.default_rng(1).integers(0, rows, RANDOM_READS).tolist()

    def ours() -> None:
        for i in order:
            ds[i]

    def sliced() -> None:
        for i in order:
            mapped.slice(i, 1).to_pylist()

    def ours_np() -> None:
        for i in order:
            ds_np[i]

    sides: dict[str, Callable[[], Any]] = {"ours": ours, "ours_np": ours_np, "slice": sliced}
    try:
        import datasets

        hf = datasets.Dataset.from_file(str(ipc)).with_format("numpy")

        def hf_side() -> None:
            for i in order:
                hf[i]

        sides["hf"] = hf_side
        hf_status = f"datasets {datasets.__version__}"
    except Exception as e:  # not installed here
        hf_status = f"not installed ({type(e).__name__})"
    row = ds[order[0]]
    check = torch.equal(row["feat"], torch.tensor(mapped.slice(order[0], 1)["feat"].to_pylist()[0]))
    notes.append(f"random access: ds[i] equal to pyarrow's row: {check}; HF datasets: {hf_status}")
    t = timed(sides, repeats, min_time)
    per = 1e6 / RANDOM_READS
    name = 'ArrowDataset(format="torch") single-row random access (µs per row)'
    name_np = 'ArrowDataset(format="numpy") single-row random access (µs per row)'
    out = [
        Row(
            name_np,
            t["ours_np"] * per / 1e3,
            "pyarrow Table.slice(i,1).to_pylist()",
            t["slice"] * per / 1e3,
            "≥ 5x",
        ).finish(5),
        Row(
            name,
            t["ours"] * per / 1e3,
            "pyarrow Table.slice(i,1).to_pylist()",
            t["slice"] * per / 1e3,
            "info (default is numpy)",
        ).finish(None),
    ]
    if "hf" in t:
        out.append(
            Row(
                name_np,
                t["ours_np"] * per / 1e3,
                "HF datasets ds[i] (numpy format)",
                t["hf"] * per / 1e3,
                "≥ 2x",
            ).finish(2)
        )
    else:
        out.append(
            Row(name_np, None, "HF datasets", None, "≥ 2x", status="skipped", note=hf_status)
        )
    return out


def rrc_box(height: int, width: int, rng: np.random.Generator) -> tuple[int, int, int, int]:
    """torchvision's RandomResizedCrop.get_params (scale 0.08..1, ratio 3/4..4/3)."""
    area = height * width
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))
        w = round((target * ratio) ** 0.5)
        h = round((target / ratio) ** 0.5)
        if 0 < w <= width and 0 < h <= height:
            return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w
    side = min(height, width)
    return (height - side) // 2, (width - side) // 2, side, side


class TriviumDecodeCrop:
    """Decode only the crop box at the smallest DCT scale still ≥ 224, then resize.

    One thread per worker: with 2 workers on 2 cores, ``parallel_map`` threads would
    only contend; with a spare core per worker use ``parallel_map(fn, num_threads)``.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self, row: dict) -> dict:
        from trivium.vision.io import decode_jpeg

        data = row["image"]
        rng = np.random.default_rng([self.seed, row["label"], len(data)])
        top, left, h, w = rrc_box(row["height"], row["width"], rng)
        # the smallest of the SIMD-fast DCT scales 1/8, 1/4, 1/2 still covering 224 x 224
        # (libjpeg-turbo's 3/8 .. 7/8 IDCTs are plain C: slower than a full decode)
        eighths = next((m for m in (1, 2, 4) if h * m >= 8 * CROP and w * m >= 8 * CROP), 8)
        buf = np.frombuffer(data, dtype=np.uint8)
        image = decode_jpeg(torch.from_numpy(buf), roi=(top, left, h, w), scale=eighths / 8)
        resized = torch.nn.functional.interpolate(  # uint8 in, uint8 out: torch's fast path
            image[None], size=(CROP, CROP), mode="bilinear", antialias=True, align_corners=False
        )
        return {"image": resized[0], "label": row["label"]}


class PillowFolder(torch.utils.data.Dataset):
    """What torchvision's ImageFolder + RandomResizedCrop + PILToTensor do, in Pillow."""

    def __init__(self, files: list[Path], seed: int) -> None:
        self.files, self.seed = files, seed

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        path = self.files[i]
        image = Image.open(path).convert("RGB")
        rng = np.random.default_rng([self.seed, i])
        top, left, h, w = rrc_box(image.height, image.width, rng)
        crop = image.resize(
            (CROP, CROP), Image.Resampling.BILINEAR, box=(left, top, left + w, top + h)
        )
        return torch.from_numpy(np.asarray(crop)).permute(2, 0, 1).contiguous(), int(
            path.parent.name[5:]
        )


class FusedDecodeCrop:
    """``trivium.vision.transforms.DecodeRandomResizedCrop(224)`` on the image bytes."""

    def __init__(self, seed: int) -> None:
        from trivium.vision.transforms import DecodeRandomResizedCrop

        generator = torch.Generator().manual_seed(seed)
        self.transform = DecodeRandomResizedCrop(CROP, generator=generator)

    def __call__(self, row: dict) -> dict:
        data = torch.from_numpy(np.frombuffer(row["image"], dtype=np.uint8))
        return {"image": self.transform(data), "label": row["label"]}


def fused_available() -> bool:
    try:
        from trivium.vision.transforms import DecodeRandomResizedCrop  # noqa: F401
    except ImportError:
        return False
    return True


def bench_images(tmp: Path, repeats: int, min_time: float, notes: list[str]) -> list[Row]:
    folder = tmp / "images"
    files = make_image_folder(folder)
    summary = convert_image_folder(folder, tmp / "shards", row_group_size=32, progress_bar=False)
    notes.append(f"image folder converted: {str(summary).splitlines()[0]}")
    torch.set_num_threads(1)  # the work is in the loader workers

    def stream_of(decode: Callable[[dict], dict]) -> Callable[[], int]:
        def run() -> int:
            pipe = ParquetSource(tmp / "shards", columns=["image", "label", "width", "height"])
            stream = pipe.to_rows().map(decode)
            loader = DataLoader(stream, batch_size=32, shuffle=True, num_workers=2, seed=0)
            return sum(batch["image"].shape[0] for batch in loader)

        return run

    sides = {"composed": stream_of(TriviumDecodeCrop(0))}
    if fused_available():
        sides["fused"] = stream_of(FusedDecodeCrop(0))

    pillow = PillowFolder(sorted(files), 0)

    def peer() -> int:
        loader = torch.utils.data.DataLoader(pillow, batch_size=32, shuffle=True, num_workers=2)
        return sum(images.shape[0] for images, _ in loader)

    sides["pillow"] = peer
    assert all(side() == NUM_IMAGES for side in sides.values())
    t = timed(sides, repeats, min_time)
    name = f"image stream: decode + RandomResizedCrop 224, {NUM_IMAGES} JPEGs ~500x400, 2 workers"
    rows = []
    if "fused" in t:
        label = "DecodeRandomResizedCrop (trivium.vision.transforms)"
        rows.append(
            Row(
                f"{name}: {label}", t["fused"] * 1e3, "Pillow Dataset", t["pillow"] * 1e3, "≥ 2x"
            ).finish(2)
        )
    else:
        notes.append("images: trivium.vision.transforms.DecodeRandomResizedCrop not importable")
    label = "decode_jpeg(roi, scale 1/8,1/4,1/2) + uint8 interpolate"
    target = "info" if rows else "≥ 2x"
    rows.append(
        Row(
            f"{name}: {label}", t["composed"] * 1e3, "Pillow Dataset", t["pillow"] * 1e3, target
        ).finish(None if rows else 2)
    )
    return rows


def private_dirty_kb(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            continue
    return out


def worker_memory(ds: ArrowDataset) -> tuple[float, float]:
    """Mean and max Private_Dirty (MB) of 4 workers near the end of a shuffled epoch."""
    loader = torch.utils.data.DataLoader(
        ds, batch_size=512, shuffle=True, num_workers=4, collate_fn=lambda rows: len(rows)
    )
    total = len(loader)
    samples: list[float] = []
    for i, _ in enumerate(loader):
        if i == int(total * 0.9):
            samples = [private_dirty_kb(p) / 1024 for p in children(os.getpid())]
    return statistics.mean(samples), max(samples)


def bench_memory(tmp: Path, repeats: int, min_time: float, notes: list[str]) -> list[Row]:
    sizes = {}
    for rows in (131_072, 524_288):  # 64 MB and 256 MB of 512-byte features (+ label)
        table = write_feature_parquet(tmp / f"m{rows}.parquet", rows)
        path = tmp / f"m{rows}.arrow"
        write_ipc(path, table)
        del table
        sizes[rows] = (path.stat().st_size / 1e6, worker_memory(ArrowDataset(path)))
    (small_mb, (small_mean, small_max)), (big_mb, (big_mean, big_max)) = sizes.values()
    growth = big_mean - small_mean
    share = growth / (big_mb - small_mb)
    notes.append(
        f"memory: per-worker Private_Dirty {small_mean:.1f} MB (max {small_max:.1f}) "
        f"at {small_mb:.0f} MB, "
        f"{big_mean:.1f} MB (max {big_max:.1f}) at {big_mb:.0f} MB"
    )
    name = (
        "ArrowDataset, 4 workers: private memory growth per worker, "
        f"{small_mb:.0f} -> {big_mb:.0f} MB dataset"
    )
    row = Row(name, growth, "dataset growth", big_mb - small_mb, "< 5% of it", note=f"{share:.1%}")
    row.status = "ok" if share < 0.05 else "FAIL"
    return [row]


WORKLOADS = {
    "parquet": bench_parquet,
    "random": bench_random,
    "images": bench_images,
    "memory": bench_memory,
}


def markdown_table(rows: list[Row]) -> str:
    lines = [
        "| workload | ours | peer | peer time | ratio | target | status |",
        "| --- | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        ours = (
            "-"
            if r.ours_ms is None
            else f"{r.ours_ms:.3g} ms"
            if "memory" not in r.workload
            else f"{r.ours_ms:.1f} MB"
        )
        peer = (
            "-"
            if r.peer_ms is None
            else f"{r.peer_ms:.3g} ms"
            if "memory" not in r.workload
            else f"{r.peer_ms:.0f} MB"
        )
        if "µs" in r.workload and r.ours_ms is not None:
            ours, peer = (
                f"{r.ours_ms * 1e3:.2f} µs",
                "-" if r.peer_ms is None else f"{r.peer_ms * 1e3:.2f} µs",
            )
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else (r.note or "-")
        status = r.status + (f" ({r.note})" if r.note and r.ratio is not None else "")
        lines.append(
            f"| {r.workload} | {ours} | {r.peer} | {peer} | {ratio} | {r.target} | {status} |"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    args = parser.parse_args(argv)
    args.only = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = set(args.only) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {list(WORKLOADS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads, print the markdown table, optionally write JSON."""
    args = parse_args(argv)
    started = time.perf_counter()
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "pyarrow": pa.__version__,
        "cpus": str(os.cpu_count()),
        "machine": platform.machine(),
    }
    print("# trivium.data benchmark\n")
    for key, value in info.items():
        print(f"- {key}: {value}")
    print(f"- repeats: {args.repeats} (median), each ≥ {args.min_time} s\n", flush=True)
    rows: list[Row] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="trivium-data-bench-") as tmp:
        for name in args.only:
            rows += WORKLOADS[name](Path(tmp), args.repeats, args.min_time, notes)
            print(
                f"({name} done after {time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    print(markdown_table(rows))
    print("\nRatio = peer time / our time (>1: we are faster). Checks:")
    for line in notes:
        print(f"- {line}")
    failed = [r for r in rows if r.status == "FAIL"]
    print(f"\n{len(failed)} target(s) missed; total run {time.perf_counter() - started:.1f} s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"machine": info, "rows": [asdict(r) for r in rows], "checks": notes}
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
