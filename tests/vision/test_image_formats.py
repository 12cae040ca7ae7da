"""GIF, BMP, TIFF, PPM/PGM, AVIF and HEIC through decode_image, read_image and image_info.

The files are written by Pillow (and pillow-heif) in the test, in every mode the
formats store; the expected pixels are Pillow's own decode, converted as
``decode_png`` converts (palette with transparency to RGBA, gray from colour by luma).
"""

from __future__ import annotations

import functools
import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps, ImageSequence, features

from trivium.core.errors import DecodeError, UnsupportedFormatError
from trivium.vision.io import (
    ImageReadMode,
    decode_avif,
    decode_gif,
    decode_heic,
    decode_image,
    image_info,
    read_image,
)

MODES = list(ImageReadMode)[:5]
_RNG = np.random.default_rng(7)
RGB = Image.fromarray(_RNG.integers(0, 256, (13, 17, 3), dtype=np.uint8))
GRAY16 = Image.fromarray(_RNG.integers(0, 65536, (13, 17)).astype(np.uint16))


def _encode(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


# (format, Pillow mode written, Pillow mode whose conversions give the expected pixels)
FILES = {
    "BMP-1": (RGB.convert("1"), "BMP"),
    "BMP-L": (RGB.convert("L"), "BMP"),
    "BMP-P": (RGB.convert("P"), "BMP"),
    "BMP-RGB": (RGB, "BMP"),
    "TIFF-1": (RGB.convert("1"), "TIFF"),
    "TIFF-L": (RGB.convert("L"), "TIFF"),
    "TIFF-LA": (RGB.convert("LA"), "TIFF"),
    "TIFF-P": (RGB.convert("P"), "TIFF"),
    "TIFF-RGB": (RGB, "TIFF"),
    "TIFF-RGBA": (RGB.convert("RGBA"), "TIFF"),
    "TIFF-CMYK": (RGB.convert("CMYK"), "TIFF"),
    "PBM": (RGB.convert("1"), "PPM"),
    "PGM": (RGB.convert("L"), "PPM"),
    "PPM": (RGB, "PPM"),
    "GIF-P": (RGB.convert("P"), "GIF"),
}


def _reference(data: bytes, mode: ImageReadMode) -> np.ndarray:
    """Pillow's decode as [C, H, W] in ``mode`` (UNCHANGED: gray, gray+alpha, RGB or RGBA)."""
    image = Image.open(io.BytesIO(data))
    has_alpha = image.mode in ("LA", "RGBA") or (
        image.mode == "P" and "transparency" in image.info and image.format != "GIF"
    )
    gray = image.mode in ("1", "L", "LA")
    unchanged = ("LA" if has_alpha else "L") if gray else ("RGBA" if has_alpha else "RGB")
    base = image.convert(unchanged)
    target = {
        ImageReadMode.UNCHANGED: unchanged,
        ImageReadMode.GRAY: "L",
        ImageReadMode.GRAY_ALPHA: "LA",
        ImageReadMode.RGB: "RGB",
        ImageReadMode.RGB_ALPHA: "RGBA",
    }[mode]
    if target in ("L", "LA") and unchanged in ("RGB", "RGBA"):
        # Gray from colour drops alpha without compositing, as decode_png does.
        luma = np.asarray(base.convert("RGB").convert("L"))[..., None]
        alpha = np.asarray(base)[..., 3:] if unchanged == "RGBA" else np.full_like(luma, 255)
        array = luma if target == "L" else np.concatenate([luma, alpha], -1)
    else:
        array = np.asarray(base.convert(target))
    array = array[..., None] if array.ndim == 2 else array
    return array.transpose(2, 0, 1)


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_every_mode_matches_pillow(name: str, mode: ImageReadMode) -> None:
    image, fmt = FILES[name]
    data = _encode(image, fmt)
    got = decode_image(data, mode)
    np.testing.assert_array_equal(got.numpy(), _reference(data, mode))
    assert got.dtype == torch.uint8


@pytest.mark.parametrize("fmt", ["TIFF", "PPM", "PNG"])
def test_16_bit_gray_gives_uint16_as_png_does(fmt: str) -> None:
    data = _encode(GRAY16, fmt)
    image = decode_image(data)
    assert image.dtype == torch.uint16 and image_info(data).bit_depth == 16
    np.testing.assert_array_equal(image[0].numpy(), np.asarray(GRAY16))
    rgb = decode_image(data, ImageReadMode.RGB_ALPHA)
    assert torch.equal(rgb[:3], image.expand(3, -1, -1)) and bool((rgb[3] == 65535).all())
    high_bytes = (image.to(torch.int32) >> 8).to(torch.uint8)
    assert torch.equal(decode_image(data, dtype=torch.uint8), high_bytes)


def test_16_bit_ppm_gives_uint16_scaled_as_pillow_scales_pgm() -> None:
    samples = _RNG.integers(0, 1024, (3, 4, 3))
    data = b"P6 4 3 1023\n" + samples.astype(">u2").tobytes()
    image = decode_image(data)
    assert image.dtype == torch.uint16 and image_info(data).bit_depth == 16
    want = np.round(samples / 1023 * 65535).astype(np.uint16).transpose(2, 0, 1)
    np.testing.assert_array_equal(image.numpy(), want)
    # Pillow reads these at 8 bits: the high bytes agree within rounding.
    eight = np.asarray(Image.open(io.BytesIO(data))).transpose(2, 0, 1).astype(int)
    assert np.abs((image.numpy().astype(int) >> 8) - eight).max() <= 1


def test_image_info_reads_only_the_header() -> None:
    for name, (image, fmt) in FILES.items():
        data = _encode(image, fmt)
        info = image_info(data)
        assert info.format == Image.open(io.BytesIO(data)).format.lower(), name
        assert (info.width, info.height) == (17, 13), name
        assert info.channels == decode_image(data).shape[-3], name


def test_tiff_exif_orientation_as_pillow_turns_it() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6
    data = _encode(RGB, "TIFF", exif=exif)
    assert image_info(data).orientation == 6
    turned = decode_image(data, apply_exif_orientation=True)
    want = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
    np.testing.assert_array_equal(turned.numpy(), want.transpose(2, 0, 1))


# ---- GIF ----


def _frames(count: int, size=(10, 8), colors: int = 6) -> list[Image.Image]:
    frames = []
    for _ in range(count):
        frame = Image.fromarray(_RNG.integers(0, colors, size[::-1], dtype=np.uint8), "P")
        frame.putpalette(list(_RNG.integers(0, 256, 3 * colors)))
        frames.append(frame)
    return frames


@pytest.mark.parametrize("disposal", [0, 1])
def test_animated_gif_matches_pillows_frames(disposal: int) -> None:
    # With disposal 0 / 1 and no transparency every frame is drawn over the previous
    # one, in torchvision's decoder as in Pillow's (which follows the GIF specification).
    frames = _frames(4)
    data = _encode(frames[0], "GIF", save_all=True, append_images=frames[1:], disposal=disposal,
                   optimize=False)  # fmt: skip
    want = np.stack([
        np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(io.BytesIO(data)))
    ]).transpose(0, 3, 1, 2)  # fmt: skip
    got = decode_gif(data)
    assert got.shape == (4, 3, 8, 10) and got.dtype == torch.uint8
    np.testing.assert_array_equal(got.numpy(), want)
    assert torch.equal(decode_image(data), got)
    gray = decode_image(data, ImageReadMode.GRAY)
    assert gray.shape == (4, 1, 8, 10)


