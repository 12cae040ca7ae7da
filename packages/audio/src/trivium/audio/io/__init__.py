"""Audio file I/O on soundfile (libsndfile): ``load``, ``save``, ``info`` and ``stream``.

``load``, ``info`` and ``stream`` also read, through FFmpeg (``_ffmpeg``, PyAV: the
``ffmpeg`` extra), what libsndfile does not: MP4 / M4A, Matroska / WebM, ADTS AAC, Ogg Opus and
the audio of video files.

Waveforms are ``[channels, time]`` tensors (``channels_first=True``, the default) and
the sample rate travels beside them. Sources can be a path, a binary file-like
object, or the encoded bytes themselves (``bytes``, ``bytearray``, ``memoryview`` or
a 1-D ``uint8`` tensor), so a column of FLAC bytes decodes without a temp file.

Bad input raises a :class:`trivium.core.DecodeError` naming the file: an unknown
format (:class:`~trivium.core.UnsupportedFormatError`, a ``DecodeError``), a corrupt
header or stream, or a file shorter than its header says. That last check needs a
header that states the length: WAV, AIFF, FLAC and the like do, and so does an MP3
with a Xing/Info or VBRI header. Ogg (Vorbis, Opus) has no such header (libsndfile
takes the length from the last page) and a bare MP3 only an estimate from its size:
for those the frame count of :func:`info` is approximate and ``load`` returns what
decodes, so a file cut at a page or frame boundary reads as a shorter file. (An
estimate can also fall short, for a variable-bitrate MP3 without a Xing header:
libsndfile stops decoding at it, and ``load`` returns what ``soundfile.read`` does.)

Example:
    >>> import io, torch
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(2, 800), 8000, format="WAV", subtype="PCM_16")
    >>> waveform, sample_rate = load(buf.getvalue())
    >>> waveform.shape, sample_rate
    (torch.Size([2, 800]), 8000)
    >>> info(buf.getvalue()).encoding
    'PCM_S'
"""

from trivium.audio.io.metadata import AudioMetaData
from trivium.audio.io.reading import info, load
from trivium.audio.io.streaming import AudioStream, stream
from trivium.audio.io.writing import save

__all__ = ["AudioMetaData", "AudioStream", "info", "load", "save", "stream"]
