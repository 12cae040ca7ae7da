"""What every image codec shares: read modes, header info, the pixel limit, input
normalisation, the format registry, batch decode and native errors.

The formats are the rows of one C++ table (``csrc/formats.cpp``: name, title, test on
the first bytes, header reader), which the operator library sniffs with and ``_C``
exposes; each format's module (``jpeg.py``, ``png.py``, ``webp.py``; ``gif.py`` and
``pillow.py`` for the formats decoded through Pillow) registers one :class:`ImageFormat`
record for its row with :func:`register_format`: its public decoder and custom op.
:func:`sniff_format` and ``image_info`` ask the table; :func:`native_error` is the one
map from the codecs' failure kinds to Python errors (``ops.check_status`` applies it to
the ops' reports). The design notes ("Adding an image format") list the steps of adding
one.

Example:
    >>> from trivium.vision.io import ImageReadMode, get_max_image_pixels
    >>> int(ImageReadMode.RGB), get_max_image_pixels() > 0
    (3, True)
    >>> [f.name for f in formats()][:3]
    ['jpeg', 'png', 'webp']
"""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import torch

from trivium.core.errors import (
    DecodeError,
    EmptyInputError,
    EncodeError,
    UnsupportedFormatError,
)
from trivium.core.sources import as_bytes_buffer, as_bytes_tensor
from trivium.vision import _C

#: Encoded image data: a 1-D uint8 CPU tensor, bytes-like object or NumPy array.
EncodedData: TypeAlias = torch.Tensor | bytes | bytearray | memoryview | np.ndarray
#: What :func:`as_buffer` returns: bytes the format table reads in place.
Buffer: TypeAlias = np.ndarray | bytes | bytearray | memoryview
PathLike: TypeAlias = str | os.PathLike[str]

# Pillow's decompression-bomb limit: images larger than this are refused before
# any pixel memory is allocated.
_DEFAULT_MAX_PIXELS = 178_956_970
_max_pixels: int | None = _DEFAULT_MAX_PIXELS


class ImageReadMode(enum.IntEnum):
    """Channels to decode to, as torchvision.io.ImageReadMode.

    ``UNCHANGED`` keeps the image's own channels (plus alpha when a PNG has a
    tRNS chunk; CMYK JPEGs become RGB).

    Example:
        >>> ImageReadMode.GRAY_ALPHA.channels
        2
    """

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = 4  # alias used by recent torchvision

    @property
    def channels(self) -> int | None:
        """Channels this mode produces, or None for UNCHANGED (depends on the image)."""
        return None if self is ImageReadMode.UNCHANGED else int(self)


@dataclass(frozen=True)
class ImageInfo:
    """What an image header says, read without decoding pixels.

    Example:
        >>> ImageInfo("png", 2, 3, 4, 8, 0, "RGBA", False).width
        3
    """

    format: str
    height: int
    width: int
    channels: int
    bit_depth: int
    orientation: int  # EXIF orientation 1..8, 0 when absent
    color_space: str
    progressive: bool
    lossless: bool = False  # the JPEG lossless (predictive, SOF3) process, WebP lossless (VP8L)
    frames: int = 1  # an animation's frames (WebP), else 1

    @property
    def dtype(self) -> torch.dtype:
        """The sample type a decode gives: uint8 up to 8 bits per sample, else uint16.

        Example:
            >>> ImageInfo("jpeg", 2, 3, 1, 12, 0, "gray", False).dtype
            torch.uint16
        """
        return torch.uint8 if self.bit_depth <= 8 else torch.uint16


def get_max_image_pixels() -> int | None:
    """The pixel count above which decoding refuses an image (None: no limit).

    Example:
        >>> get_max_image_pixels()
        178956970
    """
    return _max_pixels


