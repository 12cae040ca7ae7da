"""Trivium audio: waveforms as float32 ``[..., channels, time]`` in [-1, 1].

``trivium.audio.io`` (load / save / info / stream on soundfile, and load / info on
FFmpeg for MP4 / M4A / AAC, WebM and video files; ``load``, ``save``, ``info`` and
``stream`` are re-exported here), ``functional`` and ``transforms``
(torchaudio's names), ``datasets`` (LibriSpeech, LibriTTS, LibriMix, AudioFolder) and
``metrics`` (WER/CER, SI-SNR, SDR, permutation-invariant loss).

Example:
    >>> import torch
    >>> import trivium.audio as ta
    >>> ta.functional.mu_law_encoding(torch.zeros(1, 4), 256).shape
    torch.Size([1, 4])
"""

from trivium.audio import functional, transforms
from trivium.audio.functional import mu_law_decoding, mu_law_encoding
from trivium.audio.io import AudioMetaData, info, load, save, stream

__version__ = "0.1.0"

__all__ = [
    "AudioMetaData",
    "__version__",
    "functional",
    "info",
    "load",
    "mu_law_decoding",
    "mu_law_encoding",
    "save",
    "stream",
    "transforms",
]
