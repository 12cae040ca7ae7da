"""Ray Data for preprocessing across machines: read shards, decode, write shards, convert.

Install with ``pip install 'trivium-pipelines[ray]'``. Nothing here imports Ray until a
function is called, and the local conversion (the default) never imports it.

- :func:`read_shards`: the project's Parquet or Arrow IPC shards as a
  ``ray.data.Dataset``;
- :class:`DecodeImages`, :class:`DecodeAudio`: ``map_batches`` functions (NumPy
  batch format) that decode a column of encoded bytes with Trivium's codecs
  (images optionally with the fused decode-and-resize);
- :func:`write_shards`: a dataset back to Parquet shards that
  :class:`trivium.data.ParquetSource` reads (bytes columns without a dictionary,
  uncompressed by default);
- :func:`convert_folder`: ``trivium-data convert ... --engine ray [--address ADDR]``,
  the folder conversion run as Ray tasks (the files must be readable from every
  node, e.g. on a shared filesystem); the rows are the local engine's.

Example:
    >>> ds = read_shards("shards/")  # doctest: +SKIP
    >>> ds = ds.map_batches(DecodeImages(size=224), batch_format="numpy")  # doctest: +SKIP
    >>> write_shards(ds, "decoded/")  # doctest: +SKIP
    >>> DecodeImages(size=224).column
    'image'
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trivium.core.errors import DatasetError, DecodeError
from trivium.core.skipping import check_on_error
from trivium.pipelines import convert as local

__all__ = ["DecodeAudio", "DecodeImages", "convert_folder", "read_shards", "write_shards"]

_PARQUET = (".parquet", ".parq", ".pq")
_IPC = (".arrow", ".arrows", ".feather", ".ipc")


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as e:
        raise ImportError(
            "trivium.pipelines.ray needs Ray Data: pip install 'trivium-pipelines[ray]'"
        ) from e
    return ray


def _read_ipc(batch: dict[str, np.ndarray], columns: list[str] | None) -> pa.Table:
    tables = []
    for path in batch["path"]:
        with pa.memory_map(str(path)) as source:
            try:
                table = pa.ipc.open_file(source).read_all()
            except pa.ArrowInvalid:
                source.seek(0)
                table = pa.ipc.open_stream(source).read_all()
        tables.append(table if columns is None else table.select(columns))
    return pa.concat_tables(tables)


def read_shards(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    columns: Sequence[str] | None = None,
    **read_kwargs: Any,
) -> Any:
    """Parquet or Arrow IPC shards (files or folders) as a ``ray.data.Dataset``.

    Parquet goes through ``ray.data.read_parquet`` (``read_kwargs`` too); IPC files
    are read one file per task. A folder's files are taken in sorted order.

    Example:
        >>> read_shards("shards/", columns=["image", "label"])  # doctest: +SKIP
    """
    from trivium.data.arrow_sources import list_shards

    ray = _ray()
    _, files = list_shards(paths, None, _PARQUET + _IPC)
    cols = None if columns is None else list(columns)
    if all(f.endswith(_PARQUET) for f in files):
        return ray.data.read_parquet(files, columns=cols, **read_kwargs)
    if not all(f.endswith(_IPC) for f in files):
        raise DatasetError("mixed Parquet and Arrow IPC files: read them separately", path=files[0])
    items = ray.data.from_items([{"path": f} for f in files], override_num_blocks=len(files))
    return items.map_batches(
        _read_ipc, fn_kwargs={"columns": cols}, batch_size=1, batch_format="numpy"
    )


def _column(batch: dict[str, np.ndarray], name: str) -> np.ndarray:
    if name not in batch:
        raise ValueError(f"no column {name!r} in the batch (columns: {sorted(batch)})")
    return batch[name]


def _as_column(values: list[np.ndarray]) -> np.ndarray:
    """Arrays of one shape stacked; of different shapes, an object array (ragged)."""
    if values and all(v.shape == values[0].shape for v in values):
        return np.stack(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class DecodeImages:
    """Decode a column of encoded images: ``[C, H, W]`` uint8 arrays (RGB by default).

    With ``size``, each image is decoded and resized in one step
    (:class:`trivium.vision.transforms.DecodeResize`: a JPEG decodes at the smallest
    DCT scale that serves the size). Images of one shape come back as one
    ``[B, C, H, W]`` array, otherwise as a ragged column. Use with
    ``ds.map_batches(DecodeImages(...), batch_format="numpy")``.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> png = encode_png(torch.zeros(3, 4, 6, dtype=torch.uint8)).numpy().tobytes()
        >>> out = DecodeImages()({"image": np.array([png], dtype=object)})
        >>> out["image"].shape
        (1, 3, 4, 6)
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        column: str = "image",
        output_column: str | None = None,
    ) -> None:
        self.size, self.column = size, column
        self.output_column = output_column or column

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        from trivium.vision.io import decode_image
        from trivium.vision.transforms import DecodeResize

        data = [
            torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in _column(batch, self.column)
        ]
        if self.size is None:
            images = [decode_image(d) for d in data]
        else:
            images = DecodeResize(self.size)(data) if data else []
        return {**batch, self.output_column: _as_column([i.numpy() for i in images])}


