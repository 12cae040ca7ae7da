"""Formats decoded through Pillow: BMP, TIFF, PPM/PGM, AVIF, HEIC (and GIF, see ``gif.py``).

Each is a :class:`PillowFormat` in the format registry, so ``decode_image``,
``read_image`` and ``image_info`` read them as they read JPEG and PNG: the op
``trivium::decode_image`` recognises them and its Python kernel decodes them here
(a C++ program without Python gets ``NotImplementedError`` naming the format).
Pillow opens the file with the format's own plugin (no other plugin is tried), the
pixel limit is checked from its header before any pixel is decoded, and Pillow's
decoders release the GIL while they decode. The read modes give what
:func:`~trivium.vision.io.decode_png` gives for the same pixels (palette with
transparency becomes RGBA, gray from colour is Pillow's luma); 16-bit gray TIFF and
PGM (and 16-bit PPM) give uint16. Damage Pillow reports raises ``DecodeError``
naming the file whatever ``strict`` says (Pillow decodes no partial image).

AVIF needs a Pillow built with AVIF support (``PIL.features.check("avif")``), HEIC
the optional ``pillow-heif`` (``pip install 'trivium-vision[heif]'``); without them
these formats raise ``UnsupportedFormatError`` saying what to install.

Example:
    >>> import io
    >>> from PIL import Image
    >>> from trivium.vision.io import decode_image, image_info
    >>> buffer = io.BytesIO()
    >>> Image.new("RGB", (5, 3), (255, 0, 0)).save(buffer, "BMP")
    >>> image_info(buffer.getvalue()).format, decode_image(buffer.getvalue()).shape
    ('bmp', torch.Size([3, 3, 5]))
"""

from __future__ import annotations

import functools
import importlib.util
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trivium.core import is_tracing
from trivium.core.errors import DecodeError, UnsupportedFormatError
from trivium.vision.io.image import ops
from trivium.vision.io.image.codec import (
    EncodedData,
    ImageFormat,
    ImageReadMode,
    PathLike,
    as_buffer,
    batch_where,
    format_of,
    native_errors,
    register_format,
)
from trivium.vision.io.image.orientation import apply_exif_orientation

_EXIF_ORIENTATION = 0x0112


def is_gif(head: bytes) -> bool:
    """GIF87a or GIF89a (the GIF reader checks its input with it).

    Example:
        >>> is_gif(b"GIF89a..."), is_gif(b"GIF90a")
        (True, False)
    """
    return head.startswith((b"GIF87a", b"GIF89a"))


# ---- Where each format's decoder comes from ----


@functools.cache
def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return False


def _plugin(module: str, name: str) -> Callable[[Any], Any]:
    """The Pillow plugin class ``PIL.<module>.<name>``, imported on first use."""

    def open_image(fp: Any) -> Any:
        plugin = importlib.import_module(f"PIL.{module}")
        return getattr(plugin, name)(fp)

    return open_image


def _no_plugin(fp: Any) -> Any:
    raise DecodeError("no Pillow plugin given for this format")


def _heif_image(fp: Any) -> Any:
    import pillow_heif

    return pillow_heif.HeifImageFile(fp)


@dataclass(frozen=True)
class PillowFormat(ImageFormat):
    """A format decoded in Python through Pillow: how to recognise, open and install it.

    Its row in the C++ table (``csrc/formats.cpp``) recognises it; ``open_image`` opens a
    file object with the format's Pillow plugin (reading only the header), ``requires`` the
    modules it needs and ``install`` what to install when they are missing.

    Example:
        >>> bmp = format_of(b"BM" + bytes(12) + (40).to_bytes(4, "little"))
        >>> bmp.name, bmp.native, bmp.unavailable()
        ('bmp', False, None)
    """

    open_image: Callable[[Any], Any] = _no_plugin
    requires: tuple[str, ...] = ("PIL",)
    install: str = "Pillow: pip install pillow"

    def unavailable(self) -> str | None:
        """What to install to decode this format here, or None."""
        if all(_installed(module) for module in self.requires):
            return None
        return f"{self.title} images need {self.install}"

    def decode_with(
        self,
        data: Any,
        mode: int,
        apply_orientation: bool,
        dtype: torch.dtype | None,
        max_pixels: int,
        eager: bool = True,
    ) -> torch.Tensor:
        """Decode ``data`` (bytes-like) as the op ``decode_image`` does: :func:`decode_pillow`."""
        return decode_pillow(self, data, mode, apply_orientation, dtype, max_pixels, eager)

    def read_header(self, buffer: Any) -> dict[str, Any]:
        """The fields of ``ImageInfo``, from the header Pillow reads: :func:`read_header`."""
        return read_header(self, buffer)


