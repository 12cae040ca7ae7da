"""The last names of ``torchvision.transforms.v2`` and its functional, against torchvision 0.28.

Each is run on the same input as torchvision's (its pure-Python code): the size
queries, noise (same seed of torch's generator), channel permutations, temporal
subsampling, box sanitizing, the v1 conversions (``ToTensor``, ``ToPILImage``, also
against Pillow and NumPy), random resizes (same seed) and the photometric distortion
(fixed parameters). ``JPEG`` goes through Trivium's codec and is compared with
Pillow's encode and decode at the same quality (torchvision's needs its C++ codec).
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision import tv_tensors
from trivium.vision.io import read_image
from trivium.vision.transforms import functional as F

H, W = 12, 16


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    """A 64 x 96 crop of a real photo, uint8 RGB."""
    return read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")[:, 100:164, 200:296].contiguous()


def _plain(x: Any) -> torch.Tensor:
    return x.as_subclass(torch.Tensor)


def _typed(ns: Any, kind: str, data: torch.Tensor) -> Any:
    """``data`` as the tv_tensor ``kind`` of ``ns`` (our tv_tensors or torchvision's)."""
    if kind == "boxes":
        return ns.BoundingBoxes(data, format="XYXY", canvas_size=(H, W))
    if kind == "keypoints":
        return ns.KeyPoints(data, canvas_size=(H, W))
    return {"image": ns.Image, "video": ns.Video, "mask": ns.Mask}[kind](data)


def _data(kind: str) -> torch.Tensor:
    return {
        "image": torch.zeros(2, 3, H, W),
        "video": torch.zeros(4, 3, H, W),
        "mask": torch.zeros(H, W),
        "boxes": torch.tensor([[1.0, 2.0, 5.0, 6.0]]),
        "keypoints": torch.tensor([[1.0, 2.0]]),
    }[kind]


def _outcome(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, or "raises" (where torchvision fails with an IndexError, ours names
    the argument in a ValueError or TypeError)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    except (TypeError, ValueError, IndexError):
        return "raises"


# Sizes.

META = [
    "get_dimensions",
    "get_num_channels",
    "get_image_num_channels",
    "get_size",
    "get_num_frames",
    "get_image_size",
]


@pytest.mark.parametrize("name", META)
def test_size_queries_match_torchvision(name: str, tv) -> None:
    ours, theirs = getattr(F, name), getattr(tv.transforms.v2.functional, name)
    for kind in ("image", "video", "mask", "boxes", "keypoints"):
        data = _data(kind)
        expected = _outcome(theirs, _typed(tv.tv_tensors, kind, data))
        assert _outcome(ours, _typed(tv_tensors, kind, data)) == expected, (name, kind)
    for plain in (torch.zeros(2, 3, H, W), torch.zeros(H, W), torch.zeros(5)):
        assert _outcome(ours, plain) == _outcome(theirs, plain), (name, plain.shape)
    for mode in ("L", "LA", "RGB", "RGBA"):
        pic = Image.new(mode, (W, H))
        assert _outcome(ours, pic) == _outcome(theirs, pic), (name, mode)


def test_size_kernels_and_pure_tensors(tv) -> None:
    tvF = tv.transforms.v2.functional
    video = torch.zeros(5, 2, 3, H, W)
    for name in ("get_dimensions_image", "get_num_channels_video", "get_size_video"):
        assert getattr(F, name)(video) == getattr(tvF, name)(video)
    assert F.get_num_frames_video(video) == tvF.get_num_frames_video(video) == 2
    with pytest.warns(DeprecationWarning, match="use get_size"):
        assert F.get_image_size(torch.zeros(3, H, W)) == [W, H]
    ours, theirs = tv_tensors.Image(torch.zeros(1, 1, 1)), tv.tv_tensors.Image(torch.zeros(1, 1, 1))
    assert F.is_pure_tensor(ours) is tvF.is_pure_tensor(theirs) is False
    for x in (torch.zeros(1), np.zeros(1)):
        assert F.is_pure_tensor(x) == tvF.is_pure_tensor(x)
    with pytest.raises(ValueError, match=r"get_num_frames: expected a video"):
        F.get_num_frames(torch.zeros(3, H, W))
    with pytest.raises(TypeError, match="get_size has no kernel for"):
        F.get_size(type("Other", (tv_tensors.TVTensor,), {})(torch.zeros(1)))


def test_short_names_are_the_functionals(tv) -> None:
    tvF = tv.transforms.v2.functional
    assert F.hflip is F.horizontal_flip and tvF.hflip is tvF.horizontal_flip
    assert F.vflip is F.vertical_flip and tvF.vflip is tvF.vertical_flip
    assert F.elastic_transform is F.elastic and tvF.elastic_transform is tvF.elastic
    img = torch.arange(6.0).view(1, 2, 3)
    assert torch.equal(F.hflip(img), tvF.hflip(img))
    assert torch.equal(F.vflip(img), tvF.vflip(img))


# Sample queries.


def _sample(ns: Any, image_size: tuple[int, int] = (H, W)) -> list[Any]:
    return [
        ns.Image(torch.zeros(3, *image_size)),
        ns.BoundingBoxes(torch.tensor([[1, 2, 5, 6]]), format="XYXY", canvas_size=(H, W)),
        ns.Mask(torch.zeros(H, W)),
        ns.KeyPoints(torch.tensor([[1.0, 2.0]]), canvas_size=(H, W)),
        "label",
    ]


def test_sample_queries_match_torchvision(tv) -> None:
    v2 = tv.transforms.v2
    for size in ((H, W), (H + 1, W)):
        ours, theirs = _sample(tv_tensors, size), _sample(tv.tv_tensors, size)
        for name in ("query_size", "query_chw"):
            assert _outcome(getattr(T, name), ours) == _outcome(getattr(v2, name), theirs), name
    ours, theirs = _sample(tv_tensors), _sample(tv.tv_tensors)
    assert T.get_bounding_boxes(ours) is ours[1] and v2.get_bounding_boxes(theirs) is theirs[1]
    assert T.get_keypoints(ours) is ours[3] and v2.get_keypoints(theirs) is theirs[3]
    for name in ("get_bounding_boxes", "get_keypoints", "query_size", "query_chw"):
        assert _outcome(getattr(T, name), ["label"]) == _outcome(getattr(v2, name), ["label"])
    checks = [(str,), (tv_tensors.Mask, int), (lambda x: x == "label",), (int,)]
    for check in checks:
        tv_check = tuple(getattr(tv.tv_tensors, c.__name__, c) for c in check)
        assert T.has_any(ours, *check) == v2.has_any(theirs, *tv_check)
        assert T.has_all(ours, *check) == v2.has_all(theirs, *tv_check)
        assert T.check_type(ours[2], check) == v2.check_type(theirs[2], tv_check)
    assert T.has_all(ours, tv_tensors.Mask, str) and not T.has_all(ours, tv_tensors.Mask, int)


# Noise.


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("clip", [True, False])
def test_gaussian_noise_matches_torchvision(photo: torch.Tensor, dtype, clip: bool, tv) -> None:
    x = photo if dtype == torch.uint8 else photo.float() / 255
    for kind in ("image", "video"):
        data = x if kind == "image" else torch.stack([x, x])
        torch.manual_seed(5)
        expected = tv.transforms.v2.functional.gaussian_noise(
            _typed(tv.tv_tensors, kind, data), mean=0.1, sigma=0.3, clip=clip
        )
        torch.manual_seed(5)
        out = F.gaussian_noise(_typed(tv_tensors, kind, data), mean=0.1, sigma=0.3, clip=clip)
        assert type(out).__name__ == type(expected).__name__
        assert torch.equal(_plain(out), _plain(expected))
    torch.manual_seed(7)
    expected = tv.transforms.v2.GaussianNoise(sigma=0.2, clip=clip)(x)
    torch.manual_seed(7)
    assert torch.equal(T.GaussianNoise(sigma=0.2, clip=clip)(x), expected)


def test_gaussian_noise_statistics_and_errors() -> None:
    x = torch.full((2, 1, 128, 128), 0.5)
    out = T.GaussianNoise(mean=0.05, sigma=0.1, generator=torch.Generator().manual_seed(0))(x)
    noise = out - x
    assert abs(float(noise.mean()) - 0.05) < 0.005 and abs(float(noise.std()) - 0.1) < 0.005
    assert not torch.equal(noise[0], noise[1])  # every image its own noise
    wide = torch.full((1, 128, 128), 30000, dtype=torch.uint16)
    shifted = F.gaussian_noise(wide, mean=0.1, sigma=0.0)
    assert shifted.dtype == torch.uint16 and int(shifted.int().max()) == 30000 + 6553
    boxes = tv_tensors.BoundingBoxes([[0, 0, 1, 1]], format="XYXY", canvas_size=(2, 2))
    assert T.GaussianNoise()(torch.zeros(1, 2, 2), boxes)[1] is boxes
    with pytest.raises(ValueError, match="gaussian_noise: sigma must be >= 0"):
        F.gaussian_noise(x, sigma=-1.0)
    with pytest.raises(TypeError, match="GaussianNoise: mean must be a number"):
        T.GaussianNoise(mean="0")
    with pytest.raises(TypeError, match="gaussian_noise: expected a uint8, uint16 or floating"):
        F.gaussian_noise(torch.zeros(1, 2, 2, dtype=torch.int32))


# JPEG.


def _pillow_jpeg(img: torch.Tensor, quality: int) -> torch.Tensor:
    """``img`` [C, H, W] uint8 encoded and decoded by Pillow at ``quality``."""
    array = img.permute(1, 2, 0).numpy()
    buf = io.BytesIO()
    Image.fromarray(array[:, :, 0] if img.shape[0] == 1 else array).save(
        buf, format="JPEG", quality=quality
    )
    decoded = np.array(Image.open(buf))
    return torch.from_numpy(decoded.reshape(*decoded.shape[:2], -1)).permute(2, 0, 1)


@pytest.mark.parametrize("quality", [5, 50, 95])
def test_jpeg_matches_pillow(photo: torch.Tensor, quality: int) -> None:
    for img in (photo, photo[:1].contiguous()):
        out = F.jpeg(img, quality=quality)
        expected = _pillow_jpeg(img, quality)
        assert out.shape == img.shape and out.dtype == torch.uint8
        assert (out.int() - expected.int()).abs().max() <= 1
    video = tv_tensors.Video(torch.stack([photo, photo.flip(-1)]))
    out = F.jpeg(video, quality=quality)
    assert type(out) is tv_tensors.Video
    assert (_plain(out)[1].int() - _pillow_jpeg(photo.flip(-1), quality).int()).abs().max() <= 1


def test_jpeg_transform_draws_as_torchvision(photo: torch.Tensor, tv) -> None:
    for quality in (80, (10, 90)):
        torch.manual_seed(3)
        expected = tv.transforms.v2.JPEG(quality).make_params([photo])["quality"]
        torch.manual_seed(3)
        assert T.JPEG(quality).make_params([photo])["quality"] == expected
    params = {"quality": expected}
    assert torch.equal(T.JPEG((10, 90)).transform(photo, params), F.jpeg(photo, expected))


def test_jpeg_per_sample_and_errors(photo: torch.Tensor) -> None:
    batch = torch.stack([photo, photo, photo])
    t = T.JPEG((5, 95), per_sample=True, generator=torch.Generator().manual_seed(1))
    qualities = t.make_params([batch])["quality"].tolist()
    assert len(set(qualities)) > 1
    out = t.transform(batch, {"quality": torch.tensor(qualities)})
    for img, quality in zip(out, qualities, strict=True):
        assert torch.equal(img, F.jpeg(photo, quality))
    smooth = (torch.linspace(0, 65535, 64).view(1, 1, 64).expand(1, 32, 64)).to(torch.uint16)
    twelve_bit = F.jpeg(smooth, quality=95)
    assert twelve_bit.dtype == torch.uint16
    assert (twelve_bit.int() - smooth.int()).abs().float().mean() < 64  # 12-bit: 16 per level
    for bad in (0, 101):
        with pytest.raises(ValueError, match="JPEG: quality must be an int from 1 to 100"):
            T.JPEG(bad)
    with pytest.raises(TypeError, match="JPEG: quality must be an int"):
        T.JPEG(True)
    with pytest.raises(ValueError, match="min <= max"):
        T.JPEG((90, 10))
    with pytest.raises(TypeError, match="JPEG: expected a uint8 or uint16 image"):
        T.JPEG(50)(photo.float())
    with pytest.raises(ValueError, match="jpeg: expected an image with 1 or 3 channels"):
        F.jpeg(torch.zeros(2, 8, 8, dtype=torch.uint8), 50)


# Videos.


def test_uniform_temporal_subsample_matches_torchvision(tv) -> None:
    video = torch.randint(0, 256, (2, 10, 3, 4, 4), dtype=torch.uint8)
    for n in (1, 4, 10, 15):
        expected = tv.transforms.v2.functional.uniform_temporal_subsample(video, n)
        assert torch.equal(F.uniform_temporal_subsample(video, n), expected)
        typed = F.uniform_temporal_subsample_video(video, n)
        assert torch.equal(typed, expected)
    image = tv_tensors.Image(torch.zeros(3, 4, 4))
    out_video, out_image = T.UniformTemporalSubsample(3)(tv_tensors.Video(video), image)
    assert type(out_video) is tv_tensors.Video and out_image is image
    assert torch.equal(_plain(out_video), tv.transforms.v2.UniformTemporalSubsample(3)(video))
    with pytest.raises(ValueError, match="num_samples must be a positive int"):
        T.UniformTemporalSubsample(0)
    with pytest.raises(ValueError, match=r"expected a video \[..., T, C, H, W\]"):
        F.uniform_temporal_subsample(torch.zeros(3, 4, 4), 2)


# Boxes.


@pytest.mark.parametrize("fmt", ["XYXY", "XYWH", "CXCYWH"])
def test_sanitize_bounding_boxes_matches_torchvision(fmt: str, tv) -> None:
    data = torch.tensor(
        [[1.0, 1.0, 5.0, 6.0], [2.0, 2.0, 2.5, 9.0], [-1.0, 0.0, 3.0, 3.0], [10.0, 2.0, 17.0, 8.0]]
    )
    tvF = tv.transforms.v2.functional
    kw = {"format": fmt, "canvas_size": (H, W), "min_size": 2}
    kept, valid = F.sanitize_bounding_boxes(data, **kw)
    tv_kept, tv_valid = tvF.sanitize_bounding_boxes(data, **kw)
    assert torch.equal(valid, tv_valid) and torch.equal(kept, tv_kept)
    boxes = tv_tensors.BoundingBoxes(data, format=fmt, canvas_size=(H, W))
    kept, valid = F.sanitize_bounding_boxes(boxes, min_area=5)
    tv_boxes = tv.tv_tensors.BoundingBoxes(data, format=fmt, canvas_size=(H, W))
    tv_kept, tv_valid = tvF.sanitize_bounding_boxes(tv_boxes, min_area=5)
    assert type(kept) is tv_tensors.BoundingBoxes and kept.format.value == fmt
    assert torch.equal(valid, tv_valid) and torch.equal(_plain(kept), _plain(tv_kept))
    with pytest.raises(ValueError, match="format and canvas_size are needed"):
        F.sanitize_bounding_boxes(data)
    with pytest.raises(ValueError, match="must be None for BoundingBoxes"):
        F.sanitize_bounding_boxes(boxes, format=fmt)


def test_set_clamping_mode_matches_torchvision(tv) -> None:
    data = torch.tensor([[1.0, 1.0, 5.0, 6.0]])
    boxes = tv_tensors.BoundingBoxes(data, format="XYXY", canvas_size=(H, W))
    for mode in ("hard", None):
        out, label = T.SetClampingMode(mode)(boxes, 3)
        expected = tv.transforms.v2.SetClampingMode(mode)(
            tv.tv_tensors.BoundingBoxes(data, format="XYXY", canvas_size=(H, W))
        )
        assert out.clamping_mode == expected.clamping_mode == mode and label == 3
        assert torch.equal(_plain(out), _plain(expected)) and out.data_ptr() != boxes.data_ptr()
    assert boxes.clamping_mode == "soft"
    with pytest.raises(ValueError, match="SetClampingMode: clamping_mode must be soft, hard"):
        T.SetClampingMode("auto")


# Conversions.


def test_convert_image_dtype_matches_torchvision(photo: torch.Tensor, tv) -> None:
    for dtype in (torch.float32, torch.float64, torch.int32):
        expected = tv.transforms.v2.functional.convert_image_dtype(photo, dtype)
        assert torch.equal(F.convert_image_dtype(photo, dtype), expected)
        t = T.ConvertImageDtype(dtype)
        assert torch.equal(t(photo), tv.transforms.v2.ConvertImageDtype(dtype)(photo))
        assert torch.equal(torch.jit.script(t)(photo), expected)
    exported = torch.export.export(T.ConvertImageDtype(), (photo,)).module()
    assert torch.equal(exported(photo), F.convert_image_dtype(photo))
    mask = tv_tensors.Mask(torch.ones(2, 2, dtype=torch.uint8))
    assert T.ConvertImageDtype()(photo, mask)[1] is mask  # images only, as torchvision's
    with pytest.raises(TypeError, match=r"ConvertImageDtype: dtype must be a torch\.dtype"):
        T.ConvertImageDtype("float32")


def _pil_images() -> list[Any]:
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8))
    return [
        rgb,
        rgb.convert("L"),
        rgb.convert("RGBA"),
        rgb.convert("LA"),
        rgb.convert("1"),
        rgb.convert("P"),
        rgb.convert("I"),
        rgb.convert("F"),
        rgb.convert("YCbCr"),
        rgb.convert("CMYK"),
        Image.fromarray(rng.integers(0, 30000, (H, W), dtype=np.uint16)),  # I;16
    ]