def set_max_image_pixels(limit: int | None) -> None:
    """Set the decompression-bomb limit checked from the header before allocating.

    Example:
        >>> set_max_image_pixels(10_000_000)
        >>> get_max_image_pixels()
        10000000
        >>> set_max_image_pixels(178_956_970)
    """
    global _max_pixels
    if limit is not None and limit <= 0:
        raise ValueError(f"the pixel limit must be positive or None, got {limit}")
    _max_pixels = limit


def resolve_max_pixels(max_pixels: int | type[...] | None) -> int:
    """The limit to pass to the native codecs (0 means no limit)."""
    limit = _max_pixels if max_pixels is ... else max_pixels
    return 0 if limit is None else int(limit)


def max_pixels_arg(max_pixels: int | type[...] | None) -> int:
    """``max_pixels`` of the public decoders as the kernels and custom ops take it.

    -1: the process-wide limit, read when decoding (the decoders' default ``...``);
    0: no limit (``None``, or a limit <= 0 as the native codecs read it); else the limit.

    Example:
        >>> max_pixels_arg(...), max_pixels_arg(None), max_pixels_arg(1000)
        (-1, 0, 1000)
    """
    if max_pixels is ...:
        return -1
    return 0 if max_pixels is None else max(int(max_pixels), 0)


def image_op_args(
    mode: ImageReadMode | int,
    apply_exif_orientation: bool,
    dtype: torch.dtype | None,
    strict: bool | None,
    max_pixels: int | type[...] | None,
) -> tuple[int, bool, torch.dtype | None, bool | None, int]:
    """The arguments after ``data`` of the ops of decode_png, decode_webp and decode_image.

    ``strict`` becomes True, False or None (the default rule on damaged data), and
    ``max_pixels`` goes through :func:`max_pixels_arg`.

    Example:
        >>> image_op_args(ImageReadMode.RGB, 1, None, 0, None)
        (3, True, None, False, 0)
    """
    strict = None if strict is None else bool(strict)
    mode = int(ImageReadMode(mode))
    return mode, bool(apply_exif_orientation), dtype, strict, max_pixels_arg(max_pixels)


def native_max_pixels(max_pixels: int) -> int:
    """The limit for the native codecs from a :func:`max_pixels_arg` value (0: none).

    Example:
        >>> native_max_pixels(-1) == (get_max_image_pixels() or 0), native_max_pixels(0)
        (True, 0)
    """
    return resolve_max_pixels(...) if max_pixels < 0 else int(max_pixels)


def as_buffer(data: EncodedData, func: str) -> Buffer:
    """A contiguous byte buffer over ``data``, without copying where possible.

    Accepts a 1-D uint8 tensor, ``bytes``, ``bytearray``, ``memoryview`` or a NumPy
    array; anything else is a ``TypeError`` naming ``func``. Empty input passes (the
    decoders report it, naming the file).

    Example:
        >>> as_buffer(b"\\xff\\xd8", "decode_jpeg")
        b'\\xff\\xd8'
    """
    return as_bytes_buffer(data, func, allow_empty=True)


def as_tensor(data: EncodedData, func: str) -> torch.Tensor:
    """Encoded bytes as the custom ops take them: a contiguous 1-D uint8 CPU tensor.

    Example:
        >>> as_tensor(b"\\xff\\xd8", "decode_jpeg")
        tensor([255, 216], dtype=torch.uint8)
    """
    return as_bytes_tensor(data, func, allow_empty=True)


# ---- The format registry ----


# The one table of formats is C++'s (csrc/formats.h): every format's name, title, signature
# test and header reader, read here through _C. A record below adds what Python needs.
_TABLE = {name: (title, native) for name, title, native in _C.formats()}


