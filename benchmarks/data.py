"""``trivium.data`` speed and memory against bare pyarrow, HF ``datasets``, torchvision and Pillow.

What it measures (every input is generated at start-up in a temp dir):

1. **Parquet → dict of tensors**: 200k rows of (int64 ``label``, 128 x float32
   ``feat`` as a fixed-size list), row groups of 8192, read by
   ``ParquetSource(...).to_tensors()`` against a bare ``pq.ParquetFile.iter_batches``
   + ``to_numpy`` + ``torch.from_numpy`` loop (the limit). Target ≥ 0.9x. Its timed
   loops last at least 1.5 s (several epochs), whatever ``--min-time`` says.
2. **ArrowDataset random access**: single rows ``ds[i]`` at random indices of the
   same data in a memory-mapped IPC file, against a raw memory-map read (NumPy views
   of each record batch's columns, a bisect for the batch, a dict per row: target
   ≥ 0.95x, in record batches of 65536 rows and of ``UNEVEN_BATCHES`` lengths),
   against HF ``datasets`` (``Dataset.from_file`` of the same IPC data, target ≥ 2x)
   when it is installed, and against ``pyarrow.Table.slice(i, 1).to_pylist()`` per
   row (target ≥ 5x).
3. **Image training stream**: 1024 ImageNet-sized JPEGs (photos from
   ``tests/assets/images/jpeg`` resized to 375..500 x 500 with Pillow, quality 90) in
   an image folder, converted with ``trivium-data convert image-folder``. One epoch
   of batches of 32, 2 workers, shuffled, decode + RandomResizedCrop(224) to uint8
   ``[32, 3, 224, 224]``:

   - ours: ``ParquetSource(shards, columns=["image", "label"]).to_tensors()
     .map_batches(DecodeRandomResizedCrop(224), input_col="image")`` in
     ``trivium.data.DataLoader`` (each batch decodes only the crop regions);
   - torchvision: ``ImageFolder(root, Compose([RandomResizedCrop(224), PILToTensor()]))``
     in torch's ``DataLoader`` (torchvision's pure-Python parts, imported through
     ``tests/peers.py``);
   - Pillow: a ``Dataset`` that opens each file, converts to RGB, and resizes the
     RandomResizedCrop box to 224 x 224 in one ``Image.resize(box=...)``, in torch's
     ``DataLoader``.

   - webdataset (when installed): the same JPEGs in 8 tar shards, read by
     ``wds.WebDataset(urls).shuffle(1000).map(PIL decode + the same crop).batched(32)``
     in torch's ``DataLoader``.

   Each loader is built once; every timed call is one epoch of it
   (``for batch in loader``). With torch's default ``persistent_workers=False``
   (every side) every epoch starts its 2 workers again, and that start-up is part of
   the epoch. Targets: ≥ 2.3x torchvision, ≥ 2x Pillow, ≥ 1.0x webdataset. The same
   again with ``persistent_workers=True`` is reported too (no target).
   mosaicml-streaming is not a peer: it pins ``numpy<2.2`` (see workload 5).

   **3b. Time to first batch** (``--only first``): a fresh loader of workload 3 (ours,
   and torchvision ``ImageFolder`` in torch's ``DataLoader``) with 1 and 2 workers,
   from ``iter(loader)`` to the first batch; the rest of the epoch runs untimed.
   Interleaved, median of ``max(repeats, 5)``. Target: ours ≤ 1.2x the peer's time
   (ratio ≥ 0.833).
4. **Memory**: an ``ArrowDataset`` of 64 MB and of 256 MB read in a shuffled epoch
   by 4 torch DataLoader workers; each worker's private dirty memory
   (``Private_Dirty`` in ``/proc/<pid>/smaps_rollup``: pages copied or written by
   that process, which is what copy-on-read of Python objects would grow) near the
   end of the epoch. Target: it grows by less than 5% of the dataset's growth
   (reported in the checks: the table holds times).
5. **Data at scale** (the same 1024 JPEGs): one epoch of a fresh loader with 1 and
   4 workers, ours with the shared read cache and with per-worker caches, against
   torchvision ``ImageFolder`` and webdataset tar shards (PIL decode + the same
   crop): bytes read (``rchar`` of main + workers: every side reads with
   read/pread syscalls, so each byte asked of storage counts, page cache or not),
   peak memory (USS of main + workers, plus the shared cache's files) and time to
   the first batch. mosaicml-streaming is not installed (it pins numpy<2.2).

7. **Conversion on Ray** (``--only ray``, when Ray is installed): the image folder of
   workload 3 converted by ``trivium.pipelines.ray.convert_folder`` (``trivium-data convert
   --engine ray``) on a local Ray instance with 2 CPUs, against the local engine
   (``convert_image_folder``), one conversion per call, interleaved; the rows of
   both outputs are checked equal. ``ray.init`` is timed apart (in the checks).

6. **Parquet scans against pyarrow** (``--only scan``): a pass over a file into
   the same tensors on both sides, ours ``ParquetSource(..., batch_size=B)
   .to_tensors()`` against ``pq.ParquetFile(path).iter_batches(batch_size=B)`` with
   the fastest zero-copy conversion a pyarrow user can write (``torch.from_numpy``
   of the buffers; one ``torch.split`` of the data buffer into per-row ``uint8``
   views), and the list scan also against pyarrow's dataset scanner
   (``pyarrow.dataset.dataset(path).to_batches(batch_size=B)``, which decodes row
   groups on its thread pool). Target ≥ 1.0x each; every tensor is checked equal:

   - 200k rows of (int64 ``label``, ``feat`` as ``list<float32>`` of 128 per row:
     an embedding written without a fixed-size type), row groups of 8192, B = 8192:
     ``feat`` becomes ``[B, 128]`` float32 on both sides;
   - the 1024 JPEGs of workload 3 in the Parquet shards of ``trivium-data convert
     image-folder`` (row groups of 256), columns ``image`` and ``label``, B = 256:
     ``image`` becomes a list of ``uint8`` tensors on both sides.

Timing is ``benchmarks/harness.py``'s: every side is warmed up, then timed in
``--repeats`` repeats (default 7) of a loop of at least ``--min-time`` seconds
(default 0.3), the sides interleaved repeat by repeat; the median per-call time is
reported. Ratio = peer time / our time (> 1: we are faster).

Run from the repository root::

    .venv/bin/python benchmarks/data.py [--repeats N] [--min-time S] [--json PATH]
        [--only parquet,random,images,first,memory,scale,scan,ray]
"""

