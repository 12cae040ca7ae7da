"""Fused decode-and-crop against decode-then-transform, on real JPEGs and PNGs."""

from __future__ import annotations

import io
import math

import pytest
import torch
from image_assets import JPEG_DIR, PNG_DIR
from image_assets import psnr as psnr_arrays
from PIL import Image

from trivium.core.errors import DecodeError
from trivium.vision import transforms as T
from trivium.vision.io import ImageReadMode, decode_image, decode_jpeg, encode_png, image_info
from trivium.vision.transforms.fused_decode import FAST_EIGHTHS, SCALE_MARGIN, DecodePlan

PHOTOS = ["tv-grace_hopper_517x606.jpg", "ljt-testorig.jpg", "pil-hopper.jpg", "tv-rgb_pytorch.jpg"]


def _large_photo(width: int = 1024, height: int = 768, progressive: bool = False) -> bytes:
    """A real photo enlarged to ImageNet-or-bigger size (baseline 4:2:0, q90)."""
    image = Image.open(JPEG_DIR / "tv-grace_hopper_517x606.jpg").convert("RGB")
    buf = io.BytesIO()
    image.resize((width, height), Image.LANCZOS).save(
        buf, "JPEG", quality=90, progressive=progressive
    )
    return buf.getvalue()


@pytest.fixture(scope="module")
def photos() -> dict[str, bytes]:
    data = {name: (JPEG_DIR / name).read_bytes() for name in PHOTOS}
    data["large"] = _large_photo()
    data["progressive"] = _large_photo(800, 600, progressive=True)
    return data


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    return psnr_arrays(a.numpy(), b.numpy())


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("seed", range(12))
def test_random_resized_crop_draws_the_unfused_box(photos, seed):
    for name, data in photos.items():
        fused = T.DecodeRandomResizedCrop(224, generator=_seeded(seed))
        plain = T.RandomResizedCrop(224, generator=_seeded(seed))
        info = image_info(data)
        expected = plain.sample_box(info.height, info.width)
        assert fused.plan(data).box == expected, name


@pytest.mark.parametrize("seed", range(8))
def test_random_resized_crop_matches_decode_then_transform(photos, seed):
    """PSNR >= 30 dB against full decode + RandomResizedCrop with the same generator state."""
    for name, data in photos.items():
        fused = T.DecodeRandomResizedCrop(224, generator=_seeded(seed))(data)
        plain = T.RandomResizedCrop(224, generator=_seeded(seed))(decode_jpeg(data))
        assert fused.shape == plain.shape == (3, 224, 224)
        assert fused.dtype == torch.uint8
        assert psnr(fused, plain) >= 30.0, name


def test_random_resized_crop_uses_a_dct_scale_for_big_boxes(photos):
    fused = T.DecodeRandomResizedCrop(112, scale=(0.9, 1.0), generator=_seeded(0))
    plan = fused.plan(photos["large"])
    assert plan.fused and plan.eighths in FAST_EIGHTHS and plan.eighths < 8
    _top, _left, h, w = plan.box
    need = math.ceil(112 * SCALE_MARGIN)
    assert math.ceil(h * plan.eighths / 8) >= need and math.ceil(w * plan.eighths / 8) >= need
    # the next smaller fast scale would not cover the output with its margin
    smaller = FAST_EIGHTHS[FAST_EIGHTHS.index(plan.eighths) - 1]
    assert math.ceil(h * smaller / 8) < need or math.ceil(w * smaller / 8) < need


def test_nearest_interpolation_decodes_at_full_scale(photos):
    fused = T.DecodeRandomResizedCrop(
        64, scale=(0.9, 1.0), interpolation=T.InterpolationMode.NEAREST, generator=_seeded(1)
    )
    assert fused.plan(photos["large"]).eighths == 8
    fused = T.DecodeRandomResizedCrop(
        64, scale=(0.9, 1.0), interpolation=T.InterpolationMode.NEAREST, generator=_seeded(1)
    )
    plain = T.RandomResizedCrop(
        64, scale=(0.9, 1.0), interpolation=T.InterpolationMode.NEAREST, generator=_seeded(1)
    )
    out = fused(photos["large"])
    assert torch.equal(out, plain(decode_jpeg(photos["large"])))