# ---- Decoding ----


def _open(image_format: PillowFormat, data: Any) -> Any:
    """The format's Pillow image over ``data``, its header read; Pillow's errors as DecodeError."""
    try:
        return image_format.open_image(io.BytesIO(data))
    except Exception as e:  # Pillow raises many types for bad data; none may leak
        raise DecodeError(f"not a valid {image_format.name.upper()} image ({_why(e)})") from None


def _why(error: Exception) -> str:
    return str(error) or type(error).__name__


def check_pixels(height: int, width: int, limit: int, frames: int = 1) -> None:
    """Refuse an image over the pixel limit (0: none) before decoding, as the C++ codecs word it.

    Example:
        >>> check_pixels(3, 4, 10)
        Traceback (most recent call last):
        ...
        trivium.core.errors.DecodeError: 4x3 image exceeds the limit of 10 pixels
    """
    if limit > 0 and height * width * frames > limit:
        what = f"{width}x{height} image" + (f" of {frames} frames" if frames > 1 else "")
        raise DecodeError(f"{what} exceeds the limit of {limit} pixels")


def _load(image: Any) -> None:
    try:
        image.load()
    except Exception as e:
        reason = _why(e)
        if "truncated" in reason:
            raise DecodeError(f"truncated image data ({reason})") from None
        raise DecodeError(f"corrupt image data ({reason})") from None


def _gray16(image: Any, image_format: PillowFormat) -> np.ndarray | None:
    """16-bit gray samples (H, W, 1) uint16, or None for another mode."""
    if image.mode.startswith("I;16"):
        return np.asarray(image).astype(np.uint16, copy=False)[..., None]
    if image.mode == "I" and image_format.name == "ppm":  # Pillow scales PGM to 0..65535
        return np.asarray(image).astype(np.uint16)[..., None]
    return None


def _ppm16(image: Any, data: Any) -> np.ndarray | None:
    """A raw 16-bit PPM (P6, maxval > 255) as (H, W, 3) uint16 scaled to 0..65535, else None.

    Pillow narrows these to 8 bits; the samples are read here as Pillow scales 16-bit
    PGM (``round(v / maxval * 65535)``).
    """
    tile = image.tile[0] if len(image.tile) == 1 else None
    if image.mode != "RGB" or tile is None or tile.codec_name != "ppm":
        return None
    maxval = int(tile.args[-1])
    if maxval <= 255:
        return None
    width, height = image.size
    count = width * height * 3
    if len(data) - tile.offset < 2 * count:
        raise DecodeError("truncated image data (the file ends before its last row)")
    samples = np.frombuffer(data, ">u2", count=count, offset=tile.offset).astype(np.float64)
    scaled = np.minimum(np.round(samples / maxval * 65535), 65535).astype(np.uint16)
    return scaled.reshape(height, width, 3)


def _unchanged(image: Any, image_format: PillowFormat, data: Any) -> np.ndarray:
    """The pixels as ``ImageReadMode.UNCHANGED`` gives them: (H, W, C), uint8 or uint16."""
    wide = _gray16(image, image_format)
    if wide is not None:
        return wide
    mode = image.mode
    if mode in ("I", "F") or mode.startswith("I;") or mode.startswith("F;"):
        kind = "floating-point" if mode.startswith("F") else "32-bit integer"
        raise UnsupportedFormatError(f"{image_format.name.upper()} with {kind} samples")
    transparency = image.info.get("transparency")
    if mode in ("1", "L"):
        gray = np.asarray(image.convert("L") if mode == "1" else image)[..., None]
        if not isinstance(transparency, int) or isinstance(transparency, bool):
            return gray
        alpha = np.where(gray == transparency, 0, 255).astype(np.uint8)
        return np.concatenate([gray, alpha], axis=-1)
    target = {"LA": "LA", "La": "LA", "RGBA": "RGBA", "RGBa": "RGBA", "PA": "RGBA"}.get(mode)
    if mode == "P":
        target = "RGBA" if transparency is not None else "RGB"
    try:
        converted = image if mode == (target or "RGB") else image.convert(target or "RGB")
    except ValueError as e:  # a colour space Pillow cannot convert (LAB, HSV, ...)
        raise UnsupportedFormatError(f"{image_format.name.upper()} in {mode} mode ({e})") from None
    return np.asarray(converted)


