"""Long-running fuzz of the native codecs, meant for an AddressSanitizer build.

`make fuzz-asan` builds trivium.vision._C with -fsanitize=address, runs this
script on mutations of the image assets, and restores the normal build. The
pytest suite runs a shorter, deterministic fuzz (test_decode_robustness.py) on
every `make test`.

Example:
    python tests/vision/native_fuzz.py --iterations 2000 --seed 3
"""

from __future__ import annotations

import argparse
import random
import subprocess
import warnings
from pathlib import Path

from trivium.core.errors import DecodeError
from trivium.vision.io import decode_image, decode_jpeg

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "images"
PIXEL_LIMIT = 4_000_000


def load_seeds() -> list[bytes]:
    """Every small valid JPEG and PNG asset, and 12-bit JPEGs, as bytes."""
    paths = sorted((ASSETS / "jpeg").iterdir()) + sorted((ASSETS / "png").iterdir())
    return [p.read_bytes() for p in paths if p.stat().st_size < 60_000] + twelve_bit_seeds()


def twelve_bit_seeds() -> list[bytes]:
    """12-bit JPEGs (lossy, progressive, lossless) made from a 16-bit PNG asset by the
    cjpeg built beside the codecs; none when it is not built."""
    cjpeg = ASSETS.parents[2] / "packages/vision/build/libjpeg-turbo/bin/cjpeg"
    if not cjpeg.exists():
        return []
    source = (ASSETS / "png" / "basn2c16.png").read_bytes()  # 16-bit RGB, 32x32
    pixels = decode_image(source).permute(1, 2, 0).numpy() >> 4
    ppm = b"P6\n32 32\n4095\n" + pixels.astype(">u2").tobytes()
    options = [["-quality", "90"], ["-progressive"], ["-lossless", "1"]]
    run = [str(cjpeg), "-precision", "12"]
    return [
        subprocess.run(run + o, input=ppm, capture_output=True, check=True).stdout for o in options
    ]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """Overwrite, cut, insert or truncate bytes of `data` a few times."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 10)):
        kind, pos = rng.random(), rng.randrange(len(out)) if out else 0
        if kind < 0.6 and out:
            out[pos] = rng.randrange(256)
        elif kind < 0.8:
            del out[pos : pos + rng.randint(1, 64)]
        elif kind < 0.9:
            out[pos:pos] = rng.randbytes(rng.randint(1, 8))
        else:
            del out[pos:]
    return bytes(out)


def exercise(data: bytes, rng: random.Random) -> int:
    """Decode `data` every way the API allows; returns how many decodes succeeded."""
    succeeded = 0
    calls = [{}, {"strict": False}, {"mode": rng.randrange(5)}]
    if data.startswith(b"\xff\xd8\xff"):
        roi = (rng.randrange(40), rng.randrange(40), rng.randint(1, 60), rng.randint(1, 60))
        calls.append({"scale": rng.randint(1, 8) / 8, "roi": roi, "strict": False})
    for kwargs in calls:
        decode = decode_jpeg if "roi" in kwargs else decode_image
        try:
            decode(data, max_pixels=PIXEL_LIMIT, **kwargs)
            succeeded += 1
        except DecodeError:
            pass
    return succeeded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng, seeds = random.Random(args.seed), load_seeds()
    succeeded = sum(exercise(mutate(rng.choice(seeds), rng), rng) for _ in range(args.iterations))
    print(f"{args.iterations} mutated inputs, {succeeded} successful decodes, no crash")


if __name__ == "__main__":
    main()