class DecodeAudio:
    """Decode a column of encoded audio: float32 ``[channels, time]`` plus ``sample_rate``.

    Uses :func:`trivium.audio.io.load`. Use with
    ``ds.map_batches(DecodeAudio(), batch_format="numpy")``.

    Example:
        >>> import soundfile as sf
        >>> buffer = io.BytesIO(); sf.write(buffer, np.zeros(80), 8000, format="WAV")
        >>> out = DecodeAudio()({"audio": np.array([buffer.getvalue()], dtype=object)})
        >>> out["audio"].shape, out["sample_rate"].tolist()
        ((1, 1, 80), [8000])
    """

    def __init__(self, column: str = "audio", output_column: str | None = None) -> None:
        self.column = column
        self.output_column = output_column or column

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from trivium.audio.io import load

        waves, rates = [], []
        for data in _column(batch, self.column):
            wave, rate = load(io.BytesIO(bytes(data)))
            waves.append(wave.numpy())
            rates.append(rate)
        return {
            **batch,
            self.output_column: _as_column(waves),
            "sample_rate": np.asarray(rates, dtype=np.int32),
        }


def write_shards(
    ds: Any,
    out_dir: str | os.PathLike[str],
    row_group_size: int = 256,
    compression: str | None = None,
    *,
    rows_per_file: int | None = None,
) -> list[str]:
    """Write ``ds`` as Parquet shards :class:`trivium.data.ParquetSource` reads; their paths.

    Binary columns are written without a dictionary (it costs read time and saves
    nothing on encoded media), uncompressed unless ``compression`` says otherwise.

    Example:
        >>> write_shards(ds, "out/", row_group_size=256)  # doctest: +SKIP
    """
    out = os.fspath(out_dir)
    schema = ds.schema().base_schema if hasattr(ds.schema(), "base_schema") else None
    plain = [] if schema is None else [f.name for f in schema if not pa.types.is_binary(f.type)]
    ds.write_parquet(
        out,
        max_rows_per_file=rows_per_file,
        row_group_size=row_group_size,
        compression=compression or "none",
        use_dictionary=plain if schema is not None else False,
    )
    return sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".parquet"))


_KINDS = {"images": local._IMAGES, "audio": local._AUDIO}


class _Examine:
    """A Ray ``map_batches`` task: read files, check their headers, build the rows."""

    def __init__(self, kind: str, root: str, classes: list[str], verify: bool) -> None:
        self.kind, self.root, self.classes, self.verify = kind, root, classes, verify

    def __call__(self, batch: dict[str, np.ndarray]) -> pa.Table:
        kind = _KINDS[self.kind]
        header = kind.header()
        decode = kind.decode if self.verify else None
        column = kind.column
        rows, errors = [], []
        for path, label in zip(batch["path"].tolist(), batch["label"].tolist(), strict=True):
            data, meta = local._examine(path, header, decode)
            if isinstance(meta, Exception):
                errors.append(local._named_error(meta, path).reason)
                meta, data = {}, b""
            else:
                errors.append(None)
            rel = os.path.relpath(path, self.root)
            rows.append({column: data, "label": label, "class_name": self.classes[label],
                         "path": rel, **meta})  # fmt: skip
        table = pa.Table.from_pylist(rows, schema=kind.schema)
        return table.append_column("error", pa.array(errors, pa.string()))


def convert_folder(
    root: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    rows_per_file: int = 10_000,
    row_group_size: int = 256,
    compression: str | None = None,
    *,
    kind: str = "images",
    on_error: str = "raise",
    verify: bool = False,
    address: str | None = None,
    files_per_task: int = 64,
    progress_bar: bool | None = None,
) -> local.ConversionSummary:
    """``convert_image_folder`` / ``convert_audio_folder`` run on a Ray cluster.

    The arguments are theirs; ``kind`` is ``"images"`` or ``"audio"``. Connects to
    ``address`` (``"auto"``, a ``ray://`` URI or ``host:port``), or starts a local Ray
    when none is given and
    none is running. The files are listed here and read by the tasks (every node
    must see ``root`` and ``out_dir`` at the same paths). The rows are those the
    local engine writes; the files, and the order of rows across them, differ.
    ``progress_bar`` is accepted for the local engine's signature: Ray reports its
    own progress.

    Example:
        >>> convert_folder("photos/", "shards/", address="auto")  # doctest: +SKIP
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be 'images' or 'audio', got {kind!r}")
    check_on_error(on_error)
    ray = _ray()
    start = time.perf_counter()
    root = os.fspath(root)
    classes = local.find_classes(root)
    files = local._files(root, classes, _KINDS[kind].extensions)
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    items = [{"path": path, "label": label} for path, label in files]
    blocks = max(1, -(-len(items) // files_per_task))
    ds = ray.data.from_items(items, override_num_blocks=blocks).map_batches(
        _Examine(kind, root, classes, verify), batch_size=files_per_task, batch_format="numpy"
    )
    ds = ds.materialize()
    failed = ds.map_batches(_failed, batch_format="pyarrow").take_all()
    failed.sort(key=lambda row: row["path"])
    if failed and on_error == "raise":
        first = failed[0]
        raise DecodeError(first["error"], path=os.path.join(root, first["path"]))
    kept = ds.map_batches(_kept, batch_format="pyarrow")
    summary = local.ConversionSummary(classes=classes, verified=verify)
    summary.skipped = [(os.path.join(root, f["path"]), f["error"]) for f in failed]
    summary.rows = len(items) - len(failed)
    summary.bytes_in = _bytes(kept, _KINDS[kind].column)
    summary.files = write_shards(
        kept, out_dir, row_group_size, compression, rows_per_file=rows_per_file
    )
    summary.seconds = time.perf_counter() - start
    return summary


def _failed(batch: pa.Table) -> pa.Table:
    return batch.filter(pc.is_valid(batch["error"])).select(["path", "error"])


def _kept(batch: pa.Table) -> pa.Table:
    return batch.filter(pc.is_null(batch["error"])).drop_columns(["error"])


def _bytes(ds: Any, column: str) -> int:
    def sizes(batch: pa.Table) -> pa.Table:
        return pa.table({"n": pc.binary_length(batch[column])})

    return int(ds.map_batches(sizes, batch_format="pyarrow").sum("n") or 0)