def test_rows_below_the_crop_are_never_decoded(photos):
    """A file cut off below the crop still decodes the crop: those rows are never read."""
    data = photos["large"]  # 1024x768 baseline: the scan is stored top to bottom
    truncated = data[: len(data) // 2]
    with pytest.raises(DecodeError):
        decode_jpeg(truncated)
    crop = T.DecodeRandomResizedCrop(48, scale=(0.02, 0.02), ratio=(1.0, 1.0))
    plan = crop.plan(data)
    while plan.box[0] + plan.box[2] > 200:  # a box within the top quarter of the image
        plan = crop.plan(data)
    cut = DecodePlan(truncated, plan.box, plan.eighths, plan.size, plan.fused)
    assert torch.equal(crop.execute(cut), crop.execute(plan))


def test_center_crop_is_bit_exact(photos):
    for name, data in photos.items():
        for size in (1, 17, (32, 48), 100):
            fused = T.DecodeCenterCrop(size)(data)
            plain = T.CenterCrop(size)(decode_jpeg(data, mode=ImageReadMode.RGB))
            assert torch.equal(fused, plain), (name, size)


def test_center_crop_larger_than_the_image_pads_like_center_crop(photos):
    data = photos["pil-hopper.jpg"]  # 128x128
    fused = T.DecodeCenterCrop(150)(data)
    assert torch.equal(fused, T.CenterCrop(150)(decode_jpeg(data)))


@pytest.mark.parametrize("size", [64, 160, (100, 300), 700])
def test_resize_matches_decode_then_resize(photos, size):
    for name, data in photos.items():
        fused = T.DecodeResize(size)(data)
        plain = T.Resize(size)(decode_jpeg(data))
        assert fused.shape == plain.shape
        assert psnr(fused, plain) >= 30.0, (name, size)


def test_png_takes_the_unfused_path():
    data = (PNG_DIR / "pil-hopper.png").read_bytes()
    image = decode_image(data, mode=ImageReadMode.RGB)
    fused = T.DecodeRandomResizedCrop(64, generator=_seeded(3))
    assert not fused.plan(data).fused
    out = T.DecodeRandomResizedCrop(64, generator=_seeded(3))(data)
    assert torch.equal(out, T.RandomResizedCrop(64, generator=_seeded(3))(image))
    assert torch.equal(T.DecodeCenterCrop(40)(data), T.CenterCrop(40)(image))
    assert torch.equal(T.DecodeResize(50)(data), T.Resize(50)(image))


def test_gray_input_gives_rgb_by_default():
    data = encode_png(torch.arange(64, dtype=torch.uint8).view(1, 8, 8))
    assert T.DecodeCenterCrop(4)(data).shape == (3, 4, 4)
    gray = (JPEG_DIR / "tv-gray_pytorch.jpg").read_bytes()
    assert T.DecodeRandomResizedCrop(32)(gray).shape == (3, 32, 32)


def test_a_list_gives_a_batch_equal_to_one_by_one(photos):
    items = list(photos.values())
    batch = T.DecodeRandomResizedCrop(96, generator=_seeded(5))(items)
    one = T.DecodeRandomResizedCrop(96, generator=_seeded(5))
    assert batch.shape == (len(items), 3, 96, 96)
    for i, data in enumerate(items):
        assert torch.equal(batch[i], one(data))
    resized = T.DecodeResize(50)(items)
    assert [r.shape[-2:] for r in resized] == [
        T.Resize(50)(decode_jpeg(d)).shape[-2:] for d in items
    ]


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("mode", [ImageReadMode.RGB, ImageReadMode.GRAY, ImageReadMode.UNCHANGED])
def test_every_batch_path_equals_one_by_one(photos, interpolation, mode):
    # JPEGs are resized into their batch slot (antialiased modes) or copied there; a
    # PNG takes the unfused path; UNCHANGED (channels unknown up front) stacks.
    items = [*photos.values(), encode_png(torch.full((3, 70, 90), 7, dtype=torch.uint8))]
    if mode is ImageReadMode.UNCHANGED:
        items = items[:-1]  # a gray PNG of 3 channels would not stack with RGB JPEGs
    make = lambda: T.DecodeRandomResizedCrop(  # noqa: E731
        (64, 48), interpolation=interpolation, mode=mode, generator=_seeded(3)
    )
    batch, one = make()(items), make()
    assert batch.shape == (len(items), mode.channels or 3, 64, 48)
    assert batch.permute(0, 2, 3, 1).is_contiguous() or mode is ImageReadMode.UNCHANGED
    for i, data in enumerate(items):
        assert torch.equal(batch[i], one(data)), i
    crops = T.DecodeCenterCrop(40, mode=mode)(items)
    for i, data in enumerate(items):
        assert torch.equal(crops[i], T.DecodeCenterCrop(40, mode=mode)(data)), i


class _EncodedPhotos(torch.utils.data.Dataset):
    """Item i: a batch of the photos through a seeded fused crop, as a loader worker makes it."""

    def __init__(self, photos: list[bytes]) -> None:
        self.photos = photos

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> tuple[torch.Tensor, bool]:
        batch = T.DecodeRandomResizedCrop(56, generator=_seeded(i))(self.photos)
        return batch, batch.is_shared()


def test_a_batch_made_in_a_loader_worker_is_in_shared_memory(photos):
    items = list(photos.values())
    loader = torch.utils.data.DataLoader(_EncodedPhotos(items), batch_size=None, num_workers=1)
    for i, (batch, shared) in enumerate(loader):
        assert shared
        assert torch.equal(batch, T.DecodeRandomResizedCrop(56, generator=_seeded(i))(items))


def test_exif_orientation_is_applied_before_cropping():
    data = (JPEG_DIR / "pil-hopper_orientation_6.jpg").read_bytes()
    oriented = decode_image(data, mode=ImageReadMode.RGB, apply_exif_orientation=True)
    fused = T.DecodeCenterCrop((40, 20), apply_exif_orientation=True)(data)
    assert torch.equal(fused, T.CenterCrop((40, 20))(oriented))


def test_bad_input_raises_a_decode_error():
    with pytest.raises(DecodeError):
        T.DecodeRandomResizedCrop(32)(b"not an image at all")
    with pytest.raises(DecodeError):
        T.DecodeCenterCrop(8)(b"\xff\xd8\xff\xe0" + b"\x00" * 10)


# 16-bit inputs (16-bit PNGs, 16-bit lossless JPEG) and decoded image tensors.

DEEP = [PNG_DIR / "tv-rgb_pytorch16.png", PNG_DIR / "basn2c16.png", PNG_DIR / "basn0g16.png"]
LOSSLESS_16 = JPEG_DIR / "jd-lossless-jpeg_lossless_sel1.jpg"  # 256 x 256 gray, 16 bits


def _deep_files() -> list[bytes]:
    return [path.read_bytes() for path in [*DEEP, LOSSLESS_16]]


def _fused_and_unfused(seed: int, mode: ImageReadMode = ImageReadMode.RGB):
    """(fused, unfused) transform pairs drawing alike from the same generator state."""
    return [
        (
            T.DecodeRandomResizedCrop(24, mode=mode, generator=_seeded(seed)),
            T.RandomResizedCrop(24, generator=_seeded(seed)),
        ),
        (
            T.DecodeRandomResizedCrop(
                20, interpolation=T.InterpolationMode.BICUBIC, mode=mode, generator=_seeded(seed)
            ),
            T.RandomResizedCrop(20, interpolation="bicubic", generator=_seeded(seed)),
        ),
        (T.DecodeResize(27, mode=mode), T.Resize(27)),
        (T.DecodeCenterCrop(30, mode=mode), T.CenterCrop(30)),
    ]


@pytest.mark.parametrize("mode", [ImageReadMode.RGB, ImageReadMode.UNCHANGED])
@pytest.mark.parametrize("seed", range(3))
def test_sixteen_bit_inputs_equal_decode_then_transform(mode, seed):
    for data in _deep_files():
        image = decode_image(data, mode)
        assert image.dtype == torch.uint16
        for fused, unfused in _fused_and_unfused(seed, mode):
            assert not type(fused)(30).plan(data).fused
            out = fused(data)
            assert out.dtype == torch.uint16
            assert torch.equal(out, unfused(image)), type(fused).__name__


def test_decoded_tensors_take_the_unfused_transform():
    for data in [*_deep_files(), (JPEG_DIR / "tv-grace_hopper_517x606.jpg").read_bytes()]:
        for dtype in (torch.uint8, torch.uint16, torch.float32):
            image = decode_image(data, ImageReadMode.RGB, dtype=dtype)
            for fused, unfused in _fused_and_unfused(4):
                out = fused(image)
                assert out.dtype == dtype
                assert torch.equal(out, unfused(image)), (type(fused).__name__, dtype)


def test_dtype_decodes_every_file_to_one_dtype():
    jpeg = (JPEG_DIR / "tv-grace_hopper_517x606.jpg").read_bytes()
    deep = DEEP[0].read_bytes()
    for dtype in (torch.uint8, torch.uint16):
        batch = T.DecodeRandomResizedCrop(32, dtype=dtype, generator=_seeded(1))([jpeg, deep])
        one = T.DecodeRandomResizedCrop(32, dtype=dtype, generator=_seeded(1))
        assert batch.dtype == dtype
        for i, data in enumerate([jpeg, deep]):
            assert torch.equal(batch[i], one(data))
    # uint8 from a 16-bit file: the high byte of every sample (decode_image's dtype rule).
    narrowed = T.DecodeCenterCrop(30, dtype=torch.uint8)(deep)
    wide = T.DecodeCenterCrop(30)(deep)
    assert torch.equal(narrowed, (wide.to(torch.int32) >> 8).to(torch.uint8))
    # An 8-bit JPEG decoded to uint8 still takes the fused path; to uint16 the unfused one.
    assert T.DecodeResize(64, dtype=torch.uint8).plan(jpeg).fused
    assert not T.DecodeResize(64, dtype=torch.uint16).plan(jpeg).fused


def test_a_list_mixing_bit_depths_names_the_item():
    jpeg = (JPEG_DIR / "tv-grace_hopper_517x606.jpg").read_bytes()
    deep = DEEP[0].read_bytes()
    with pytest.raises(
        ValueError, match=r"item 0 gives torch\.uint8 and item 2 gives torch\.uint16"
    ):
        T.DecodeRandomResizedCrop(32)([jpeg, jpeg, deep])
    with pytest.raises(ValueError, match=r"item 1 gives torch\.uint8.*dtype=torch\.uint8"):
        T.DecodeCenterCrop(32)([deep, jpeg])
    # DecodeResize gives a list: each item keeps its own dtype.
    assert [x.dtype for x in T.DecodeResize(32)([jpeg, deep])] == [torch.uint8, torch.uint16]


def test_a_list_of_sixteen_bit_files_gives_a_uint16_batch():
    files = [DEEP[0].read_bytes(), DEEP[1].read_bytes()]
    batch = T.DecodeRandomResizedCrop(16, generator=_seeded(2))(files)
    one = T.DecodeRandomResizedCrop(16, generator=_seeded(2))
    assert batch.dtype == torch.uint16 and batch.shape == (2, 3, 16, 16)
    for i, data in enumerate(files):
        assert torch.equal(batch[i], one(data))
