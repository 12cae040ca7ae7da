"""Video: whole-file reads and writes, the random-access :class:`VideoReader`, clips.

The public names are :mod:`trivium.vision.io`'s (``read_video``, ``VideoReader``,
``VideoClips``, ...); the modules here are the backends (PyAV, the FFmpeg CLI), the
frame conversion (swscale) and the index and buffer caches behind them.

Example:
    >>> from trivium.vision.io import VideoReader
    >>> VideoReader.__module__
    'trivium.vision.io.video.reader'
"""