def _luma(rgb: np.ndarray) -> np.ndarray:
    """Pillow's RGB -> L (ITU-R 601-2 in 16-bit fixed point), as the PNG decoder computes it."""
    r, g, b = (rgb[..., i].astype(np.uint64) for i in range(3))
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(rgb.dtype)


def to_mode(pixels: np.ndarray, mode: int) -> np.ndarray:
    """(..., C) samples of 1-4 channels as ``mode`` asks: luma, alpha dropped or made opaque.

    Example:
        >>> to_mode(np.array([[[255, 0, 0]]], np.uint8), ImageReadMode.GRAY_ALPHA).tolist()
        [[[76, 255]]]
    """
    channels = ImageReadMode(mode).channels
    have = pixels.shape[-1]
    if channels is None or channels == have:
        return pixels
    alpha = pixels[..., -1:] if have in (2, 4) else None
    color = pixels[..., : 3 if have >= 3 else 1]
    if channels <= 2:
        gray = _luma(color)[..., None] if color.shape[-1] == 3 else color
        parts = [gray]
    else:
        parts = [color if color.shape[-1] == 3 else np.repeat(color, 3, axis=-1)]
    if channels in (2, 4):
        opaque = np.iinfo(pixels.dtype).max
        parts.append(alpha if alpha is not None else np.full_like(parts[0][..., :1], opaque))
    return np.ascontiguousarray(np.concatenate(parts, axis=-1))


def finish(
    pixels: np.ndarray,
    orientation: int,
    dtype: torch.dtype | None,
    eager: bool,
    func: str,
) -> torch.Tensor:
    """(H, W, C) or (N, H, W, C) samples as the decode ops return them.

    Turned by ``orientation``, converted to ``dtype`` as the C++ ops convert (floats
    scaled to [0, 1], uint16 to uint8 by the high byte), and laid out as the op's
    caller expects: eagerly a [C, H, W] view of the [H, W, C] buffer; inside
    ``torch.compile`` a contiguous [C, H, W] tensor of a dtype known before decoding
    (so a 16-bit image with ``dtype=None`` and a GIF of several frames raise there).
    """
    image = torch.from_numpy(np.require(pixels, requirements=["C", "W"])).movedim(-1, -3)
    if not eager:
        if image.dim() == 4 and image.shape[0] > 1:
            raise TypeError(
                f"{func}: this GIF holds {image.shape[0]} frames ([N, C, H, W]), and inside "
                "torch.compile the op gives one [C, H, W] image: decode it with decode_gif "
                "outside the compiled region"
            )
        image = image.squeeze(0) if image.dim() == 4 else image
        if dtype is None and image.dtype != torch.uint8:
            raise TypeError(
                f"{func}: this image decodes to torch.uint16, and inside torch.compile the "
                "output dtype must be known before decoding: pass dtype= (e.g. dtype=torch.uint16)"
            )
    image = apply_exif_orientation(image, orientation)
    image = convert_dtype(image, dtype)
    return image if eager else image.contiguous()


