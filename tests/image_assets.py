"""Lists of the image assets and Pillow reference decodes used by the vision tests."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

IMAGES = Path(__file__).resolve().parent / "assets" / "images"
JPEG_DIR, PNG_DIR, CORRUPT_DIR = IMAGES / "jpeg", IMAGES / "png", IMAGES / "corrupt"
WEBP_DIR = IMAGES / "webp"
PNGSUITE_REFERENCE = IMAGES / "reference" / "pngsuite_rgba_json"

# Lossless JPEG (SOF3) needs libjpeg-turbo >= 3.0; the system library may be older.
LOSSLESS_JPEGS = {"jd-lossless-jpeg_lossless_sel1.jpg"}
# Damaged files whose damage is harmless: every decoder (Pillow too) reads them fully.
DECODABLE_CORRUPT = {"jd-multiple-0xff-before-eoi.jpg"}
# Damaged files that Pillow decodes anyway (it ignores an IDAT CRC, fills truncated
# data): we raise in strict mode.
PILLOW_LENIENT = {"xcsn0g01.png", "jd-its-8e5e74dbf9b6.jpg"}
# Damaged files whose damage libjpeg recovers from with Pillow's pixels: they decode by
# default with a DecodeWarning, and raise with strict=True.
RECOVERED_CORRUPT = {"jd-its-8e5e74dbf9b6.jpg"}
# Valid files with damage libjpeg reports and recovers from without losing a pixel
# (bytes before a restart marker): they decode by default with a DecodeWarning.
WARNING_JPEGS = {"jd-mjpeg.jpg"}


def valid_jpegs() -> list[Path]:
    return sorted(p for p in JPEG_DIR.iterdir() if p.name not in LOSSLESS_JPEGS)


def valid_pngs() -> list[Path]:
    return sorted(PNG_DIR.iterdir())


def valid_webps() -> list[Path]:
    return sorted(WEBP_DIR.iterdir())


def corrupt_files() -> list[Path]:
    return sorted(p for p in CORRUPT_DIR.iterdir() if p.name not in DECODABLE_CORRUPT)


def refused_files() -> list[Path]:
    """The damaged files every decode refuses by default (the recovered ones decode)."""
    return [p for p in corrupt_files() if p.name not in RECOVERED_CORRUPT]


def pillow_array(source: Path | bytes | Image.Image, mode: str | None = None) -> np.ndarray:
    """Pillow's decode (or an opened image) as [C, H, W] (converted to ``mode`` when given)."""
    if isinstance(source, Image.Image):
        image = source
    else:
        image = Image.open(source if isinstance(source, Path) else io.BytesIO(source))
    if mode is not None:
        image = image.convert(mode)
    array = np.asarray(image)
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


def psnr(a: np.ndarray, b: np.ndarray, peak: float = 255.0) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(peak**2 / mse))