def test_to_tensor_matches_torchvision_and_numpy(tv) -> None:
    v1 = tv.transforms.functional
    for pic in _pil_images():
        out = F.to_tensor(pic)
        expected = v1.to_tensor(pic)
        assert out.dtype == expected.dtype and torch.equal(out, expected), pic.mode
        assert torch.equal(T.ToTensor()(pic), expected)
        if pic.mode in ("L", "RGB", "RGBA"):
            array = np.asarray(pic, dtype=np.float32).reshape(H, W, -1) / 255
            np.testing.assert_allclose(out.permute(1, 2, 0).numpy(), array, rtol=1e-6)
    rng = np.random.default_rng(1)
    for array in (
        rng.integers(0, 256, (H, W, 3), dtype=np.uint8),
        rng.integers(0, 256, (H, W), dtype=np.uint8),
        rng.random((H, W, 2)).astype(np.float32),
        rng.integers(0, 9, (H, W, 1), dtype=np.int16),
    ):
        out = T.ToTensor()(array)
        expected = v1.to_tensor(array)
        assert out.dtype == expected.dtype and torch.equal(out, expected)
    assert T.ToTensor()("label") == "label"
    with pytest.raises(ValueError, match="to_tensor: expected an array"):
        F.to_tensor(np.zeros((1, 2, 3, 4), dtype=np.uint8))
    with pytest.raises(TypeError, match="to_tensor: expected a PIL image or a NumPy array"):
        F.to_tensor(torch.zeros(3, 2, 2))


