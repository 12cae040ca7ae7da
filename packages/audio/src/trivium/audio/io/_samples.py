"""Stored samples to ``load``'s tensors, shared by the backends.

:func:`to_tensor` turns ``[time, channels]`` samples into a contiguous
``[channels, time]`` (or ``[time, channels]``) tensor, scaled to float32 where a scale
is given; :func:`fill` writes them into an output the caller allocated (the parts of a
long file). Scales are powers of two, so the float32 is the same bit for bit as
libsndfile's.

Example:
    >>> import numpy as np
    >>> to_tensor(np.array([[0, 16384], [-16384, 0]], np.int16), True, 2.0**-15)
    tensor([[ 0.0000, -0.5000],
            [ 0.5000,  0.0000]])
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from torch import Tensor

__all__ = ["fill", "to_tensor"]

_FILL_SAMPLES = 1 << 16  # samples per block when converting to float32 (in cache)
_STEREO_FRAMES = 1 << 16  # frames per block of the interleaved 16-bit stereo conversion
_LITTLE_ENDIAN = sys.byteorder == "little"


def fill(out: np.ndarray, data: np.ndarray, channels_first: bool, scale: float | None) -> None:
    """Write ``[time, channels]`` ``data`` into ``out`` in its layout, scaled to float32.

    Scaling goes in blocks of time that stay in cache: a plain cast, then an in-place
    multiply, channel by channel where ``out`` is channels-first (2-3x faster than
    NumPy's casting multiply, which also transposes slowly).
    """
    if scale is None:
        if channels_first and _interleaved_stereo16(data):
            _split_stereo16(out, data)
        else:
            np.copyto(out, data.T if channels_first else data)  # faster than ascontiguousarray
        return
    if channels_first and _interleaved_stereo16(data):
        _fill_stereo16(out, data, scale)
        return
    factor = np.float32(scale)
    step = max(1, _FILL_SAMPLES // max(data.shape[1], 1))
    for start in range(0, data.shape[0], step):
        span = slice(start, start + step)
        if channels_first:
            for channel, row in enumerate(out[:, span]):
                np.copyto(row, data[span, channel], casting="unsafe")
                np.multiply(row, factor, out=row)
        else:
            block = out[span]
            np.copyto(block, data[span], casting="unsafe")
            np.multiply(block, factor, out=block)


def _interleaved_stereo16(data: np.ndarray) -> bool:
    """Whether ``data`` is ``[time, 2]`` ``int16`` with each frame's 4 bytes together."""
    return (
        _LITTLE_ENDIAN
        and data.dtype == np.int16
        and data.ndim == 2
        and data.shape[1] == 2
        and data.strides == (4, 2)
    )


def _split_stereo16(out: np.ndarray, data: np.ndarray) -> None:
    """Write interleaved ``int16`` stereo ``data`` into ``[2, time]`` ``int16`` ``out``.

    Read as one little-endian ``int32``, a frame is ``right << 16 | left & 0xFFFF``:
    its cast to ``int16`` is ``left`` and ``frame >> 16`` is ``right``, so both rows
    come from contiguous operations, block by block in cache (NumPy's copy of the
    transposed ``[time, 2]`` array walks each channel with a stride: several times
    slower).
    """
    frames = data.view(np.int32)[:, 0]  # [time, 1] -> [time]
    step = max(1, min(_STEREO_FRAMES, frames.size))
    right = np.empty(step, np.int32)
    for start in range(0, frames.size, step):
        block = frames[start : start + step]
        span = slice(start, start + block.size)
        np.copyto(out[0, span], block, casting="unsafe")
        np.right_shift(block, 16, out=right[: block.size])
        np.copyto(out[1, span], right[: block.size], casting="unsafe")


def _fill_stereo16(out: np.ndarray, data: np.ndarray, scale: float) -> None:
    """Write interleaved ``int16`` stereo ``data`` into ``[2, time]`` float32 ``out``, scaled.

    Casting a strided channel is NumPy's slow loop. Read as one little-endian
    ``int32``, a frame is ``right << 16 | left & 0xFFFF``: ``frame << 16`` is
    ``left << 16`` and ``frame & -65536`` is ``right << 16``, so both channels come
    from contiguous integer operations and contiguous casts (about 1.7x faster). The
    shifted values and ``scale / 65536`` are exact in float32, so the result is
    bit-identical to casting each sample and multiplying by ``scale``.

    A frame takes exactly the bytes of its right channel's float32, so the frames go
    where ``out[1]`` is (``load``'s long-file path reads them there; others are copied
    there first) and every step works in place in ``out``, block by block in cache:
    ``frame << 16`` into ``out[0]`` as ``int32``, ``frame & -65536`` over the frame,
    then each row cast to float32 where it lies and scaled (about 1.2x faster than
    passing through a separate buffer).
    """
    left, right = out.view(np.int32)  # the rows' bytes as int32
    frames = data.view(np.int32)[:, 0]  # [time, 1] -> [time]
    if frames.ctypes.data != right.ctypes.data:
        np.copyto(right, frames)
    factor = np.float32(scale / 65536)
    step = max(1, min(_STEREO_FRAMES, right.size))
    for start in range(0, right.size, step):
        span = slice(start, start + step)
        np.left_shift(right[span], 16, out=left[span])
        np.bitwise_and(right[span], -65536, out=right[span])
        _cast_scaled(out[0, span], left[span], factor)
        _cast_scaled(out[1, span], right[span], factor)


def _cast_scaled(row: np.ndarray, values: np.ndarray, factor: np.float32) -> None:
    """``row[:] = values * factor`` as a cast then an in-place multiply (faster than one call).

    ``values`` may be ``row``'s own bytes (same size, same place): each element is read
    before it is written.
    """
    np.copyto(row, values, casting="unsafe")
    np.multiply(row, factor, out=row)


def to_tensor(data: np.ndarray, channels_first: bool, scale: float | None = None) -> Tensor:
    """``[channels, time]`` (or ``[time, channels]``) contiguous tensor, scaled to float32."""
    contiguous = not channels_first or data.shape[1] == 1
    if scale is None and contiguous:
        return torch.from_numpy(data.T if channels_first else data)  # already contiguous
    if contiguous and data.size <= _FILL_SAMPLES:  # one block: the fewest NumPy calls
        out = (data.T if channels_first else data).astype(np.float32)
        return torch.from_numpy(np.multiply(out, np.float32(scale), out=out))
    shape = data.T.shape if channels_first else data.shape
    out = np.empty(shape, data.dtype if scale is None else np.float32)
    fill(out, data, channels_first, scale)
    return torch.from_numpy(out)
