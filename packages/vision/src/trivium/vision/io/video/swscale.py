"""RGB conversion of decoded frames straight into a caller's buffer, with PyAV's libswscale.

PyAV's ``VideoReformatter.reformat`` returns a new frame for every conversion: a
fresh pixel buffer per frame (2.7 MB at 720p) that the C library maps and unmaps,
page by page, and that a batch then copies once more. :class:`RGBConverter` calls
the same libswscale (the copy PyAV loaded) through its stable C API and writes the
RGB pixels into a buffer the caller owns (a row of a batch) or one from a pool of
buffers that no earlier frame uses any more.

It takes the common case only: 8-bit 4:2:0 (``yuv420p`` / ``yuvj420p``), progressive,
even height, a colour matrix libswscale knows. For it, swscale's frame API (what
PyAV calls) runs exactly this conversion: one unscaled pass with the frame's matrix
and range. Each new frame geometry is checked once against PyAV's own conversion,
pixel for pixel, and for writes past the end of the buffer; anything else (other
formats, interlaced frames, a failed check, no libswscale found) goes through
``VideoReformatter``, so the pixels are PyAV's in every case.

Example:
    >>> import av, numpy as np
    >>> rgb = np.random.default_rng(0).integers(0, 256, (32, 48, 3), dtype=np.uint8)
    >>> frame = av.VideoFrame.from_ndarray(rgb, "rgb24").reformat(format="yuv420p")
    >>> converter = RGBConverter()
    >>> out = np.empty((32, 48, 3), np.uint8)
    >>> converter.to_array(frame, out) is out
    True
    >>> np.array_equal(out, frame.to_ndarray(format="rgb24"))
    True
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from trivium.vision.io.video.backend import import_optional
from trivium.vision.io.video.buffers import SHARED_POOL

__all__ = ["FrameSizeError", "RGBConverter", "check_size"]

# swscale's flags for PyAV's default interpolation (SWS_BILINEAR); the unscaled
# 4:2:0 -> RGB pass does not interpolate, but the flags pick the pass.
_SWS_BILINEAR = 2
# AVColorSpace values libswscale converts (sws_test_colorspace): BT.709,
# unspecified, FCC, BT.470BG, SMPTE 170M, SMPTE 240M, BT.2020 NCL.
_KNOWN_MATRICES = frozenset({1, 2, 4, 5, 6, 7, 9})
_AVCOL_RANGE_JPEG = 2
_AVCOL_SPC_RGB = 0
# Full range implied by the pixel format itself.
_FORMATS = {"yuv420p": False, "yuvj420p": True}
# Bytes checked after a converted frame for writes past its end.
_GUARD = 256

_P4 = ctypes.c_void_p * 4
_I4 = ctypes.c_int * 4


class FrameSizeError(ValueError):
    """A frame does not fit the buffer it was to be written into (its size changed).

    Example:
        >>> check_size(np.empty((2, 4, 3), np.uint8), 2, 4)
        >>> try:
        ...     check_size(np.empty((2, 4, 3), np.uint8), 4, 4)
        ... except FrameSizeError as e:
        ...     print(e)
        frame size changed from (2, 4, 3) to (4, 4, 3) (HWC)
    """


def check_size(out: np.ndarray, height: int, width: int) -> None:
    """Raise :class:`FrameSizeError` unless ``out`` is a C-contiguous uint8 ``[H, W, 3]``."""
    shape = (height, width, 3)
    if out.shape != shape:
        raise FrameSizeError(f"frame size changed from {out.shape} to {shape} (HWC)")
    if out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint8 array, got {out.dtype} {out.strides}")


def _loaded_path(stem: str, prefer: str) -> str | None:
    """The shared library ``stem`` (e.g. ``libswscale``) this process loaded.

    Where several copies are loaded (OpenCV bundles its own), the one whose path starts
    with ``prefer`` (PyAV's bundled libraries) wins.
    """
    found: list[str] = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                name = os.path.basename(path)
                if name.startswith((stem + "-", stem + ".")) and path not in found:
                    found.append(path)
    except OSError:  # no /proc (macOS, Windows): PyAV's own conversion is used
        pass
    preferred = [path for path in found if path.startswith(prefer)]
    return (preferred or found or [None])[0]


class _Swscale:
    """The few libswscale / libavutil functions the converter calls, from PyAV's copies."""

    def __init__(self, swscale: ctypes.CDLL, avutil: ctypes.CDLL) -> None:
        vp, i = ctypes.c_void_p, ctypes.c_int
        self.alloc = swscale.sws_alloc_context
        self.alloc.restype, self.alloc.argtypes = vp, []
        self.init = swscale.sws_init_context
        self.init.restype, self.init.argtypes = i, [vp, vp, vp]
        self.free = swscale.sws_freeContext
        self.free.restype, self.free.argtypes = None, [vp]
        self.coefficients = swscale.sws_getCoefficients
        self.coefficients.restype, self.coefficients.argtypes = vp, [i]
        self.colorspace = swscale.sws_setColorspaceDetails
        self.colorspace.restype = i
        self.colorspace.argtypes = [vp, vp, i, vp, i, i, i, i]
        self.scale = swscale.sws_scale
        self.scale.restype, self.scale.argtypes = i, [vp, _P4, _I4, i, i, _P4, _I4]
        self.set_int = avutil.av_opt_set_int
        self.set_int.restype, self.set_int.argtypes = i, [vp, ctypes.c_char_p, ctypes.c_int64, i]
        pix_fmt = avutil.av_get_pix_fmt
        pix_fmt.restype, pix_fmt.argtypes = i, [ctypes.c_char_p]
        self.formats = {name: pix_fmt(name.encode()) for name in (*_FORMATS, "rgb24")}

    def context(self, width: int, height: int, fmt: str, matrix: int, full: bool) -> int | None:
        """A context converting ``fmt`` frames of that size and colour to rgb24 (None: failed).

        Set up as swscale's frame API sets up its pass: the format's plain YUV
        variant with the range as an option, then the frame's matrix.
        """
        ctx = self.alloc()
        if not ctx:
            return None
        options = {
            b"srcw": width,
            b"srch": height,
            b"src_format": self.formats["yuv420p"],
            b"src_range": int(full),
            b"dstw": width,
            b"dsth": height,
            b"dst_format": self.formats["rgb24"],
            b"dst_range": 1,
            b"sws_flags": _SWS_BILINEAR,
            b"threads": 1,
        }
        ok = all(self.set_int(ctx, key, value, 0) >= 0 for key, value in options.items())
        ok = ok and self.init(ctx, None, None) >= 0
        table = self.coefficients(matrix)
        ok = ok and self.colorspace(ctx, table, int(full), self.coefficients(_AVCOL_SPC_RGB), 1,
                                    0, 1 << 16, 1 << 16) >= 0  # fmt: skip
        if not ok:
            self.free(ctx)
            return None
        return ctx


_LIBRARY: _Swscale | bool | None = False  # False: not looked up yet
# Frame geometries and colours checked against PyAV in this process, and the verdict.
_CHECKED: dict[tuple[Any, ...], bool] = {}


def _library() -> _Swscale | None:
    """PyAV's libswscale, loaded once (None where it cannot be found)."""
    global _LIBRARY
    if _LIBRARY is False:
        av = import_optional("av")
        av.video.reformatter  # noqa: B018 (loads PyAV's libraries)
        prefer = os.path.join(os.path.dirname(os.path.dirname(av.__file__)), "av")
        swscale, avutil = _loaded_path("libswscale", prefer), _loaded_path("libavutil", prefer)
        try:
            found = swscale is not None and avutil is not None
            _LIBRARY = _Swscale(ctypes.CDLL(swscale), ctypes.CDLL(avutil)) if found else None
        except (OSError, AttributeError):  # an unexpected build: PyAV's conversion only
            _LIBRARY = None
    return _LIBRARY  # type: ignore[return-value]


def _address(plane: Any) -> int:
    """Where a PyAV plane's pixels start."""
    try:
        return plane.buffer_ptr
    except AttributeError:  # a PyAV without it
        return np.frombuffer(plane, np.uint8).ctypes.data


class RGBConverter:
    """Converts one stream's frames to uint8 ``[H, W, 3]`` RGB arrays.

    ``to_array(frame, out)`` writes into ``out`` (C-contiguous ``[H, W, 3]``) or, without
    one, into a buffer from :data:`~trivium.vision.io.video.buffers.SHARED_POOL` that no
    earlier result still uses. Not thread-safe: one converter per decoding thread.

    Example:
        >>> import av, numpy as np
        >>> frame = av.VideoFrame.from_ndarray(np.zeros((4, 6, 3), np.uint8), "rgb24")
        >>> RGBConverter().to_array(frame.reformat(format="yuv444p")).shape
        (4, 6, 3)
    """

    def __init__(self) -> None:
        self._reformatter: Any = None
        self._key: tuple[Any, ...] | None = None
        self._ctx: int | None = None  # the swscale context for _key; None: PyAV converts

    def to_array(self, frame: Any, out: np.ndarray | None = None) -> np.ndarray:
        """``frame`` as RGB ``[H, W, 3]`` uint8, in ``out`` if given."""
        if out is not None:
            check_size(out, frame.height, frame.width)
        key = self._direct_key(frame)
        if key is not None and key != self._key:
            self._setup(frame, key)
        if key is None or self._ctx is None:
            return self._via_pyav(frame, out)
        if out is None:
            out = SHARED_POOL.take((frame.height, frame.width, 3))
        self._scale(self._ctx, frame, out)
        return out

    def close(self) -> None:
        """Free the swscale context and the kept buffers. Safe to call twice."""
        if self._ctx is not None:
            _library().free(self._ctx)  # type: ignore[union-attr]
        self._ctx, self._key = None, None

    def __del__(self) -> None:
        self.close()

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _direct_key(frame: Any) -> tuple[Any, ...] | None:
        """What the swscale context depends on, or None if the frame is not the common case."""
        fmt = frame.format.name
        # (an older PyAV without these attributes: its own conversion)
        if fmt not in _FORMATS or frame.height % 2 or getattr(frame, "interlaced_frame", True):
            return None
        matrix = getattr(frame, "colorspace", None)
        if matrix not in _KNOWN_MATRICES:
            return None
        full = _FORMATS[fmt] or getattr(frame, "color_range", None) == _AVCOL_RANGE_JPEG
        return frame.width, frame.height, fmt, matrix, full

    def _setup(self, frame: Any, key: tuple[Any, ...]) -> None:
        """A context for ``key``, used only if it gives PyAV's pixels and stays in bounds.

        The check runs once per ``key`` in a process (a reader opened per clip does
        not pay it again).
        """
        self.close()
        self._key = key
        library = _library()
        ctx = library.context(*key) if library is not None else None
        if ctx is None:
            return
        good = _CHECKED.get(key)
        if good is None:
            good = _CHECKED[key] = self._agrees_with_pyav(ctx, frame)
        if good:
            self._ctx = ctx
        else:
            library.free(ctx)  # type: ignore[union-attr]

    def _agrees_with_pyav(self, ctx: int, frame: Any) -> bool:
        """Whether ``ctx`` converts ``frame`` to PyAV's pixels without writing past them."""
        height, width = frame.height, frame.width
        expected = self._via_pyav(frame, None)
        scratch = np.empty(height * width * 3 + _GUARD, np.uint8)
        for fill in (0x00, 0xFF):
            scratch.fill(fill)
            converted = scratch[: height * width * 3].reshape(height, width, 3)
            self._scale(ctx, frame, converted)
            if not (scratch[-_GUARD:] == fill).all() or not np.array_equal(converted, expected):
                return False
        return True

    @staticmethod
    def _scale(ctx: int, frame: Any, out: np.ndarray) -> None:
        planes = frame.planes
        source = _P4(_address(planes[0]), _address(planes[1]), _address(planes[2]), None)
        strides = _I4(planes[0].line_size, planes[1].line_size, planes[2].line_size, 0)
        target, target_strides = (
            _P4(out.ctypes.data, None, None, None),
            _I4(out.strides[0], 0, 0, 0),
        )
        library: Any = _library()
        library.scale(ctx, source, strides, 0, frame.height, target, target_strides)

    def _via_pyav(self, frame: Any, out: np.ndarray | None) -> np.ndarray:
        if self._reformatter is None:
            self._reformatter = import_optional("av").video.reformatter.VideoReformatter()
        try:
            rgb = self._reformatter.reformat(frame, format="rgb24", threads=1)
        except TypeError:  # PyAV before 13: no ``threads`` (and no scaler threads either)
            rgb = self._reformatter.reformat(frame, format="rgb24")
        array = rgb.to_ndarray()
        if out is None:
            return array
        np.copyto(out, array)
        return out