@dataclass(frozen=True)
class ImageFormat:
    """A format of the C++ table (``csrc/formats.h``), registered with its decoder and op.

    - ``name``: the format's name in :class:`ImageInfo` and :func:`sniff_format`
      (``"jpeg"``), the name of its row in the C++ table; messages use its
      :attr:`title`, as that row spells it.
    - ``decoder``: the public decoder (``decode_<name>``).
    - ``op``: its custom op (``torch.ops.trivium.decode_<name>.default``).

    The table recognises the format (``_C.sniff``) and reads a native format's header
    (``_C.image_info``); ``decode_image`` runs the op ``trivium::decode_image``, which
    sniffs with the same table. Formats decoded in Python (``native`` False: through
    Pillow, see ``pillow.py``) are rows there too, and the op's Python kernel decodes them.

    Example:
        >>> jpeg = find_format(b"\\xff\\xd8\\xff\\xe0")
        >>> jpeg.name, jpeg.title, jpeg.decoder.__name__, str(jpeg.op)
        ('jpeg', 'JPEG', 'decode_jpeg', 'trivium.decode_jpeg.default')
    """

    name: str
    decoder: Callable[..., Any]
    op: Any

    def matches(self, head: bytes) -> bool:
        """Whether encoded data starting with ``head`` is of this format (the C++ table's test).

        Example:
            >>> find_format(b"\\x89PNG\\r\\n\\x1a\\n").matches(b"\\x89PNG\\r\\n\\x1a\\n....")
            True
        """
        try:
            return _C.sniff(head) == self.name
        except ValueError:
            return False

    @property
    def title(self) -> str:
        """The format's name in messages, as the C++ table spells it.

        Example:
            >>> find_format(b"RIFF\\0\\0\\0\\0WEBP").title
            'WebP'
        """
        return _TABLE[self.name][0]

    @property
    def native(self) -> bool:
        """Whether the C++ codecs decode this format (the op ``trivium::decode_image`` too).

        Example:
            >>> find_format(b"\\xff\\xd8\\xff").native
            True
        """
        return _TABLE[self.name][1]

    def read_header(self, buffer: Buffer) -> dict[str, Any]:
        """The fields of :class:`ImageInfo` from the header of ``buffer`` (from :func:`as_buffer`).

        Example:
            >>> from trivium.vision.io import encode_jpeg
            >>> data = encode_jpeg(torch.zeros(3, 8, 16, dtype=torch.uint8)).numpy()
            >>> header = find_format(data[:32].tobytes()).read_header(data)
            >>> header["format"], header["height"], header["width"]
            ('jpeg', 8, 16)
        """
        return _C.image_info(buffer)

    def unavailable(self) -> str | None:
        """None where this format decodes here, else what to install for it.

        Example:
            >>> find_format(b"\\xff\\xd8\\xff").unavailable() is None
            True
        """
        return None


#: How many first bytes of the data the formats' tests read.
SNIFF_BYTES = _C.SNIFF_BYTES

#: File extensions of the image formats Trivium knows, to their format's name:
#: torchvision's ``IMG_EXTENSIONS`` first, in its order, then the others.
IMAGE_EXTENSIONS = {
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".png": "png",
    ".ppm": "ppm",
    ".bmp": "bmp",
    ".pgm": "ppm",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".webp": "webp",
    ".gif": "gif",
    ".avif": "avif",
    ".heic": "heic",
    ".heif": "heic",
}


def cannot_decode(name: str) -> str | None:
    """Why the format ``name`` does not decode here (None: it does).

    Example:
        >>> cannot_decode("png") is None, cannot_decode("ico")
        (True, 'ICO images are not supported')
    """
    image_format = _FORMATS.get(name)
    if image_format is None:
        return f"{name.upper()} images are not supported"
    return image_format.unavailable()


_FORMATS: dict[str, ImageFormat] = {}


def register_format(image_format: ImageFormat) -> ImageFormat:
    """Add a format to the registry (each format's module calls it once, on import).

    Its name must be a row of the C++ table; registering a name again replaces its record.

    Example:
        >>> register_format(find_format(b"\\xff\\xd8\\xff")).name
        'jpeg'
    """
    if image_format.name not in _TABLE:
        raise ValueError(
            f"register_format: {image_format.name!r} is not in the C++ format table "
            f"(csrc/formats.cpp has {', '.join(_TABLE)})"
        )
    _FORMATS[image_format.name] = image_format
    return image_format