TO_PIL = [
    (torch.randint(0, 256, (1, H, W), dtype=torch.uint8), None),
    (torch.randint(0, 256, (2, H, W), dtype=torch.uint8), None),
    (torch.randint(0, 256, (3, H, W), dtype=torch.uint8), None),
    (torch.randint(0, 256, (4, H, W), dtype=torch.uint8), None),
    (torch.rand(3, H, W), None),
    (torch.rand(1, H, W), None),
    (torch.rand(1, H, W), "F"),
    (torch.randint(0, 256, (3, H, W), dtype=torch.uint8), "HSV"),
    (torch.randint(0, 256, (3, H, W), dtype=torch.uint8), "YCbCr"),
    (torch.randint(0, 256, (4, H, W), dtype=torch.uint8), "CMYK"),
    (torch.randint(0, 256, (4, H, W), dtype=torch.uint8), "RGBX"),
    (torch.randint(-900, 900, (1, H, W), dtype=torch.int16), None),
    (torch.randint(-9000, 9000, (1, H, W), dtype=torch.int32), None),
    (torch.randint(0, 256, (H, W), dtype=torch.uint8), None),
]


@pytest.mark.parametrize(("img", "mode"), TO_PIL, ids=lambda v: str(getattr(v, "dtype", v)))
def test_to_pil_image_matches_torchvision(img: torch.Tensor, mode: str | None, tv) -> None:
    expected = tv.transforms.v2.ToPILImage(mode)(img)
    for inpt in (img, img.permute(1, 2, 0).numpy() if img.ndim == 3 else img.numpy()):
        out = T.ToPILImage(mode)(inpt)
        assert out.mode == expected.mode and out.size == expected.size
        np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))
    if mode is None and img.dtype == torch.uint8 and img.ndim == 3:  # Pillow's own reading
        array = img.permute(1, 2, 0).numpy()
        reference = Image.fromarray(array[:, :, 0] if img.shape[0] == 1 else array)
        np.testing.assert_array_equal(np.asarray(T.ToPILImage()(img)), np.asarray(reference))


