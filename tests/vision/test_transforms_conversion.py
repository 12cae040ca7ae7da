"""ToImage, PILToTensor, ToDtype, Normalize, Lambda: against NumPy formulas and Pillow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from peers import require_torchvision
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.transforms import functional as F

IMAGES = Path(__file__).parents[1] / "assets" / "images"


@pytest.mark.parametrize(
    "path",
    [
        IMAGES / "jpeg" / "tv-grace_hopper_517x606.jpg",
        IMAGES / "png" / "basn6a08.png",
        IMAGES / "png" / "basn0g08.png",
    ],
)
def test_to_image_of_pil_matches_numpy(path: Path) -> None:
    image = Image.open(path)
    expected = np.asarray(image)
    expected = expected[:, :, None] if expected.ndim == 2 else expected
    for t in (T.ToImage(), T.PILToTensor()):
        out = t(image)
        assert out.dtype == torch.uint8
        np.testing.assert_array_equal(out.permute(1, 2, 0).numpy(), expected)


def test_to_image_of_arrays_and_tensors() -> None:
    array = np.random.default_rng(0).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    out = F.to_image(array)
    np.testing.assert_array_equal(out.numpy(), array.transpose(2, 0, 1))
    assert F.to_image(array[:, :, 0]).shape == (1, 4, 5)
    assert F.to_image(torch.zeros(4, 5)).shape == (1, 4, 5)
    img, label = T.ToImage()(array, "cat")
    assert img.shape == (3, 4, 5) and label == "cat"
    assert T.PILToTensor()(array) is array  # only PIL images are converted
    with pytest.raises(TypeError, match="to_image"):
        F.to_image("not an image")
    with pytest.raises(ValueError, match="to_image"):
        F.to_image(np.zeros((2, 2, 2, 2)))


def test_to_dtype_matches_torchvision_formulas() -> None:
    u8 = torch.arange(256, dtype=torch.uint8).view(1, 16, 16)
    as_float = F.to_dtype(u8, torch.float32, scale=True)
    np.testing.assert_allclose(as_float.numpy(), u8.numpy() / 255.0, rtol=1e-6)
    x = torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(0))
    expected = np.floor(x.numpy().astype(np.float64) * (256 - 1e-3)).astype(np.uint8)
    np.testing.assert_array_equal(F.to_dtype(x, torch.uint8, scale=True).numpy(), expected)
    assert torch.equal(F.to_dtype(as_float, torch.uint8, scale=True), u8)  # exact round trip
    # Integer to integer: bit shifts.
    assert F.to_dtype(u8, torch.int16, scale=True).max() == 255 << 7
    assert torch.equal(
        F.to_dtype(F.to_dtype(u8, torch.int32, scale=True), torch.uint8, scale=True), u8
    )
    # Without scale: a plain cast.
    assert F.to_dtype(u8, torch.float32).max() == 255.0
    with pytest.raises(RuntimeError, match="safely"):
        F.to_dtype(x, torch.int64, scale=True)


def test_to_dtype_transform_on_pil_and_labels() -> None:
    image = Image.new("RGB", (3, 2), (255, 128, 0))
    out, label = T.ToDtype(torch.float32, scale=True)(image, 4)
    assert isinstance(out, torch.Tensor) and label == 4
    np.testing.assert_allclose(out[:, 0, 0].numpy(), [1.0, 128 / 255, 0.0], rtol=1e-6)
    with pytest.raises(TypeError, match="ToDtype"):
        T.ToDtype("float32")


def test_normalize_matches_numpy_and_checks_input() -> None:
    x = torch.rand(2, 3, 4, 5)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    expected = (x.numpy() - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(F.normalize(x, mean, std).numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(T.Normalize(mean, std)(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    y = x.clone()
    assert T.Normalize(mean, std, inplace=True)(y).data_ptr() == y.data_ptr()
    with pytest.raises(TypeError, match="Normalize: expected a floating"):
        T.Normalize(mean, std)(torch.zeros(3, 2, 2, dtype=torch.uint8))
    with pytest.raises(ValueError, match="Normalize: std"):
        T.Normalize(mean, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="mean has 3 values"):
        T.Normalize(mean, std)(torch.zeros(2, 4, 4))
    with pytest.raises(TypeError, match="Normalize: expected an image tensor"):
        T.Normalize(mean, std)(torch.zeros(4, 4))


def test_normalize_of_channels_innermost_images_matches_numpy() -> None:
    """HWC decodes and channels_last batches keep their layout (as torchvision's Normalize)."""
    mean, std = [0.1, 0.2, 0.3], [0.5, 0.25, 2.0]
    hwc = torch.rand(2, 4, 5, 3)
    expected = ((hwc.numpy() - np.array(mean)) / np.array(std)).transpose(0, 3, 1, 2)
    batch = hwc.permute(0, 3, 1, 2)  # channels_last
    for x, want in ((batch, expected), (batch[0], expected[0])):
        for out in (F.normalize(x, mean, std), T.Normalize(mean, std)(x)):
            assert out.movedim(-3, -1).is_contiguous()
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    for inplace in (
        F.normalize(batch.clone(), mean, std, inplace=True),
        T.Normalize(mean, std, inplace=True)(batch.clone()),
    ):
        np.testing.assert_allclose(inplace.numpy(), expected, rtol=1e-5, atol=1e-6)
    one_value = F.normalize(batch, [0.5], [2.0])  # one mean and std for every channel
    np.testing.assert_allclose(
        one_value.numpy(), (hwc.numpy().transpose(0, 3, 1, 2) - 0.5) / 2.0, rtol=1e-6
    )


MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def two_steps(x: torch.Tensor) -> np.ndarray:
    """ToDtype(scale=True) then Normalize, in NumPy float64."""
    top = float(torch.iinfo(x.dtype).max)
    shape = (-1, 1, 1) if len(MEAN) == x.shape[-3] else (1, 1, 1)
    mean, std = np.array(MEAN).reshape(shape), np.array(STD).reshape(shape)
    return (x.double().numpy() / top - mean) / std


def fused_pipeline(dtype: torch.dtype = torch.float32) -> T.Compose:
    return T.Compose([T.ToDtype(dtype, scale=True), T.Normalize(MEAN, STD)])


@pytest.mark.parametrize("layout", ["chw", "hwc view", "channels_last batch", "batch", "uint16"])
def test_to_dtype_then_normalize_runs_fused_and_matches_numpy(layout: str, monkeypatch) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (2, 3, 7, 9), dtype=torch.uint8, generator=g)
    x = {
        "chw": x[0],
        "hwc view": x[0].permute(1, 2, 0).contiguous().permute(2, 0, 1),
        "channels_last batch": x.contiguous(memory_format=torch.channels_last),
        "batch": x,
        "uint16": x[0].to(torch.uint16) * 257,
    }[layout]
    # The fused pass never calls Normalize (nor ToDtype) on its own.
    monkeypatch.setattr(T.Normalize, "forward", lambda *a: pytest.fail("not fused"))
    for dtype in (torch.float32, torch.float64):
        out = fused_pipeline(dtype)(x)
        assert out.dtype == dtype and out.shape == x.shape
        assert out.stride() == torch.empty_like(x, dtype=dtype).stride()  # layout kept
        np.testing.assert_allclose(out.numpy(), two_steps(x), rtol=0, atol=2e-6)
    single = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize([0.5], [0.25])])
    top = float(torch.iinfo(x.dtype).max)
    want = (x.double().numpy() / top - 0.5) / 0.25
    np.testing.assert_allclose(single(x).numpy(), want, rtol=0, atol=2e-6)