def formats() -> tuple[ImageFormat, ...]:
    """The registered formats in the C++ table's order: native ones, then those decoded in Python.

    Example:
        >>> [f.name for f in formats()][:3]
        ['jpeg', 'png', 'webp']
    """
    return tuple(_FORMATS[name] for name in _TABLE if name in _FORMATS)


def find_format(head: bytes) -> ImageFormat:
    """The registered format of encoded data starting with ``head``; raises for anything else.

    The C++ table recognises it (``_C.sniff``). Empty data raises
    :class:`~trivium.core.errors.EmptyInputError`, a known format that is not
    registered (ICO) or needs what is not installed (HEIC without pillow-heif)
    ``UnsupportedFormatError``, anything else ``DecodeError``.

    Example:
        >>> find_format(b"\\x00\\x00\\x01\\x00....")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        trivium.core.errors.UnsupportedFormatError: ICO images are not supported (JPEG, ... are)
    """
    try:
        name = _C.sniff(head)
    except ValueError as e:
        raise native_error(failure_kind(e), str(e), None, "decode_image") from None
    image_format = _FORMATS.get(name)
    if image_format is None:
        raise UnsupportedFormatError(f"{_TABLE[name][0]} images are not supported")
    missing = image_format.unavailable()
    if missing is not None:
        raise UnsupportedFormatError(missing)
    return image_format


def format_of(buffer: Buffer, path: PathLike | None = None) -> ImageFormat:
    """The registered format of a buffer from :func:`as_buffer`; errors name ``path``.

    Example:
        >>> format_of(b"\\x89PNG\\r\\n\\x1a\\n....").name
        'png'
    """
    try:
        return find_format(bytes(memoryview(buffer)[:SNIFF_BYTES]))
    except DecodeError as e:
        raise type(e)(e.reason, path=path) from None


def sniff_format(data: EncodedData, *, path: PathLike | None = None) -> str:
    """The registered format of ``data`` by name (``"jpeg"``, ``"png"``, ...); raises for others.

    Example:
        >>> sniff_format(b"\\x89PNG\\r\\n\\x1a\\n....")
        'png'
    """
    return format_of(as_buffer(data, "decode_image"), path).name


# ---- The one error map: the codecs' failures (codec.h's ErrorKind) as Python errors ----

#: codec.h's ``ErrorKind`` values.
CORRUPT, UNSUPPORTED, TOO_LARGE, BAD_ARGUMENT, EMPTY = 1, 2, 3, 4, 5


def native_error(kind: int, message: str, path: PathLike | None, func: str) -> Exception:
    """The error for a codec failure of ``kind`` (codec.h's ``ErrorKind``): the op's or ``_C``'s.

    Bad arguments (a roi outside the image) name the function; the rest are
    ``trivium.core.errors`` classes naming ``path``.

    Example:
        >>> native_error(CORRUPT, "premature end of data", "a.jpg", "decode_jpeg")
        DecodeError('a.jpg: premature end of data')
        >>> native_error(BAD_ARGUMENT, "roi (...) is outside", "a.jpg", "decode_jpeg")
        ValueError('decode_jpeg: roi (...) is outside')
        >>> native_error(EMPTY, "empty input (0 bytes)", "a.jpg", "decode_jpeg")
        EmptyInputError('a.jpg: empty input (0 bytes)')
    """
    if kind == BAD_ARGUMENT:
        return ValueError(f"{func}: {message}")
    if kind == UNSUPPORTED:
        return UnsupportedFormatError(message, path=path)
    if kind == EMPTY:
        return EmptyInputError(path=path)
    return DecodeError(message, path=path)


def failure_kind(error: Exception) -> int:
    """The ``ErrorKind`` of what a ``_C`` call raised (a plain ``ValueError``: a bad argument).

    Example:
        >>> failure_kind(_C.UnsupportedFailure("x")), failure_kind(ValueError("roi ..."))
        (2, 4)
    """
    for failure, kind in _FAILURES:
        if isinstance(error, failure):
            return kind
    return BAD_ARGUMENT