def _hand_gif(frames: list[dict], background: int = 0) -> bytes:
    """A 4x2 GIF with a 4-colour global palette (black, red, green, blue); each frame
    one colour at its offset and size, with its disposal and transparent index."""
    out = b"GIF89a\x04\x00\x02\x00\xf1" + bytes([background, 0])
    out += b"\x00\x00\x00\xff\x00\x00\x00\xff\x00\x00\x00\xff"
    for f in frames:
        flags = (f["disposal"] << 2) | (1 if f.get("transparent") is not None else 0)
        out += b"\x21\xf9\x04" + bytes([flags, 0, 0, f.get("transparent") or 0, 0])
        left, top, width, height = f["box"]
        out += b"," + b"".join(v.to_bytes(2, "little") for v in (left, top, width, height))
        out += b"\x00" + _lzw_solid(f["color"], width * height)
    return out + b";"


def _lzw_solid(index: int, count: int) -> bytes:
    """LZW data (minimum code size 2) of ``count`` pixels of one palette index.

    A clear code before every two pixels keeps the dictionary at two entries, so that
    every code is 3 bits wide: clear (4), the index, the index, ..., end (5).
    """
    codes = []
    for i in range(count):
        codes += [4, index] if i % 2 == 0 else [index]
    codes.append(5)
    bits = sum(code << (3 * i) for i, code in enumerate(codes))
    data = bits.to_bytes((3 * len(codes) + 7) // 8, "little")
    blocks = b"".join(
        bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255)
    )
    return b"\x02" + blocks + b"\x00"


