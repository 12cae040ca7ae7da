"""Long-running fuzz of the native codecs, meant for an AddressSanitizer build.

`make fuzz-asan` builds trivium.vision._C and the operator library
(libtrivium_ops.so) with -fsanitize=address, runs this script on mutations of the
image assets, and restores the normal build. Each mutated file goes through the
Python API, through the C++ operators called directly (below the Python kernel, as
a C++ program calls them), and finally, for a sample, through a scripted module run
by `torch.jit.load` in a fresh process that loads only the operator library. The C++
operators must agree with the Python API: the same image, or a clean torch error
(c10::ValueError, TypeError or NotImplementedError) naming the reason. The pytest
suite runs a shorter, deterministic fuzz (test_decode_robustness.py) on every
`make test`.

Example:
    python tests/vision/native_fuzz.py --iterations 2000 --seed 3
"""

from __future__ import annotations

import argparse
import io
import random
import re
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trivium.core import get_num_threads, set_num_threads
from trivium.core.errors import DecodeWarning, TriviumError, UnsupportedFormatError
from trivium.vision.io import (
    decode_image,
    decode_jpeg,
    decode_png,
    decode_webp,
    encode_jpeg,
    encode_png,
    encode_webp,
    image_info,
)
from trivium.vision.io.image.ops import library_path

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "images"
PIXEL_LIMIT = 4_000_000
# Where a decode error names the input (every raw call passes it as `path`).
FUZZ_PATH = "fuzz.bin"
# The errors a C++ kernel raises (c10::ValueError, TypeError, NotImplementedError).
C10_ERRORS = (ValueError, TypeError, NotImplementedError)
# Values that overflow or wrap a narrower integer somewhere on the way down.
EXTREME_INTS = [-(2**63), -(2**31), -1, 0, 2**31, 2**32 + 75, 2**62, 2**63 - 1]
PYTHON_API = {
    "decode_image": decode_image,
    "decode_jpeg": decode_jpeg,
    "decode_png": decode_png,
    "decode_webp": decode_webp,
    "encode_jpeg": encode_jpeg,
    "encode_png": encode_png,
    "encode_webp": encode_webp,
}
_BELOW_PYTHON = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.BackendSelect)


def load_seeds() -> list[bytes]:
    """Every small valid JPEG, PNG and WebP asset, 12-bit JPEGs and made WebPs, as bytes."""
    folders = ("jpeg", "png", "webp")
    paths = [path for folder in folders for path in sorted((ASSETS / folder).iterdir())]
    small = [p.read_bytes() for p in paths if p.stat().st_size < 60_000]
    return small + twelve_bit_seeds() + webp_seeds()


def twelve_bit_seeds() -> list[bytes]:
    """12-bit JPEGs (lossy, progressive, lossless) made from a 16-bit PNG asset by the
    cjpeg built beside the codecs; none when it is not built."""
    cjpeg = ASSETS.parents[2] / "packages/vision/build/deps/libjpeg-turbo/bin/cjpeg"
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


