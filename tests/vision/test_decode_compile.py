"""Decoding inside ``torch.compile``: every argument reaches the decoder, as in eager mode.

Each public decoder and fused ``Decode*`` transform is called in eager mode and
through ``torch.compile(fullgraph=True)``; outputs, warnings and errors must agree
(the pixel limit and ``strict`` included), and arguments that compiled code cannot
honour must raise rather than vanish.
"""

from __future__ import annotations

import ast
import inspect
import warnings
import zlib
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import torch
from image_assets import CORRUPT_DIR, JPEG_DIR, PNG_DIR, WEBP_DIR, psnr

import trivium.vision.io as vision_io
from trivium.core.errors import DecodeError, DecodeWarning, UnsupportedFormatError
from trivium.vision import transforms as T
from trivium.vision.io import (
    ImageReadMode,
    decode_image,
    decode_jpeg,
    decode_png,
    decode_webp,
    encode_jpeg,
    encode_png,
    encode_webp,
    get_max_image_pixels,
    image_info,
    read_file,
    set_max_image_pixels,
)
from trivium.vision.transforms import functional as TF
from trivium.vision.transforms.geometry import random_resized_crop_boxes

PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"  # baseline 4:2:0, 517 wide, 606 high
ROTATED = JPEG_DIR / "pil-hopper_orientation_6.jpg"
GRAY_JPEG = JPEG_DIR / "tv-gray_pytorch.jpg"
CMYK_JPEG = JPEG_DIR / "tv-cmyk_pytorch.jpg"
TRUNCATED_JPEG = CORRUPT_DIR / "pil-truncated_jpeg.jpg"
PNG_RGB = PNG_DIR / "pil-hopper.png"
PNG_16 = PNG_DIR / "basn2c16.png"
PNG_PALETTE_ALPHA = PNG_DIR / "tp1n3p08.png"
WEBP_ALPHA = WEBP_DIR / "pil-transparent.webp"  # lossy with alpha, 200 x 150
WEBP_ROTATED = WEBP_DIR / "pil-hopper_orientation_6.webp"
WEBP_ANIMATION = WEBP_DIR / "pil-iss634.webp"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    # Every test compiles new closures of the same code; start each from a clean cache.
    # No compiled graphs from disk either: their key does not cover a custom op's fake
    # kernel, so a graph compiled against an older version of the op could be reused.
    torch._dynamo.reset()
    with (
        torch._inductor.config.patch(fx_graph_cache=False),
        torch._functorch.config.patch(enable_autograd_cache=False),
    ):
        yield
    torch._dynamo.reset()


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    return torch.compile(fn, fullgraph=True)


def _same(got: Any, want: Any) -> None:
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    assert got.dtype == want.dtype and got.device == want.device
    assert got.shape == want.shape
    assert torch.equal(got, want)


