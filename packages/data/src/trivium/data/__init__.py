"""Trivium data: Arrow-backed pipes, map-style Arrow datasets and a stateful sharded loader.

- pipes: :class:`IterPipe` / :class:`MapPipe` composed by chaining (``map``, ``filter``,
  ``batch``, ``shuffle``, ``parallel_map``, columnar ``select`` / ``to_tensors``, ...);
- Arrow sources yielding ``pyarrow.RecordBatch``: :class:`ParquetSource`,
  :class:`ArrowIPCSource`, :class:`CSVSource` (local paths and ``s3://`` URIs);
- :class:`ArrowDataset`: random access over memory-mapped Arrow IPC files;
- :class:`DataLoader`: exact sharding over workers and ranks, deterministic epochs,
  mid-epoch ``state_dict`` / ``load_state_dict``;
- :func:`write_parquet` and the ``trivium-data convert`` command line;
- :func:`get_worker_info`: torch's, also answering in the loader's worker threads;
- the decompression-bomb limit of every Arrow reader: :func:`set_max_uncompressed_bytes`
  (see :mod:`trivium.data.limits`).

Example:
    >>> import trivium.data as td
    >>> isinstance(td.FileLister("."), td.FileLister)
    True
"""

import importlib
from typing import TYPE_CHECKING

from trivium.data.file_lister import FileLister
from trivium.data.loader import DataLoader
from trivium.data.pipes import IterPipe, MapPipe, SkippedSamplesWarning
from trivium.data.workers import get_worker_info

# The Arrow names are imported on first use (``__getattr__``): a loader over a map-style
# dataset never imports pyarrow (and pandas with it: ~80 MiB a process).
if TYPE_CHECKING:
    from trivium.data.arrow_dataset import ArrowDataset
    from trivium.data.arrow_sources import ArrowIPCSource, ArrowSource, CSVSource, ParquetSource
    from trivium.data.columnar import to_tensors
    from trivium.data.limits import (
        DEFAULT_MAX_UNCOMPRESSED_BYTES,
        get_max_uncompressed_bytes,
        set_max_uncompressed_bytes,
    )
    from trivium.data.writers import write_parquet

_ARROW_MODULES = {
    "ArrowDataset": "arrow_dataset",
    "ArrowIPCSource": "arrow_sources",
    "ArrowSource": "arrow_sources",
    "CSVSource": "arrow_sources",
    "ParquetSource": "arrow_sources",
    "to_tensors": "columnar",
    "DEFAULT_MAX_UNCOMPRESSED_BYTES": "limits",
    "get_max_uncompressed_bytes": "limits",
    "set_max_uncompressed_bytes": "limits",
    "write_parquet": "writers",
}


def __getattr__(name: str) -> object:
    module = _ARROW_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'trivium.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"trivium.data.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED_BYTES",
    "ArrowDataset",
    "ArrowIPCSource",
    "ArrowSource",
    "CSVSource",
    "DataLoader",
    "FileLister",
    "IterPipe",
    "MapPipe",
    "ParquetSource",
    "SkippedSamplesWarning",
    "__version__",
    "get_max_uncompressed_bytes",
    "get_worker_info",
    "set_max_uncompressed_bytes",
    "to_tensors",
    "write_parquet",
]
