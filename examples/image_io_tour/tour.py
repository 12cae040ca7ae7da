"""A walk through trivium.vision.io on a folder of images.

Decodes every JPEG and PNG under a folder, prints each one's header (format,
size, channels, bit depth, EXIF orientation) and decode timings (full size and,
for JPEGs, DCT-scaled to 1/4), shows why damaged files are refused, then decodes
all the good ones as one batch on the thread pool.

Run it with ``make demo`` or::

    python examples/image_io_tour/tour.py tests/assets/images
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from trivium.core import get_num_threads, progress
from trivium.core.errors import DecodeError
from trivium.vision.io import decode_image, decode_jpeg, image_info, read_file

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png"}


def milliseconds(fn, repeats: int = 3) -> float:
    """Best wall time of ``fn()`` over a few runs, in milliseconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def describe(path: Path, data: torch.Tensor) -> str:
    """One table row: header facts and decode timings of an image."""
    info = image_info(data, path=path)
    image = decode_image(data, path=path)
    full = milliseconds(lambda: decode_image(data))
    scaled = (
        ""
        if info.format != "jpeg"
        else f"{milliseconds(lambda: decode_jpeg(data, scale=0.25)):.2f}"
    )
    return (
        f"{path.name[:34]:34} {info.format:4} {info.height:>5}x{info.width:<5} "
        f"{info.channels:>2} {info.bit_depth:>3} {info.orientation:>3} {str(image.dtype)[6:]:>6} "
        f"{full:>8.2f} {scaled:>8}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Decode every JPEG/PNG under a folder.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "folder",
        type=Path,
        nargs="?",
        default=Path("tests/assets/images"),
        help="searched recursively for .jpg, .jpeg and .png files",
    )
    args = parser.parse_args()
    paths = sorted(p for p in args.folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    print(f"{'file':34} {'fmt':4} {'size':>11} {'C':>2} {'bit':>3} {'ori':>3} {'dtype':>6} "
          f"{'full ms':>8} {'1/4 ms':>8}")  # fmt: skip
    good, refused = [], []
    for path in progress(paths, desc="decoding", unit="img"):
        data = read_file(path)
        try:
            print(describe(path, data))
            good.append(data)
        except DecodeError as e:
            refused.append(e)
    print(f"\nRefused {len(refused)} damaged files, each with its reason:")
    for error in refused:
        print(f"  {error}")
    elapsed = milliseconds(lambda: decode_image(good), repeats=1)
    print(
        f"\nBatch: {len(good)} images decoded in {elapsed:.1f} ms on {get_num_threads()} threads."
    )


if __name__ == "__main__":
    main()