BLACK, RED, GREEN, BLUE = (0, 0, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255)


def _canvas(*rows: tuple) -> np.ndarray:
    return np.array(rows, np.uint8).transpose(2, 0, 1)


def test_gif_disposal_as_torchvision_reads_it() -> None:
    # torchvision starts a frame from the background when *its own* disposal method is
    # 2, and from the previous frame otherwise (0, 1 and 3 alike).
    full = {"box": (0, 0, 4, 2), "color": 1, "disposal": 0}  # red everywhere
    corner = {"box": (0, 0, 2, 1), "color": 3}  # blue at the top left
    for disposal, rest in [(0, RED), (1, RED), (2, BLACK), (3, RED)]:
        data = _hand_gif([full, corner | {"disposal": disposal}])
        got = decode_gif(data).numpy()
        np.testing.assert_array_equal(got[0], _canvas([RED] * 4, [RED] * 4))
        np.testing.assert_array_equal(got[1], _canvas([BLUE, BLUE, rest, rest], [rest] * 4))
    # A transparent index shows what the frame started from.
    data = _hand_gif([full, {"box": (1, 0, 2, 2), "color": 2, "transparent": 2, "disposal": 1}])
    np.testing.assert_array_equal(decode_gif(data).numpy()[1], _canvas([RED] * 4, [RED] * 4))
    # The background is the global palette's entry it names.
    data = _hand_gif([{"box": (1, 1, 1, 1), "color": 3, "disposal": 0}], background=2)
    np.testing.assert_array_equal(
        decode_gif(data).numpy(), _canvas([GREEN] * 4, [GREEN, BLUE, GREEN, GREEN])
    )


def test_single_frame_gif_is_three_dimensional_and_frames_count_in_the_limit() -> None:
    data = _encode(_frames(1)[0], "GIF")
    assert decode_gif(data).shape == (3, 8, 10)
    frames = _frames(3)
    animated = _encode(frames[0], "GIF", save_all=True, append_images=frames[1:])
    with pytest.raises(DecodeError, match="of 3 frames exceeds the limit of 200 pixels"):
        decode_gif(animated, max_pixels=200)
    assert decode_gif(animated, max_pixels=240).shape == (3, 3, 8, 10)


# ---- Damage and limits ----


