"""Format sniffing, header info, files, batches, output buffers, devices, torch.compile."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import (
    CORRUPT_DIR,
    DECODABLE_CORRUPT,
    JPEG_DIR,
    PNG_DIR,
    RECOVERED_CORRUPT,
    WEBP_DIR,
    pillow_array,
    refused_files,
    valid_jpegs,
    valid_pngs,
    valid_webps,
)
from PIL import Image

from trivium.core.errors import (
    DecodeError,
    DecodeWarning,
    EmptyInputError,
    UnsupportedFormatError,
)
from trivium.vision import _C
from trivium.vision.io import (
    ImageReadMode,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    image_info,
    read_file,
    read_image,
    set_max_image_pixels,
    sniff_format,
    write_file,
)
from trivium.vision.io.image.codec import find_format, formats

PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"


@pytest.mark.parametrize("path", valid_jpegs() + valid_pngs() + valid_webps(), ids=lambda p: p.name)
def test_image_info_matches_pillow(path: Path) -> None:
    info = image_info(path)
    pil = Image.open(path)
    assert (info.width, info.height) == pil.size
    assert info.format == pil.format.lower()
    if info.format == "jpeg":
        assert info.progressive == bool(pil.info.get("progressive") or pil.info.get("progression"))
        assert info.orientation == pil.getexif().get(0x0112, 0)


def test_exif_in_png_is_read() -> None:
    pil = Image.open(PNG_DIR / "exif2c08.png")
    assert image_info(PNG_DIR / "exif2c08.png").orientation == pil.getexif().get(0x0112, 0)


def test_decode_image_sniffs_jpeg_and_png() -> None:
    for path in (PHOTO, PNG_DIR / "pil-hopper.png"):
        image = decode_image(read_file(path), ImageReadMode.RGB)
        np.testing.assert_array_equal(image.numpy(), pillow_array(path, "RGB"))
    assert torch.equal(decode_image(str(PHOTO)), read_image(PHOTO))


@pytest.mark.parametrize(
    "path",
    [PHOTO, PNG_DIR / "pil-hopper.png", WEBP_DIR / "pil-hopper.webp"],
    ids=lambda p: p.suffix,
)
def test_registry_record_of_each_format_reads_and_decodes_its_files(path: Path) -> None:
    # One record per format: sniffing, the header reader, the public decoder and its op
    # all answer for the same file as Pillow does.
    data = read_file(path)
    record = find_format(bytes(data[:32].tolist()))
    assert record.name == sniff_format(data) == Image.open(path).format.lower()
    assert record in formats() and [f.name for f in formats()][:3] == ["jpeg", "png", "webp"]
    header = record.read_header(data.numpy())
    assert (header["width"], header["height"]) == Image.open(path).size
    want = pillow_array(path, "RGB")
    np.testing.assert_array_equal(record.decoder(data, ImageReadMode.RGB).numpy(), want)
    np.testing.assert_array_equal(record.op(data, int(ImageReadMode.RGB)).numpy(), want)
    other = next(f for f in formats() if f is not record)
    assert not other.matches(bytes(data[:16].tolist()))


@pytest.mark.parametrize("pil_format", ["JPEG", "PNG", "WEBP", "BMP", "TIFF", "PPM", "GIF"])
def test_one_format_table_sniffs_what_pillow_writes(pil_format: str) -> None:
    # The C++ table (csrc/formats.cpp) is the only one: it names the format of a file
    # Pillow writes as Pillow reads it back, gives its header, and the registry holds a
    # record for each of its rows, in its order.
    buffer = io.BytesIO()
    Image.new("RGB", (8, 4), (10, 200, 30)).save(buffer, pil_format)
    data = buffer.getvalue()
    name = Image.open(io.BytesIO(data)).format.lower()
    assert sniff_format(data) == find_format(data[:32]).name == name
    info = image_info(data)
    assert (info.format, info.width, info.height) == (name, 8, 4)
    assert [f.name for f in formats()] == [row[0] for row in _C.formats()]
    assert decode_image(data, ImageReadMode.RGB).shape == (3, 4, 8)


def test_unsupported_messages_name_the_registered_formats() -> None:
    # Python's sniff and the op's (trivium::decode_image) word them alike, from one table.
    ico = b"\x00\x00\x01\x00" + bytes(20)
    cases = [(ico, UnsupportedFormatError), (b"x" * 20, DecodeError), (b"", EmptyInputError)]
    for data, error in cases:
        with pytest.raises(error) as python_side:
            sniff_format(data, path="a.bin")
        with pytest.raises(error) as op_side:
            decode_image(data, path="a.bin")
        assert str(python_side.value) == str(op_side.value)
        names = ("JPEG", "PNG", "WebP", "GIF", "TIFF") if data else ()
        assert all(name in str(op_side.value) for name in names)


@pytest.mark.parametrize("fmt", ["ICO"])
def test_other_formats_raise_unsupported(fmt: str) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, fmt)
    with pytest.raises(UnsupportedFormatError, match=fmt):
        decode_image(buffer.getvalue())


@pytest.mark.parametrize("data", [b"", b"\x00" * 5, b"hello world, not an image"])
def test_non_images_raise_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_image(data)
    with pytest.raises(DecodeError):
        decode_jpeg(data)
    with pytest.raises(DecodeError):
        decode_png(data)


@pytest.mark.parametrize("path", refused_files(), ids=lambda p: p.name)
def test_corrupt_files_raise_decode_error_naming_the_file(path: Path) -> None:
    with pytest.raises(DecodeError) as caught:
        read_image(path)
    assert str(path) in str(caught.value) and caught.value.path == str(path)


@pytest.mark.parametrize("name", sorted(RECOVERED_CORRUPT))
def test_recovered_damage_decodes_with_one_warning_naming_the_file(name: str) -> None:
    path = CORRUPT_DIR / name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = read_image(path, ImageReadMode.RGB)
    assert [w.category for w in caught] == [DecodeWarning]
    assert str(caught[0].message).startswith(f"{path}: ")
    np.testing.assert_array_equal(image.numpy(), pillow_array(path, "RGB"))
    with pytest.raises(DecodeError) as refused:
        read_image(path, strict=True)
    assert refused.value.path == str(path)


def test_decodable_damage_matches_pillow() -> None:
    for name in DECODABLE_CORRUPT:
        image = read_image(CORRUPT_DIR / name)
        np.testing.assert_array_equal(image.numpy(), pillow_array(CORRUPT_DIR / name, "RGB"))


def test_global_pixel_limit() -> None:
    try:
        set_max_image_pixels(1000)
        with pytest.raises(DecodeError, match="exceeds the limit of 1000 pixels"):
            read_image(PNG_DIR / "pil-hopper.png")
    finally:
        set_max_image_pixels(178_956_970)
    assert read_image(PNG_DIR / "pil-hopper.png").shape == (3, 128, 128)
    with pytest.raises(ValueError):
        set_max_image_pixels(0)


def test_read_and_write_file(tmp_path: Path) -> None:
    data = read_file(PHOTO)
    assert data.dtype == torch.uint8 and data.dim() == 1
    assert bytes(data.numpy()) == PHOTO.read_bytes()
    write_file(tmp_path / "copy.jpg", data)
    assert (tmp_path / "copy.jpg").read_bytes() == PHOTO.read_bytes()
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "missing.jpg")
    with pytest.raises(FileNotFoundError, match=r"missing\.png"):
        read_image(tmp_path / "missing.png")


def test_input_types() -> None:
    raw = PHOTO.read_bytes()
    expected = decode_jpeg(read_file(PHOTO))
    for data in (raw, bytearray(raw), memoryview(raw), np.frombuffer(raw, np.uint8)):
        assert torch.equal(decode_jpeg(data), expected)
    with pytest.raises(TypeError, match="1-D uint8"):
        decode_jpeg(read_file(PHOTO).to(torch.int32))
    with pytest.raises(TypeError):
        decode_jpeg("not bytes")  # type: ignore[arg-type]


def test_batch_decode_equals_single_decodes_in_order() -> None:
    paths = valid_jpegs()[:12] + valid_pngs()[:12]
    batch = decode_image([read_file(p) for p in paths], ImageReadMode.RGB)
    assert len(batch) == len(paths)
    for path, image in zip(paths, batch, strict=True):
        assert torch.equal(image, read_image(path, ImageReadMode.RGB))
    jpegs = [read_file(p) for p in valid_jpegs()]
    assert all(
        torch.equal(a, b)
        for a, b in zip(decode_jpeg(jpegs), [decode_jpeg(d) for d in jpegs], strict=True)
    )


def test_batch_errors_name_the_item() -> None:
    good = read_file(PHOTO)
    with pytest.raises(DecodeError, match=r"<batch item 2>"):
        decode_jpeg([good, good, read_file(CORRUPT_DIR / "tv-corrupt.jpg")])


def test_decode_into_a_channels_last_buffer() -> None:
    data = read_file(PHOTO)
    buffer = torch.empty(606, 517, 3, dtype=torch.uint8)
    out = buffer.permute(2, 0, 1)
    result = decode_jpeg(data, out=out)
    assert result.data_ptr() == buffer.data_ptr()
    assert torch.equal(out, decode_jpeg(data))


def test_decode_into_a_contiguous_buffer_copies() -> None:
    data = read_file(PNG_DIR / "pil-hopper.png")
    out = torch.zeros(3, 128, 128, dtype=torch.uint8)
    result = decode_png(data, out=out)
    assert result is out and torch.equal(out, decode_png(data))


def test_decode_into_a_wrong_buffer_raises() -> None:
    with pytest.raises(ValueError, match="shape"):
        decode_jpeg(
            read_file(PHOTO), out=torch.empty(100, 100, 3, dtype=torch.uint8).permute(2, 0, 1)
        )


def test_cpu_device_argument() -> None:
    assert decode_jpeg(read_file(PHOTO), device="cpu").device.type == "cpu"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_decode_to_cuda_goes_through_pinned_memory() -> None:
    data = read_file(PHOTO)
    on_gpu = decode_jpeg(data, device="cuda")
    assert on_gpu.device.type == "cuda"
    torch.cuda.synchronize()
    assert torch.equal(on_gpu.cpu(), decode_jpeg(data))
    png = decode_png(read_file(PNG_DIR / "basn2c16.png"), device="cuda")
    assert png.device.type == "cuda" and png.dtype == torch.uint16
    batch = decode_image([data, read_file(PNG_DIR / "pil-hopper.png")], device="cuda")
    assert all(image.device.type == "cuda" for image in batch)
    pinned = torch.empty(606, 517, 3, dtype=torch.uint8, pin_memory=True).permute(2, 0, 1)
    assert decode_jpeg(data, out=pinned).is_pinned()


def test_decoders_work_inside_torch_compile() -> None:
    jpeg, png = read_file(PHOTO), read_file(PNG_DIR / "basn6a08.png")

    def pipeline(jpeg_bytes: torch.Tensor, png_bytes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = decode_jpeg(jpeg_bytes, ImageReadMode.RGB, scale=0.5).float() / 255
        b = decode_png(png_bytes, ImageReadMode.RGB).float() / 255
        c = decode_image(png_bytes, ImageReadMode.GRAY)
        return a.mean(dim=(1, 2)), b.mean(dim=(1, 2)), c

    compiled = torch.compile(pipeline, fullgraph=True, dynamic=True)
    for got, want in zip(compiled(jpeg, png), pipeline(jpeg, png), strict=True):
        torch.testing.assert_close(got, want)


def test_custom_ops_are_registered() -> None:
    data = read_file(PNG_DIR / "pil-hopper.png")
    image = torch.ops.trivium.decode_image(data, int(ImageReadMode.RGB), False)
    assert torch.equal(image, decode_png(data, ImageReadMode.RGB))
    torch.library.opcheck(torch.ops.trivium.decode_png.default, (data, 3, False))


def test_encoders_reject_bad_tensors() -> None:
    from trivium.core.errors import EncodeError

    with pytest.raises(EncodeError, match="C in"):
        encode_jpeg(torch.zeros(4, 8, 8, dtype=torch.uint8))
    with pytest.raises(TypeError, match="uint8"):
        encode_jpeg(torch.zeros(3, 8, 8))
    with pytest.raises(EncodeError, match="quality"):
        encode_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8), quality=0)
    with pytest.raises(EncodeError, match="empty"):
        encode_jpeg(torch.zeros(3, 0, 8, dtype=torch.uint8))
    with pytest.raises(EncodeError):
        encode_png(torch.zeros(5, 8, 8, dtype=torch.uint8))
    with pytest.raises(TypeError):
        encode_png(torch.zeros(3, 8, 8, dtype=torch.float32))
    with pytest.raises(EncodeError, match="compression_level"):
        encode_png(torch.zeros(3, 8, 8, dtype=torch.uint8), compression_level=10)
