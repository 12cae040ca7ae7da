"""``save``: waveforms encoded by libsndfile (WAV, FLAC, Ogg Vorbis / Opus, AIFF, ...).

Example:
    >>> import io, torch
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(1, 10), 8000, format="WAV")
    >>> buf.getvalue()[:4]
    b'RIFF'
"""

from __future__ import annotations

import os
from typing import IO, Any

import numpy as np
import soundfile as sf
import torch
from torch import Tensor

from trivium.core.errors import EncodeError
from trivium.core.sources import describe_source

__all__ = ["save"]

# torchaudio-style (encoding, bits_per_sample) -> libsndfile subtype for save().
_SUBTYPES: dict[tuple[str, int | None], str] = {
    ("PCM_S", 8): "PCM_S8",
    ("PCM_S", 16): "PCM_16",
    ("PCM_S", 24): "PCM_24",
    ("PCM_S", 32): "PCM_32",
    ("PCM_S", None): "PCM_16",
    ("PCM_U", 8): "PCM_U8",
    ("PCM_U", None): "PCM_U8",
    ("PCM_F", 32): "FLOAT",
    ("PCM_F", 64): "DOUBLE",
    ("PCM_F", None): "FLOAT",
    ("ULAW", 8): "ULAW",
    ("ULAW", None): "ULAW",
    ("ALAW", 8): "ALAW",
    ("ALAW", None): "ALAW",
    ("VORBIS", None): "VORBIS",
    ("OPUS", None): "OPUS",
}
_DTYPE_SUBTYPES = {
    torch.int16: "PCM_16",
    torch.int32: "PCM_32",
    torch.uint8: "PCM_U8",
    torch.float32: "FLOAT",
    torch.float64: "DOUBLE",
}


def save(
    uri: str | os.PathLike | IO[bytes],
    src: Tensor,
    sample_rate: int,
    channels_first: bool = True,
    format: str | None = None,
    subtype: str | None = None,
    encoding: str | None = None,
    bits_per_sample: int | None = None,
) -> None:
    """Encode ``src`` (``[channels, time]``, or ``[time]``) to a file or file-like object.

    ``format`` is libsndfile's container name (``"WAV"``, ``"FLAC"``, ``"OGG"``, ...),
    taken from the file extension when omitted. The sample encoding is either
    ``subtype`` (libsndfile's name: ``"PCM_16"``, ``"PCM_24"``, ``"PCM_32"``,
    ``"FLOAT"``, ``"VORBIS"``, ``"ULAW"``, ...) or torchaudio's ``encoding`` /
    ``bits_per_sample`` pair (``"PCM_S"``/16, ``"PCM_F"``/32, ...). By default it
    follows the tensor's dtype where the container allows it (float32 to ``FLOAT``,
    int16 to ``PCM_16``, uint8 to ``PCM_U8``), else the container's default
    (``PCM_16`` for FLAC, Vorbis for OGG). Floating input is clipped to [-1, 1]
    before integer encoding; integer input is written as is.

    Example:
        >>> import io, torch
        >>> from trivium.audio.io import info
        >>> buf = io.BytesIO()
        >>> x = torch.zeros(2, 100)
        >>> save(buf, x, 44100, format="WAV", encoding="PCM_S", bits_per_sample=24)
        >>> info(buf.getvalue()).bits_per_sample
        24
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"src must be a tensor, got {type(src).__name__}")
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate <= 0:
        raise ValueError(f"sample_rate must be a positive int, got {sample_rate!r}")
    fmt = _format_for(uri, format)
    chosen = _pick_subtype(fmt, src.dtype, subtype, encoding, bits_per_sample)
    if not sf.check_format(fmt, chosen):
        raise ValueError(
            f"{fmt} cannot hold subtype {chosen}; "
            f"choose one of {sorted(sf.available_subtypes(fmt))}"
        )
    data = _writable_array(src, channels_first, chosen)
    name = describe_source(uri)
    try:
        sf.write(uri, data, sample_rate, subtype=chosen, format=fmt)
    except (sf.SoundFileError, RuntimeError, ValueError) as e:
        raise EncodeError(f"cannot encode {fmt}/{chosen}: {e}", path=name) from None


def _pick_subtype(
    format: str, dtype: torch.dtype, subtype: str | None, encoding: str | None, bits: int | None
) -> str:
    if subtype is not None:
        if encoding is not None or bits is not None:
            raise ValueError("give either subtype or encoding/bits_per_sample, not both")
        return subtype.upper()
    if encoding is not None:
        key = (encoding.upper(), bits)
        if key not in _SUBTYPES:
            raise ValueError(f"unsupported encoding/bits_per_sample: {encoding}/{bits}")
        return _SUBTYPES[key]
    if bits is not None:
        raise ValueError("bits_per_sample needs an encoding (e.g. encoding='PCM_S')")
    preferred = _DTYPE_SUBTYPES.get(dtype)
    if preferred is not None and sf.check_format(format, preferred):
        return preferred
    return sf.default_subtype(format)


def _format_for(uri: Any, format: str | None) -> str:
    if format is not None:
        return format.upper()
    if isinstance(uri, (str, os.PathLike)):
        ext = os.path.splitext(os.fspath(uri))[1].lstrip(".").upper()
        ext = {"OGA": "OGG", "OPUS": "OGG", "AIF": "AIFF"}.get(ext, ext)
        if ext in sf.available_formats():
            return ext
        raise ValueError(f"{os.fspath(uri)}: unknown audio file extension; pass format=")
    raise ValueError("format= is required when saving to a file-like object")


def _writable_array(src: Tensor, channels_first: bool, subtype: str) -> np.ndarray:
    """``[time, channels]`` NumPy data soundfile writes without surprises."""
    if src.dim() == 1:
        src = src.unsqueeze(0 if channels_first else 1)
    if src.dim() != 2:
        raise EncodeError(f"expected a 1-D or 2-D waveform, got shape {tuple(src.shape)}")
    data = src.detach().cpu()
    if channels_first:
        data = data.t()
    if data.dtype == torch.uint8:  # soundfile has no uint8 input: widen to left-justified int16
        data = (data.to(torch.int16) - 128) << 8
    elif data.is_floating_point():
        if data.dtype not in (torch.float32, torch.float64):
            data = data.float()
        if subtype not in ("FLOAT", "DOUBLE"):  # integer files wrap around on overflow
            data = data.clamp(-1.0, 1.0)
    elif data.dtype not in (torch.int16, torch.int32):
        raise EncodeError(f"unsupported waveform dtype {data.dtype}")
    return np.ascontiguousarray(data.numpy())