def webp_seeds() -> list[bytes]:
    """WebPs the assets lack, made by Pillow from a PNG asset: lossless, lossless with
    alpha, and animations (lossy and lossless, frames with alpha that only partly cover
    the canvas)."""
    from PIL import Image

    image = Image.open(ASSETS / "png" / "basn6a08.png").convert("RGBA")  # 32x32 RGBA

    def save(first: Image.Image, **options: Any) -> bytes:
        buffer = io.BytesIO()
        first.save(buffer, "WEBP", **options)
        return buffer.getvalue()

    frames = [image.rotate(40 * i) for i in range(4)]
    animation = {"save_all": True, "append_images": frames[1:], "duration": 30}
    return [
        save(image.convert("RGB"), lossless=True),
        save(image, lossless=True),
        save(frames[0], quality=60, **animation),
        save(frames[0], lossless=True, **animation),
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


def call_below_python(func: str, *args: Any) -> torch.Tensor:
    """``torch.ops.trivium.<func>`` with every schema argument, skipping the Python kernel.

    The C++ kernel runs as it does in a C++ program: c10 errors, no Trivium errors.

    Example:
        >>> image = torch.zeros(1, 2, 2, dtype=torch.uint8)
        >>> call_below_python("encode_png", image, 6)[:4].tolist()
        [137, 80, 78, 71]
    """
    op = getattr(torch.ops.trivium, func).default
    return op.redispatch(torch._C._dispatch_keys(args[0]) & _BELOW_PYTHON, *args)


def check_clean_error(error: BaseException, func: str, path: str | None = FUZZ_PATH) -> None:
    """Assert ``error`` is a c10 error whose message names ``path`` (else the op) and a reason.

    Example:
        >>> check_clean_error(ValueError("fuzz.bin: corrupt image data (x)"), "decode_png")
        >>> check_clean_error(RuntimeError("boom"), "decode_png")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        AssertionError: decode_png raised RuntimeError, not a c10 error: boom...
    """
    message = str(error)
    assert type(error) in C10_ERRORS, (
        f"{func} raised {type(error).__name__}, not a c10 error: {message}"
    )
    names = [p for p in (path, func, "decode_jpeg") if p is not None]
    prefix = "({}): ".format("|".join(map(re.escape, names))) if path is not None else ""
    assert re.match(rf"{prefix}\S", message), f"{func}: no reason named in {message!r}"
    assert "Exception raised from" not in message, f"{func}: a C++ backtrace in {message!r}"


@dataclass
class Case:
    """One op call: ``func`` with its full schema arguments (after the input) for the
    C++ op, and the same call's keyword arguments for the Python API.

    Example:
        >>> Case("encode_png", [6], {"compression_level": 6}).func
        'encode_png'
    """

    func: str
    op_args: list[Any]
    api_kwargs: dict[str, Any] = field(default_factory=dict)


def _limit(rng: random.Random) -> int:
    return rng.choice([PIXEL_LIMIT, PIXEL_LIMIT, PIXEL_LIMIT, 64, 1])


def _roi(rng: random.Random) -> list[int]:
    if rng.random() < 0.15:  # hostile: negative, huge or the wrong length
        return [rng.choice([*EXTREME_INTS, 1, 7]) for _ in range(rng.choice([4, 4, 3, 5]))]
    return [rng.randrange(40), rng.randrange(40), rng.randint(1, 60), rng.randint(1, 60)]


def _jpeg_case(rng: random.Random, mode: int, strict: bool | None) -> Case:
    scale = min_size = roi = None
    pick = rng.random()
    if pick < 0.4:
        scale = rng.randint(1, 8) / 8 if rng.random() < 0.9 else rng.choice([0.0, 0.3, 2.0, -1.0])
    elif pick < 0.55:
        min_size = [rng.choice([0, 5, 30, 200, -1, 2**62]) for _ in range(2)]
    if rng.random() < 0.5:
        roi = _roi(rng)
    limit = _limit(rng)
    args = [mode, False, scale, min_size, roi, strict, limit, FUZZ_PATH]
    kwargs = {"scale": scale, "min_size": min_size, "roi": roi}
    return Case(
        "decode_jpeg", args, {"mode": mode, "strict": strict, "max_pixels": limit, **kwargs}
    )


def decode_cases(data: bytes, rng: random.Random) -> list[Case]:
    """Random decode calls of ``data``: every op, mode, strict, dtype, scale/roi, limit.

    Example:
        >>> sorted({c.func for c in decode_cases(b"\\xff\\xd8\\xff", random.Random(0))})
        ['decode_image', 'decode_jpeg']
    """
    cases = []
    for strict in (True, False, None):
        mode = rng.randrange(5) if rng.random() < 0.95 else rng.choice([-1, 5, 2**40])
        dtype = rng.choice([None, None, torch.uint8, torch.uint16, torch.float32])
        limit = _limit(rng)
        args = [mode, False, dtype, strict, limit, FUZZ_PATH]
        kwargs = {"mode": mode, "dtype": dtype, "strict": strict, "max_pixels": limit}
        cases.append(Case("decode_image", args, kwargs))
        if data.startswith(b"\x89PNG"):
            cases.append(Case("decode_png", args, kwargs))
        elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            cases.append(Case("decode_webp", args, kwargs))
        elif data.startswith(b"\xff\xd8"):
            cases.append(_jpeg_case(rng, mode, strict))
    return cases


def encode_cases(image: torch.Tensor, rng: random.Random) -> list[Case]:
    """Random encode calls of ``image``: good and bad qualities, subsamplings, levels.

    Example:
        >>> [c.func for c in encode_cases(torch.zeros(3, 2, 2), random.Random(0))]
        ['encode_jpeg', 'encode_png', 'encode_webp']
    """
    quality = rng.choice([1, 50, 75, 100] * 3 + [0, 101, *EXTREME_INTS])
    subsampling = rng.choice([444, 422, 420, 440] * 3 + [411, *EXTREME_INTS])
    progressive, optimize = rng.random() < 0.3, rng.random() < 0.3
    jpeg_kwargs = {"quality": quality, "subsampling": subsampling}
    jpeg_kwargs |= {"progressive": progressive, "optimize": optimize}
    level = rng.choice([*range(11), *EXTREME_INTS])
    webp_quality = rng.choice([0.0, 50.0, 75.0, 100.0] * 3 + [-1.0, 100.5, float("nan"), 1e300])
    method, lossless, exact = (
        rng.choice([*range(7)] * 2 + EXTREME_INTS),
        rng.random() < 0.4,
        rng.random() < 0.3,
    )
    webp_kwargs = {"quality": webp_quality, "lossless": lossless, "method": method, "exact": exact}
    return [
        Case("encode_jpeg", [quality, subsampling, progressive, optimize], jpeg_kwargs),
        Case("encode_png", [level], {"compression_level": level}),
        Case("encode_webp", [webp_quality, lossless, method, exact], webp_kwargs),
    ]


def random_image(rng: random.Random) -> torch.Tensor:
    """An image to encode: often valid, often of a bad shape, dtype or layout.

    Example:
        >>> random_image(random.Random(0)).dim()
        3
    """
    dims = 3 if rng.random() < 0.85 else rng.choice([0, 1, 2, 4])
    shape = [rng.choice([1, 2, 3, 4, 0, 5])] + [rng.choice([1, 7, 16, 0]) for _ in range(dims - 1)]
    dtype = rng.choice([torch.uint8] * 4 + [torch.uint16] * 2 + [torch.float32, torch.int16])
    image = torch.randint(0, 256, shape[:dims]).to(dtype)
    return image.transpose(-1, -2) if dims >= 2 and rng.random() < 0.2 else image


def encode_kwargs_for_api(case: Case) -> dict[str, Any]:
    """The Python API's ``subsampling`` as its "4:2:0" string when the code is one."""
    kwargs = dict(case.api_kwargs)
    if "subsampling" in kwargs:
        code = str(kwargs["subsampling"])
        if re.fullmatch(r"4[0-4]{2}", code):
            kwargs["subsampling"] = ":".join(code)
    return kwargs


def api_call(case: Case, input: Any) -> tuple[Any, list[str]]:
    """The Python API's result (or the error it raised) and the DecodeWarning messages."""
    if case.func.startswith("encode"):
        kwargs = encode_kwargs_for_api(case)
        return _outcome(lambda: PYTHON_API[case.func](input, **kwargs))
    return _outcome(lambda: PYTHON_API[case.func](input, path=FUZZ_PATH, **case.api_kwargs))


def _outcome(call: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as e:  # the caller compares errors, whatever they are
            result = e
    return result, [str(w.message) for w in caught if issubclass(w.category, DecodeWarning)]


def op_input(case: Case, data: Any) -> torch.Tensor:
    """The op's first argument: encoded bytes as a 1-D uint8 tensor, or the image."""
    if isinstance(data, torch.Tensor):
        return data
    return (
        torch.frombuffer(bytearray(data), dtype=torch.uint8)
        if data
        else torch.empty(0, dtype=torch.uint8)
    )


def call_recording_damage(case: Case, tensor: torch.Tensor) -> tuple[Any, list[str]]:
    """The C++ op's result (or error) and its damage warning, if any.

    The op runs below the Python kernel, as in a C++ program (c10 errors; its damage
    goes to TORCH_WARN). Its ``.status`` overload, which the Python API calls, reports
    the damage of the same call as text: that is the warning compared.
    """
    try:
        got: Any = call_below_python(case.func, tensor, *case.op_args)
    except Exception as e:  # the caller checks that it is a clean c10 error
        return e, []
    if not case.func.startswith("decode"):
        return got, []
    *args, path = case.op_args
    _, error, message = getattr(torch.ops.trivium, case.func).status(tensor, *args, eager=False)
    return got, [f"{path}: {message}"] if message and not error else []


def check_arguments_valid(case: Case, data: Any) -> None:
    """A call that succeeded had valid arguments (both paths could accept a bad one alike).

    Example:
        >>> check_arguments_valid(Case("encode_png", [10], {}), None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        AssertionError: encode_png succeeded with compression_level 10...
    """
    if case.func == "encode_png":
        level = case.op_args[0]
        assert 0 <= level <= 9, f"encode_png succeeded with compression_level {level}"
    elif case.func == "encode_webp":
        quality, _, method = case.op_args[:3]
        assert 0 <= quality <= 100, f"encode_webp succeeded with quality {quality}"
        assert 0 <= method <= 6, f"encode_webp succeeded with method {method}"
    elif case.func == "encode_jpeg":
        quality, subsampling = case.op_args[:2]
        assert 1 <= quality <= 100, f"encode_jpeg succeeded with quality {quality}"
        assert subsampling in (444, 422, 420, 440), f"encode_jpeg succeeded with {subsampling}"
    elif case.func == "decode_jpeg" and case.op_args[4] is not None:
        top, left, height, width = case.op_args[4]
        info = image_info(data)
        inside = 0 <= top < top + height <= info.height and 0 <= left < left + width <= info.width
        assert inside, f"decode_jpeg succeeded with roi {case.op_args[4]} of a {info} image"


def _asks_for_dtype(result: Any) -> bool:
    return isinstance(result, TypeError) and "decodes to torch.uint16" in str(result)


def check_case(case: Case, data: Any) -> Any:
    """Run ``case`` on ``data`` through the C++ op and the Python API; assert they agree.

    Returns the op's result: a tensor, or the c10 error it raised.

    Example:
        >>> image = torch.zeros(3, 4, 4, dtype=torch.uint8)
        >>> check_case(Case("encode_png", [6], {"compression_level": 6}), image).dtype
        torch.uint8
    """
    tensor = op_input(case, data)
    got, got_warnings = call_recording_damage(case, tensor)
    want, want_warnings = api_call(case, data)
    if isinstance(got, BaseException):
        check_clean_error(got, case.func)
    where = f"{case.func}{tuple(case.op_args)}"
    if _asks_for_dtype(got):
        # A C++ caller must name the dtype of a 16-bit image before it is decoded; the
        # Python API decodes it (to uint16, or finds it damaged).
        dtype = case.op_args[2] if case.func in ("decode_image", "decode_png") else None
        uint16 = isinstance(want, torch.Tensor) and want.dtype == torch.uint16
        assert dtype is None and (uint16 or isinstance(want, TriviumError)), f"{where}: {want!r}"
    elif isinstance(got, NotImplementedError) and "animated WebP" in str(got):
        # The op (one [C, H, W] image) refuses an animation before decoding it; the
        # Python API gives every frame, or finds them damaged.
        frames = isinstance(want, torch.Tensor) and want.dim() == 4
        assert frames or isinstance(want, TriviumError), f"{where}: {want!r}"
    elif isinstance(want, torch.Tensor) and want.dim() == 4:
        raise AssertionError(f"{where}: the Python API decoded an animation, the op: {got!r}")
    elif isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{where}: the Python API decoded, the op: {got!r}"
        assert got.dtype == want.dtype and torch.equal(got, want), f"{where}: results differ"
        assert got.is_contiguous(), f"{where}: the op promises a contiguous result"
        assert got_warnings == want_warnings, f"{where}: {got_warnings} != {want_warnings}"
        check_arguments_valid(case, data)
    elif isinstance(want, TriviumError) and case.func.startswith("decode"):
        assert isinstance(got, BaseException), f"{where}: the Python API raised {want!r}"
        # The Python API names the input before an argument error too.
        assert str(want) in (str(got), f"{FUZZ_PATH}: {got}"), f"{where}: {got!r} != {want!r}"
        unsupported = isinstance(want, UnsupportedFormatError)
        assert isinstance(got, NotImplementedError) == unsupported, f"{where}: {got!r}"
    else:  # the Python API refused the arguments, or an encode failed: so must the op
        assert isinstance(got, BaseException), f"{where}: the Python API raised {want!r}"
    return got


def exercise(data: bytes, rng: random.Random) -> list[tuple[Case, Any, Any]]:
    """Decode ``data`` every way the ops allow, and encode what decoded; each checked.

    Returns (case, input, the op's result) for each call.
    """
    done = []
    for case in decode_cases(data, rng):
        result = check_case(case, data)
        done.append((case, data, result))
    decoded = [r for _, _, r in done if isinstance(r, torch.Tensor) and r.dtype != torch.float32]
    image = rng.choice(decoded) if decoded and rng.random() < 0.5 else random_image(rng)
    for case in encode_cases(image, rng):
        done.append((case, image, check_case(case, image)))
    return done


def jpeg_batch(jpegs: list[bytes], rng: random.Random, size: int = 6) -> list[bytes]:
    """``size`` JPEGs drawn from ``jpegs``, about one in five mutated (none empty)."""
    batch = [mutate(d, rng) if rng.random() < 0.2 else d for d in rng.choices(jpegs, k=size)]
    return [d if d else jpegs[0] for d in batch]  # an empty item would take the op path


def check_list(datas: list[bytes], strict: bool, threads: int = 2) -> None:
    """``decode_jpeg`` of a list (decoded natively on threads) against one-by-one decodes.

    Every image equals its own decode; where some fail, the list raises the error of
    the first failing item, naming it; damage warns per item as one-by-one decodes do.

    Example:
        >>> check_list([b"\\xff\\xd8\\xff", b"not a jpeg"], strict=True)
    """
    before = get_num_threads()
    set_num_threads(threads)
    try:
        alone = [_outcome(lambda d=d: decode_jpeg(d, strict=strict)) for d in datas]
        together, warned = _outcome(lambda: decode_jpeg(datas, strict=strict))
    finally:
        set_num_threads(before)
    failed = [i for i, (result, _) in enumerate(alone) if isinstance(result, BaseException)]
    if not failed:
        assert isinstance(together, list), f"one by one decoded, the list raised {together!r}"
        for image, (want, _) in zip(together, alone, strict=True):
            assert image.dtype == want.dtype and torch.equal(image, want)
        expected = [f"<batch item {i}>: {w}" for i, (_, ws) in enumerate(alone) for w in ws]
        assert sorted(warned) == sorted(expected)
        return
    first = alone[failed[0]][0]
    assert type(together) is type(first), f"{together!r} != {first!r}"
    if isinstance(first, TriviumError):
        assert str(together) == f"<batch item {failed[0]}>: {first}"
    else:  # an argument error names the function, not the item
        assert str(together) == str(first)


# A fresh process that never imports trivium: it loads the operator library, then a
# scripted module whose methods call the ops, and runs each case, reporting its index
# before the call so that a crash names the case.
_SCRIPTED_RUNNER = """
import sys, torch
torch.ops.load_library(sys.argv[1])
module = torch.jit.load(sys.argv[2])
cases = torch.load(sys.argv[3], weights_only=False)
results = []
for i, (func, args) in enumerate(cases):
    print(i, flush=True)
    try:
        results.append(("ok", getattr(module, func)(*args)))
    except Exception as e:
        results.append(("error", type(e).__name__, str(e)))
torch.save(results, sys.argv[4])
assert not any(name.startswith("trivium") for name in sys.modules), "imported trivium"
"""


class OpsModule(torch.nn.Module):
    """Each C++ op as a method of a scripted module, with every schema argument."""

    @torch.jit.export
    def decode_jpeg(
        self,
        data: torch.Tensor,
        mode: int,
        exif: bool,
        scale: float | None,
        min_size: list[int] | None,
        roi: list[int] | None,
        strict: bool | None,
        max_pixels: int,
        path: str | None,
    ) -> torch.Tensor:
        return torch.ops.trivium.decode_jpeg(
            data, mode, exif, scale, min_size, roi, strict, max_pixels, path
        )

    @torch.jit.export
    def decode_png(
        self,
        data: torch.Tensor,
        mode: int,
        exif: bool,
        dtype: torch.dtype | None,
        strict: bool | None,
        max_pixels: int,
        path: str | None,
    ) -> torch.Tensor:
        return torch.ops.trivium.decode_png(data, mode, exif, dtype, strict, max_pixels, path)

    @torch.jit.export
    def decode_webp(
        self,
        data: torch.Tensor,
        mode: int,
        exif: bool,
        dtype: torch.dtype | None,
        strict: bool | None,
        max_pixels: int,
        path: str | None,
    ) -> torch.Tensor:
        return torch.ops.trivium.decode_webp(data, mode, exif, dtype, strict, max_pixels, path)

    @torch.jit.export
    def decode_image(
        self,
        data: torch.Tensor,
        mode: int,
        exif: bool,
        dtype: torch.dtype | None,
        strict: bool | None,
        max_pixels: int,
        path: str | None,
    ) -> torch.Tensor:
        return torch.ops.trivium.decode_image(data, mode, exif, dtype, strict, max_pixels, path)

    @torch.jit.export
    def encode_jpeg(
        self, image: torch.Tensor, quality: int, subsampling: int, progressive: bool, optimize: bool
    ) -> torch.Tensor:
        return torch.ops.trivium.encode_jpeg(image, quality, subsampling, progressive, optimize)

    @torch.jit.export
    def encode_png(self, image: torch.Tensor, compression_level: int) -> torch.Tensor:
        return torch.ops.trivium.encode_png(image, compression_level)

    @torch.jit.export
    def encode_webp(
        self, image: torch.Tensor, quality: float, lossless: bool, method: int, exact: bool
    ) -> torch.Tensor:
        return torch.ops.trivium.encode_webp(image, quality, lossless, method, exact)

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        return self.decode_image(data, 0, False, None, True, -1, None)


def run_scripted(done: list[tuple[Case, Any, Any]], workdir: Path) -> None:
    """Run each call again through a scripted module in a fresh process; assert the same
    results as the direct calls, and no crash (a crash names the call it died in)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script's
        torch.jit.script(OpsModule()).save(str(workdir / "ops.pt"))
    cases = [(case.func, [op_input(case, data), *case.op_args]) for case, data, _ in done]
    torch.save(cases, workdir / "cases.pt")
    files = [library_path(), workdir / "ops.pt", workdir / "cases.pt", workdir / "results.pt"]
    command = [sys.executable, "-W", "ignore", "-c", _SCRIPTED_RUNNER, *map(str, files)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=workdir)
    if run.returncode != 0:
        last = int(run.stdout.split()[-1]) if run.stdout.split() else 0
        func, args = cases[last]
        raise AssertionError(
            f"the scripted module died (exit {run.returncode}) in {func} of "
            f"{bytes(args[0].flatten().to(torch.uint8).tolist())[:64]!r}... with {args[1:]}:\n"
            f"{run.stderr[-2000:]}"
        )
    results = torch.load(workdir / "results.pt", weights_only=False)
    for (case, _, want), got in zip(done, results, strict=True):
        if isinstance(want, torch.Tensor):
            assert got[0] == "ok" and torch.equal(got[1], want), f"{case.func}: {got[:2]}"
        else:
            # The TorchScript interpreter raises a RuntimeError (c10::Error) carrying its
            # traceback and then the op's message.
            clean = got[0] == "error" and got[1] in ("RuntimeError", type(want).__name__)
            assert clean and got[2].rstrip().endswith(str(want)), f"{case.func}: {got} != {want!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scripted", type=int, default=300, help="calls run again scripted")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng, seeds = random.Random(args.seed), load_seeds()
    calls, decoded, sample = 0, 0, []
    jpegs = [seed for seed in seeds if seed.startswith(b"\xff\xd8")]
    for i in range(args.iterations):
        if i % 8 == 0:  # a list of mutated and intact JPEGs, decoded natively on threads
            check_list(jpeg_batch(jpegs, rng), strict=rng.random() < 0.5)
        done = exercise(mutate(rng.choice(seeds), rng), rng)
        calls += len(done)
        decoded += sum(isinstance(r, torch.Tensor) for c, _, r in done if c.func[:6] == "decode")
        if len(sample) < args.scripted:
            sample += done
    with tempfile.TemporaryDirectory() as workdir:
        run_scripted(sample, Path(workdir))
    print(
        f"{args.iterations} mutated inputs, {calls} op calls checked against the Python API "
        f"({decoded} successful decodes), {len(sample)} run again scripted in a fresh "
        "process, no crash"
    )


if __name__ == "__main__":
    main()