from __future__ import annotations

import argparse
import bisect
import functools
import io
import itertools
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import harness
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.parquet as pq
import torch
from PIL import Image

from trivium.data import ArrowDataset, DataLoader, ParquetSource
from trivium.pipelines.convert import convert_image_folder

ROOT = Path(__file__).resolve().parents[1]
PHOTOS = ROOT / "tests" / "assets" / "images" / "jpeg"

FEAT = 128
PARQUET_ROWS = 200_000
PARQUET_MIN_TIME = 1.5  # seconds per timed loop of workload 1, at least
RANDOM_READS = 2_000
UNEVEN_BATCHES = (65_536, 20_000, 14_464)  # the random-access rows in batches of 3 lengths
NUM_IMAGES = 1024  # an epoch long enough that starting 2 workers is not most of it
BATCH = 32
WORKERS = 2
CROP = 224

warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
warnings.filterwarnings("ignore", message="This DataLoader will create")  # 4 workers, 2 CPUs


# -------------------------------------------------------------------------- inputs


def write_feature_parquet(path: Path, rows: int) -> pa.Table:
    """``rows`` rows of (int64 label, 128 x float32 feat) in row groups of 8192."""
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


def write_ipc(path: Path, table: pa.Table, lengths: Sequence[int] | None = None) -> None:
    """The table as an Arrow IPC file of record batches of 65536 rows (or ``lengths``)."""
    with pa.ipc.new_file(path, table.schema) as writer:
        if lengths is None:
            writer.write_table(table, max_chunksize=65_536)
            return
        for start, stop in itertools.pairwise(np.cumsum([0, *lengths]).tolist()):
            writer.write_table(table.slice(start, stop - start).combine_chunks())  # 1 batch


def make_image_folder(root: Path) -> list[Path]:
    """NUM_IMAGES JPEGs of 375..500 x 500 in ``root/class<k>/`` (8 classes)."""
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


def shared_image_folder(folder: Path) -> list[Path]:
    """:func:`make_image_folder` once per run: the workloads that read it share it."""
    if folder.is_dir():
        return sorted(folder.glob("class*/*.jpg"))
    return make_image_folder(folder)


# ---------------------------------------------------------------- 1. Parquet read