def convert_dtype(image: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """Decoded uint8 / uint16 samples as ``dtype``, as torch_ops.cpp's convert_dtype.

    Example:
        >>> convert_dtype(torch.tensor([65535], dtype=torch.uint16), torch.uint8)
        tensor([255], dtype=torch.uint8)
    """
    if dtype is None or dtype == image.dtype:
        return image
    top = 65535.0 if image.dtype == torch.uint16 else 255.0
    if dtype.is_floating_point:
        return image.to(dtype).div_(top)
    if dtype == torch.uint8 and image.dtype == torch.uint16:
        return (image.to(torch.int32) >> 8).to(torch.uint8)
    if dtype == torch.uint16 and image.dtype == torch.uint8:
        return (image.to(torch.int32) * 257).to(torch.uint16)
    raise TypeError(f"cannot convert decoded {image.dtype} samples to {dtype}")


def decode_pillow(
    image_format: PillowFormat,
    data: Any,
    mode: int,
    apply_orientation: bool,
    dtype: torch.dtype | None,
    max_pixels: int,
    eager: bool = True,
    func: str = "decode_image",
) -> torch.Tensor:
    """Decode ``data`` (bytes-like) of a :class:`PillowFormat` as the op ``decode_image`` does.

    ``max_pixels`` is the native limit (0: none). Errors are Trivium errors without
    a path (the caller names the file).
    """
    image = _open(image_format, data)
    width, height = image.size
    check_pixels(height, width, max_pixels)
    pixels = _ppm16(image, data) if image_format.name == "ppm" else None  # before load
    if pixels is None:
        _load(image)
        pixels = _unchanged(image, image_format, data)
    pixels = to_mode(pixels, mode)
    orientation = _orientation(image) if apply_orientation else 0
    return finish(pixels, orientation, dtype, eager, func)


def _orientation(image: Any) -> int:
    try:
        value = image.getexif().get(_EXIF_ORIENTATION, 0)
    except Exception:  # unreadable EXIF: the image as stored, as Pillow's exif_transpose
        return 0
    return value if isinstance(value, int) and 0 <= value <= 8 else 0


_COLOR_SPACES = {"1": "gray", "L": "gray", "LA": "gray_alpha", "P": "palette", "PA": "palette"}


def _is_wide(image: Any, image_format: PillowFormat) -> bool:
    """Whether the image has 16-bit samples (16-bit gray TIFF, PGM and PPM)."""
    if image.mode.startswith("I;16") or (image.mode == "I" and image_format.name == "ppm"):
        return True
    tile = image.tile[0] if image_format.name == "ppm" and len(image.tile) == 1 else None
    return tile is not None and tile.codec_name == "ppm" and int(tile.args[-1]) > 255


def _channels(image: Any, wide: bool) -> int:
    """The channels an ``ImageReadMode.UNCHANGED`` decode gives (see :func:`_unchanged`)."""
    mode, transparency = image.mode, image.info.get("transparency")
    if mode in ("LA", "La"):
        return 2
    if mode in ("RGBA", "RGBa", "PA") or (mode == "P" and transparency is not None):
        return 4
    if mode in ("1", "L"):
        return 2 if isinstance(transparency, int) and not isinstance(transparency, bool) else 1
    return 1 if wide and mode != "RGB" else 3


def read_header(image_format: PillowFormat, buffer: Any) -> dict[str, Any]:
    """The fields of ``ImageInfo`` from the header Pillow reads (no pixels decoded)."""
    image = _open(image_format, buffer)
    wide = _is_wide(image, image_format)
    gray16 = wide and image.mode != "RGB"
    return {
        "format": image_format.name,
        "height": image.size[1],
        "width": image.size[0],
        "channels": _channels(image, wide),
        "bit_depth": 16 if wide else 1 if image.mode == "1" else 8,
        "orientation": _orientation(image),
        "color_space": "gray" if gray16 else _COLOR_SPACES.get(image.mode, image.mode),
        "progressive": False,
    }


_HEIF_INSTALL = "pillow-heif: pip install 'trivium-vision[heif]'"


def register_pillow_format(
    name: str,
    open_image: Callable[[Any], Any],
    requires: tuple[str, ...] = ("PIL",),
    install: str = "Pillow: pip install pillow",
    kind: type[PillowFormat] = PillowFormat,
) -> PillowFormat:
    """Register a format decoded through Pillow (a record of ``kind``; ``name`` its table row).

    Its op is ``trivium::decode_image``, its public decoder :func:`decode_image_of`
    the format, its header reader the record's ``read_header``.
    """
    record = kind(
        name,
        decode_image_of(name),
        ops.decode_image_op,
        open_image=open_image,
        requires=requires,
        install=install,
    )
    register_format(record)
    return record


def decode_image_of(name: str) -> Callable[..., Any]:
    """``decode_image`` restricted to the format ``name`` (other data raises ``DecodeError``).

    Example:
        >>> decode_image_of("avif").__name__
        'decode_avif'
    """
    from trivium.vision.io.image.decode import decode_image

    def decode(
        input: EncodedData | list[EncodedData],
        mode: ImageReadMode = ImageReadMode.UNCHANGED,
        apply_exif_orientation: bool = False,
        *,
        dtype: torch.dtype | None = None,
        device: str | torch.device = "cpu",
        strict: bool | None = None,
        max_pixels: int | None = ...,  # type: ignore[assignment]
        path: PathLike | None = None,
    ) -> torch.Tensor | list[torch.Tensor]:
        many = isinstance(input, list | tuple)
        for i, item in enumerate([] if is_tracing() else input if many else [input]):
            where = batch_where(path, i) if many else path
            found = format_of(as_buffer(item, decode.__name__), where).name
            if found != name:
                raise DecodeError(f"not a {name.upper()} image (a {found.upper()})", path=where)
        options = dict(dtype=dtype, device=device, strict=strict, max_pixels=max_pixels)
        return decode_image(input, mode, apply_exif_orientation, path=path, **options)

    decode.__name__ = decode.__qualname__ = f"decode_{name}"
    return decode


def python_decode(data: torch.Tensor, values: list[Any], eager: bool) -> torch.Tensor | None:
    """The op ``decode_image``'s result for a format decoded in Python, or None for others.

    ``values`` are the op's arguments (data, mode, apply_exif_orientation, dtype,
    strict, max_pixels, path), ``max_pixels`` already the native limit. Errors name
    the op's ``path``.
    """
    buffer = data.numpy()
    path = values[6]
    try:
        image_format = format_of(buffer)
    except DecodeError:
        return None
    if not isinstance(image_format, PillowFormat):
        return None
    _, mode, orientation, dtype, _, limit, _ = values
    with native_errors(path):
        return image_format.decode_with(buffer, mode, bool(orientation), dtype, limit, eager)


ops.register_python_decoder(python_decode)
register_pillow_format("bmp", _plugin("BmpImagePlugin", "BmpImageFile"))
register_pillow_format("tiff", _plugin("TiffImagePlugin", "TiffImageFile"))
register_pillow_format("ppm", _plugin("PpmImagePlugin", "PpmImageFile"))
decode_avif = register_pillow_format(
    "avif",
    _plugin("AvifImagePlugin", "AvifImageFile"),
    ("PIL", "PIL._avif"),
    "a Pillow built with AVIF support (its wheels since 11.3 are): pip install -U pillow",
).decoder
decode_avif.__doc__ = """Decode an AVIF image to a [C, H, W] tensor (as torchvision.io.decode_avif).

    Through Pillow's AVIF plugin (a Pillow built with AVIF support); 8-bit images give
    uint8. Arguments as :func:`~trivium.vision.io.decode_image` (``input`` is encoded
    data, or a list of it); other data raises ``DecodeError``.

    Example:
        >>> import io
        >>> from PIL import Image, features
        >>> buffer = io.BytesIO()
        >>> if features.check("avif"):
        ...     Image.new("RGB", (8, 4)).save(buffer, "AVIF")
        ...     print(tuple(decode_avif(buffer.getvalue()).shape))
        ... else:
        ...     print((3, 4, 8))
        (3, 4, 8)
    """
decode_heic = register_pillow_format(
    "heic", _heif_image, ("PIL", "pillow_heif"), _HEIF_INSTALL
).decoder
decode_heic.__doc__ = """Decode an HEIC image to a [C, H, W] tensor (as torchvision.io.decode_heic).

    Through pillow-heif (``pip install 'trivium-vision[heif]'``; without it HEIC data
    raises ``UnsupportedFormatError`` saying so). Arguments as
    :func:`~trivium.vision.io.decode_image` (``input`` is encoded data, or a list of
    it); other data raises ``DecodeError``.

    Example:
        >>> from trivium.vision.io.image.codec import cannot_decode
        >>> cannot_decode("heic") in (None, "HEIC images need " + _HEIF_INSTALL)
        True
    """