def test_to_dtype_then_normalize_falls_back_to_the_two_steps() -> None:
    photo = Image.open(IMAGES / "jpeg" / "tv-grace_hopper_517x606.jpg")
    floats = torch.rand(3, 5, 4)
    for inpt in (photo, floats):  # PIL images and float input take the two steps as they are
        want = T.Normalize(MEAN, STD)(T.ToDtype(torch.float32, scale=True)(inpt))
        assert torch.equal(fused_pipeline()(inpt), want)
    half = fused_pipeline(torch.float16)(torch.zeros(3, 2, 2, dtype=torch.uint8))
    assert half.dtype == torch.float16  # not fused: float16 would round differently
    with pytest.raises(ValueError, match="Normalize: mean has 3 values but the image has 2"):
        fused_pipeline()(torch.zeros(2, 4, 4, dtype=torch.uint8))
    with pytest.raises(TypeError, match="ToDtype"):
        fused_pipeline()(torch.zeros(3, 4, 4, dtype=torch.bool))


def test_lambda_applies_to_chosen_types() -> None:
    t = T.Lambda(lambda x: x + 1, torch.Tensor)
    out, label = t(torch.zeros(1, 2, 2), 3)
    assert out.sum() == 4 and label == 3
    assert T.Lambda(str)(1) == "1"
    with pytest.raises(TypeError, match="Lambda"):
        T.Lambda(3)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    "transform",
    [
        T.ToDtype(torch.float32, scale=True),
        T.ToDtype(torch.uint8, scale=True),
        T.ToDtype(torch.float64),
        T.Normalize([0.5, 0.4, 0.3], [0.2, 0.3, 0.4]),
    ],
    ids=repr,
)
def test_script_export_and_compile_match_eager(transform) -> None:
    img = torch.rand(2, 3, 5, 6)
    if isinstance(transform, T.ToDtype) and transform.dtype == torch.float32:
        img = (img * 255).to(torch.uint8)
    expected = transform(img)
    torch.testing.assert_close(torch.jit.script(transform)(img), expected, atol=0, rtol=0)
    torch.testing.assert_close(
        torch.export.export(transform, (img,)).module()(img), expected, atol=0, rtol=0
    )
    with torch._dynamo.config.patch(recompile_limit=64):
        compiled = torch.compile(transform, fullgraph=True, backend="eager")
        torch.testing.assert_close(compiled(img), expected, atol=0, rtol=0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu() -> None:
    img = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8)
    pipeline = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize([0.5] * 3, [0.25] * 3)])
    out = pipeline(img.cuda())
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), pipeline(img))


