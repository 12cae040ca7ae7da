"""What the JPEG and PNG codecs share: read modes, header info, the pixel limit,
input coercion and the translation of native failures into Trivium errors.

Example:
    >>> from trivium.vision.io import ImageReadMode, get_max_image_pixels
    >>> int(ImageReadMode.RGB), get_max_image_pixels() > 0
    (3, True)
"""

from __future__ import annotations

import enum
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import torch
from torch._subclasses.fake_tensor import is_fake

from trivium.core.errors import (
    DecodeError,
    DecodeWarning,
    EmptyInputError,
    EncodeError,
    UnsupportedFormatError,
)
from trivium.core.threads import parallel_map
from trivium.vision import _C

#: Encoded image data: a 1-D uint8 CPU tensor, bytes-like object or NumPy array.
EncodedData: TypeAlias = torch.Tensor | bytes | bytearray | memoryview | np.ndarray
#: What :func:`as_buffer` returns: bytes the native codecs read in place.
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
    lossless: bool = False  # the JPEG lossless (predictive, SOF3) process

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


def native_max_pixels(max_pixels: int) -> int:
    """The limit for the native codecs from a :func:`max_pixels_arg` value (0: none).

    Example:
        >>> native_max_pixels(-1) == (get_max_image_pixels() or 0), native_max_pixels(0)
        (True, 0)
    """
    return resolve_max_pixels(...) if max_pixels < 0 else int(max_pixels)


def as_buffer(data: EncodedData, func: str) -> Buffer:
    """A contiguous byte buffer over `data` without copying where possible."""
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.uint8 or data.dim() != 1:
            raise TypeError(
                f"{func}: expected a 1-D uint8 tensor of encoded bytes, "
                f"got {data.dtype} of shape {tuple(data.shape)}"
            )
        if type(data) is not torch.Tensor and is_fake(data):
            # Reaching here with a fake tensor means the custom op's fake kernel was
            # bypassed; reading its storage would crash.
            raise TypeError(f"{func}: cannot decode a fake tensor; call it inside torch.compile")
        return data.detach().cpu().contiguous().numpy()
    if isinstance(data, bytes | bytearray | memoryview):
        return data
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    raise TypeError(f"{func}: expected encoded bytes (tensor, bytes or array), got {type(data)!r}")


# Signatures of formats we recognise but do not decode, for a helpful error.
_OTHER_FORMATS = {
    b"GIF87a": "GIF",
    b"GIF89a": "GIF",
    b"BM": "BMP",
    b"II*\x00": "TIFF",
    b"MM\x00*": "TIFF",
    b"\x00\x00\x01\x00": "ICO",
}


def sniff_format(data: EncodedData, *, path: PathLike | None = None) -> str:
    """``"jpeg"`` or ``"png"`` from the first bytes; raises for anything else.

    Example:
        >>> sniff_format(b"\\x89PNG\\r\\n\\x1a\\n....")
        'png'
    """
    try:
        return _sniff(bytes(memoryview(as_buffer(data, "decode_image"))[:12]))
    except DecodeError as e:
        raise type(e)(e.reason, path=path) from None


def _sniff(head: bytes) -> str:
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if not head:
        raise EmptyInputError()
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        raise UnsupportedFormatError("WebP images are not supported (JPEG and PNG are)")
    for signature, name in _OTHER_FORMATS.items():
        if head.startswith(signature):
            raise UnsupportedFormatError(f"{name} images are not supported (JPEG and PNG are)")
    raise DecodeError("not a JPEG or PNG image (unknown signature)")


@contextmanager
def native_errors(path: PathLike | None) -> Iterator[None]:
    """Re-raise the native codec failures as Trivium errors naming `path`."""
    try:
        yield
    except _C.UnsupportedFailure as e:
        raise UnsupportedFormatError(str(e), path=path) from None
    except _C.DecodeFailure as e:
        raise DecodeError(str(e), path=path) from None


def check_damage(
    warnings_: list[str], corrupt: bool, strict: bool, path: PathLike | None, stacklevel: int = 4
) -> None:
    """Raise (strict) or warn about pixel-losing damage the decoder reported.

    ``stacklevel`` is the warning's, counted from this function.
    """
    if not corrupt:
        return
    distinct = list(dict.fromkeys(warnings_))
    more = f" and {len(distinct) - 2} more" if len(distinct) > 2 else ""
    reason = ("; ".join(distinct[:2]) or "corrupt data") + more
    if strict:
        raise DecodeError(f"corrupt image data ({reason})", path=path)
    where = f"{os.fspath(path)}: " if path is not None else ""
    message = f"{where}returned a partial image: {reason}"
    warnings.warn(message, DecodeWarning, stacklevel=stacklevel)


def decode_batch(
    decode_one: Callable[[EncodedData, PathLike | None], torch.Tensor],
    inputs: list[EncodedData] | tuple[EncodedData, ...],
    path: PathLike | None,
    out: torch.Tensor | None,
) -> list[torch.Tensor]:
    """Decode a list in parallel on the core thread pool; errors name the item."""
    if out is not None:
        raise ValueError("out= takes a single input, not a list")
    items = list(inputs)
    return parallel_map(
        lambda i: decode_one(items[i], path if path is not None else f"<batch item {i}>"),
        range(len(items)),
    )


def encode_with(
    native: Callable[..., torch.Tensor],
    image: torch.Tensor,
    func: str,
    channels: tuple[int, ...],
    dtypes: tuple[torch.dtype, ...],
    *options: Any,
) -> torch.Tensor:
    """Check a [C, H, W] tensor and run an encoder op (``trivium::encode_*``) on it."""
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


def to_chw(hwc: np.ndarray) -> torch.Tensor:
    """A [C, H, W] tensor viewing an (H, W, C) array: zero copy, channels-last strides."""
    return torch.from_numpy(hwc).permute(2, 0, 1)


def make_output(
    out: torch.Tensor | None, device: torch.device
) -> tuple[Callable[..., np.ndarray] | np.ndarray | None, Callable[[np.ndarray], torch.Tensor]]:
    """How to hand the decoder its output buffer, and how to turn it into the result.

    - ``out`` given: decode straight into it when its [H, W, C] view is contiguous.
    - a CUDA ``device``: decode into pinned host memory, then copy asynchronously.
    - otherwise: a fresh array wrapped zero-copy.
    """
    if out is not None:
        hwc = out.permute(1, 2, 0)
        if out.device.type == "cpu" and hwc.is_contiguous():
            return hwc.numpy(), lambda _: out

        def copy_into(result: np.ndarray) -> torch.Tensor:
            image = to_chw(result)
            if out.shape != image.shape or out.dtype != image.dtype:
                raise ValueError(
                    f"out must be a {image.dtype} tensor of shape {tuple(image.shape)}, "
                    f"got {out.dtype} of shape {tuple(out.shape)}"
                )
            return out.copy_(image, non_blocking=True)

        return None, copy_into
    if device.type == "cuda":
        pinned: list[torch.Tensor] = []

        def allocate_pinned(h: int, w: int, c: int, bits: int) -> np.ndarray:
            dtype = torch.uint16 if bits == 16 else torch.uint8
            pinned.append(torch.empty((h, w, c), dtype=dtype, pin_memory=True))
            return pinned[0].numpy()

        def transfer(_: np.ndarray) -> torch.Tensor:
            return pinned[0].permute(2, 0, 1).to(device, non_blocking=True)

        return allocate_pinned, transfer
    if device.type != "cpu":
        return None, lambda result: to_chw(result).to(device)
    return None, to_chw