def test_to_pil_image_sample_and_errors() -> None:
    img = torch.zeros(3, H, W, dtype=torch.uint8)
    out, label = T.ToPILImage()(img, torch.tensor([1, 2]))
    assert out.mode == "RGB" and label.tolist() == [1, 2]
    video = tv_tensors.Video(torch.zeros(2, 3, H, W, dtype=torch.uint8))
    assert T.ToPILImage()(video) is video
    with pytest.raises(ValueError, match=r"ToPILImage: mode must be one of \['LA'\]"):
        T.ToPILImage("RGB")(torch.zeros(2, H, W, dtype=torch.uint8))
    with pytest.raises(ValueError, match="ToPILImage: mode 'L' does not fit one channel"):
        T.ToPILImage("L")(torch.zeros(1, H, W, dtype=torch.int32))
    with pytest.raises(ValueError, match="ToPILImage: expected at most 4 channels"):
        T.ToPILImage()(torch.zeros(5, H, W, dtype=torch.uint8))
    with pytest.raises(TypeError, match="ToPILImage: cannot make a PIL image"):
        T.ToPILImage()(torch.zeros(3, H, W, dtype=torch.int32))


def test_to_pure_tensor_and_identity_match_torchvision(tv) -> None:
    data = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    ours = (
        tv_tensors.Image(torch.ones(3, 2, 2)),
        {"boxes": tv_tensors.BoundingBoxes(data, format="XYXY", canvas_size=(H, W))},
        "label",
    )
    out = T.ToPureTensor()(*ours)
    theirs = tv.transforms.v2.ToPureTensor()(
        tv.tv_tensors.Image(torch.ones(3, 2, 2)),
        {"boxes": tv.tv_tensors.BoundingBoxes(data, format="XYXY", canvas_size=(H, W))},
        "label",
    )
    assert type(out[0]) is type(theirs[0]) is torch.Tensor
    assert type(out[1]["boxes"]) is torch.Tensor and torch.equal(out[1]["boxes"], data)
    assert out[2] == theirs[2] == "label"
    assert T.Identity()(*ours) == ours