def test_kernels_match_torchvision() -> None:
    tvf = require_torchvision().transforms.v2.functional
    u8 = torch.randint(0, 256, (3, 8, 8), dtype=torch.uint8)
    x = torch.rand(3, 8, 8)
    assert torch.equal(F.to_dtype(u8, torch.float32, True), tvf.to_dtype(u8, torch.float32, True))
    assert torch.equal(F.to_dtype(x, torch.uint8, True), tvf.to_dtype(x, torch.uint8, True))
    torch.testing.assert_close(
        F.normalize(x, [0.1, 0.2, 0.3], [0.3, 0.2, 0.1]),
        tvf.normalize(x, [0.1, 0.2, 0.3], [0.3, 0.2, 0.1]),
    )


def test_palette_image_gives_its_indices_as_torchvision(tv) -> None:
    """A palette mask (VOC's class numbers) converts to its indices, not its colours."""
    from trivium.vision import tv_tensors

    indices = np.random.default_rng(0).choice([0, 1, 15, 255], (5, 7)).astype(np.uint8)
    mask = Image.fromarray(indices, "P")
    mask.putpalette(list(np.random.default_rng(1).integers(0, 256, 768)))
    expected = tv.transforms.v2.functional.pil_to_tensor(mask)
    for out in (F.pil_to_tensor(mask), T.PILToTensor()(mask), T.ToImage()(mask)):
        assert out.shape == (1, 5, 7)
        assert torch.equal(out.as_subclass(torch.Tensor), expected)
    assert torch.equal(tv_tensors.Mask(mask).as_subclass(torch.Tensor), tv.tv_tensors.Mask(mask))


def test_to_image_gives_tv_tensors_image_as_torchvision(tv) -> None:
    """ToImage wraps images as torchvision's does, so a dtype dict keyed on Image applies."""
    from trivium.vision import tv_tensors

    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (6, 5, 3), np.uint8))
    mask = torch.zeros(6, 5, dtype=torch.int64)
    for inpt in (image, np.asarray(image), F.pil_to_tensor(image)):
        ours = T.ToImage()(inpt, tv_tensors.Mask(mask), 3)
        theirs = tv.transforms.v2.ToImage()(inpt, tv.tv_tensors.Mask(mask), 3)
        assert [type(x).__name__ for x in ours] == [type(x).__name__ for x in theirs]
        assert torch.equal(ours[0].as_subclass(torch.Tensor), theirs[0].as_subclass(torch.Tensor))
    assert type(F.to_image(image)) is tv_tensors.Image
    assert type(T.PILToTensor()(image)) is torch.Tensor  # as torchvision's: a plain tensor
    dtypes = {tv_tensors.Image: torch.float32, "others": None}
    out, _ = T.ToDtype(dtypes, scale=True)(
        *T.ToImage()(F.pil_to_tensor(image), tv_tensors.Mask(mask))
    )
    assert type(out) is tv_tensors.Image and out.dtype == torch.float32
    # traced code gets a plain tensor: a graph carries no tensor subclass
    exported = torch.export.export(T.ToImage(), (torch.zeros(3, 4, 4),)).module()
    assert exported(torch.ones(3, 4, 4)).shape == (3, 4, 4)


def test_to_image_then_float_normalize_keeps_the_image_type(tv) -> None:
    """Compose's fused ToDtype + Normalize pass takes ToImage's Image and gives one back."""
    from trivium.vision import tv_tensors

    x = torch.from_numpy(np.random.default_rng(2).integers(0, 256, (3, 9, 7), np.uint8))
    steps = lambda m: [m.ToImage(), m.ToDtype(torch.float32, scale=True), m.Normalize(MEAN, STD)]  # noqa: E731
    ours = T.Compose(steps(T))(x)
    theirs = tv.transforms.v2.Compose(steps(tv.transforms.v2))(x)
    assert type(ours) is tv_tensors.Image and type(theirs).__name__ == "Image"
    torch.testing.assert_close(ours.as_subclass(torch.Tensor), theirs.as_subclass(torch.Tensor))