@pytest.mark.parametrize("name", ["BMP-RGB", "TIFF-RGB", "PPM", "GIF-P"])
def test_damaged_files_raise_decode_error_naming_the_file(name: str, tmp_path: Path) -> None:
    image, fmt = FILES[name]
    data = _encode(image, fmt)
    for damaged in (data[: len(data) // 2], data[:4] + b"\x00" * 40):
        path = tmp_path / f"bad.{fmt.lower()}"
        path.write_bytes(damaged)
        for strict in (None, True, False):
            with pytest.raises(DecodeError) as caught:
                read_image(path, strict=strict)
            assert caught.value.path == str(path)
            assert not caught.value.__cause__  # Pillow's exception does not leak


@pytest.mark.parametrize("name", ["BMP-RGB", "TIFF-RGB", "PPM"])
def test_pixel_limit_is_checked_from_the_header(name: str) -> None:
    image, fmt = FILES[name]
    data = _encode(image, fmt)
    with pytest.raises(DecodeError, match="17x13 image exceeds the limit of 100 pixels"):
        decode_image(data, max_pixels=100)


def test_the_cpp_op_without_python_names_the_formats_decoded_in_python() -> None:
    op = torch.ops.trivium.decode_image.default
    after = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.BackendSelect)
    for name in ("BMP-RGB", "TIFF-RGB", "PPM", "GIF-P"):
        image, fmt = FILES[name]
        data = torch.frombuffer(bytearray(_encode(image, fmt)), dtype=torch.uint8)
        keys = torch._C._dispatch_keys(data) & after
        with pytest.raises(
            NotImplementedError, match=f"{name.split('-')[0][:3]}.* decoded in Python"
        ):
            op.redispatch(keys, data, 0, False, None, None, -1, "x")
        assert torch.equal(op(data, 0), decode_image(data).contiguous())


def test_decode_image_of_a_pillow_format_under_torch_compile() -> None:
    data = torch.frombuffer(bytearray(_encode(RGB, "BMP")), dtype=torch.uint8)
    compiled = torch.compile(lambda d: decode_image(d, ImageReadMode.GRAY), fullgraph=True)
    assert torch.equal(compiled(data), decode_image(data, ImageReadMode.GRAY))


def test_decoding_in_dataloader_workers(tmp_path: Path) -> None:
    paths = []
    for name in ("BMP-RGB", "TIFF-RGBA", "PPM", "GIF-P"):
        image, fmt = FILES[name]
        paths.append(tmp_path / f"{name}.{fmt.lower()}")
        paths[-1].write_bytes(_encode(image, fmt))

    loader = torch.utils.data.DataLoader(
        [str(p) for p in paths],
        batch_size=None,
        num_workers=2,
        collate_fn=functools.partial(read_image, mode=ImageReadMode.RGB),
        multiprocessing_context="spawn",
    )
    for path, image in zip(paths, loader, strict=True):
        np.testing.assert_array_equal(
            image.numpy(), _reference(path.read_bytes(), ImageReadMode.RGB)
        )


@pytest.mark.skipif(not features.check("avif"), reason="Pillow without AVIF support")
def test_avif_matches_pillow() -> None:
    data = _encode(RGB, "AVIF", quality=90)
    assert image_info(data).format == "avif"
    for decode in (decode_avif, decode_image):
        np.testing.assert_array_equal(
            decode(data, ImageReadMode.RGB).numpy(), _reference(data, ImageReadMode.RGB)
        )
    with pytest.raises(DecodeError, match="not a AVIF image"):
        decode_avif(_encode(RGB, "PNG"))


def test_heic_matches_pillow_heif_or_says_which_extra_to_install() -> None:
    try:
        import pillow_heif
    except ImportError:
        with pytest.raises(UnsupportedFormatError, match=r"trivium-vision\[heif\]"):
            decode_heic(b"\x00\x00\x00\x18ftypheic" + bytes(40))
        return
    heif = pillow_heif.from_pillow(RGB)
    buffer = io.BytesIO()
    heif.save(buffer, quality=90)
    data = buffer.getvalue()
    assert image_info(data).format == "heic"
    want = np.asarray(pillow_heif.open_heif(io.BytesIO(data)).to_pillow().convert("RGB"))
    np.testing.assert_array_equal(
        decode_heic(data, ImageReadMode.RGB).numpy(), want.transpose(2, 0, 1)
    )