def _eager_and_compiled(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    return fn(*args), _compiled(fn)(*args)


def _bytes(path: Path) -> torch.Tensor:
    return read_file(path)


def _as_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


# Hand-made files: a decompression bomb of each format, a PNG with an EXIF orientation.


def _jpeg_claiming(path: Path, height: int, width: int) -> torch.Tensor:
    """A real JPEG whose SOF0 header claims another size (a decompression bomb)."""
    raw = bytearray(path.read_bytes())
    sof = raw.rindex(b"\xff\xc0")
    raw[sof + 5 : sof + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return _as_tensor(bytes(raw))


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body).to_bytes(4, "big")
    return len(body).to_bytes(4, "big") + kind + body + crc


def _png_claiming(path: Path, height: int, width: int) -> torch.Tensor:
    """A real PNG whose IHDR (with a correct CRC) claims another size."""
    raw = path.read_bytes()
    assert raw[12:16] == b"IHDR"
    body = width.to_bytes(4, "big") + height.to_bytes(4, "big") + raw[24:29]
    return _as_tensor(raw[:8] + _png_chunk(b"IHDR", body) + raw[33:])


def _png_with_orientation(image: torch.Tensor, orientation: int) -> torch.Tensor:
    """``image`` as a PNG with an eXIf chunk holding an EXIF orientation tag."""
    raw = bytes(encode_png(image).tolist())
    entry = b"\x01\x12\x00\x03\x00\x00\x00\x01" + orientation.to_bytes(2, "big") + b"\x00\x00"
    tiff = b"MM\x00*\x00\x00\x00\x08" + b"\x00\x01" + entry + b"\x00\x00\x00\x00"
    return _as_tensor(raw[:33] + _png_chunk(b"eXIf", tiff) + raw[33:])


def _truncated_png() -> torch.Tensor:
    raw = PNG_RGB.read_bytes()
    return _as_tensor(raw[: len(raw) * 2 // 3])


def _truncated_webp() -> torch.Tensor:
    raw = WEBP_ALPHA.read_bytes()
    return _as_tensor(raw[: len(raw) * 2 // 3])


def _lossless_webp() -> torch.Tensor:
    return encode_webp(decode_png(_bytes(PNG_RGB)), lossless=True)


def _decode_warnings(run: Callable[[], Any]) -> tuple[Any, list[type[Warning]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    return result, [w.category for w in caught if issubclass(w.category, DecodeWarning)]


# Every argument: eager and compiled give the same tensor.

JPEG_CASES: list[tuple[Path, dict[str, Any]]] = [
    (PHOTO, {}),
    (PHOTO, {"mode": ImageReadMode.GRAY}),
    (PHOTO, {"mode": ImageReadMode.RGB_ALPHA}),
    (GRAY_JPEG, {"mode": ImageReadMode.RGB}),
    (CMYK_JPEG, {}),
    (PHOTO, {"scale": 0.5}),
    (PHOTO, {"scale": Fraction(3, 8)}),
    (PHOTO, {"min_size": (200, 150)}),
    (PHOTO, {"roi": (100, 50, 300, 200)}),
    (PHOTO, {"roi": (101, 37, 300, 211), "scale": 0.25}),
    (PHOTO, {"roi": (100, 50, 300, 200), "min_size": (100, 60)}),
    (ROTATED, {"apply_exif_orientation": True}),
    (ROTATED, {"apply_exif_orientation": True, "scale": 0.5, "mode": ImageReadMode.GRAY}),
    (PHOTO, {"device": "cpu"}),
    (PHOTO, {"max_pixels": None}),
    (PHOTO, {"max_pixels": 517 * 606}),
    (PHOTO, {"strict": True, "path": "photo.jpg"}),
]


@pytest.mark.parametrize(("path", "kwargs"), JPEG_CASES, ids=lambda v: str(v))
def test_decode_jpeg_arguments_match_eager(path: Path, kwargs: dict[str, Any]) -> None:
    eager, compiled = _eager_and_compiled(lambda data: decode_jpeg(data, **kwargs), _bytes(path))
    _same(compiled, eager)


PNG_CASES: list[tuple[Path, dict[str, Any]]] = [
    (PNG_RGB, {}),
    (PNG_RGB, {"mode": ImageReadMode.GRAY}),
    (PNG_RGB, {"mode": ImageReadMode.RGB_ALPHA}),
    (PNG_PALETTE_ALPHA, {"mode": ImageReadMode.RGB}),
    (PNG_RGB, {"dtype": torch.float32}),
    (PNG_RGB, {"dtype": torch.uint16}),
    (PNG_16, {"dtype": torch.uint16}),
    (PNG_16, {"dtype": torch.uint8}),
    (PNG_16, {"dtype": torch.float32}),  # from the 16-bit samples, not narrowed first
    (PNG_16, {"dtype": torch.float64, "mode": ImageReadMode.GRAY}),
    (PNG_RGB, {"device": "cpu"}),
    (PNG_RGB, {"max_pixels": None}),
    (PNG_RGB, {"strict": True, "path": "hopper.png"}),
]


@pytest.mark.parametrize(("path", "kwargs"), PNG_CASES, ids=lambda v: str(v))
def test_decode_png_arguments_match_eager(path: Path, kwargs: dict[str, Any]) -> None:
    eager, compiled = _eager_and_compiled(lambda data: decode_png(data, **kwargs), _bytes(path))
    _same(compiled, eager)


WEBP_CASES: list[tuple[Path, dict[str, Any]]] = [
    (WEBP_ALPHA, {}),
    (WEBP_ALPHA, {"mode": ImageReadMode.GRAY}),
    (WEBP_ALPHA, {"mode": ImageReadMode.GRAY_ALPHA}),
    (WEBP_ALPHA, {"mode": ImageReadMode.RGB}),
    (WEBP_ROTATED, {"mode": ImageReadMode.RGB_ALPHA}),
    (WEBP_ROTATED, {"apply_exif_orientation": True}),
    (WEBP_ALPHA, {"dtype": torch.float32}),
    (WEBP_ALPHA, {"dtype": torch.uint16}),
    (WEBP_ALPHA, {"device": "cpu"}),
    (WEBP_ALPHA, {"max_pixels": None}),
    (WEBP_ALPHA, {"strict": True, "path": "transparent.webp"}),
]


@pytest.mark.parametrize(("path", "kwargs"), WEBP_CASES, ids=lambda v: str(v))
def test_decode_webp_arguments_match_eager(path: Path, kwargs: dict[str, Any]) -> None:
    eager, compiled = _eager_and_compiled(lambda data: decode_webp(data, **kwargs), _bytes(path))
    _same(compiled, eager)


def test_lossless_webp_matches_eager() -> None:
    data = _lossless_webp()
    eager, compiled = _eager_and_compiled(lambda data: decode_webp(data), data)
    _same(compiled, eager)
    assert torch.equal(eager, decode_png(_bytes(PNG_RGB)))


def test_animated_webp_raises_when_compiled() -> None:
    # The op's result is one [C, H, W] image: its rank must be known before decoding.
    data = _bytes(WEBP_ANIMATION)
    assert decode_webp(data).shape == (42, 4, 245, 245)  # eager: every frame
    for decode in (decode_webp, decode_image):
        with pytest.raises(UnsupportedFormatError, match=r"animated WebP \(42 frames\)"):
            _compiled(lambda data, decode=decode: decode(data, path="anim.webp"))(data)


IMAGE_CASES: list[tuple[Path, dict[str, Any]]] = [
    (PHOTO, {}),
    (PHOTO, {"mode": ImageReadMode.GRAY, "dtype": torch.float32}),
    (ROTATED, {"apply_exif_orientation": True}),
    (PNG_RGB, {"mode": ImageReadMode.RGB_ALPHA}),
    (PNG_16, {"dtype": torch.float32}),
    (PNG_16, {"dtype": torch.uint16}),
    (PHOTO, {"dtype": torch.uint16}),
    (PNG_RGB, {"max_pixels": 128 * 128, "strict": True, "path": "hopper.png"}),
    (WEBP_ALPHA, {"mode": ImageReadMode.RGB, "dtype": torch.float32}),
    (WEBP_ROTATED, {"apply_exif_orientation": True}),
]


@pytest.mark.parametrize(("path", "kwargs"), IMAGE_CASES, ids=lambda v: str(v))
def test_decode_image_arguments_match_eager(path: Path, kwargs: dict[str, Any]) -> None:
    eager, compiled = _eager_and_compiled(lambda data: decode_image(data, **kwargs), _bytes(path))
    _same(compiled, eager)


@pytest.mark.parametrize("decode", [decode_png, decode_image])
@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_png_exif_orientation_matches_eager(decode: Callable[..., Any], orientation: int) -> None:
    image = torch.arange(3 * 5 * 7, dtype=torch.uint8).view(3, 5, 7)
    data = _png_with_orientation(image, orientation)
    assert image_info(data).orientation == orientation
    fn = lambda data: decode(data, apply_exif_orientation=True)  # noqa: E731
    eager, compiled = _eager_and_compiled(fn, data)
    assert eager.shape == ((3, 7, 5) if orientation in (6, 8) else (3, 5, 7))
    _same(compiled, eager)


def test_lists_match_eager() -> None:
    jpegs = [_bytes(PHOTO), _bytes(ROTATED)]
    pngs = [_bytes(PNG_RGB), _bytes(PNG_16)]
    webps = [_bytes(WEBP_ALPHA), _bytes(WEBP_ROTATED)]
    fn = lambda j, p, w: (  # noqa: E731
        decode_jpeg(j, ImageReadMode.RGB, scale=0.5, apply_exif_orientation=True),
        decode_png(p, ImageReadMode.RGB, dtype=torch.float32),
        decode_webp(w, ImageReadMode.RGB, apply_exif_orientation=True),
        decode_image([*j, *p, *w], ImageReadMode.GRAY, dtype=torch.uint8),
    )
    eager, compiled = _eager_and_compiled(fn, jpegs, pngs, webps)
    for got, want in zip(compiled, eager, strict=True):
        _same(got, want)


def test_scaled_region_decode_with_dynamic_shapes() -> None:
    fn = lambda data: decode_jpeg(data, roi=(10, 20, 90, 100), scale=0.5).float().mean((1, 2))  # noqa: E731
    compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    for path in (PHOTO, JPEG_DIR / "pil-hopper.jpg"):
        torch.testing.assert_close(compiled(_bytes(path)), fn(_bytes(path)), rtol=0, atol=0)


# strict: damaged files raise in both modes, or warn and give the same partial image.


@pytest.mark.parametrize(
    ("decode", "make"),
    [
        (decode_jpeg, lambda: _bytes(TRUNCATED_JPEG)),
        (decode_image, lambda: _bytes(TRUNCATED_JPEG)),
        (decode_png, _truncated_png),
        (decode_image, _truncated_png),
        (decode_webp, _truncated_webp),
        (decode_image, _truncated_webp),
    ],
)
def test_strict_raises_in_both_modes(decode: Callable[..., Any], make: Callable[[], Any]) -> None:
    data = make()
    fn = lambda data: decode(data, strict=True, path="damaged-file")  # noqa: E731
    with pytest.raises(DecodeError, match="damaged-file") as eager:
        fn(data)
    with pytest.raises(DecodeError, match="damaged-file") as compiled:
        _compiled(fn)(data)
    assert type(compiled.value) is type(eager.value)
    assert str(compiled.value) == str(eager.value)


@pytest.mark.parametrize(
    ("decode", "make"),
    [
        (decode_jpeg, lambda: _bytes(TRUNCATED_JPEG)),
        (decode_png, _truncated_png),
        (decode_image, _truncated_png),
        (decode_webp, _truncated_webp),
    ],
)
def test_lenient_decode_warns_in_both_modes(
    decode: Callable[..., Any], make: Callable[[], Any]
) -> None:
    data = make()
    fn = lambda data: decode(data, ImageReadMode.RGB, strict=False)  # noqa: E731
    eager, eager_warnings = _decode_warnings(lambda: fn(data))
    compiled, compiled_warnings = _decode_warnings(lambda: _compiled(fn)(data))
    assert eager_warnings == compiled_warnings == [DecodeWarning]
    _same(compiled, eager)


# The pixel limit: a decompression bomb is refused before allocating, in both modes.

BOMBS = [
    # (decode, file, max_pixels): files claim 3000 x 4000 = 12 M pixels, under the
    # process-wide default limit, over the one passed.
    (decode_jpeg, lambda: _jpeg_claiming(PHOTO, 3000, 4000), 1_000_000),
    (decode_image, lambda: _jpeg_claiming(PHOTO, 3000, 4000), 1_000_000),
    (decode_png, lambda: _png_claiming(PNG_RGB, 3000, 4000), 1_000_000),
    (decode_image, lambda: _png_claiming(PNG_RGB, 3000, 4000), 1_000_000),
    # A real image over a small limit.
    (decode_jpeg, lambda: _bytes(PHOTO), 1000),
    (decode_png, lambda: _bytes(PNG_RGB), 1000),
    (decode_webp, lambda: _bytes(WEBP_ALPHA), 1000),
    (decode_image, lambda: _bytes(WEBP_ALPHA), 1000),
]


@pytest.mark.parametrize(("decode", "make", "limit"), BOMBS)
def test_pixel_limit_is_refused_in_both_modes(
    decode: Callable[..., Any], make: Callable[[], Any], limit: int
) -> None:
    data = make()
    fn = lambda data: decode(data, max_pixels=limit)  # noqa: E731
    message = f"exceeds the limit of {limit} pixels"
    with pytest.raises(DecodeError, match=message) as eager:
        fn(data)
    with pytest.raises(DecodeError, match=message) as compiled:
        _compiled(fn)(data)
    assert type(compiled.value) is type(eager.value)


@pytest.mark.parametrize("decode", [decode_jpeg, decode_png, decode_webp, decode_image])
def test_process_wide_limit_is_read_at_each_call(decode: Callable[..., Any]) -> None:
    files = {decode_jpeg: PHOTO, decode_webp: WEBP_ALPHA}
    data = _bytes(files.get(decode, PNG_RGB))
    compiled = _compiled(lambda data: decode(data))
    assert compiled(data).dim() == 3
    default = get_max_image_pixels()
    set_max_image_pixels(1000)
    try:
        with pytest.raises(DecodeError, match="exceeds the limit of 1000 pixels"):
            compiled(data)
        with pytest.raises(DecodeError, match="exceeds the limit of 1000 pixels"):
            decode(data)
    finally:
        set_max_image_pixels(default)
    assert compiled(data).dim() == 3


def test_bomb_over_the_default_limit_is_refused_in_both_modes() -> None:
    data = _png_claiming(PNG_RGB, 50_000, 60_000)
    for fn in (decode_png, _compiled(lambda data: decode_png(data))):
        with pytest.raises(DecodeError, match="60000x50000 image exceeds the limit"):
            fn(data)


# What compiled code cannot honour raises, naming the argument.


def test_sixteen_bit_png_without_dtype_raises_when_compiled() -> None:
    data = _bytes(PNG_16)
    assert decode_png(data).dtype == torch.uint16  # eager: uint16
    for decode in (decode_png, decode_image):
        with pytest.raises(TypeError, match="dtype="):
            _compiled(lambda data, decode=decode: decode(data))(data)
    # 8-bit files need no dtype: uint8 in both modes.
    _same(_compiled(lambda data: decode_png(data))(_bytes(PNG_RGB)), decode_png(_bytes(PNG_RGB)))


def test_twelve_bit_jpeg_hint_names_an_argument_that_exists() -> None:
    # decode_jpeg has no dtype=: its hint sends the caller to decode_image's, which works.
    data = encode_jpeg(torch.full((3, 8, 8), 2048 << 4, dtype=torch.uint16), quality=95)
    assert "dtype" not in inspect.signature(decode_jpeg).parameters
    with pytest.raises(TypeError, match=r"decode_image\(data, dtype=torch\.uint16\)"):
        _compiled(lambda data: decode_jpeg(data))(data)
    got = _compiled(lambda data: decode_image(data, dtype=torch.uint16))(data)
    _same(got.contiguous(), decode_jpeg(data).contiguous())


@pytest.mark.parametrize(
    ("call", "data"),
    [
        (lambda data: decode_jpeg(data, out=torch.empty(3, 606, 517, dtype=torch.uint8)), PHOTO),
        (lambda data: decode_png(data, out=torch.empty(3, 128, 128, dtype=torch.uint8)), PNG_RGB),
        (
            lambda data: decode_webp(data, out=torch.empty(4, 150, 200, dtype=torch.uint8)),
            WEBP_ALPHA,
        ),
        (lambda data: decode_jpeg(data), b"\xff\xd8\xff"),
        (lambda data: decode_image(data), str(PHOTO)),
        (T.DecodeCenterCrop(8), b"\xff\xd8\xff"),
    ],
    ids=["jpeg-out", "png-out", "webp-out", "bytes", "path-input", "fused-bytes"],
)
def test_what_compiled_code_cannot_honour_raises(call: Callable[..., Any], data: Any) -> None:
    data = _bytes(data) if isinstance(data, Path) else data
    with pytest.raises(Exception, match=r"torch\.compile"):
        _compiled(call)(data)


def test_ops_carry_every_argument() -> None:
    names = {
        "decode_jpeg": [
            "data",
            "mode",
            "apply_exif_orientation",
            "scale",
            "min_size",
            "roi",
            "strict",
            "max_pixels",
            "path",
        ],
        "decode_png": [
            "data",
            "mode",
            "apply_exif_orientation",
            "dtype",
            "strict",
            "max_pixels",
            "path",
        ],
    }
    names["decode_image"] = names["decode_webp"] = names["decode_png"]
    for op, expected in names.items():
        schema = getattr(torch.ops.trivium, op).default._schema
        assert [a.name for a in schema.arguments] == expected, op


def test_ops_pass_opcheck() -> None:
    jpeg, png16 = _bytes(PHOTO), _bytes(PNG_16)
    cases = [
        (torch.ops.trivium.decode_jpeg.default, (jpeg, 3), {"scale": 0.5, "roi": [8, 8, 64, 40]}),
        (torch.ops.trivium.decode_jpeg.default, (jpeg, 1), {"min_size": [100, 100]}),
        (torch.ops.trivium.decode_png.default, (png16, 0), {"dtype": torch.uint16}),
        (torch.ops.trivium.decode_image.default, (png16, 3), {"dtype": torch.float32}),
        (torch.ops.trivium.decode_image.default, (jpeg, 0), {"max_pixels": 0}),
        (torch.ops.trivium.decode_webp.default, (_bytes(WEBP_ALPHA), 2), {}),
        (
            torch.ops.trivium.decode_webp.default,
            (_bytes(WEBP_ROTATED), 0),
            {"dtype": torch.float32},
        ),
        (torch.ops.trivium.decode_image.default, (_lossless_webp(), 3), {}),
    ]
    for op, args, kwargs in cases:
        torch.library.opcheck(op, args, kwargs)


def test_fused_ops_pass_opcheck() -> None:
    items = [_bytes(PHOTO), _bytes(ROTATED), _bytes(PNG_RGB)]
    draws = torch.rand(3, 10, 4)
    cases = [
        (torch.ops.trivium.decode_center_crop.default, (items, [32, 40], 3, True)),
        (torch.ops.trivium.decode_resize.default, (items, [50], "bilinear", 80, True, 0, False)),
        (
            torch.ops.trivium.decode_resize.default,
            (items, [20, 30], "nearest", None, False, 1, True),
        ),
        (
            torch.ops.trivium.decode_random_resized_crop.default,
            (items, draws, [24, 28], [0.08, 1.0], [0.75, 1.25], "bicubic", True, 3, False),
        ),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args)


def test_ops_refuse_a_bomb_when_called_directly() -> None:
    with pytest.raises(DecodeError, match="exceeds the limit"):
        torch.ops.trivium.decode_jpeg(_jpeg_claiming(PHOTO, 50_000, 60_000))
    with pytest.raises(DecodeError, match="exceeds the limit of 1000 pixels"):
        torch.ops.trivium.decode_image(_bytes(PNG_RGB), max_pixels=1000)


# The io modules import one way: no cycle, not even through function-level imports.


def test_no_import_cycle_among_the_io_modules() -> None:
    package = Path(vision_io.__file__).parent / "image"
    modules = {p.stem: p for p in package.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "trivium.vision.io.image":
                    imported |= {a.name for a in node.names if a.name in modules}
                elif node.module.startswith("trivium.vision.io.image."):
                    imported.add(node.module.rsplit(".", 1)[1])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("trivium.vision.io.image."):
                        imported.add(alias.name.rsplit(".", 1)[1])
        graph[name] = imported & modules.keys()
    done: set[str] = set()

    def visit(name: str, stack: list[str]) -> None:
        assert name not in stack, f"import cycle: {' -> '.join([*stack, name])}"
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, [*stack, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert "ops" not in graph["codec"] and not graph["ops"] & {"jpeg", "png", "image"}


# The fused decode transforms under torch.compile.


def _large_jpeg() -> torch.Tensor:
    image = decode_jpeg(_bytes(PHOTO), ImageReadMode.RGB)
    big = torch.nn.functional.interpolate(image[None].float(), size=(700, 900), mode="bilinear")
    return encode_jpeg(big[0].round().clamp(0, 255).to(torch.uint8), quality=90)


@pytest.fixture(scope="module")
def encoded() -> dict[str, torch.Tensor]:
    return {
        "photo": _bytes(PHOTO),
        "large": _large_jpeg(),
        "gray": _bytes(GRAY_JPEG),
        "rotated": _bytes(ROTATED),
        "png": _bytes(PNG_RGB),
    }


@pytest.mark.parametrize(
    "make",
    [
        lambda: T.DecodeCenterCrop(64),
        lambda: T.DecodeCenterCrop((40, 90), mode=ImageReadMode.GRAY),
        lambda: T.DecodeCenterCrop(200, apply_exif_orientation=True),
        lambda: T.DecodeCenterCrop(1000),  # larger than every image: padded
        lambda: T.DecodeResize(64),
        lambda: T.DecodeResize((100, 120), antialias=False),
        lambda: T.DecodeResize(50, interpolation=T.InterpolationMode.BICUBIC, max_size=60),
        lambda: T.DecodeResize(80, interpolation=T.InterpolationMode.NEAREST),
        lambda: T.DecodeResize(90, apply_exif_orientation=True, mode=ImageReadMode.UNCHANGED),
    ],
)
def test_deterministic_fused_transforms_match_eager(encoded, make) -> None:
    transform = make()
    compiled = _compiled(transform)
    for name, data in encoded.items():
        _same(compiled(data), transform(data))
        assert name
    items = list(encoded.values())
    _same(compiled(items), transform(items))


def test_fused_random_resized_crop_compiles(encoded) -> None:
    transform = T.DecodeRandomResizedCrop((64, 48))
    compiled = _compiled(transform)
    items = list(encoded.values())
    for data in items:
        torch.manual_seed(7)
        first = compiled(data)
        torch.manual_seed(7)
        assert torch.equal(compiled(data), first)  # the same seed: the same crop
        assert first.shape == (3, 64, 48) and first.dtype == torch.uint8
    torch.manual_seed(3)
    batch = compiled(items)
    torch.manual_seed(3)
    assert torch.equal(compiled(items), batch)
    assert batch.shape == (len(items), 3, 64, 48) and batch.dtype == torch.uint8
    torch.manual_seed(4)
    assert not torch.equal(compiled(items), batch)  # another seed: other crops


def test_fused_random_resized_crop_draws_like_compiled_random_resized_crop(encoded) -> None:
    # Under compile the uniforms come from torch's default generator, as
    # RandomResizedCrop's do; the box is the one random_resized_crop_boxes makes of them.
    transform = T.DecodeRandomResizedCrop(56, scale=(0.2, 0.9))
    compiled = torch.compile(transform, fullgraph=True, backend="eager")
    for name, data in encoded.items():
        torch.manual_seed(11)
        got = compiled(data)
        torch.manual_seed(11)
        u = torch.rand(1, 10, 4)
        info = image_info(data)
        box = [int(v) for v in random_resized_crop_boxes(u, info.height, info.width, (0.2, 0.9))]
        image = decode_image(data, ImageReadMode.RGB)
        want = TF.resize(TF.crop(image, *box), [56, 56], antialias=True)
        assert got.shape == want.shape
        assert psnr(got.numpy(), want.numpy()) >= 30, name
        torch.manual_seed(11)
        assert torch.equal(compiled(data), got)


def test_fused_transform_errors_match_eager(encoded) -> None:
    transform = T.DecodeCenterCrop(32)
    compiled = _compiled(transform)
    bomb = _jpeg_claiming(PHOTO, 50_000, 60_000)
    for fn in (transform, compiled):
        with pytest.raises(DecodeError, match="exceeds the limit"):
            fn(bomb)
        with pytest.raises(DecodeError):
            fn(_bytes(TRUNCATED_JPEG))


def test_fused_transforms_compile_inside_a_compose(encoded) -> None:
    # The eval recipe: DecodeResize's output size is data-dependent, but at least
    # `size` on both sides, so the CenterCrop after it needs no branch on it.
    evaluate = T.Compose(
        [T.DecodeResize(40), T.CenterCrop(32), T.ToDtype(torch.float32, scale=True)]
    )
    train = T.Compose(
        [
            T.DecodeRandomResizedCrop(32),
            T.RandomHorizontalFlip(),
            T.ToDtype(torch.float32, scale=True),
            T.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
        ]
    )
    compiled_evaluate, compiled_train = _compiled(evaluate), _compiled(train)
    items = [encoded["photo"], encoded["large"], encoded["png"]]
    for data in items:
        _same(compiled_evaluate(data), evaluate(data))
    torch.manual_seed(1)
    batch = compiled_train(items)
    torch.manual_seed(1)
    assert torch.equal(compiled_train(items), batch)
    assert batch.shape == (3, 3, 32, 32) and batch.dtype == torch.float32


# The fused decode transforms on files deeper than 8 bits, and on decoded tensors.


def _twelve_bit_jpeg() -> torch.Tensor:
    return encode_jpeg(decode_png(_bytes(PNG_16), ImageReadMode.RGB), quality=95)


@pytest.mark.parametrize(
    "make",
    [
        lambda **k: T.DecodeCenterCrop(24, **k),
        lambda **k: T.DecodeResize(27, **k),
        lambda **k: T.DecodeResize([20, 30], interpolation=T.InterpolationMode.BICUBIC, **k),
    ],
)
def test_fused_transforms_on_deep_files_match_eager_with_a_dtype(make) -> None:
    items = [_bytes(PNG_16), _twelve_bit_jpeg()]
    transform = make(dtype=torch.uint16)
    compiled = _compiled(transform)
    for data in items:
        want = transform(data)
        assert want.dtype == torch.uint16
        _same(compiled(data), want)
    _same(compiled(items), transform(items))
    # Without dtype the output dtype is not known before decoding: as decode_image.
    with pytest.raises(TypeError, match=r"item 0 decodes to torch\.uint16.*dtype="):
        _compiled(make())(items[0])


def test_fused_random_resized_crop_on_a_deep_file_when_compiled() -> None:
    data = _bytes(PNG_16)
    compiled = torch.compile(
        T.DecodeRandomResizedCrop(20, dtype=torch.uint16), fullgraph=True, backend="eager"
    )
    for seed in range(3):
        torch.manual_seed(seed)
        got = compiled(data)
        torch.manual_seed(seed)
        u = torch.rand(1, 10, 4)
        info = image_info(data)
        box = [int(v) for v in random_resized_crop_boxes(u, info.height, info.width)]
        image = decode_image(data, ImageReadMode.RGB)
        _same(got.contiguous(), TF.resize(TF.crop(image, *box), [20, 20]).contiguous())


def test_fused_transforms_take_decoded_tensors_when_compiled() -> None:
    image = decode_png(_bytes(PNG_16), ImageReadMode.RGB)
    compiled = torch.compile(T.DecodeCenterCrop(20), fullgraph=True, backend="eager")
    _same(compiled(image), T.CenterCrop(20)(image))
    resized = torch.compile(T.DecodeResize(25), fullgraph=True, backend="eager")([image, image])
    assert all(torch.equal(r, T.Resize(25)(image)) for r in resized)
    with pytest.raises(Exception, match="encoded images only or decoded image tensors only"):
        compiled([image, _bytes(PNG_16)])


def test_fused_ops_with_a_dtype_pass_opcheck() -> None:
    items = [_bytes(PNG_16), _bytes(PNG_RGB)]
    u16 = torch.uint16
    cases = [
        (torch.ops.trivium.decode_center_crop.default, (items, [16, 20], 1, False, u16)),
        (
            torch.ops.trivium.decode_resize.default,
            (items, [20], "bilinear", None, True, 3, False, u16),
        ),
        (
            torch.ops.trivium.decode_random_resized_crop.default,
            (
                items,
                torch.rand(2, 10, 4),
                [12, 14],
                [0.08, 1.0],
                [0.75, 1.25],
                "bilinear",
                True,
                3,
                False,
                u16,
            ),
        ),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args)
