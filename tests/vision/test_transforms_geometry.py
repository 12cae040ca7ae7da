"""Resize, crops, padding, flips: against Pillow / NumPy; per_sample, script, export, compile."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from peers import require_torchvision
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.io import decode_jpeg, read_file
from trivium.vision.transforms import functional as F
from trivium.vision.transforms.geometry import random_resized_crop_box, random_resized_crop_boxes

PHOTO = Path(__file__).parents[1] / "assets" / "images" / "jpeg" / "tv-grace_hopper_517x606.jpg"


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    return decode_jpeg(read_file(PHOTO))  # uint8 [3, 606, 517]


def hwc(img: torch.Tensor) -> np.ndarray:
    return img.permute(1, 2, 0).numpy()


def pil(img: torch.Tensor) -> Image.Image:
    return Image.fromarray(np.ascontiguousarray(hwc(img)))


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    mse = float(((a.double() - b.double()) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


# Resize.


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(150, 128), (301, 400), (700, 600)])
def test_resize_matches_pillow(photo: torch.Tensor, mode: str, size: tuple[int, int]) -> None:
    # Pillow's antialiased resize is the reference (reducing_gap=None: no shortcut).
    resample = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}[mode]
    ref = np.asarray(pil(photo).resize(size[::-1], resample, reducing_gap=None)).astype(int)
    ours = hwc(F.resize(photo, list(size), mode)).astype(int)
    diff = np.abs(ours - ref)
    # Tolerance: mean <= 0.3 level; bicubic overshoot rounding may differ by a few levels
    # on < 0.1% of pixels, bilinear never by more than 1.
    assert diff.mean() <= 0.3
    assert (diff > 1).mean() <= (0.005 if mode == "bicubic" else 0.0)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_resize_uint8_agrees_with_float(photo: torch.Tensor, mode: str) -> None:
    as_uint8 = F.resize(photo, [200, 170], mode).int()
    as_float = F.resize(photo.float() / 255, [200, 170], mode)
    expected = (as_float * 255).round().clamp(0, 255).int()
    diff = (as_uint8 - expected).abs()
    assert diff.float().mean() <= 0.3
    assert (diff > 2).float().mean() <= 0.001


def test_resize_nearest_exact_matches_pillow_nearest(photo: torch.Tensor) -> None:
    ref = np.asarray(pil(photo).resize((128, 150), Image.NEAREST))
    np.testing.assert_array_equal(hwc(F.resize(photo, [150, 128], "nearest-exact")), ref)


def test_resize_nearest_matches_floor_formula() -> None:
    img = torch.randint(0, 256, (2, 3, 17, 23), dtype=torch.uint8)
    rows = np.floor(np.arange(7) * (17 / 7)).astype(int)  # torch "nearest": floor(dst * scale)
    cols = np.floor(np.arange(11) * (23 / 11)).astype(int)
    expected = img.numpy()[..., rows[:, None], cols[None, :]]
    np.testing.assert_array_equal(F.resize(img, [7, 11], "nearest").numpy(), expected)


def test_resize_size_rules() -> None:
    img = torch.zeros(3, 300, 400)
    assert F.resize(img, 150).shape[-2:] == (150, 200)  # int: smaller edge
    assert F.resize(img, [150]).shape[-2:] == (150, 200)
    assert F.resize(img, 150, max_size=180).shape[-2:] == (135, 180)
    assert F.resize(img, None, max_size=200).shape[-2:] == (150, 200)
    assert F.resize(torch.zeros(1, 400, 300), 150).shape[-2:] == (200, 150)
    assert T.Resize([10, 20])(img).shape == (3, 10, 20)
    assert F.resize(img, [300, 400]) is img  # same size: no work


def test_resize_keeps_batch_shape_dtype_and_rounds() -> None:
    img = torch.randint(0, 256, (2, 5, 3, 16, 16), dtype=torch.uint8)
    out = F.resize(img, [8, 8])
    assert out.shape == (2, 5, 3, 8, 8) and out.dtype == torch.uint8
    torch.testing.assert_close(out[1, 3], F.resize(img[1, 3], [8, 8]))
    up = F.resize(torch.tensor([[[0, 255], [255, 0]]], dtype=torch.uint8), [8, 8], "bicubic")
    assert up.dtype == torch.uint8  # overshoot is clamped, not wrapped
    assert int(up[0, 0, 0]) == 0 and int(up[0, 0, 7]) == 255


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: T.Resize(0), ValueError, "Resize"),
        (lambda: T.Resize([3, 4, 5]), TypeError, "Resize"),
        (lambda: T.Resize(10, max_size=5), ValueError, "max_size"),
        (lambda: T.Resize([10, 12], max_size=50), ValueError, "max_size"),
        (lambda: T.Resize(10, interpolation="lanczos"), ValueError, "interpolation"),
        (lambda: T.CenterCrop(-1), ValueError, "CenterCrop"),
        (lambda: T.Pad(1, padding_mode="wrap"), ValueError, "padding_mode"),
        (lambda: T.Pad([1, 2, 3]), ValueError, "padding"),
        (lambda: T.RandomCrop((2, 0)), ValueError, "RandomCrop"),
        (lambda: T.RandomResizedCrop(8, scale=(0.5, 0.1)), ValueError, "scale"),
        (lambda: T.RandomHorizontalFlip(p=1.5), ValueError, "p must"),
        (lambda: T.RandomVerticalFlip(per_sample=1), TypeError, "per_sample"),
    ],
)
def test_bad_arguments_raise_naming_the_transform(make, error, match) -> None:
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize(
    "transform",
    [
        T.Resize(4),
        T.CenterCrop(2),
        T.Pad(1),
        T.RandomCrop(2),
        T.RandomResizedCrop(4),
        T.RandomHorizontalFlip(),
    ],
    ids=lambda t: type(t).__name__,
)
def test_bad_images_raise_naming_the_transform(transform) -> None:
    name = type(transform).__name__
    with pytest.raises(TypeError, match=name):
        transform(torch.zeros(3, 8, 8, dtype=torch.int32))
    with pytest.raises(TypeError, match=name):
        transform(torch.zeros(3, 8, 8, dtype=torch.bool))
    with pytest.raises(TypeError, match=name):
        transform(torch.zeros(8, 8), "a label only")


def test_random_crop_larger_than_image_raises() -> None:
    with pytest.raises(ValueError, match="RandomCrop: crop size"):
        T.RandomCrop(10)(torch.zeros(3, 8, 8))
    with pytest.raises(ValueError, match="FiveCrop"):
        T.FiveCrop(10)(torch.zeros(3, 8, 8))


# Crops and padding.


def test_crop_is_a_view_inside_and_zero_pads_outside() -> None:
    img = torch.arange(1, 26, dtype=torch.float32).view(1, 5, 5)
    inside = F.crop(img, 1, 2, 3, 2)
    assert inside.data_ptr() == img[..., 1:, 2:].data_ptr()
    np.testing.assert_array_equal(inside.numpy(), img.numpy()[:, 1:4, 2:4])
    outside = F.crop(img, -1, 3, 3, 4)
    expected = np.zeros((1, 3, 4), dtype=np.float32)
    expected[:, 1:, :2] = img.numpy()[:, 0:2, 3:5]
    np.testing.assert_array_equal(outside.numpy(), expected)
    assert F.crop(img, 10, 10, 2, 2).abs().sum() == 0


@pytest.mark.parametrize(("h", "w"), [(3, 3), (4, 2), (5, 5), (8, 7), (2, 9)])
def test_center_crop_matches_numpy_including_padding(h: int, w: int) -> None:
    img = torch.randint(0, 256, (3, 5, 6), dtype=torch.uint8)
    out = F.center_crop(img, [h, w])
    # torchvision: pad (floor before, ceil after) to the crop, then crop at round((H - h) / 2).
    ph, pw = max(h - 5, 0), max(w - 6, 0)
    padded = np.pad(img.numpy(), ((0, 0), (ph // 2, (ph + 1) // 2), (pw // 2, (pw + 1) // 2)))
    top = round((padded.shape[1] - h) / 2)
    left = round((padded.shape[2] - w) / 2)
    np.testing.assert_array_equal(out.numpy(), padded[:, top : top + h, left : left + w])


@pytest.mark.parametrize(
    ("mode", "np_mode"), [("edge", "edge"), ("reflect", "reflect"), ("symmetric", "symmetric")]
)
@pytest.mark.parametrize("padding", [1, [2, 3], [1, 0, 4, 2], [7, 1]])
def test_pad_modes_match_numpy(mode: str, np_mode: str, padding) -> None:
    img = torch.randint(0, 256, (2, 3, 5, 6), dtype=torch.uint8)
    p = [padding] * 4 if isinstance(padding, int) else padding * 2 if len(padding) == 2 else padding
    left, top, right, bottom = p
    expected = np.pad(img.numpy(), ((0, 0), (0, 0), (top, bottom), (left, right)), mode=np_mode)
    np.testing.assert_array_equal(F.pad(img, padding, padding_mode=mode).numpy(), expected)
    np.testing.assert_array_equal(T.Pad(padding, padding_mode=mode)(img).numpy(), expected)


def test_pad_constant_fill_per_channel_and_negative_padding() -> None:
    img = torch.rand(3, 4, 4)
    out = F.pad(img, [1, 2], fill=[0.1, 0.2, 0.3])
    assert out.shape == (3, 8, 6)
    for c, value in enumerate((0.1, 0.2, 0.3)):
        assert torch.allclose(out[c, :2], torch.tensor(value)) and torch.allclose(
            out[c, :, 0], torch.tensor(value)
        )
    torch.testing.assert_close(out[:, 2:6, 1:5], img)
    torch.testing.assert_close(F.pad(img, -1), img[:, 1:3, 1:3])
    with pytest.raises(ValueError, match="fill has 2 values"):
        F.pad(img, 1, fill=[1, 2])


def test_flips_and_five_ten_crop() -> None:
    img = torch.randint(0, 256, (2, 3, 7, 9), dtype=torch.uint8)
    np.testing.assert_array_equal(F.horizontal_flip(img).numpy(), img.numpy()[..., ::-1])
    np.testing.assert_array_equal(F.vertical_flip(img).numpy(), img.numpy()[..., ::-1, :])
    a = img.numpy()
    tl, tr, bl, br, center = F.five_crop(img, [3, 4])
    for got, want in (
        (tl, a[..., :3, :4]),
        (tr, a[..., :3, 5:]),
        (bl, a[..., 4:, :4]),
        (br, a[..., 4:, 5:]),
        (center, a[..., 2:5, 2:6]),
    ):
        np.testing.assert_array_equal(got.numpy(), want)
    ten = T.TenCrop([3, 4], vertical_flip=True)(img)
    assert len(ten) == 10
    np.testing.assert_array_equal(ten[5].numpy(), a[..., ::-1, :][..., :3, :4])


# Random transforms: reproducibility, the box algorithm, per_sample.


def torchvision_box(height: int, width: int, scale, ratio) -> tuple[int, int, int, int]:
    """torchvision v2 RandomResizedCrop.make_params, copied (default RNG)."""
    area = height * width
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        w = round(math.sqrt(target_area * aspect_ratio))
        h = round(math.sqrt(target_area / aspect_ratio))
        if 0 < w <= width and 0 < h <= height:
            i = torch.randint(0, height - h + 1, size=(1,)).item()
            j = torch.randint(0, width - w + 1, size=(1,)).item()
            return i, j, h, w
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w = width
        h = round(w / min(ratio))
    elif in_ratio > max(ratio):
        h = height
        w = round(h * max(ratio))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


@pytest.mark.parametrize(
    ("height", "width", "scale", "ratio"),
    [
        (480, 640, (0.08, 1.0), (3 / 4, 4 / 3)),
        (50, 400, (0.9, 1.0), (1.0, 1.0)),
        (7, 5, (0.5, 1.0), (0.2, 0.3)),
    ],
)
def test_random_resized_crop_box_is_torchvisions(height, width, scale, ratio) -> None:
    for seed in range(20):
        torch.manual_seed(seed)
        expected = torchvision_box(height, width, scale, ratio)
        torch.manual_seed(seed)
        assert random_resized_crop_box(height, width, scale, ratio) == expected
        t = T.RandomResizedCrop(8, scale, ratio, generator=torch.Generator().manual_seed(seed))
        assert t.get_params(height, width) == random_resized_crop_box(
            height, width, scale, ratio, torch.Generator().manual_seed(seed)
        )


def test_random_resized_crop_applies_the_sampled_box(photo: torch.Tensor) -> None:
    t = T.RandomResizedCrop(64, generator=torch.Generator().manual_seed(3))
    top, left, h, w = T.RandomResizedCrop(
        64, generator=torch.Generator().manual_seed(3)
    ).get_params(606, 517)
    expected = F.resized_crop(photo, top, left, h, w, [64, 64])
    torch.testing.assert_close(t(photo), expected, atol=0, rtol=0)
    ref = np.asarray(
        pil(photo)
        .crop((left, top, left + w, top + h))
        .resize((64, 64), Image.BILINEAR, reducing_gap=None)
    )
    assert np.abs(hwc(expected).astype(int) - ref).max() <= 1


def test_batched_boxes_fit_and_fallback() -> None:
    u = torch.rand(2000, 10, 4, generator=torch.Generator().manual_seed(0))
    top, left, h, w = random_resized_crop_boxes(u, 60, 90)
    assert bool(
        ((top >= 0) & (left >= 0) & (top + h <= 60) & (left + w <= 90) & (h > 0) & (w > 0)).all()
    )
    area = (h * w).double() / (60 * 90)
    assert float(area.min()) >= 0.08 and float(area.max()) <= 1.0
    # Same distribution as the scalar (torchvision) sampler: compare mean area and aspect ratio.
    torch.manual_seed(0)
    ref = torch.tensor(
        [torchvision_box(60, 90, (0.08, 1.0), (3 / 4, 4 / 3)) for _ in range(2000)]
    ).double()
    assert abs(float(area.mean()) - float((ref[:, 2] * ref[:, 3]).mean() / (60 * 90))) < 0.03
    assert abs(float((w / h).double().mean()) - float((ref[:, 3] / ref[:, 2]).mean())) < 0.03
    # Impossible ratio: every try fails, the center box is used.
    top, left, h, w = random_resized_crop_boxes(u[:5], 10, 100, (0.9, 1.0), (1.0, 1.0))
    assert (top.tolist(), left.tolist(), h.tolist(), w.tolist()) == (
        [0] * 5,
        [45] * 5,
        [10] * 5,
        [10] * 5,
    )


def test_seeded_transforms_are_reproducible(photo: torch.Tensor) -> None:
    def run(seed: int, per_sample: bool) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        ts = [
            T.RandomResizedCrop(32, per_sample=per_sample, generator=g),
            T.RandomCrop(24, padding=4, per_sample=per_sample, generator=g),
            T.RandomHorizontalFlip(per_sample=per_sample, generator=g),
            T.RandomVerticalFlip(per_sample=per_sample, generator=g),
        ]
        batch = torch.stack([photo[:, :200, :200], photo[:, 100:300, 100:300]])
        return [t(batch) for t in ts]

    for per_sample in (False, True):
        a, b, c = run(1, per_sample), run(1, per_sample), run(2, per_sample)
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
        assert not all(torch.equal(x, y) for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize(
    ("make", "dim"),
    [
        (lambda: torch.rand(64, 3, 4, 5), -1),
        (lambda: torch.randint(0, 256, (64, 3, 4, 8), dtype=torch.uint8), -1),  # int64 words
        (lambda: torch.randint(0, 256, (64, 1, 5, 7), dtype=torch.uint8), -2),  # bytes
        (lambda: torch.randint(0, 256, (65, 3, 2, 2), dtype=torch.uint8)[1:], -1),  # offset view
        (lambda: torch.rand(64, 3, 6, 4).permute(0, 1, 3, 2), -2),  # not contiguous
    ],
)
def test_per_sample_flip_flips_each_image_independently(make, dim) -> None:
    img = make()
    flip = T.RandomHorizontalFlip if dim == -1 else T.RandomVerticalFlip
    out = flip(per_sample=True, generator=torch.Generator().manual_seed(0))(img)
    assert out.shape == img.shape and out.dtype == img.dtype
    flipped = [bool(torch.equal(o, i.flip(dim))) for o, i in zip(out, img, strict=True)]
    kept = [bool(torch.equal(o, i)) for o, i in zip(out, img, strict=True)]
    assert all(f != k for f, k in zip(flipped, kept, strict=True))
    assert 15 < sum(flipped) < 49  # about half, independently
    whole = T.RandomVerticalFlip(p=1.0)(img)
    torch.testing.assert_close(whole, img.flip(-2))


def test_per_sample_random_crop_is_a_crop_of_each_padded_image() -> None:
    img = torch.randint(0, 256, (16, 3, 10, 12), dtype=torch.uint8)
    t = T.RandomCrop(
        8, padding=2, fill=7, per_sample=True, generator=torch.Generator().manual_seed(0)
    )
    out = t(img)
    padded = F.pad(img, 2, fill=7)
    offsets = set()
    for n in range(16):
        matches = [
            (i, j)
            for i in range(padded.shape[-2] - 7)
            for j in range(padded.shape[-1] - 7)
            if torch.equal(padded[n, :, i : i + 8, j : j + 8], out[n])
        ]
        assert matches, f"image {n} is not a crop of its padded input"
        offsets.add(matches[0])
    assert len(offsets) > 4  # offsets differ between images


def test_pad_if_needed_pads_small_images() -> None:
    out = T.RandomCrop(8, pad_if_needed=True, padding_mode="edge")(torch.rand(3, 5, 20))
    assert out.shape == (3, 8, 8)


def test_per_sample_resized_crop_matches_per_image_kernel(photo: torch.Tensor) -> None:
    batch = torch.stack([photo[:, i * 40 : i * 40 + 400, :400] for i in range(4)])
    u = torch.rand(4, 10, 4, generator=torch.Generator().manual_seed(5))
    boxes = random_resized_crop_boxes(u, 400, 400, (0.08, 1.0))
    for size in ([96, 96], [320, 288]):  # mostly shrinking, mostly enlarging
        out = F.resized_crop_batched(batch, *boxes, size)
        for n in range(4):
            top, left, h, w = (int(b[n]) for b in boxes)
            ref = F.resized_crop(batch[n], top, left, h, w, size)
            # Stated tolerance: PSNR >= 30 dB against the antialiased per-image resize.
            assert psnr(out[n], ref) >= 30, (n, size, (top, left, h, w))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic", "nearest"])
def test_per_sample_resized_crop_on_cpu_is_torchvisions_resized_crop_of_each_image(
    photo: torch.Tensor, dtype: torch.dtype, interpolation: str
) -> None:
    tvf = require_torchvision().transforms.v2.functional
    batch = torch.stack([photo[:, i * 30 : i * 30 + 300, i * 20 : i * 20 + 320] for i in range(6)])
    batch = batch if dtype == torch.uint8 else batch.to(dtype) / 255
    size = [48, 40]
    t = T.RandomResizedCrop(size, interpolation=interpolation, per_sample=True)
    t.generator = torch.Generator().manual_seed(4)
    out = t(batch)
    t.generator = torch.Generator().manual_seed(4)
    boxes = t.make_params([batch])["box"]  # the same draws
    mode = getattr(tvf.InterpolationMode, interpolation.upper())
    for n in range(6):
        top, left, h, w = (int(b[n]) for b in boxes)
        ref = tvf.resized_crop(batch[n], top, left, h, w, size, mode, antialias=True)
        torch.testing.assert_close(out[n], ref, atol=0, rtol=0)


def test_per_sample_resized_crop_without_antialias_is_close_to_interpolate() -> None:
    img = torch.rand(3, 1, 40, 40)
    top, left = torch.tensor([0, 5, 10]), torch.tensor([3, 0, 8])
    h, w = torch.tensor([20, 30, 16]), torch.tensor([24, 18, 30])
    out = F.resized_crop_batched(img, top, left, h, w, [12, 14], antialias=False)
    for n in range(3):
        ref = F.resized_crop(
            img[n], int(top[n]), int(left[n]), int(h[n]), int(w[n]), [12, 14], antialias=False
        )
        # Same sample points; only the outermost row/column may blend the pixel beyond the box.
        torch.testing.assert_close(out[n, :, 1:-1, 1:-1], ref[:, 1:-1, 1:-1], atol=1e-5, rtol=0)


def test_pil_images_give_the_tensor_result(photo: torch.Tensor) -> None:
    image = pil(photo)
    for t in (
        T.Resize(100),
        T.CenterCrop(50),
        T.Pad([1, 2], fill=[9, 8, 7]),
        T.RandomHorizontalFlip(p=1.0),
    ):
        out = t(image)
        assert isinstance(out, Image.Image)
        np.testing.assert_array_equal(np.asarray(out), hwc(t(photo)))
    crops = T.FiveCrop(20)(image)
    assert all(isinstance(c, Image.Image) and c.size == (20, 20) for c in crops)


def test_labels_pass_through() -> None:
    img, label = T.RandomResizedCrop(8)(torch.zeros(3, 16, 16), 5)
    assert img.shape == (3, 8, 8) and label == 5


# TorchScript, export, compile.


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    "transform",
    [
        T.Resize(9),
        T.Resize([7, 5], "bicubic"),
        T.Resize(8, max_size=10),
        T.Resize(8, "nearest"),
        T.CenterCrop([14, 5]),
        T.Pad([1, 2], fill=[1, 2, 3]),
        T.Pad(3, padding_mode="symmetric"),
    ],
    ids=repr,
)
def test_script_and_export_match_eager(transform) -> None:
    scripted = torch.jit.script(transform)
    for img in (torch.rand(2, 3, 11, 13), torch.randint(0, 256, (3, 12, 9), dtype=torch.uint8)):
        expected = transform(img)
        torch.testing.assert_close(scripted(img), expected, atol=0, rtol=0)
        exported = torch.export.export(transform, (img,))
        torch.testing.assert_close(exported.module()(img), expected, atol=0, rtol=0)


def test_compile_fullgraph_every_geometry_transform() -> None:
    # backend="eager": checks that Dynamo traces one graph (no breaks) without the slow codegen.
    img = torch.randint(0, 256, (2, 3, 12, 12), dtype=torch.uint8)
    cases = [
        T.Resize(6),
        T.CenterCrop(5),
        T.Pad(1, padding_mode="reflect"),
        T.FiveCrop(4),
        T.TenCrop(4),
        T.RandomCrop(6, padding=1),
        T.RandomResizedCrop(6),
        T.RandomHorizontalFlip(),
        T.RandomVerticalFlip(),
        T.RandomResizedCrop(6, per_sample=True),
    ]
    with torch._dynamo.config.patch(recompile_limit=64):
        for t in cases:
            out = torch.compile(t, fullgraph=True, backend="eager")(img)
            eager = t(img)
            if isinstance(eager, tuple):
                assert all(torch.equal(a, b) for a, b in zip(out, eager, strict=True))
            else:
                assert out.shape == eager.shape and out.dtype == eager.dtype
    deterministic = T.Resize(6)
    torch.testing.assert_close(
        torch.compile(deterministic, fullgraph=True, backend="eager")(img), deterministic(img)
    )


def test_compiled_random_crop_with_inductor_is_seeded_by_manual_seed() -> None:
    torch._dynamo.reset()
    t = torch.compile(T.RandomResizedCrop(6, per_sample=True), fullgraph=True)
    img = torch.rand(3, 3, 16, 16)
    torch.manual_seed(0)
    a = t(img)
    torch.manual_seed(0)
    assert torch.equal(a, t(img)) and a.shape == (3, 3, 6, 6)


# CUDA.


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(photo: torch.Tensor) -> None:
    gpu = photo.cuda()
    for fn in (
        lambda x: F.resize(x, [150, 128]),
        lambda x: F.resize(x.float() / 255, [300, 200], "bicubic"),
        lambda x: F.center_crop(x, [700, 100]),
        lambda x: F.pad(x, [3, 5], padding_mode="reflect"),
        lambda x: F.resized_crop(x, 10, 20, 300, 200, [64, 64]),
        lambda x: F.horizontal_flip(x),
    ):
        out, ref = fn(gpu), fn(photo)
        assert out.device.type == "cuda"
        assert (out.cpu().float() - ref.float()).abs().max() <= (
            1 if ref.dtype == torch.uint8 else 1e-3
        )
    batch = torch.stack([gpu, gpu.flip(-1)])[..., :400, :400]
    boxes = [torch.tensor(v, device="cuda") for v in ([0, 50], [10, 30], [300, 200], [250, 350])]
    out = F.resized_crop_batched(batch, *boxes, [64, 64])
    ref = F.resized_crop_batched(batch.cpu(), *(b.cpu() for b in boxes), [64, 64])
    assert (out.cpu().int() - ref.int()).abs().max() <= 1
    t = T.RandomResizedCrop(
        32, per_sample=True, generator=torch.Generator(device="cuda").manual_seed(0)
    )
    assert t(batch).device.type == "cuda"


# torchvision, where it imports.


def test_kernels_match_torchvision(photo: torch.Tensor) -> None:
    tvf = require_torchvision().transforms.v2.functional
    img = photo[:, :300, :280]
    pairs = [
        (F.resize(img, [150, 128]), tvf.resize(img, [150, 128], antialias=True), 1),
        (
            F.resize(img, 100, "bicubic", max_size=120),
            tvf.resize(img, 100, tvf.InterpolationMode.BICUBIC, max_size=120),
            2,
        ),
        (F.center_crop(img, [310, 20]), tvf.center_crop(img, [310, 20]), 0),
        (F.crop(img, -3, 5, 40, 50), tvf.crop(img, -3, 5, 40, 50), 0),
        (
            F.pad(img, [1, 2, 3, 4], padding_mode="symmetric"),
            tvf.pad(img, [1, 2, 3, 4], padding_mode="symmetric"),
            0,
        ),
        (F.pad(img, [3, 4], fill=[1, 2, 3]), tvf.pad(img, [3, 4], fill=[1, 2, 3]), 0),
        (
            F.resized_crop(img, 5, 6, 100, 90, [32, 40]),
            tvf.resized_crop(img, 5, 6, 100, 90, [32, 40], antialias=True),
            1,
        ),
    ]
    for ours, theirs, tol in pairs:
        assert ours.shape == theirs.shape
        assert (ours.int() - theirs.int()).abs().max() <= tol


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_resize_decoder_views_take_the_channels_last_kernel(photo: torch.Tensor, mode: str) -> None:
    # decode_jpeg gives a [C, H, W] view of [H, W, C] pixels; resizing it must give
    # the values of the contiguous image (within the kernels' rounding) and keep its
    # layout, which is how torch's fast uint8 kernel shows it was taken.
    assert photo.permute(1, 2, 0).is_contiguous()
    out = F.resize(photo, [200, 170], mode)
    plain = F.resize(photo.contiguous(), [200, 170], mode)
    assert out.permute(1, 2, 0).is_contiguous()
    assert (out.int() - plain.int()).abs().max() <= 1
    region = photo[:, 10:310, 20:320]  # a crop keeps the channels innermost, not dense
    torch.testing.assert_close(
        F.resize(region, [224, 224], mode).int(),
        F.resize(region.contiguous(), [224, 224], mode).int(),
        atol=1,
        rtol=0,
    )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_resize_crops_of_decoder_views_match_dense_copies(photo: torch.Tensor, mode: str) -> None:
    # A crop of a decoded image has its rows apart; it must resize exactly as the same
    # pixels in fresh dense [H, W, C] memory, and through the channels-last kernel
    # (its output keeps that layout).
    gen = torch.Generator().manual_seed(3)
    h, w = photo.shape[-2:]
    for _ in range(20):
        top, left = (int(torch.randint(0, n - 8, (1,), generator=gen)) for n in (h, w))
        bh = int(torch.randint(1, h - top + 1, (1,), generator=gen))
        bw = int(torch.randint(1, w - left + 1, (1,), generator=gen))
        size = [int(v) for v in torch.randint(1, 300, (2,), generator=gen)]
        region = photo[:, top : top + bh, left : left + bw]
        dense = region.permute(1, 2, 0).clone().permute(2, 0, 1)
        out = F.resize(region, size, mode)
        assert torch.equal(out, F.resize(dense, size, mode))
        assert torch.equal(out, F.resized_crop(photo, top, left, bh, bw, size, mode))
        if list(out.shape[-2:]) != [bh, bw]:
            assert out.permute(1, 2, 0).is_contiguous()
