"""WebP decode and encode against Pillow (which bundles its own libwebp).

Inputs: Pillow's WebP test files (tests/assets/images/webp: lossy, lossy with alpha,
EXIF orientations, a 42-frame animation) and files Pillow makes here from a real
photo: lossy, lossless, with alpha, gray, animated. Lossy decode is exact too: VP8
decoding and libwebp's YUV -> RGB conversion are integer arithmetic that both
libwebp builds share.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR, WEBP_DIR, pillow_array, psnr, valid_webps
from PIL import Image, ImageOps

from trivium.core.errors import DecodeError, DecodeWarning, EncodeError, UnsupportedFormatError
from trivium.vision.datasets import ImageFolder
from trivium.vision.io import (
    ImageReadMode,
    decode_image,
    decode_webp,
    encode_webp,
    image_info,
    read_file,
    read_image,
    sniff_format,
    write_webp,
)

PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"
ANIMATION = WEBP_DIR / "pil-iss634.webp"  # 42 frames with alpha, 245x245
STILLS = [p for p in valid_webps() if p != ANIMATION]
# Each read mode and the Pillow mode that gives the same channels (None: the file's own).
MODES = {
    ImageReadMode.UNCHANGED: None,
    ImageReadMode.GRAY: "L",
    ImageReadMode.GRAY_ALPHA: "LA",
    ImageReadMode.RGB: "RGB",
    ImageReadMode.RGB_ALPHA: "RGBA",
}


def _photo(size: tuple[int, int] | None = None) -> Image.Image:
    image = Image.open(PHOTO).convert("RGB")
    return image if size is None else image.resize(size, Image.Resampling.LANCZOS)


def _with_alpha(image: Image.Image) -> Image.Image:
    """``image`` with an alpha ramp from 0 (transparent) to 255 down its rows."""
    w, h = image.size
    ramp = np.repeat((np.arange(h) * 255 // (h - 1)).astype(np.uint8)[:, None], w, axis=1)
    out = image.copy()
    out.putalpha(Image.fromarray(ramp))
    return out


def _save(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "WEBP", **options)
    return buffer.getvalue()


def _animation(lossless: bool, frames: int = 6) -> bytes:
    """Frames of the photo, moving and fading, of different durations (Pillow stores
    only each frame's changed rectangle, so decoding must composite)."""
    base = _photo((96, 72))
    images = []
    for i in range(frames):
        frame = _with_alpha(base.rotate(15 * i, translate=(3 * i, 0)))
        frame.paste((255, 0, 0, 128), (8 * i, 8, 8 * i + 12, 20))
        images.append(frame)
    buffer = io.BytesIO()
    durations = [40 + 10 * i for i in range(frames)]
    images[0].save(
        buffer, "WEBP", save_all=True, append_images=images[1:], duration=durations,
        lossless=lossless, quality=70,
    )  # fmt: skip
    return buffer.getvalue()


def _first_frames(animation: bytes, count: int) -> bytes:
    """The animation's chunks up to its ``count``-th frame (ANMF), as a file of its own."""
    end, seen = 12, 0
    while seen < count:
        kind, size = (
            animation[end : end + 4],
            int.from_bytes(animation[end + 4 : end + 8], "little"),
        )
        end += 8 + size + (size & 1)
        seen += kind == b"ANMF"
    return b"RIFF" + (end - 8).to_bytes(4, "little") + animation[8:end]


MADE: dict[str, Callable[[], bytes]] = {
    "lossy": lambda: _save(_photo(), quality=80),
    "lossy-alpha": lambda: _save(_with_alpha(_photo()), quality=80),
    "lossless": lambda: _save(_photo(), lossless=True),
    "lossless-alpha": lambda: _save(_with_alpha(_photo()), lossless=True, exact=True),
    "gray": lambda: _save(_photo().convert("L"), quality=90),
    "small-odd": lambda: _save(_photo((7, 5)), quality=60, method=0),
}


@pytest.fixture(scope="module")
def made() -> dict[str, bytes]:
    files = {name: make() for name, make in MADE.items()}
    files["animation-lossy"] = _animation(lossless=False)
    files["animation-lossless"] = _animation(lossless=True)
    return files


# ---- decode: equal to Pillow's


@pytest.mark.parametrize("mode", list(MODES), ids=lambda m: m.name)
@pytest.mark.parametrize("path", STILLS, ids=lambda p: p.name)
def test_files_decode_as_pillow_decodes_them(path: Path, mode: ImageReadMode) -> None:
    got = decode_webp(read_file(path), mode)
    np.testing.assert_array_equal(got.numpy(), pillow_array(path, MODES[mode]))
    assert torch.equal(read_image(path, mode), got)


@pytest.mark.parametrize("mode", list(MODES), ids=lambda m: m.name)
@pytest.mark.parametrize("name", list(MADE))
def test_made_files_decode_as_pillow_decodes_them(
    made: dict[str, bytes], name: str, mode: ImageReadMode
) -> None:
    data = made[name]
    got = decode_webp(data, mode)
    np.testing.assert_array_equal(got.numpy(), pillow_array(data, MODES[mode]))
    assert got.dtype == torch.uint8 and torch.equal(decode_image(data, mode), got)


@pytest.mark.parametrize("source", ["iss634", "animation-lossy", "animation-lossless"])
def test_animation_gives_every_composited_frame(made: dict[str, bytes], source: str) -> None:
    data = ANIMATION.read_bytes() if source == "iss634" else made[source]
    pil = Image.open(io.BytesIO(data))
    frames = pil.n_frames
    assert frames > 1 and image_info(data).frames == frames
    got = decode_webp(data)
    assert got.shape == (frames, len(pil.getbands()), pil.height, pil.width)
    gray = decode_image(data, ImageReadMode.GRAY)
    assert gray.shape == (frames, 1, pil.height, pil.width)
    for i in range(frames):
        pil.seek(i)
        np.testing.assert_array_equal(got[i].numpy(), pillow_array(pil.copy()), err_msg=f"{i}")
        np.testing.assert_array_equal(gray[i].numpy(), pillow_array(pil.copy(), "L"))
    assert not torch.equal(got[0], got[-1])


def test_one_frame_animation_is_an_image(made: dict[str, bytes]) -> None:
    data = _first_frames(made["animation-lossy"], 1)
    assert b"ANMF" in data and image_info(data).frames == Image.open(io.BytesIO(data)).n_frames == 1
    got = decode_webp(data)
    np.testing.assert_array_equal(got.numpy(), pillow_array(data))
    assert torch.equal(got, decode_webp(made["animation-lossy"])[0])
    assert torch.equal(
        torch.ops.trivium.decode_webp(torch.frombuffer(bytearray(data), dtype=torch.uint8)), got
    )


def test_image_info_reads_the_header(made: dict[str, bytes]) -> None:
    for path in valid_webps():
        info, pil = image_info(path), Image.open(path)
        assert (info.format, info.width, info.height) == ("webp", *pil.size)
        assert info.channels == len(pil.getbands()) and info.bit_depth == 8
        assert info.frames == getattr(pil, "n_frames", 1)
        assert info.orientation == pil.getexif().get(0x0112, 0)
        assert sniff_format(read_file(path)) == "webp"
    assert image_info(made["lossless"]).lossless and not image_info(made["lossy"]).lossless
    assert image_info(made["lossy"]).color_space == "YUV"
    assert image_info(made["lossless-alpha"]).color_space == "RGBA"


@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_exif_orientation_is_undone_as_pillow_undoes_it(orientation: int) -> None:
    path = WEBP_DIR / f"pil-hopper_orientation_{orientation}.webp"
    assert image_info(path).orientation == orientation
    got = decode_webp(read_file(path), apply_exif_orientation=True)
    want = pillow_array(ImageOps.exif_transpose(Image.open(path)), "RGB")
    np.testing.assert_array_equal(got.numpy(), want)
    assert torch.equal(decode_image(str(path), apply_exif_orientation=True), got)
    assert not torch.equal(decode_webp(read_file(path)), got)


def test_dtype_device_and_out(made: dict[str, bytes]) -> None:
    data = made["lossy-alpha"]
    image = decode_webp(data)
    floats = decode_webp(data, dtype=torch.float32)
    assert torch.equal(floats, image.float() / 255)
    out = torch.empty(image.shape[1], image.shape[2], 4, dtype=torch.uint8).permute(2, 0, 1)
    assert decode_webp(data, out=out).data_ptr() == out.data_ptr()
    assert torch.equal(out, image)


def test_a_list_decodes_in_parallel_and_errors_name_the_item(made: dict[str, bytes]) -> None:
    items = [made["lossy"], made["lossless-alpha"], made["animation-lossy"], made["gray"]]
    got = decode_webp(items)
    assert all(torch.equal(g, decode_webp(d)) for g, d in zip(got, items, strict=True))
    assert [g.dim() for g in got] == [3, 3, 4, 3]
    with pytest.raises(DecodeError, match=r"^<batch item 1>: "):
        decode_webp([made["lossy"], made["lossy"][:100]])


def _outcome(decode: Callable[[], torch.Tensor]) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: object = decode()
        except Exception as e:  # compared below, whatever it is
            result = (type(e), str(e))
    return result, [str(w.message) for w in caught if w.category is DecodeWarning]


@pytest.mark.parametrize("strict", [None, True, False])
def test_the_direct_call_gives_what_the_op_gives(made: dict[str, bytes], strict) -> None:
    # decode_webp of one input calls the codec without the dispatcher, a list goes
    # through the op trivium::decode_webp: the same pixels, layout, errors and
    # warnings, damaged files and animations included.
    lossy, animation = made["lossy"], made["animation-lossless"]
    inputs = [made["lossy-alpha"], made["gray"], animation, lossy[: len(lossy) // 2]]
    inputs += [animation[: len(animation) // 2], _riff_size(lossy, len(lossy) + 99)]
    inputs += [b"RIFF\x04\x00\x00\x00WEBP"]
    for data in inputs:
        for mode in MODES:
            kwargs = {"mode": mode, "strict": strict, "path": "a.webp"}
            direct = _outcome(lambda d=data, k=kwargs: decode_webp(d, **k))
            op = _outcome(lambda d=data, k=kwargs: decode_webp([d], **k)[0])
            if isinstance(direct[0], torch.Tensor):
                assert torch.equal(direct[0], op[0]) and direct[0].stride() == op[0].stride()
                assert direct[1] == op[1]
            else:
                assert direct == op


# ---- decode: damaged and hostile input


def _riff_size(data: bytes, size: int) -> bytes:
    return data[:4] + size.to_bytes(4, "little") + data[8:]


# The damaged-image rule (the vision guide's "Bad input" table): a file cut short raises
# by default and with strict=True, and strict=False gives the part decoded; whole image
# data in a container cut or mis-sized after it decodes with one warning by default.
PARTIAL = "only part of the image decodes"


def _one_warning(decode: Callable[[], torch.Tensor], match: str) -> tuple[torch.Tensor, str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = decode()
    assert [w.category for w in caught] == [DecodeWarning]
    message = str(caught[0].message)
    assert re.search(match, message), message
    return image, message


@pytest.mark.parametrize("name", ["lossy", "lossless", "lossy-alpha", "lossless-alpha"])
def test_truncated_file_raises_by_default_and_strict_false_gives_its_rows(
    made: dict[str, bytes], name: str, tmp_path: Path
) -> None:
    data = made[name]
    cut = data[: len(data) * 2 // 3]
    path = tmp_path / "cut.webp"
    path.write_bytes(cut)
    for strict, reason in ((None, PARTIAL), (True, "corrupt image data")):
        for decode in (read_image, lambda p, **k: decode_webp(read_file(p), path=p, **k)):
            with pytest.raises(DecodeError, match=reason) as caught:
                decode(path, strict=strict)
            assert caught.value.path == str(path) and str(caught.value).startswith(f"{path}: ")
    partial, message = _one_warning(
        lambda: decode_webp(cut, strict=False, path=path), r"decoded \d+ of 606 rows"
    )
    assert message.startswith(f"{path}: ")
    rows = int(re.search(r"decoded (\d+) of", message).group(1))
    full = decode_webp(data)
    assert 0 < rows < 606 and partial.shape == full.shape
    assert torch.equal(partial[:, :rows], full[:, :rows]) and not partial[:, rows:].any()
    with pytest.warns(DecodeWarning, match="decoded what the data allows"):
        assert torch.equal(decode_image(cut, strict=False), partial)


@pytest.mark.parametrize("cut", ["riff-size", "exif-chunk"])
def test_damage_after_whole_image_data_decodes_with_one_warning(
    made: dict[str, bytes], cut: str
) -> None:
    # The RIFF size past the end of the data, or the file cut inside an EXIF chunk
    # after the image: every pixel is there (Pillow refuses both files).
    if cut == "riff-size":
        data = made["lossy"]
        damaged = _riff_size(data, len(data) - 8 + 1000)
    else:
        exif = Image.Exif()
        exif[0x0112] = 1
        exif[0x010E] = "x" * 400
        data = _save(_photo(), quality=80, exif=exif.tobytes())
        assert data.index(b"EXIF") > data.index(b"VP8 ")
        damaged = data[:-200]
    with pytest.raises(OSError):
        Image.open(io.BytesIO(damaged)).load()
    for strict in (None, False):
        image, _ = _one_warning(
            lambda strict=strict: decode_webp(damaged, strict=strict, path="x.webp"),
            r"^x\.webp: damaged after the image data",
        )
        assert torch.equal(image, decode_webp(data))
    with pytest.raises(DecodeError, match=r"^x\.webp: corrupt image data"):
        decode_webp(damaged, strict=True, path="x.webp")


def test_riff_size_inside_the_image_data_raises(made: dict[str, bytes]) -> None:
    data = made["lossless"]
    for strict in (None, True, False):
        with pytest.raises(DecodeError, match=r"^short\.webp: "):
            decode_webp(_riff_size(data, len(data) // 2), strict=strict, path="short.webp")


@pytest.mark.parametrize("fraction", [0.5, 0.75])
def test_truncated_animation_raises_by_default_and_strict_false_keeps_its_complete_frames(
    made: dict[str, bytes], fraction: float
) -> None:
    data = made["animation-lossless"]
    cut = data[: int(len(data) * fraction)]
    frames = image_info(cut).frames  # the frames the data holds, the last maybe cut
    reason = r"truncated animation: the data ends after (\d+) complete frames?"
    for strict, raised in ((None, PARTIAL), (True, "corrupt image data")):
        with pytest.raises(DecodeError, match=rf"^cut\.webp: {raised} \({reason}"):
            decode_webp(cut, strict=strict, path="cut.webp")
        with pytest.raises(DecodeError, match=raised):
            decode_image(cut, strict=strict)
    partial, message = _one_warning(lambda: decode_webp(cut, strict=False), reason)
    kept = int(re.search(reason, message).group(1))
    full = decode_webp(data)
    assert 1 < kept <= frames < full.shape[0] and partial.shape[0] == frames
    assert torch.equal(partial[:kept], full[:kept]) and not partial[kept:].any()
    assert torch.equal(decode_webp(_first_frames(data, kept)), full[:kept])


def test_pixel_limit_counts_every_frame() -> None:
    data = read_file(ANIMATION)
    with pytest.raises(DecodeError, match="245x245 animation of 42 frames exceeds the limit"):
        decode_webp(data, max_pixels=245 * 245 * 41)
    assert decode_webp(data, max_pixels=245 * 245 * 42).shape[0] == 42


def test_a_canvas_bomb_is_refused_before_allocating() -> None:
    # The animation's VP8X canvas (24-bit width - 1, height - 1) set to 16384 x 16384:
    # 42 frames of it would take 45 GB.
    raw = bytearray(ANIMATION.read_bytes())
    assert raw[12:16] == b"VP8X"
    raw[24:30] = (16383).to_bytes(3, "little") * 2
    assert image_info(bytes(raw)).width == 16384
    with pytest.raises(DecodeError, match="16384x16384 animation of 42 frames exceeds the limit"):
        decode_webp(bytes(raw))


@pytest.mark.parametrize(
    "data",
    [b"RIFF\x04\x00\x00\x00WEBP", b"RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00" + bytes(24)],
    ids=["no-chunk", "zero-vp8"],
)
def test_damaged_headers_raise_decode_error(data: bytes) -> None:
    for strict in (None, True, False):
        with pytest.raises(DecodeError, match=r"^x\.webp: "):
            decode_webp(data, strict=strict, path="x.webp")
    with pytest.raises(DecodeError, match=r"^x\.webp: "):
        image_info(data, path="x.webp")


def test_a_riff_file_of_another_kind_is_not_taken_for_webp() -> None:
    wave = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28)
    with pytest.raises(DecodeError, match="unknown signature"):
        decode_image(wave)


# ---- encode


def _tensor(image: Image.Image) -> torch.Tensor:
    return torch.from_numpy(pillow_array(image).copy())


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_lossless_encode_round_trips_exactly(channels: int) -> None:
    rgba = _tensor(_with_alpha(_photo((61, 47))))
    image = {1: rgba[:1], 2: rgba[[1, 3]], 3: rgba[:3], 4: rgba}[channels].contiguous()
    data = encode_webp(image, lossless=True, exact=True)
    mode = [ImageReadMode.GRAY, ImageReadMode.GRAY_ALPHA, ImageReadMode.RGB, ImageReadMode.RGBA]
    assert torch.equal(decode_webp(data, mode[channels - 1]), image)
    pil_mode = ["L", "LA", "RGB", "RGBA"][channels - 1]
    np.testing.assert_array_equal(pillow_array(bytes(data.numpy()), pil_mode), image.numpy())
    assert image_info(data).lossless and image_info(data).channels == (
        4 if channels % 2 == 0 else 3
    )


def test_lossless_without_exact_keeps_every_visible_pixel() -> None:
    image = _tensor(_with_alpha(_photo((64, 48))))
    got = decode_webp(encode_webp(image, lossless=True))
    visible = image[3] > 0
    assert torch.equal(got[3], image[3])
    assert torch.equal(got[:3, visible], image[:3, visible])


@pytest.mark.parametrize(
    ("quality", "method", "bound"), [(75, 4, 33.0), (95, 6, 41.0), (50, 0, 31.0)]
)
def test_lossy_encode_is_as_good_as_pillows(quality: int, method: int, bound: float) -> None:
    photo = _photo()
    image = _tensor(photo)
    data = encode_webp(image, quality, method=method)
    got = decode_webp(data)
    ours = psnr(got.numpy(), image.numpy())
    theirs_data = _save(photo, quality=quality, method=method)
    theirs = psnr(pillow_array(theirs_data), image.numpy())
    assert ours >= bound and abs(ours - theirs) < 0.3
    assert abs(len(data) - len(theirs_data)) <= 0.05 * len(theirs_data)
    np.testing.assert_array_equal(pillow_array(bytes(data.numpy())), got.numpy())


def test_lossy_alpha_and_channels_last_input() -> None:
    image = _tensor(_with_alpha(_photo((200, 150))))
    channels_last = image.permute(1, 2, 0).contiguous().permute(2, 0, 1)
    data = encode_webp(channels_last, 90, exact=True)
    assert torch.equal(data, encode_webp(image, 90, exact=True))
    got = decode_webp(data)
    assert got.shape == (4, 150, 200) and torch.equal(got[3], image[3])  # alpha: lossless
    assert psnr(got[:3].numpy(), image[:3].numpy()) > 30


def test_write_webp_writes_what_pillow_reads(tmp_path: Path) -> None:
    image = _tensor(_photo((33, 21)))
    path = tmp_path / "x.webp"
    write_webp(image, path, lossless=True)
    np.testing.assert_array_equal(pillow_array(path), image.numpy())
    write_webp(image, str(path), 80, method=6)
    np.testing.assert_array_equal(pillow_array(path), decode_webp(read_file(path)).numpy())
    assert psnr(pillow_array(path), image.numpy()) > 25  # a 33 x 21 thumbnail of a photo


@pytest.mark.parametrize(
    ("image", "options", "error", "message"),
    [
        (torch.zeros(5, 4, 4, dtype=torch.uint8), {}, EncodeError, r"C in \(1, 2, 3, 4\)"),
        (torch.zeros(3, 4, 4), {}, TypeError, "torch.uint8"),
        (torch.zeros(3, 4, 4, dtype=torch.uint16), {}, TypeError, "torch.uint8"),
        (torch.zeros(3, 0, 4, dtype=torch.uint8), {}, EncodeError, "empty image"),
        (torch.zeros(3, 4, 4, dtype=torch.uint8), {"quality": 101}, EncodeError, "0..100"),
        (torch.zeros(3, 4, 4, dtype=torch.uint8), {"quality": -1}, EncodeError, "0..100"),
        (torch.zeros(3, 4, 4, dtype=torch.uint8), {"method": 7}, EncodeError, r"method .* 0..6"),
        (torch.zeros(3, 4, 4, dtype=torch.uint8), {"method": 2**40}, EncodeError, "method"),
        (torch.zeros(1, 16384, 1, dtype=torch.uint8), {}, EncodeError, "1..16383"),
    ],
)
def test_encode_refuses_what_webp_cannot_hold(
    image: torch.Tensor, options: dict, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        encode_webp(image, **options)


# ---- the parts assembled: ImageFolder in DataLoader workers


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_image_folder_reads_webp_in_dataloader_workers(
    made: dict[str, bytes], tmp_path: Path, context: str
) -> None:
    files = {
        "cat/lossy.webp": made["lossy"],
        "cat/alpha.webp": made["lossy-alpha"],
        "dog/lossless.webp": made["lossless"],
        "dog/moving.webp": made["animation-lossy"],
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(data)
    dataset = ImageFolder(tmp_path)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=None, num_workers=2, multiprocessing_context=context
    )
    got = list(loader)
    assert len(got) == len(files)
    for (image, label), (path, target) in zip(got, dataset.samples, strict=True):
        # Pillow's RGB of the file, as torchvision's ImageFolder loads it: an
        # animation's first frame.
        assert label == target
        np.testing.assert_array_equal(image.numpy(), pillow_array(Path(path), "RGB"))


def test_animation_inside_the_op_raises_unless_eager() -> None:
    data = read_file(ANIMATION)
    with pytest.raises(UnsupportedFormatError, match=r"animated WebP \(42 frames\)"):
        torch.ops.trivium.decode_webp(data)
    with pytest.raises(UnsupportedFormatError, match=r"animated WebP \(42 frames\)"):
        torch.ops.trivium.decode_image(data, path="a.webp")
    assert decode_image(data).shape == (42, 4, 245, 245)