def test_linear_transformation_matches_torchvision(tv) -> None:
    g = torch.Generator().manual_seed(0)
    d = 3 * 4 * 5
    matrix, mean = torch.randn(d, d, generator=g), torch.randn(d, generator=g)
    img = torch.rand(2, 3, 4, 5, generator=g)
    t = T.LinearTransformation(matrix, mean)
    expected = tv.transforms.v2.LinearTransformation(matrix, mean)(img)
    torch.testing.assert_close(t(img), expected)
    torch.testing.assert_close(torch.jit.script(t)(img), expected)
    torch.testing.assert_close(torch.export.export(t, (img,)).module()(img), expected)
    mask = tv_tensors.Mask(torch.ones(4, 5))
    assert t(tv_tensors.Image(img), mask)[1] is mask
    with pytest.raises(ValueError, match="transformation_matrix must be square"):
        T.LinearTransformation(torch.zeros(2, 3), torch.zeros(2))
    with pytest.raises(ValueError, match="mean_vector must have shape"):
        T.LinearTransformation(torch.zeros(2, 2), torch.zeros(3))
    with pytest.raises(ValueError, match="must have one dtype"):
        T.LinearTransformation(torch.zeros(2, 2), torch.zeros(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="the image has 3 x 4 x 4 = 48 values"):
        t(torch.zeros(3, 4, 4))
    with pytest.raises(TypeError, match="LinearTransformation does not take PIL images"):
        t(Image.new("RGB", (5, 4)))


# Colour.


def test_grayscale_to_rgb_matches_torchvision(photo: torch.Tensor, tv) -> None:
    tvF = tv.transforms.v2.functional
    gray = photo[:1]
    for img in (gray, photo, torch.stack([gray, gray])):
        assert torch.equal(F.grayscale_to_rgb(img), tvF.grayscale_to_rgb(img))
        assert torch.equal(T.RGB()(img), tv.transforms.v2.RGB()(img))
    out = F.grayscale_to_rgb(tv_tensors.Image(gray))
    assert type(out) is tv_tensors.Image and out.shape[-3] == 3
    pic = Image.fromarray(gray[0].numpy())
    expected = np.asarray(pic.convert("RGB"))
    np.testing.assert_array_equal(np.asarray(T.RGB()(pic)), expected)
    with pytest.raises(ValueError, match="grayscale_to_rgb: expected an image with 1 or at least"):
        F.grayscale_to_rgb(photo[:2])


def test_permute_channels_matches_torchvision(photo: torch.Tensor, tv) -> None:
    tvF = tv.transforms.v2.functional
    for perm in ([2, 0, 1], [0, 1, 2], [1, 1, 0]):
        for kind in ("image", "video"):
            data = photo if kind == "image" else torch.stack([photo, photo.flip(-1)])
            out = F.permute_channels(_typed(tv_tensors, kind, data), perm)
            expected = tvF.permute_channels(_typed(tv.tv_tensors, kind, data), perm)
            assert type(out).__name__ == type(expected).__name__
            assert torch.equal(_plain(out), _plain(expected))
    wide = photo.to(torch.uint16) * 257
    assert torch.equal(F.permute_channels(wide, [2, 1, 0]), wide.flip(0))
    with pytest.raises(ValueError, match="permute_channels: permutation must have 3 entries"):
        F.permute_channels(photo, [1, 0])


def test_random_channel_permutation(photo: torch.Tensor, tv) -> None:
    for seed in range(3):
        torch.manual_seed(seed)
        expected = tv.transforms.v2.RandomChannelPermutation()(photo)
        torch.manual_seed(seed)
        assert torch.equal(T.RandomChannelPermutation()(photo), expected)
    batch = torch.stack([photo] * 8)
    out = T.RandomChannelPermutation(per_sample=True, generator=torch.Generator().manual_seed(0))(
        batch
    )
    orders = set()
    for img in out:
        order = tuple(int((photo == c).all(dim=(1, 2)).nonzero()[0]) for c in img)
        assert sorted(order) == [0, 1, 2]
        orders.add(order)
    assert len(orders) > 1  # not one order for the batch


PHOTOMETRIC = [
    {
        "brightness_factor": 1.1,
        "contrast_factor": 0.7,
        "saturation_factor": 1.3,
        "hue_factor": 0.04,
        "contrast_before": True,
        "channel_permutation": [2, 0, 1],
    },
    {
        "brightness_factor": None,
        "contrast_factor": 1.4,
        "saturation_factor": None,
        "hue_factor": -0.03,
        "contrast_before": False,
        "channel_permutation": None,
    },
]


@pytest.mark.parametrize("params", PHOTOMETRIC)
def test_photometric_distort_matches_torchvision(photo: torch.Tensor, params: dict, tv) -> None:
    theirs = dict(params)
    if theirs["channel_permutation"] is not None:
        theirs["channel_permutation"] = torch.tensor(theirs["channel_permutation"])
    for img in (photo, photo.float() / 255):
        expected = tv.transforms.v2.RandomPhotometricDistort().transform(img, theirs)
        out = T.RandomPhotometricDistort().transform(img, dict(params))
        torch.testing.assert_close(out, expected, atol=1, rtol=0)


def test_photometric_distort_per_sample_is_each_images_own(photo: torch.Tensor) -> None:
    batch = torch.stack([photo, photo.flip(-1), photo.flip(-2), photo])
    t = T.RandomPhotometricDistort(p=0.6, per_sample=True)
    t.generator = torch.Generator().manual_seed(4)
    params = t.make_params([batch])
    out = t.transform(batch, params)
    for i in range(batch.shape[0]):
        apply = params["apply"][i].tolist()
        one = {
            name: float(params[name][i]) if apply[k] else None
            for k, name in enumerate(T.RandomPhotometricDistort._FACTORS)
        }
        one["contrast_before"] = bool(params["contrast_before"][i])
        permutation = params["channel_permutation"][i].tolist()
        one["channel_permutation"] = permutation if apply[4] else None
        expected = t.transform(batch[i], one)
        assert (out[i].int() - expected.int()).abs().max() <= 1, i
    assert params["apply"].any(dim=0).all() and not params["apply"].all()
    with pytest.raises(ValueError, match="RandomPhotometricDistort: hue must satisfy"):
        T.RandomPhotometricDistort(hue=(-0.7, 0.1))
    with pytest.raises(TypeError, match="RandomPhotometricDistort: brightness must be a"):
        T.RandomPhotometricDistort(brightness=1.2)


# Random resizes.


def test_scale_jitter_and_random_resize_draw_as_torchvision(photo: torch.Tensor, tv) -> None:
    data = torch.tensor([[4.0, 6.0, 40.0, 50.0]])
    cases = [
        (lambda: T.ScaleJitter((80, 60)), lambda: tv.transforms.v2.ScaleJitter((80, 60))),
        (lambda: T.RandomResize(20, 90), lambda: tv.transforms.v2.RandomResize(20, 90)),
    ]
    for ours, theirs in cases:
        for seed in range(3):
            torch.manual_seed(seed)
            img, boxes = ours()(
                tv_tensors.Image(photo),
                tv_tensors.BoundingBoxes(data, format="XYXY", canvas_size=(64, 96)),
            )
            torch.manual_seed(seed)
            tv_img, tv_boxes = theirs()(
                tv.tv_tensors.Image(photo),
                tv.tv_tensors.BoundingBoxes(data, format="XYXY", canvas_size=(64, 96)),
            )
            assert img.shape == tv_img.shape and boxes.canvas_size == tuple(tv_boxes.canvas_size)
            assert (_plain(img).int() - _plain(tv_img).int()).abs().max() <= 1
            torch.testing.assert_close(_plain(boxes), _plain(tv_boxes))
    with pytest.raises(ValueError, match="ScaleJitter: scale_range must be"):
        T.ScaleJitter((10, 10), scale_range=(2.0, 1.0))
    with pytest.raises(ValueError, match="ScaleJitter: target_size must be two positive ints"):
        T.ScaleJitter(10)
    with pytest.raises(ValueError, match="RandomResize: min_size and max_size must be ints"):
        T.RandomResize(10, 10)


# torch.compile: the random transforms draw from torch's default generator when traced.

COMPILED = {
    "GaussianNoise": lambda: T.GaussianNoise(sigma=0.2),
    "RandomChannelPermutation": lambda: T.RandomChannelPermutation(per_sample=True),
    "RandomPhotometricDistort": lambda: T.RandomPhotometricDistort(p=0.7, per_sample=True),
    "RGB": lambda: T.RGB(),
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n == "RandomPhotometricDistort" else n
        for n in sorted(COMPILED)
    ],
)
def test_compiles_in_one_graph(name: str) -> None:
    x = torch.rand(4, 3, 16, 16)
    t = COMPILED[name]()
    compiled = torch.compile(t, fullgraph=True, backend="eager")
    torch.manual_seed(0)
    out = compiled(x)
    assert out.shape == x.shape and out.dtype == x.dtype
    if name == "GaussianNoise":  # the same draws as the eager transform from the same seed
        torch.manual_seed(0)
        torch.testing.assert_close(out, t(x))


def test_compiled_draw_is_shared_by_the_batch_without_per_sample() -> None:
    same = torch.rand(1, 3, 16, 16).expand(4, 3, 16, 16).contiguous()
    t = T.RandomChannelPermutation()
    torch.manual_seed(1)
    out = torch.compile(t, fullgraph=True, backend="eager")(same)
    assert all(torch.equal(out[0], out[i]) for i in range(4))
    assert sorted(out[0, :, 0, 0].tolist()) == sorted(same[0, :, 0, 0].tolist())