def bench_parquet(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 1: a Parquet file into dicts of tensors, against the bare pyarrow loop."""
    path = tmp / "features.parquet"
    write_feature_parquet(path, PARQUET_ROWS)
    batch_size = 8192

    def ours() -> int:
        source = ParquetSource(path, batch_size=batch_size)
        return sum(batch["feat"].shape[0] for batch in source.to_tensors(["label", "feat"]))

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
    checks.append(f"parquet: first batch equal to pyarrow's: {same}")
    # An epoch takes ~0.2 s: loops of a few epochs keep the scheduler's noise on a
    # shared machine from deciding the median.
    loop_seconds = max(min_time, PARQUET_MIN_TIME)
    timings = harness.measure(
        [harness.Side("ours", ours), harness.Side("bare", bare)], repeats, loop_seconds
    )
    mb = path.stat().st_size / 1e6
    workload = f"Parquet -> dict of tensors ({PARQUET_ROWS} rows, {mb:.0f} MB), per epoch"
    return [
        harness.row_from(workload, timings, "ours", "bare", "pyarrow iter_batches+to_numpy", 0.9)
    ]


# ---------------------------------------------------------------- 2. random access


def raw_mapped_reader(path: Path, tensor: bool = False) -> Callable[[int], dict[str, object]]:
    """The hand-written peer of ``ArrowDataset(path)[i]``: the IPC file memory-mapped,
    NumPy views of each record batch's columns taken once, then per row a dict of
    ``int(label)`` and the ``feat`` row view (``torch.from_numpy`` of it if ``tensor``),
    the batch located by bisecting the batches' start offsets."""
    reader = pa.ipc.open_file(pa.memory_map(str(path)))
    batches = [reader.get_batch(k) for k in range(reader.num_record_batches)]
    labels = [b.column("label").to_numpy() for b in batches]
    feats = [b.column("feat").flatten().to_numpy().reshape(-1, FEAT) for b in batches]
    starts = np.cumsum([0] + [b.num_rows for b in batches]).tolist()
    wrap = torch.from_numpy if tensor else (lambda a: a)

    def read(i: int) -> dict[str, object]:
        c = bisect.bisect_right(starts, i) - 1
        j = i - starts[c]
        return {"label": int(labels[c][j]), "feat": wrap(feats[c][j])}

    return read


def same_rows(a: dict[str, object], b: dict[str, object]) -> bool:
    """Whether two rows hold the same keys, value types, dtypes and values."""

    def same(x: object, y: object) -> bool:
        if type(x) is not type(y):
            return False
        if isinstance(x, torch.Tensor):
            return x.dtype == y.dtype and torch.equal(x, y)  # type: ignore[union-attr,arg-type]
        if isinstance(x, np.ndarray):
            return x.dtype == y.dtype and np.array_equal(x, y)  # type: ignore[union-attr]
        return x == y

    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


def bench_random(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 2: single-row random access, against a raw memory map, Table.slice and HF."""
    rows = 100_000
    table = write_feature_parquet(tmp / "r.parquet", rows)
    ipc = tmp / "r.arrow"
    write_ipc(ipc, table)
    ds = ArrowDataset(ipc, format="torch")
    ds_np = ArrowDataset(ipc, format="numpy")
    raw_np = raw_mapped_reader(ipc)
    raw_torch = raw_mapped_reader(ipc, tensor=True)
    # record batches of uneven lengths: ArrowDataset bisects their starts, as the raw
    # reader does (over batches of one length but the last it divides instead)
    uneven = tmp / "r.uneven.arrow"
    write_ipc(uneven, table, UNEVEN_BATCHES)
    ds_uneven = ArrowDataset(uneven, format="numpy")
    raw_uneven = raw_mapped_reader(uneven)
    mapped = pa.ipc.open_file(pa.memory_map(str(ipc))).read_all()
    order = np.random.default_rng(1).integers(0, rows, RANDOM_READS).tolist()

    def reader(get: Callable[[int], object]) -> Callable[[], None]:
        def read() -> None:
            for i in order:
                get(i)

        return read

    sides = [
        harness.Side("ours_np", reader(ds_np.__getitem__)),
        harness.Side("raw_np", reader(raw_np)),
        harness.Side("ours", reader(ds.__getitem__)),
        harness.Side("raw_torch", reader(raw_torch)),
        harness.Side("ours_uneven", reader(ds_uneven.__getitem__)),
        harness.Side("raw_uneven", reader(raw_uneven)),
        harness.Side("slice", reader(lambda i: mapped.slice(i, 1).to_pylist())),
    ]
    try:
        import datasets

        hf_ipc = tmp / "r.stream.arrow"  # datasets maps the IPC *stream* format
        with pa.ipc.new_stream(hf_ipc, table.schema) as writer:
            writer.write_table(table, max_chunksize=65_536)
        hf = datasets.Dataset.from_file(str(hf_ipc)).with_format("numpy")
        sides.append(harness.Side("hf", reader(hf.__getitem__)))
        hf_status = f"datasets {datasets.__version__}"
    except ImportError as e:  # not installed here
        hf_status = f"not installed ({type(e).__name__})"
    row = ds[order[0]]
    check = torch.equal(row["feat"], torch.tensor(mapped.slice(order[0], 1)["feat"].to_pylist()[0]))
    same_raw = all(
        same_rows(ds_np[i], raw_np(i))
        and same_rows(ds[i], raw_torch(i))
        and same_rows(ds_uneven[i], raw_uneven(i))
        for i in order
    )
    checks.append(
        f"random access: ds[i] equal to pyarrow's row: {check}; rows identical (types, "
        f"dtypes, values) to the raw memory-map read's: {same_raw}; HF datasets: {hf_status}"
    )
    timings = harness.measure(sides, repeats, min_time)
    # per call: RANDOM_READS rows; the table shows the time per call (of 2000 rows)
    workload = f"ArrowDataset single-row random access, {RANDOM_READS} rows per call"
    raw_label = "raw memory map: NumPy column views per batch, dict per row"
    slice_label = "pyarrow Table.slice(i,1).to_pylist()"
    out = [
        harness.row_from(
            f'{workload}, format="numpy"', timings, "ours_np", "raw_np", raw_label, 0.95
        ),
        harness.row_from(
            f'{workload}, format="torch"',
            timings,
            "ours",
            "raw_torch",
            f"{raw_label} (torch.from_numpy)",
        ),
        harness.row_from(
            f'{workload}, format="numpy", record batches of {"/".join(map(str, UNEVEN_BATCHES))}'
            " rows",
            timings,
            "ours_uneven",
            "raw_uneven",
            raw_label,
            0.95,
        ),
        harness.row_from(
            f'{workload}, format="numpy"', timings, "ours_np", "slice", slice_label, 5.0
        ),
        harness.row_from(f'{workload}, format="torch"', timings, "ours", "slice", slice_label),
    ]
    if "hf" in timings:
        hf_label = "HF datasets ds[i] (numpy format)"
        out.append(
            harness.row_from(f'{workload}, format="numpy"', timings, "ours_np", "hf", hf_label, 2.0)
        )
    else:
        median = timings["ours_np"].median
        out.append(
            harness.Row(
                f'{workload}, format="numpy"', median, f"HF datasets: {hf_status}", None, 2.0
            )
        )
    return out


# ------------------------------------------------------------ 3. image training stream


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


class PillowFolder(torch.utils.data.Dataset):
    """What ImageFolder + RandomResizedCrop + PILToTensor do, written directly in Pillow."""

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
        label = int(path.parent.name.removeprefix("class"))
        return torch.from_numpy(np.asarray(crop)).permute(2, 0, 1).contiguous(), label


def trivium_epoch(shards: Path, persistent: bool) -> Callable[[], Counter]:
    """Our stream: one call is one epoch; returns the labels seen (a Counter)."""
    from trivium.vision.transforms import DecodeRandomResizedCrop

    crop = DecodeRandomResizedCrop(CROP, generator=torch.Generator().manual_seed(0))
    pipe = ParquetSource(shards, columns=["image", "label"]).to_tensors()
    pipe = pipe.map_batches(crop, input_col="image")  # one batched decode per batch
    loader = DataLoader(
        pipe,
        batch_size=BATCH,
        shuffle=True,
        num_workers=WORKERS,
        persistent_workers=persistent,
        seed=0,
    )
    return epochs_of(loader, lambda it: labels_of((b["image"], b["label"]) for b in it))


def torch_epoch(
    dataset: torch.utils.data.Dataset,
    persistent: bool,
    batch_size: int = BATCH,
    drop_last: bool = False,
    read: Callable[[Any], Counter] | None = None,
) -> Callable[[], Counter]:
    """Torch's DataLoader over a map-style dataset: one call is one epoch, read by ``read``
    (default: :func:`labels_of`)."""
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        drop_last=drop_last,
        num_workers=WORKERS,
        persistent_workers=persistent,
    )
    return epochs_of(loader, read or labels_of)


def epochs_of(loader: Iterable, read: Callable[[Any], Counter]) -> Callable[[], Counter]:
    """One call per epoch of a loader built once, as a training loop runs it."""
    epoch = itertools.count()

    def next_epoch() -> Counter:
        if isinstance(loader, DataLoader):
            loader.set_epoch(next(epoch))  # torch's reshuffles by itself
        return read(loader)

    return next_epoch


# The labels of uint8 batches of CROP x CROP images, each batch checked.
labels_of = functools.partial(harness.epoch_labels, dtype=torch.uint8, size=CROP)


def bench_images(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 3: one epoch of decode + RandomResizedCrop(224) with 2 workers."""
    folder = tmp / "images"
    files = shared_image_folder(folder)
    summary = convert_image_folder(folder, tmp / "shards", row_group_size=BATCH, progress_bar=False)
    checks.append(f"images: folder converted: {str(summary).splitlines()[0]}")
    torch.set_num_threads(1)  # the work is in the loader workers
    datasets = {"Pillow": PillowFolder(sorted(files), 0)}
    labels = {
        "torchvision": f"{peers[1]} ImageFolder + RandomResizedCrop + PILToTensor",
        "Pillow": "Pillow Dataset",
    }
    tv, tv_status = peers
    if tv is not None:
        T = tv.transforms
        transform = T.Compose([T.RandomResizedCrop(CROP), T.PILToTensor()])
        datasets["torchvision"] = tv.datasets.ImageFolder(folder, transform)
    sides = []
    for persistent, suffix in ((False, ""), (True, " persistent")):
        sides.append(harness.Side(f"ours{suffix}", trivium_epoch(tmp / "shards", persistent)))
        sides += [
            harness.Side(f"{name}{suffix}", torch_epoch(ds, persistent))
            for name, ds in datasets.items()
        ]
    wds_version = webdataset_version()
    if wds_version is not None:
        urls = write_tars(sorted(files), tmp / "image-tars")
        sides.append(
            harness.Side("webdataset", epochs_of(webdataset_loader(urls, WORKERS), labels_of))
        )
        labels["webdataset"] = f"webdataset {wds_version} tar shards + PIL decode + the same crop"
    else:
        checks.append("images: webdataset not installed")
    expected = Counter(i % 8 for i in range(NUM_IMAGES))
    same = {side.name: side.fn() == expected for side in sides}
    checks.append(f"images: every image once per epoch, labels as the folder's: {same}")
    timings = harness.measure(sides, repeats, min_time)
    workload = (
        f"image stream: 1 epoch, {NUM_IMAGES} JPEGs ~500x400, decode + RandomResizedCrop 224, "
        f"batch {BATCH}, {WORKERS} workers"
    )
    rows = []
    if tv is None:
        rows.append(
            harness.Row(workload, timings["ours"].median, f"torchvision: {tv_status}", None, 2.3)
        )
    targets = {"torchvision": 2.3, "Pillow": 2.0, "webdataset": 1.0}
    for name in ("torchvision", "Pillow", "webdataset"):
        if name in timings:
            rows.append(
                harness.row_from(workload, timings, "ours", name, labels[name], targets[name])
            )
    for name in ("torchvision", "Pillow"):  # both sides with persistent_workers=True
        if name in datasets:
            rows.append(
                harness.row_from(
                    f"{workload}, persistent_workers=True (both)",
                    timings,
                    "ours persistent",
                    f"{name} persistent",
                    labels[name],
                )
            )
    return rows


# ------------------------------------------------------------ 3b. time to first batch

FIRST_WORKERS = (1, 2)


def first_batch_seconds(make: Callable[[], Iterable]) -> float:
    """Seconds from ``iter`` of a fresh loader to its first batch; the epoch is then drained.

    The rest of the epoch runs untimed, so that the end of the epoch (workers joined,
    shared memory freed) is not left to the next measurement.
    """
    loader = make()
    start = time.perf_counter()
    batches = iter(loader)
    next(batches)
    seconds = time.perf_counter() - start
    for _ in batches:
        pass
    return seconds


def bench_first(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 3b: time to the first batch of a fresh loader, 1 and 2 workers."""
    from trivium.vision.transforms import DecodeRandomResizedCrop

    tv, tv_status = peers
    if tv is None:
        checks.append(f"first: torchvision {tv_status}: no peer")
        return []
    folder = tmp / "images"
    shared_image_folder(folder)
    shards = tmp / "first-shards"
    convert_image_folder(folder, shards, row_group_size=BATCH, progress_bar=False)
    torch.set_num_threads(1)
    T = tv.transforms
    folder_ds = tv.datasets.ImageFolder(
        folder, T.Compose([T.RandomResizedCrop(CROP), T.PILToTensor()])
    )

    def ours(workers: int) -> DataLoader:
        pipe = ParquetSource(shards, columns=["image", "label"]).to_tensors()
        pipe = pipe.map_batches(DecodeRandomResizedCrop(CROP), input_col="image")
        return DataLoader(pipe, BATCH, shuffle=True, num_workers=workers, seed=0)

    def folder_loader(workers: int) -> torch.utils.data.DataLoader:
        return torch.utils.data.DataLoader(folder_ds, BATCH, shuffle=True, num_workers=workers)

    rows = []
    for workers in FIRST_WORKERS:
        samplers = {
            "ours": functools.partial(first_batch_seconds, functools.partial(ours, workers)),
            "torchvision": functools.partial(
                first_batch_seconds, functools.partial(folder_loader, workers)
            ),
        }
        for sample in samplers.values():  # warm-up
            sample()
        samples = harness.interleave(samplers, max(repeats, 5))  # each a fresh loader
        rows.append(
            harness.Row(
                f"time to first batch, fresh loader, {workers} worker(s), batch {BATCH} "
                "(target ratio >= 0.83x: ours <= 1.2x the peer's time)",
                statistics.median(samples["ours"]),
                f"{tv_status} ImageFolder + RandomResizedCrop + PILToTensor",
                statistics.median(samples["torchvision"]),
                0.833,  # ours <= 1.2x the peer's time
                samples=samples,
            )
        )
    return rows


# ------------------------------------------------------------------------ 4. memory


def private_dirty_kb(pid: int) -> int:
    """``Private_Dirty`` of a process, in kB."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    """The child processes of ``pid``."""
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
        ds, batch_size=512, shuffle=True, num_workers=4, collate_fn=len
    )
    total = len(loader)
    samples: list[float] = []
    for i, _ in enumerate(loader):
        if i == int(total * 0.9):
            samples = [private_dirty_kb(p) / 1024 for p in children(os.getpid())]
    return statistics.mean(samples), max(samples)


def bench_memory(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 4: workers' private memory against the dataset's size (a check, not a time)."""
    sizes = {}
    for rows in (131_072, 524_288):  # 64 MB and 256 MB of 512-byte features (+ label)
        table = write_feature_parquet(tmp / f"m{rows}.parquet", rows)
        path = tmp / f"m{rows}.arrow"
        write_ipc(path, table)
        del table
        sizes[rows] = (path.stat().st_size / 1e6, worker_memory(ArrowDataset(path)))
    (small_mb, (small_mean, small_max)), (big_mb, (big_mean, big_max)) = sizes.values()
    share = (big_mean - small_mean) / (big_mb - small_mb)
    checks.append(
        f"memory: ArrowDataset read by 4 workers, per-worker Private_Dirty {small_mean:.1f} MB "
        f"(max {small_max:.1f}) at {small_mb:.0f} MB, {big_mean:.1f} MB (max {big_max:.1f}) at "
        f"{big_mb:.0f} MB: grows by {share:.1%} of the dataset's growth "
        f"(target < 5%: {'PASS' if share < 0.05 else 'FAIL'})"
    )
    return []


# ------------------------------------------------------- 5. data at scale (bytes, memory)

SCALE_WORKERS = (1, 4)


def io_and_uss(pids: Sequence[int]) -> tuple[int, int]:
    """Summed ``rchar`` (bytes through read syscalls) and USS (kB) of ``pids``."""
    rchar = uss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/io") as f:
                rchar += int(next(line for line in f if line.startswith("rchar:")).split()[1])
            with open(f"/proc/{pid}/smaps_rollup") as f:
                uss += sum(
                    int(line.split()[1])
                    for line in f
                    if line.startswith(("Private_Clean:", "Private_Dirty:"))
                )
        except (OSError, StopIteration):
            continue
    return rchar, uss


def shm_bytes() -> int:
    """Bytes in the loader's shared-memory cache directories now."""
    from trivium.data.shared_cache import shm_root

    total = 0
    root = shm_root()
    for name in os.listdir(root):
        if name.startswith("trivium-data-"):
            for dirpath, _, files in os.walk(os.path.join(root, name)):
                for file in files:
                    try:
                        total += os.stat(os.path.join(dirpath, file)).st_size
                    except OSError:
                        continue
    return total


def one_epoch(make: Callable[[], Iterable]) -> dict[str, float]:
    """One epoch of a fresh loader: time to first batch, seconds, bytes read, peak memory.

    Bytes: ``rchar`` of the main process (its delta) and of every worker, taken at the
    last batch (workers still alive): every file here is read with read()/pread (our
    source through a non-mmap filesystem), so it counts each byte asked of storage as
    O_DIRECT would, page cache or not. Memory: USS of main + workers plus the shared
    cache's files, sampled at every batch; the peak is kept.
    """
    me = os.getpid()
    rchar0, _ = io_and_uss([me])
    start = time.perf_counter()
    first = None
    peak = 0
    rchar = 0
    loader = make()
    n = len(loader)  # type: ignore[arg-type]
    for i, _ in enumerate(loader):
        if first is None:
            first = time.perf_counter() - start
        pids = [me, *children(me)]
        r, uss = io_and_uss(pids)
        peak = max(peak, uss * 1024 + shm_bytes())
        if i == n - 1:
            rchar = r - rchar0
    return {
        "first": first or 0.0,
        "epoch": time.perf_counter() - start,
        "read": rchar,
        "peak": peak,
    }


def write_tars(files: list[Path], out: Path, shards: int = 8) -> list[str]:
    """The images as webdataset tar shards (``key.jpg`` + ``key.cls``)."""
    import tarfile

    out.mkdir()
    urls = []
    for s in range(shards):
        path = out / f"shard-{s:04d}.tar"
        with tarfile.open(path, "w") as tar:
            for i, file in enumerate(files[s::shards]):
                key = f"{s:04d}{i:05d}"
                label = file.parent.name.removeprefix("class").encode()
                for suffix, data in ((".jpg", file.read_bytes()), (".cls", label)):
                    info = tarfile.TarInfo(key + suffix)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        urls.append(str(path))
    return urls


def pil_rrc(sample: dict[str, Any]) -> tuple[torch.Tensor, int]:
    """A webdataset sample (raw bytes) -> RandomResizedCrop 224 uint8 tensor, label."""
    image = Image.open(io.BytesIO(sample["jpg"])).convert("RGB")
    top, left, h, w = rrc_box(image.height, image.width, np.random.default_rng())
    crop = image.resize((CROP, CROP), Image.Resampling.BILINEAR, box=(left, top, left + w, top + h))
    return torch.from_numpy(np.asarray(crop)).permute(2, 0, 1).contiguous(), int(sample["cls"])


def webdataset_version() -> str | None:
    """webdataset's version, or None when it does not import."""
    try:
        import webdataset
    except ImportError:
        return None
    return webdataset.__version__


class _SizedLoader(torch.utils.data.DataLoader):
    """Torch's loader over a webdataset pipeline, with the epoch's length in batches."""

    def __len__(self) -> int:
        return NUM_IMAGES // BATCH


def webdataset_loader(urls: list[str], workers: int) -> torch.utils.data.DataLoader:
    """webdataset's tar shards -> PIL decode + RandomResizedCrop 224, batches of BATCH.

    Shards are split over the workers; samples go through a 1000-sample shuffle buffer.
    """
    import webdataset as wds

    ds = wds.WebDataset(urls, shardshuffle=False, empty_check=False)
    ds = ds.shuffle(1000).map(pil_rrc).batched(BATCH)
    return _SizedLoader(ds, batch_size=None, num_workers=workers)


def bench_scale(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 5: bytes read and peak memory per epoch, 1 and 4 workers; first batch."""
    import pyarrow.fs as pafs

    from trivium.vision.transforms import DecodeRandomResizedCrop

    folder = tmp / "scale-images"
    files = make_image_folder(folder)
    shards = tmp / "scale-shards"
    convert_image_folder(folder, shards, row_group_size=BATCH, progress_bar=False)
    selected = sum(
        pq.ParquetFile(f).metadata.row_group(g).column(c).total_compressed_size
        for f in sorted(shards.glob("*.parquet"))
        for g in range(pq.ParquetFile(f).metadata.num_row_groups)
        for c in (0, 1)  # image, label
    )
    images = sum(f.stat().st_size for f in files)
    fs = pafs.SubTreeFileSystem("/", pafs.LocalFileSystem())  # pread, not mmap: rchar counts

    def ours(workers: int, shared: bool) -> Callable[[], Iterable]:
        def make() -> Iterable:
            crop = DecodeRandomResizedCrop(CROP)
            pipe = ParquetSource(str(shards), columns=["image", "label"], filesystem=fs)
            pipe = pipe.to_tensors().map_batches(crop, input_col="image")
            return DataLoader(pipe, BATCH, shuffle=True, num_workers=workers, seed=0,
                              shared_cache=shared)  # fmt: skip

        return make

    def folder_loader(workers: int) -> Callable[[], Iterable]:
        tv, _ = peers
        T = tv.transforms
        ds = tv.datasets.ImageFolder(
            folder, T.Compose([T.RandomResizedCrop(CROP), T.PILToTensor()])
        )
        return lambda: torch.utils.data.DataLoader(ds, BATCH, shuffle=True, num_workers=workers)

    sides: dict[str, Callable[[], Iterable]] = {}
    for w in SCALE_WORKERS:
        sides[f"ours shared cache, {w} workers"] = ours(w, True)
        sides[f"ours per-worker cache, {w} workers"] = ours(w, False)
        if peers[0] is not None:
            sides[f"torchvision ImageFolder, {w} workers"] = folder_loader(w)
    wds_version = webdataset_version()
    if wds_version is not None:
        urls = write_tars(sorted(files), tmp / "tars")
        for w in SCALE_WORKERS:
            sides[f"webdataset {wds_version}, {w} workers"] = functools.partial(
                webdataset_loader, urls, w
            )
    else:
        checks.append("scale: webdataset not installed")
    checks.append(
        "scale: mosaicml-streaming not measured: 0.13.0 requires numpy<2.2 "
        "(pip --dry-run -c constraints.txt would replace numpy 2.4 with 2.1.3, plus "
        "transformers and cloud SDKs); it does not replace torch"
    )
    results = {
        name: [one_epoch(make) for _ in range(max(2, repeats // 2))] for name, make in sides.items()
    }
    lines = [
        f"scale: {NUM_IMAGES} JPEGs ({images / 1e6:.1f} MB of files; selected Parquet columns "
        f"{selected / 1e6:.1f} MB); bytes read = rchar of main + workers (read/pread syscalls), "
        "peak memory = max over batches of USS (main + workers) + shared cache files"
    ]
    for name, runs in results.items():
        read = statistics.median(r["read"] for r in runs)
        base = selected if name.startswith("ours") else images
        lines.append(
            f"  {name}: read {read / 1e6:.1f} MB ({read / base:.2f}x the data), peak "
            f"{statistics.median(r['peak'] for r in runs) / 1e6:.0f} MB, first batch "
            f"{statistics.median(r['first'] for r in runs) * 1e3:.0f} ms, epoch "
            f"{statistics.median(r['epoch'] for r in runs) * 1e3:.0f} ms"
        )
    checks.append("\n".join(lines))
    return []


# ------------------------------------------------- 7. conversion on a local Ray cluster


def shard_rows(out: Path) -> list[tuple[Any, ...]]:
    """The rows of a folder's Parquet shards, sorted (the engines may order files apart)."""
    table = pq.read_table(sorted(out.glob("*.parquet")))
    return sorted(zip(*(table[c].to_pylist() for c in table.column_names), strict=True))


def seconds_of(call: Callable[[], object]) -> float:
    """Seconds one call of ``call`` takes."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def bench_ray(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 7: the image folder converted by the Ray engine (local 2-CPU Ray) and locally."""
    try:
        import ray

        from trivium.pipelines.ray import convert_folder
    except ImportError as e:
        checks.append(f"ray: not installed ({e})")
        return []
    folder = tmp / "images"
    shared_image_folder(folder)
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)  # fmt: skip
    init_s = time.perf_counter() - started
    runs = itertools.count()

    def local() -> Path:
        out = tmp / f"ray-local-{next(runs)}"
        convert_image_folder(folder, out, row_group_size=BATCH, progress_bar=False)
        return out

    def on_ray() -> Path:
        out = tmp / f"ray-ray-{next(runs)}"
        convert_folder(folder, out, row_group_size=BATCH, progress_bar=False)
        return out

    try:
        same = shard_rows(local()) == shard_rows(on_ray())
        samplers = {
            "local": functools.partial(seconds_of, local),
            "ray": functools.partial(seconds_of, on_ray),
        }
        samples = harness.interleave(samplers, max(3, repeats // 2))
    finally:
        ray.shutdown()
    checks.append(
        f"ray: {ray.__version__}, ray.init of a local 2-CPU instance {init_s:.1f} s (not "
        f"timed below); the Ray engine's rows are the local engine's: {same}"
    )
    return [
        harness.Row(
            f"convert image-folder, {NUM_IMAGES} JPEGs (51 MB), local engine (ours) against "
            "--engine ray",
            statistics.median(samples["local"]),
            "--engine ray on a local 2-CPU Ray instance (after ray.init)",
            statistics.median(samples["ray"]),
            note="ratio: how many times longer the Ray engine took",
            samples=samples,
        )
    ]


# ------------------------------------------------------------- 6. Parquet scans


def write_list_parquet(path: Path, rows: int) -> None:
    """``rows`` rows of (int64 label, ``list<float32>`` of FEAT) in row groups of 8192."""
    rng = np.random.default_rng(0)
    feat = rng.standard_normal((rows, FEAT), dtype=np.float32)
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * FEAT)
    table = pa.table(
        {
            "label": rng.integers(0, 1000, rows),
            "feat": pa.ListArray.from_arrays(offsets, pa.array(feat.ravel())),
        }
    )
    pq.write_table(table, path, row_group_size=8192, compression="snappy")


def pyarrow_list_batches(path: Path, batch_size: int) -> Iterable[dict[str, torch.Tensor]]:
    """The pyarrow side of the list scan: label and feat as zero-copy tensors."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
        feat = batch.column("feat").flatten().to_numpy()
        yield {
            "label": torch.from_numpy(batch.column("label").to_numpy()),
            "feat": torch.from_numpy(feat).view(-1, FEAT),
        }


def scanner_list_batches(path: Path, batch_size: int) -> Iterable[dict[str, torch.Tensor]]:
    """The list scan through pyarrow's dataset scanner (row groups decoded on its threads)."""
    dataset = pds.dataset(path, format="parquet")
    for batch in dataset.to_batches(batch_size=batch_size, columns=["label", "feat"]):
        feat = batch.column("feat").flatten().to_numpy()
        yield {
            "label": torch.from_numpy(batch.column("label").to_numpy()),
            "feat": torch.from_numpy(feat).view(-1, FEAT),
        }


def pyarrow_image_batches(files: list[Path], batch_size: int) -> Iterable[dict[str, Any]]:
    """The pyarrow side of the JPEG scan: per-row uint8 views of the data buffer."""
    for path in files:
        reader = pq.ParquetFile(path)
        for batch in reader.iter_batches(batch_size=batch_size, columns=["image", "label"]):
            images = batch.column("image")
            offsets = np.frombuffer(images.buffers()[1], np.int32)
            offsets = offsets[images.offset : images.offset + len(images) + 1]
            data = torch.frombuffer(images.buffers()[2], dtype=torch.uint8)
            rows = data[int(offsets[0]) : int(offsets[-1])]
            yield {
                "image": list(torch.split(rows, np.diff(offsets).tolist())),
                "label": torch.from_numpy(batch.column("label").to_numpy()),
            }


def same_batches(ours: Iterable[dict[str, Any]], peer: Iterable[dict[str, Any]]) -> bool:
    """Whether two passes yield equal tensors (lists of tensors: equal row by row)."""
    for a, b in itertools.zip_longest(ours, peer):
        if a is None or b is None:
            return False
        for name, value in b.items():
            mine = a[name]
            if isinstance(value, list):
                if len(mine) != len(value) or not all(map(torch.equal, mine, value)):
                    return False
            elif not torch.equal(mine, value):
                return False
    return True


def count_rows(batches: Iterable[dict[str, Any]]) -> int:
    """Rows in a pass (every batch is produced in full by the iterator)."""
    return sum(len(batch["label"]) for batch in batches)


def bench_scan(
    tmp: Path, peers: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 6: Parquet scans into tensors, against pyarrow's iter_batches."""
    path = tmp / "list-features.parquet"
    write_list_parquet(path, PARQUET_ROWS)
    folder = tmp / "images"
    shared_image_folder(folder)
    shards = tmp / "scan-shards"
    convert_image_folder(folder, shards, progress_bar=False)
    files = sorted(shards.glob("*.parquet"))

    def ours_list() -> Iterable[dict[str, Any]]:
        return ParquetSource(path, batch_size=8192).to_tensors(["label", "feat"])

    def ours_images() -> Iterable[dict[str, Any]]:
        return ParquetSource(shards, columns=["image", "label"], batch_size=256).to_tensors()

    same_list = same_batches(ours_list(), pyarrow_list_batches(path, 8192))
    same_scanner = same_batches(ours_list(), scanner_list_batches(path, 8192))
    same_images = same_batches(ours_images(), pyarrow_image_batches(files, 256))
    checks.append(
        f"scan: tensors equal to pyarrow's: list {same_list} (dataset scanner {same_scanner}), "
        f"JPEG {same_images}"
    )
    sides = [
        harness.Side("ours list", lambda: count_rows(ours_list())),
        harness.Side("pyarrow list", lambda: count_rows(pyarrow_list_batches(path, 8192))),
        harness.Side("scanner list", lambda: count_rows(scanner_list_batches(path, 8192))),
        harness.Side("ours images", lambda: count_rows(ours_images())),
        harness.Side("pyarrow images", lambda: count_rows(pyarrow_image_batches(files, 256))),
    ]
    timings = harness.measure(sides, repeats, max(min_time, PARQUET_MIN_TIME))
    for kind, rows, others in (
        ("list", PARQUET_ROWS, ("pyarrow", "scanner")),
        ("images", NUM_IMAGES, ("pyarrow",)),
    ):
        speeds = [f"{side} {rows / timings[f'{side} {kind}'].median / 1e3:.0f} k rows/s"
                  for side in ("ours", *others)]  # fmt: skip
        checks.append(f"scan {kind}: {', '.join(speeds)}")
    peer = "pyarrow ParquetFile.iter_batches"
    list_row = (
        f"Parquet scan, label + list<float32>[128] ({PARQUET_ROWS} rows, batch 8192), per pass"
    )
    return [
        harness.row_from(list_row, timings, "ours list", "pyarrow list", peer, 1.0),
        harness.row_from(
            list_row, timings, "ours list", "scanner list",
            "pyarrow dataset scanner (pyarrow.dataset.dataset(path).to_batches)", 1.0,
        ),
        harness.row_from(
            f"Parquet scan with a JPEG column ({NUM_IMAGES} rows ~50 kB, batch 256), per pass",
            timings, "ours images", "pyarrow images", peer, 1.0,
        ),
    ]  # fmt: skip


# ------------------------------------------------------------------------------ main

Workload = Callable[[Path, harness.Peer, int, float, list[str]], list[harness.Row]]
WORKLOADS: dict[str, Workload] = {
    "parquet": bench_parquet,
    "random": bench_random,
    "images": bench_images,
    "first": bench_first,
    "memory": bench_memory,
    "scale": bench_scale,
    "scan": bench_scan,
    "ray": bench_ray,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = harness.benchmark_parser(
        __doc__.splitlines()[0], list(WORKLOADS), repeats=7, min_time=0.3
    )
    return harness.parse_benchmark_args(parser, list(WORKLOADS), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads, print machine info and the table, optionally write JSON."""
    args = parse_args(argv)
    run = harness.Session(args)
    peers = harness.load_peer(harness.peers.import_torchvision)
    info = harness.machine_info(
        torch.get_num_threads(),
        pyarrow=pa.__version__,
        Pillow=Image.__version__,
        torchvision=peers[1],
    )
    info["cpu"] += f"; usable CPUs {len(os.sched_getaffinity(0))}"
    run.header("trivium.data benchmark", info)
    with tempfile.TemporaryDirectory(prefix="trivium-data-bench-") as tmp:
        for name, bench in WORKLOADS.items():
            if name in args.only:
                run.rows += bench(Path(tmp), peers, args.repeats, args.min_time, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
