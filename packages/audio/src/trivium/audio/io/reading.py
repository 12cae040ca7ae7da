"""``load`` and ``info``, and the dispatch that picks the backend reading a file.

Each backend is a module: ``_wav`` (plain WAV, a header parse and NumPy),
``_ffmpeg`` (PyAV: the containers libsndfile does not read) and ``_sndfile``
(libsndfile). The first that takes the file reads it:

| order | backend | takes |
| --- | --- | --- |
| 1 | ``_wav.decode`` / ``_wav.probe`` | a plain WAV (unless ``backend="ffmpeg"`` or ``format`` names another container) |
| 2 | ``_ffmpeg.decode`` / ``_ffmpeg.probe`` | a container :func:`_ffmpeg.sniff` knows by its first bytes (where libsndfile reads it too, only with PyAV installed); ``backend="ffmpeg"``; a ``format`` libsndfile does not name |
| 3 | ``_sndfile.decode`` / ``_sndfile.probe`` | the rest; ``backend="soundfile"``; a ``format`` libsndfile names |
| 4 | ``_ffmpeg`` again | what libsndfile refuses as an unknown format (``backend`` and ``format`` None, PyAV installed) |

Example:
    >>> import io, torch
    >>> from trivium.audio.io import save
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(1, 80), 8000, format="WAV")
    >>> load(buf.getvalue())[0].shape, info(buf.getvalue()).num_frames
    (torch.Size([1, 80]), 80)
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import soundfile as sf
import torch
from torch import Tensor

from trivium.audio.io import _ffmpeg, _sndfile, _wav
from trivium.audio.io._sources import AudioSource, check_range, head, rewinder
from trivium.audio.io.metadata import AudioMetaData
from trivium.core.errors import UnsupportedFormatError
from trivium.core.sources import as_readable

__all__ = ["info", "load"]

_T = TypeVar("_T")
_BACKENDS = ("soundfile", "ffmpeg")


def load(
    uri: AudioSource,
    frame_offset: int = 0,
    num_frames: int = -1,
    normalize: bool = True,
    channels_first: bool = True,
    format: str | None = None,
    buffer_size: int = 4096,
    backend: str | None = None,
) -> tuple[Tensor, int]:
    """Decode audio into ``(waveform, sample_rate)``, as ``torchaudio.load``.

    ``uri`` is a path, a binary file-like object, or encoded bytes (``bytes``,
    ``bytearray``, ``memoryview`` or a 1-D ``uint8`` tensor). ``frame_offset`` and
    ``num_frames`` (``-1``: to the end) select a range without decoding the rest.
    The waveform is ``[channels, time]`` (``[time, channels]`` with
    ``channels_first=False``).

    With ``normalize=True`` (default) samples are ``float32`` in [-1, 1]. With
    ``normalize=False`` integer PCM comes back as stored: 8-bit signed as ``int8``,
    8-bit unsigned as ``uint8`` (silence is 128), 16-bit as ``int16``, 24-bit as
    ``int32`` holding ``sample << 8`` (left-justified, as libsndfile and torchaudio
    give it), 32-bit as ``int32``; ``FLOAT``/``DOUBLE`` files as ``float32``/``float64``.
    This applies to every container holding integer PCM (WAV, FLAC, AIFF, ...);
    companded and lossy encodings (mu-law, A-law, ADPCM, Vorbis, Opus, MP3) have no
    stored integers and always decode to normalised ``float32``.

    Files libsndfile does not read go to FFmpeg (PyAV, the ``ffmpeg`` extra of
    ``trivium-audio``): MP4 / M4A / MOV (AAC, ALAC, ...),
    Matroska / WebM (Opus, Vorbis, ...), ADTS AAC, Ogg Opus, AVI, ASF (WMA), and the
    audio of video files. They are told apart by their first bytes; anything else
    libsndfile does not recognise is offered to FFmpeg too. The first audio stream is
    decoded, as PyAV decodes it (priming samples dropped where the container says how
    many); ``normalize=False`` keeps the integer samples of integer codecs (PCM, FLAC,
    ALAC) and gives float32 for the others (AAC, Opus, Vorbis, MP3). Ogg Opus is
    decoded by FFmpeg at 48 kHz (as torchaudio does) where PyAV is installed, else by
    libsndfile at the rate the encoder was given. Without the extra, the other formats
    raise :class:`~trivium.core.UnsupportedFormatError` naming the file, the format and
    what to install. In MP4 and Ogg, ``frame_offset`` seeks to a packet 0.1 s before
    it and decodes from there (lossy codecs' noise substitution can then give samples
    a little different from a decode from the start); elsewhere the decode runs from
    the start.

    ``format`` forces a container: libsndfile's name (``"WAV"``, ``"FLAC"``,
    ``"RAW"``, ...; needed only for headerless data), or else FFmpeg's demuxer name
    (``"mp4"``, ``"aac"``, ``"matroska"``, ...). ``backend`` picks the decoder:
    ``"soundfile"`` (libsndfile only), ``"ffmpeg"`` (FFmpeg only; ``format`` is then
    FFmpeg's name), or None (the rule above). ``buffer_size`` is accepted as
    torchaudio's: FFmpeg reads file objects and bytes in blocks of at least this many
    bytes.

    A long FLAC from a path or bytes (at least 2 x 65536 frames) is decoded by the
    native library, its frames in parts on the ``trivium.core`` thread pool (one thread
    inside a DataLoader worker); the samples are the same as libsndfile's sequential
    read, and a frame that fails its CRC sends the file to libsndfile. The waveform of
    a WAV file over 4 MiB (up to 32 MiB) goes into memory that an earlier such
    waveform left once it and every tensor made from it were gone, so loading file
    after file takes no page faults; up to two such buffers stay allocated between
    loads.

    Raises :class:`~trivium.core.errors.PathNotFoundError` (a ``FileNotFoundError``)
    for a missing path, :class:`~trivium.core.errors.EmptyInputError` for an empty file
    or empty bytes, and :class:`DecodeError` naming the file for unknown formats,
    corrupt or truncated data.

    Example:
        >>> import io, torch
        >>> from trivium.audio.io import save
        >>> buf = io.BytesIO()
        >>> save(buf, torch.tensor([[0.0, 0.5, -0.5]]), 16000, format="WAV", subtype="PCM_16")
        >>> load(buf.getvalue(), normalize=False)[0]
        tensor([[     0,  16384, -16384]], dtype=torch.int16)
    """
    check_range(frame_offset, num_frames)
    _check_backend(backend, buffer_size)
    if backend != "ffmpeg" and (format is None or format.upper() == "WAV"):
        loaded = _wav.decode(uri, frame_offset, num_frames, normalize, channels_first)
        if loaded is not None:
            return loaded

    def ffmpeg(container: str, otherwise: Exception | None) -> tuple[Tensor, int]:
        obj, name = as_readable(uri, "audio")
        data, sample_rate = _ffmpeg.decode(
            obj,
            rewinder(obj),
            name,
            container,
            format=_ffmpeg_format(format),
            buffer_size=buffer_size,
            frame_offset=frame_offset,
            num_frames=num_frames,
            normalize=normalize,
            channels_first=channels_first,
            otherwise=otherwise,
        )
        return torch.from_numpy(data), sample_rate

    return _dispatch(
        uri,
        format,
        backend,
        lambda: _sndfile.decode(uri, frame_offset, num_frames, normalize, channels_first, format),
        ffmpeg,
    )


def info(
    uri: AudioSource,
    format: str | None = None,
    buffer_size: int = 4096,
    backend: str | None = None,
) -> AudioMetaData:
    """Read the header of an audio file into an :class:`AudioMetaData`, decoding nothing.

    Files go to libsndfile or FFmpeg as in :func:`load` (same ``format``,
    ``buffer_size`` and ``backend``). ``num_frames`` is exact where the file counts its
    samples: WAV, FLAC, AIFF and the like, an MP3 with a Xing/Info or VBRI header, MP4 /
    M4A / MOV and Ogg (the last page's position). It is an estimate for Ogg Vorbis and
    Opus read by libsndfile and an MP3 without such a header (from the size and
    bitrate), for Matroska / WebM (the container's duration, in milliseconds) and for
    ADTS AAC (from the bitrate). An MP4 counts the samples the encoder was given; the
    AAC decoder also returns the encoder's padding of the last frame, so ``load`` gives
    up to one frame (1024 samples) more.

    Example:
        >>> import io, torch
        >>> from trivium.audio.io import save
        >>> buf = io.BytesIO()
        >>> save(buf, torch.zeros(1, 160), 16000, format="FLAC")
        >>> info(buf.getvalue())
        AudioMetaData(sample_rate=16000, num_frames=160, num_channels=1, bits_per_sample=16, encoding='FLAC')
    """  # noqa: E501
    _check_backend(backend, buffer_size)
    if backend != "ffmpeg" and (format is None or format.upper() == "WAV"):
        metadata = _wav.probe(uri)
        if metadata is not None:
            return metadata

    def ffmpeg(container: str, otherwise: Exception | None) -> AudioMetaData:
        obj, name = as_readable(uri, "audio")
        fields = _ffmpeg.probe(
            obj,
            name,
            container,
            format=_ffmpeg_format(format),
            buffer_size=buffer_size,
            otherwise=otherwise,
        )
        return AudioMetaData(*fields)

    return _dispatch(uri, format, backend, lambda: _sndfile.probe(uri, format), ffmpeg)


def _check_backend(backend: str | None, buffer_size: int) -> None:
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend must be None, 'soundfile' or 'ffmpeg', got {backend!r}")
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size <= 0:
        raise ValueError(f"buffer_size must be a positive int, got {buffer_size!r}")


def _dispatch(
    uri: AudioSource,
    format: str | None,
    backend: str | None,
    soundfile: Callable[[], _T],
    ffmpeg: Callable[[str, Exception | None], _T],
) -> _T:
    """``soundfile()`` or ``ffmpeg(container, otherwise)``, as :func:`load` says.

    ``ffmpeg`` gets the name of the container for messages, and the error to raise
    where FFmpeg finds no audio either (libsndfile's, for data neither recognises).
    """
    container = _ffmpeg_container(uri, format, backend)
    if container is not None:
        return ffmpeg(container, None)
    try:
        return soundfile()
    except UnsupportedFormatError as unsupported:
        if backend is not None or format is not None or not _ffmpeg.available():
            raise
        return ffmpeg("audio", unsupported)


def _ffmpeg_container(uri: AudioSource, format: str | None, backend: str | None) -> str | None:
    """The container FFmpeg is to read ``uri`` as (its name), or None for libsndfile."""
    if backend is not None:
        return (format or "decoding with backend='ffmpeg'") if backend == "ffmpeg" else None
    if format is not None:
        return None if format.upper() in sf.available_formats() else format
    found = _ffmpeg.sniff(head(uri, _ffmpeg.HEAD_BYTES))
    if found is None or (found.libsndfile_reads and not _ffmpeg.available()):
        return None
    return found.name


def _ffmpeg_format(format: str | None) -> str | None:
    """FFmpeg's demuxer name for ``format`` (None: FFmpeg probes the data)."""
    return None if format is None else format.lower()
