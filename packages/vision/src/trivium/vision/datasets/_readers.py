"""Readers of the datasets' binary files: IDX tensors (MNIST family) and pickled batches (CIFAR).

Each raises a ``DatasetError`` naming the file when its content is not what the
format says, and the error rule's ``PathNotFoundError`` when it is missing.
"""

from __future__ import annotations

import gzip
import lzma
import os
import pickle
from typing import Any, ClassVar

import numpy as np
import torch

from trivium.core.errors import DatasetError, PathNotFoundError

# IDX type codes (the third byte of the magic number) and their big-endian dtypes.
_IDX_TYPES = {8: ">u1", 9: ">i1", 11: ">i2", 12: ">i4", 13: ">f4", 14: ">f8"}
_OPENERS = {".gz": gzip.open, ".xz": lzma.open}


def _read_bytes(path: str) -> bytes:
    opener = _OPENERS.get(os.path.splitext(path)[1], open)
    try:
        with opener(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise DatasetError(f"cannot read: {e}", path=path) from None


def read_idx(path: str | os.PathLike[str], strict: bool = True) -> torch.Tensor:
    """An IDX file (raw, ``.gz`` or ``.xz``) as a tensor of its type and shape.

    The format of LeCun's MNIST files (``read_sn3_pascalvincent_tensor`` in
    torchvision): a magic number ``0x0000TTNN`` (type ``TT``, ``NN`` dimensions), the
    sizes as big-endian int32, then the values big-endian. Without ``strict`` a file
    holding more values than its sizes say is cut to them (torchvision reads such files).
    """
    path = os.fspath(path)
    data = _read_bytes(path)
    if len(data) < 4 or data[0] or data[1] or data[2] not in _IDX_TYPES or not 1 <= data[3] <= 4:
        raise DatasetError("not an IDX file: bad magic number", path=path)
    dims = data[3]
    header = 4 * (dims + 1)
    if len(data) < header:
        raise DatasetError("truncated IDX header", path=path)
    shape = tuple(int(v) for v in np.frombuffer(data, ">u4", dims, 4))
    dtype = np.dtype(_IDX_TYPES[data[2]])
    count = int(np.prod(shape))
    available = (len(data) - header) // dtype.itemsize
    if available < count or (strict and available != count):
        raise DatasetError(
            f"the IDX header says {count:,} values of shape {shape}, the file holds {available:,}",
            path=path,
        )
    values = np.frombuffer(data, dtype, count, header).astype(dtype.newbyteorder("="))
    return torch.from_numpy(values.reshape(shape))


def read_idx_as(path: str | os.PathLike[str], dims: int) -> torch.Tensor:
    """An IDX file of uint8 values in ``dims`` dimensions, as the MNIST readers require."""
    x = read_idx(path, strict=False)
    if x.dtype != torch.uint8 or x.dim() != dims:
        raise DatasetError(
            f"expected uint8 values in {dims} dimensions, the file holds {x.dtype} in {x.dim()}",
            path=os.fspath(path),
        )
    return x


class _BatchUnpickler(pickle.Unpickler):
    """Unpickles only what a CIFAR batch holds (dicts, lists, str/bytes, NumPy arrays)."""

    _ALLOWED: ClassVar[set[tuple[str, str]]] = {
        ("_codecs", "encode"),  # how Python 3's protocol 2 writes bytes
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


def read_pickle_batch(path: str | os.PathLike[str], *keys: str) -> dict[str, Any]:
    """A pickled dict (a CIFAR batch or its meta file), checked to hold each of ``keys``.

    Loaded as torchvision loads it (``encoding="latin1"``), but only dicts, lists,
    strings and NumPy arrays are accepted: a pickle naming anything else is refused
    rather than run. A key may be ``"a|b"``: either of them.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            entry = _BatchUnpickler(f, encoding="latin1").load()
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
        raise DatasetError(f"not a pickled batch: {e}", path=path) from None
    if not isinstance(entry, dict):
        raise DatasetError(
            f"not a pickled batch: holds {type(entry).__name__}, not dict", path=path
        )
    for key in keys:
        if not any(k in entry for k in key.split("|")):
            raise DatasetError(f"the batch has no {key!r} entry", path=path)
    return entry


def read_mat(path: str, **kwargs: Any) -> dict[str, Any]:
    """A MATLAB ``.mat`` file through ``scipy.io.loadmat``; a ``DatasetError`` when damaged."""
    try:
        import scipy.io
    except ImportError as e:
        raise ImportError(
            f"{path}: reading .mat files needs scipy: pip install 'trivium-vision[datasets]'"
        ) from e
    try:
        return scipy.io.loadmat(path, **kwargs)
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    except Exception as e:  # scipy's parser fails on damaged files with any exception
        raise DatasetError(f"cannot read the .mat file: {e}", path=path) from None