_FAILURES = (
    (_C.UnsupportedFailure, UNSUPPORTED),
    (_C.TooLargeFailure, TOO_LARGE),
    (_C.EmptyFailure, EMPTY),
    (_C.DecodeFailure, CORRUPT),
)


@contextmanager
def native_errors(path: PathLike | None, func: str = "decode_image") -> Iterator[None]:
    """Re-raise the codec failures as :func:`native_error` gives them, naming ``path``."""
    try:
        yield
    except _C.DecodeFailure as e:
        raise native_error(failure_kind(e), str(e), path, func) from None
    except DecodeError as e:  # from a format decoded in Python
        if e.path is not None or path is None:
            raise
        raise type(e)(e.reason, path=path) from None


_file = threading.local()


@contextmanager
def decoding_file(path: PathLike | None) -> Iterator[None]:
    """Name ``path`` in the warnings of decodes on this thread that are given no path.

    A dataset wraps a transform that decodes encoded bytes (the fused ``Decode*``
    transforms) in it, so that a damaged file's ``DecodeWarning`` names the file.

    Example:
        >>> with decoding_file("a/1.jpg"):
        ...     warning_where(None)
        'a/1.jpg: '
        >>> warning_where(None), warning_where("b.png")
        ('', 'b.png: ')
    """
    before = getattr(_file, "path", None)
    _file.path = path
    try:
        yield
    finally:
        _file.path = before


def warning_where(path: PathLike | None) -> str:
    """How a ``DecodeWarning`` starts: ``"{path}: "``, the :func:`decoding_file`'s, or nothing."""
    if path is None:
        path = getattr(_file, "path", None)
    return "" if path is None else f"{os.fspath(path)}: "


def batch_where(path: PathLike | None, index: int) -> PathLike:
    """What an error or warning about item ``index`` of a list names: ``path``, else its place.

    Example:
        >>> batch_where(None, 3), batch_where("a.jpg", 3)
        ('<batch item 3>', 'a.jpg')
    """
    return f"<batch item {index}>" if path is None else path


def encode_with(
    native: Callable[..., torch.Tensor],
    image: torch.Tensor,
    func: str,
    channels: tuple[int, ...],
    dtypes: tuple[torch.dtype, ...],
    *options: Any,
) -> torch.Tensor:
    """Check a [C, H, W] tensor and run an encoder op (``trivium::encode_*``) on it, once.

    The op's failures (``ValueError``, its message naming the function) become
    :class:`~trivium.core.errors.EncodeError`, here only.

    Example:
        >>> encode_with(torch.ops.trivium.encode_png.default, torch.zeros(5, 2, 2), "x", (1,), (torch.uint8,))
        Traceback (most recent call last):
        ...
        TypeError: x: expected a torch.uint8 tensor, got torch.float32
    """  # noqa: E501
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"{func}: expected a [C, H, W] tensor, got {type(image)!r}")
    if image.dtype not in dtypes:
        raise TypeError(
            f"{func}: expected a {' or '.join(map(str, dtypes))} tensor, got {image.dtype}"
        )
    if image.dim() != 3 or image.shape[0] not in channels:
        raise EncodeError(
            f"{func}: expected a [C, H, W] tensor with C in {channels}, got {tuple(image.shape)}"
        )
    if image.shape[1] == 0 or image.shape[2] == 0:
        raise EncodeError(f"{func}: cannot encode an empty image of shape {tuple(image.shape)}")
    try:
        return native(image.detach().cpu(), *options)
    except ValueError as e:  # the op's message names the function
        raise EncodeError(str(e)) from None


def path_arg(path: PathLike | None) -> str | None:
    """A path as the ops take it (a str), or None.

    Example:
        >>> from pathlib import Path
        >>> path_arg(Path("a") / "b.jpg")
        'a/b.jpg'
    """
    return None if path is None else os.fspath(path)
