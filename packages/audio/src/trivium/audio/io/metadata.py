"""What :func:`~trivium.audio.io.info` reports: :class:`AudioMetaData`, and the encoding names.

Example:
    >>> ENCODINGS["PCM_24"]
    ('PCM_S', 24)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AudioMetaData"]

# subtype -> (encoding as torchaudio names it, bits per sample)
ENCODINGS: dict[str, tuple[str, int]] = {
    "PCM_S8": ("PCM_S", 8),
    "PCM_16": ("PCM_S", 16),
    "PCM_24": ("PCM_S", 24),
    "PCM_32": ("PCM_S", 32),
    "PCM_U8": ("PCM_U", 8),
    "FLOAT": ("PCM_F", 32),
    "DOUBLE": ("PCM_F", 64),
    "ULAW": ("ULAW", 8),
    "ALAW": ("ALAW", 8),
    "VORBIS": ("VORBIS", 0),
    "OPUS": ("OPUS", 0),
    "MPEG_LAYER_I": ("MP1", 0),
    "MPEG_LAYER_II": ("MP2", 0),
    "MPEG_LAYER_III": ("MP3", 0),
}


@dataclass(frozen=True)
class AudioMetaData:
    """What :func:`info` reports about an audio file (the fields of torchaudio's).

    ``encoding`` is ``"PCM_S"``, ``"PCM_U"``, ``"PCM_F"``, ``"ULAW"``, ``"ALAW"``,
    ``"FLAC"``, ``"VORBIS"``, ``"OPUS"``, ``"MP3"`` or libsndfile's subtype name for
    anything else libsndfile reads, and the codec's name in capitals for what FFmpeg
    reads (``"AAC"``, ``"ALAC"``, ``"WMAV2"``, ...); ``bits_per_sample`` is 0 for lossy
    codecs and where the file does not tell.

    Example:
        >>> AudioMetaData(16000, 32000, 1, 16, "PCM_S").num_frames
        32000
    """

    sample_rate: int
    num_frames: int
    num_channels: int
    bits_per_sample: int
    encoding: str
