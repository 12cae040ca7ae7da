"""Reading and writing whole files as uint8 tensors.

Example:
    >>> import tempfile, os, torch
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> write_file(path, torch.tensor([1, 2, 3], dtype=torch.uint8))
    >>> read_file(path).tolist()
    [1, 2, 3]
"""

from __future__ import annotations

import os

import numpy as np
import torch

from trivium.core.errors import PathNotFoundError


def read_file(path: str | os.PathLike[str]) -> torch.Tensor:
    """Read a file's bytes into a 1-D uint8 tensor (as torchvision.io.read_file).

    A missing file raises :class:`trivium.core.errors.PathNotFoundError` (a
    ``FileNotFoundError``) naming it; a directory raises ``IsADirectoryError``.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "hi.txt")
        >>> _ = open(path, "wb").write(b"hi")
        >>> read_file(path)
        tensor([104, 105], dtype=torch.uint8)
    """
    try:
        f = open(os.fspath(path), "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        buffer = np.empty(size, dtype=np.uint8)
        read = f.readinto(memoryview(buffer))  # straight into the tensor's memory
        rest = f.read()  # the file grew while we read it
    if rest:
        buffer = np.concatenate([buffer[:read], np.frombuffer(rest, dtype=np.uint8)])
    return torch.from_numpy(buffer[: read + len(rest)])


def write_file(filename: str | os.PathLike[str], data: torch.Tensor | bytes) -> None:
    """Write a 1-D uint8 tensor (or bytes) to ``filename``.

    Example:
        >>> import tempfile, os, torch
        >>> path = os.path.join(tempfile.mkdtemp(), "out.bin")
        >>> write_file(path, b"abc")
        >>> open(path, "rb").read()
        b'abc'
    """
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.uint8 or data.dim() != 1:
            raise TypeError(
                f"write_file: expected a 1-D uint8 tensor, got {data.dtype} "
                f"of shape {tuple(data.shape)}"
            )
        data = data.detach().cpu().contiguous().numpy().tobytes()
    with open(os.fspath(filename), "wb") as f:
        f.write(data)
