"""Color and photometric transforms: randomness, per-sample, PIL, errors, script/export/compile."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.io import read_image
from trivium.vision.transforms import functional as F
from trivium.vision.transforms.functional import color as FC


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def photos() -> torch.Tensor:
    """Eight real 3 x 48 x 40 uint8 crops of a JPEG photo."""
    photo = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")
    crops = [photo[:, 60 * k : 60 * k + 48, 30 * k : 30 * k + 40] for k in range(8)]
    return torch.stack(crops).contiguous()


RANDOM_TRANSFORMS = {
    "ColorJitter": lambda **kw: T.ColorJitter(0.5, 0.5, 0.5, 0.2, **kw),
    "GaussianBlur": lambda **kw: T.GaussianBlur(5, (0.5, 3.0), **kw),
    "RandomGrayscale": lambda **kw: T.RandomGrayscale(0.5, **kw),
    "RandomInvert": lambda **kw: T.RandomInvert(0.5, **kw),
    "RandomPosterize": lambda **kw: T.RandomPosterize(2, 0.5, **kw),
    "RandomSolarize": lambda **kw: T.RandomSolarize(128, 0.5, **kw),
    "RandomAdjustSharpness": lambda **kw: T.RandomAdjustSharpness(3.0, 0.5, **kw),
    "RandomAutocontrast": lambda **kw: T.RandomAutocontrast(0.5, **kw),
    "RandomEqualize": lambda **kw: T.RandomEqualize(0.5, **kw),
}


@pytest.mark.parametrize("name", sorted(RANDOM_TRANSFORMS))
@pytest.mark.parametrize("per_sample", [False, True])
def test_seeded_runs_are_reproducible(photos: torch.Tensor, name: str, per_sample: bool):
    make = RANDOM_TRANSFORMS[name]
    outs = [make(per_sample=per_sample, generator=seeded(s))(photos) for s in (3, 3)]
    assert torch.equal(outs[0], outs[1])
    assert outs[0].shape == photos.shape and outs[0].dtype == torch.uint8
    many = {make(per_sample=per_sample, generator=seeded(s))(photos).sum().item() for s in range(8)}
    assert len(many) > 1  # the seed matters


@pytest.mark.parametrize("name", sorted(RANDOM_TRANSFORMS))
def test_per_sample_draws_differ_between_images(photos: torch.Tensor, name: str):
    same = photos[:1].expand(8, -1, -1, -1).contiguous()
    per_image = RANDOM_TRANSFORMS[name](per_sample=True, generator=seeded(1))(same)
    assert len({bytes(x.numpy()) for x in per_image}) > 1
    shared = RANDOM_TRANSFORMS[name](generator=seeded(1))(same)
    assert all(torch.equal(x, shared[0]) for x in shared)


def test_color_jitter_per_sample_equals_a_loop_with_the_drawn_factors(photos: torch.Tensor):
    t = T.ColorJitter(0.5, 0.5, 0.5, 0.2, per_sample=True, generator=seeded(7))
    params = t.make_params([photos])
    t.generator = seeded(7)
    batched = t(photos)
    kernels = {
        "brightness": F.adjust_brightness,
        "contrast": F.adjust_contrast,
        "saturation": F.adjust_saturation,
        "hue": F.adjust_hue,
    }
    names = ["brightness", "contrast", "saturation", "hue"]
    for k in range(photos.shape[0]):
        img = photos[k]
        for op in params["order"]:
            img = kernels[names[op]](img, float(params[names[op]][k]))
        assert (batched[k].int() - img.int()).abs().max() <= 1


def test_color_jitter_ranges_follow_torchvision():
    t = T.ColorJitter(brightness=0.5, contrast=(0.2, 0.4), saturation=2.0, hue=0.1)
    assert t.brightness == (0.5, 1.5) and t.contrast == (0.2, 0.4)
    assert t.saturation == (0.0, 3.0) and t.hue == (-0.1, 0.1)
    assert T.ColorJitter().brightness is None and T.ColorJitter(0).brightness is None
    with pytest.raises(ValueError, match="ColorJitter: hue"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(ValueError, match="ColorJitter: brightness"):
        T.ColorJitter(brightness=-1)


def test_color_jitter_factors_stay_in_range(photos: torch.Tensor):
    t = T.ColorJitter(brightness=(0.5, 0.6), per_sample=True, generator=seeded(0))
    flat = torch.full((64, 3, 4, 4), 0.5)
    out = t(flat)[:, 0, 0, 0]
    assert bool((out >= 0.25).all()) and bool((out <= 0.3).all())
    assert out.unique().numel() > 32


def test_gaussian_blur_per_sample_equals_a_loop(photos: torch.Tensor):
    t = T.GaussianBlur(7, (0.5, 3.0), per_sample=True, generator=seeded(2))
    sigma = t.make_params([photos])["sigma"]
    t.generator = seeded(2)
    batched = t(photos)
    for k in range(photos.shape[0]):
        one = F.gaussian_blur(photos[k], [7, 7], [float(sigma[k])] * 2)
        assert (batched[k].int() - one.int()).abs().max() <= 1


def test_probability_zero_and_one(photos: torch.Tensor):
    assert torch.equal(T.RandomInvert(p=0.0)(photos), photos)
    assert torch.equal(T.RandomInvert(p=1.0, per_sample=True)(photos), 255 - photos)
    counts = T.RandomInvert(p=0.3, per_sample=True, generator=seeded(0))(
        torch.zeros(1000, 1, 1, 1, dtype=torch.uint8)
    )
    assert 230 <= int((counts == 255).sum()) <= 370


# The transforms whose per-sample CPU batch is written run by run (_RandomOpInto):
# the transform with its per-image kernel, and an independent NumPy reference.
RUN_WRITERS = {
    "RandomInvert": (lambda dtype, **kw: T.RandomInvert(0.5, **kw), F.invert),
    "RandomPosterize": (
        lambda dtype, **kw: T.RandomPosterize(3, 0.5, **kw),
        lambda x: F.posterize(x, 3),
    ),
    "RandomSolarize": (
        lambda dtype, **kw: T.RandomSolarize(half(dtype), 0.5, **kw),
        lambda x: F.solarize(x, half(x.dtype)),
    ),
    "RandomGrayscale": (
        lambda dtype, **kw: T.RandomGrayscale(0.5, **kw),
        lambda x: F.rgb_to_grayscale(x, 3),
    ),
}


def half(dtype: torch.dtype) -> float:
    """The middle of ``dtype``'s scale: the solarize threshold of the tests."""
    return 128 if dtype == torch.uint8 else 0.5


def numpy_op(name: str, images: np.ndarray) -> np.ndarray:
    """What ``name`` does to chosen ``[N, 3, H, W]`` images, in NumPy (of their dtype)."""
    full = images.dtype.type(255 if images.dtype == np.uint8 else 1)
    if name == "RandomInvert":
        return full - images
    if name == "RandomPosterize":  # 3 bits
        if images.dtype == np.uint8:
            return images & np.uint8(0xE0)
        return np.clip(np.floor(images * 8), 0, 7) * images.dtype.type(1 / 8)
    if name == "RandomSolarize":
        threshold = 128 if images.dtype == np.uint8 else 0.5
        return np.where(images >= threshold, full - images, images)
    gray = np_gray(images.astype(np.float64))  # RandomGrayscale: float64, compared within a level
    gray = np.trunc(gray) if images.dtype == np.uint8 else gray
    return np.broadcast_to(gray, images.shape)


def np_gray(x: np.ndarray) -> np.ndarray:
    """ITU-R 601-2 luma of ``[N, 3, H, W]`` as ``[N, 1, H, W]`` (torchvision's weights)."""
    return 0.2989 * x[:, :1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:]


def assert_equals_numpy(name: str, out: np.ndarray, ref: np.ndarray) -> None:
    if name != "RandomGrayscale":
        np.testing.assert_array_equal(out, ref)
    elif out.dtype == np.uint8:
        assert np.abs(out.astype(np.int64) - ref).max() <= 1
    else:
        np.testing.assert_allclose(out, ref, atol=1e-6 if out.dtype == np.float32 else 1e-12)


def as_dtype(photos: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return photos if dtype == torch.uint8 else photos.to(dtype) / 255


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(RUN_WRITERS))
def test_per_sample_writes_each_run_of_images(photos: torch.Tensor, name: str, dtype) -> None:
    # A [2, 4] batch over channels-last memory: each image is its kernel's result (the
    # image-by-image loop's, bit for bit) where a seeded twin's draw says so, else itself,
    # in runs of both kinds; the chosen ones are NumPy's.
    make, kernel = RUN_WRITERS[name]
    x = as_dtype(photos, dtype)
    x = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2).reshape(2, 4, *x.shape[-3:])
    images = x.reshape(-1, *x.shape[-3:])
    mixed = 0
    for seed in range(6):
        out = make(dtype, per_sample=True, generator=seeded(seed))(x)
        flags = make(dtype, per_sample=True, generator=seeded(seed)).make_params([x])["apply"]
        flags = flags.reshape(-1).tolist()
        mixed += any(flags) and not all(flags)
        loop = torch.stack([kernel(im) if f else im for f, im in zip(flags, images, strict=True)])
        assert out.shape == x.shape and out.dtype == dtype
        assert torch.equal(out.reshape(loop.shape), loop)
        chosen = torch.tensor(flags)
        out = out.reshape(loop.shape).numpy()
        np.testing.assert_array_equal(out[~chosen], images[~chosen].numpy())
        if chosen.any():
            assert_equals_numpy(name, out[chosen], numpy_op(name, images[chosen].numpy()))
    assert mixed >= 3


FLAG_PATTERNS = [
    [1, 1, 0, 1, 0, 0, 0, 1, 1],  # runs at both ends, one alone, a long unchosen run
    [0, 1, 1, 1, 1, 1, 0, 0, 1],
    [1, 0, 1, 0, 1, 0, 1, 0, 1],
    [1] * 9,
]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("name", sorted(RUN_WRITERS))
def test_chosen_runs_are_written_once_each(photos, name: str, dtype, monkeypatch) -> None:
    # Runs longer than one chunk of the multi-pass kernels (two images here): the output
    # holds the kernel's result for the chosen images and the others' copies, and the
    # op is called once per run of chosen images.
    monkeypatch.setattr(FC, "_CHUNK_VALUES", 2 * photos[0].numel())
    make, kernel = RUN_WRITERS[name]
    x = as_dtype(torch.cat((photos, photos[:1])), dtype)
    t = make(dtype)
    runs: list[int] = []
    op_into = t._op_into
    t._op_into = lambda img, out: runs.append(img.shape[0]) or op_into(img, out)
    for pattern in FLAG_PATTERNS:
        runs.clear()
        flags = torch.tensor(pattern, dtype=torch.bool)
        out = t._apply_to_chosen(x, flags)
        loop = torch.stack([kernel(im) if f else im for f, im in zip(pattern, x, strict=True)])
        assert torch.equal(out, loop), pattern
        assert runs == [len(list(g)) for f, g in itertools.groupby(pattern) if f]
    assert t._apply_to_chosen(x, torch.zeros(9, dtype=torch.bool)) is x


def test_per_sample_grayscale_of_one_channel_images_copies_them(photos: torch.Tensor) -> None:
    x = photos[:, 1:2].contiguous()
    for dtype in (torch.uint8, torch.float32):
        gray = as_dtype(x, dtype)
        out = T.RandomGrayscale(0.5, per_sample=True, generator=seeded(2))(gray)
        assert out is not gray and torch.equal(out, gray)


def test_solarize_uint8_at_every_threshold() -> None:
    # Every uint8 value against integer and fractional thresholds: NumPy's comparison in
    # float32 (torch compares uint8 with a float threshold in float32: 127 >= 127.000001).
    values = torch.arange(256, dtype=torch.uint8).view(1, 1, 16, 16)
    fractional = [-1.0, 0.5, 127.000001, 127.00001, 127.5, 254.99999, 254.9999999]
    for threshold in [*range(256), *fractional]:
        t32 = np.float32(threshold)
        v = values.numpy()
        ref = np.where(v.astype(np.float32) >= t32, 255 - v, v)
        out = FC._solarize_into(values, torch.empty_like(values), float(threshold))
        np.testing.assert_array_equal(out.numpy(), ref, err_msg=str(threshold))
        assert torch.equal(out, F.solarize(values, threshold)), threshold
    with pytest.raises(ValueError, match="solarize: threshold"):
        T.RandomSolarize(256, p=1.0, per_sample=True)(values.expand(2, 3, 16, 16))


def test_grayscale_uint8_of_every_rgb_triple() -> None:
    # All 2^24 colours, 256 images of 256 x 256: the run writer's float32 -> int32 -> uint8
    # path gives the per-image kernel's values, and NumPy's within one level.
    v = torch.arange(256, dtype=torch.uint8)
    r, g, b = v.view(256, 1, 1), v.view(1, 256, 1), v.view(1, 1, 256)
    rgb = torch.stack([c.expand(256, 256, 256) for c in (r, g, b)], dim=1)
    out = FC._by_chunks(FC._grayscale_into, rgb, torch.empty_like(rgb))
    assert torch.equal(out, F.rgb_to_grayscale(rgb, 3))
    ref = np.trunc(np_gray(rgb.numpy().astype(np.float64)))
    assert np.abs(out[:, :1].numpy().astype(np.int64) - ref).max() <= 1


def test_random_grayscale_keeps_channels(photos: torch.Tensor):
    out = T.RandomGrayscale(p=1.0)(photos)
    assert out.shape == photos.shape
    assert torch.equal(out[:, 0], F.rgb_to_grayscale(photos)[:, 0])


def test_pil_input_gives_the_tensor_result(photos: torch.Tensor):
    pic = Image.fromarray(photos[0].permute(1, 2, 0).numpy())
    for name, make in RANDOM_TRANSFORMS.items():
        from_pil = make(generator=seeded(4))(pic)
        from_tensor = make(generator=seeded(4))(photos[0])
        assert isinstance(from_pil, Image.Image), name
        np.testing.assert_array_equal(
            np.asarray(from_pil), from_tensor.permute(1, 2, 0).numpy(), err_msg=name
        )
    gray = T.Grayscale()(pic)
    assert gray.mode == "L"
    np.testing.assert_array_equal(np.asarray(gray), F.rgb_to_grayscale(photos[0])[0].numpy())


def test_labels_pass_through(photos: torch.Tensor):
    img, label = T.ColorJitter(0.3)(photos[0], 5)
    assert label == 5 and img.shape == photos[0].shape


def test_bad_input_names_the_transform(photos: torch.Tensor):
    with pytest.raises(ValueError, match="ColorJitter: expected an image with 1 or 3 channels"):
        T.ColorJitter(0.3)(torch.zeros(4, 8, 8))
    with pytest.raises(TypeError, match="RandomEqualize: expected a uint8, uint16 or floating"):
        T.RandomEqualize()(torch.zeros(3, 8, 8, dtype=torch.int16))
    with pytest.raises(ValueError, match="Grayscale: expected an image with 1 or 3 channels"):
        T.Grayscale()(torch.zeros(2, 8, 8))
    with pytest.raises(ValueError, match="GaussianBlur: kernel_size"):
        T.GaussianBlur(4)
    with pytest.raises(ValueError, match="GaussianBlur: sigma"):
        T.GaussianBlur(3, sigma=(2.0, 1.0))
    with pytest.raises(ValueError, match="RandomPosterize: bits"):
        T.RandomPosterize(9)
    with pytest.raises(ValueError, match="RandomInvert: p must be in"):
        T.RandomInvert(p=1.5)
    with pytest.raises(TypeError, match="ColorJitter: expected an image tensor"):
        T.ColorJitter(0.3)("not an image")


def test_grayscale_scripts_and_exports(photos: torch.Tensor):
    for channels in (1, 3):
        t = T.Grayscale(channels)
        eager = t(photos)
        scripted = torch.jit.script(t)
        assert torch.equal(scripted(photos), eager)
        assert torch.equal(scripted(photos.float() / 255), t(photos.float() / 255))
        exported = torch.export.export(t, (photos,))
        assert torch.equal(exported.module()(photos), eager)


# Compiling on CPU is slow: "eager" backend checks full-graph tracing (no graph break);
# one transform also goes through inductor. Deterministic settings let us compare values.
COMPILED = {
    "Grayscale": lambda: T.Grayscale(3),
    "RandomGrayscale": lambda: T.RandomGrayscale(p=1.0),
    # One op: the compiled order of several ops comes from the default RNG, not the generator.
    "ColorJitter": lambda: T.ColorJitter(hue=(0.1, 0.1)),
    "ColorJitter-per-sample": lambda: T.ColorJitter(saturation=(1.5, 1.5), per_sample=True),
    "GaussianBlur": lambda: T.GaussianBlur(5, 1.5, per_sample=True),
    "RandomInvert": lambda: T.RandomInvert(p=1.0),
    "RandomPosterize": lambda: T.RandomPosterize(3, p=1.0, per_sample=True),
    "RandomSolarize": lambda: T.RandomSolarize(100, p=1.0),
    "RandomAdjustSharpness": lambda: T.RandomAdjustSharpness(2.0, p=1.0),
    "RandomAutocontrast": lambda: T.RandomAutocontrast(p=1.0),
    "RandomEqualize": lambda: T.RandomEqualize(p=1.0, per_sample=True),
}


@pytest.fixture
def fresh_dynamo():
    # Every new transform instance recompiles ImageTransform.forward; start from a clean cache.
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiles_with_fullgraph(photos: torch.Tensor, name: str):
    t = COMPILED[name]()
    small = photos[:2, :, :16, :16].contiguous()
    compiled = torch.compile(t, fullgraph=True, backend="eager")
    diff = (compiled(small).int() - t(small).int()).abs()
    assert diff.max() <= 1


@pytest.mark.usefixtures("fresh_dynamo")
def test_color_jitter_with_four_ops_compiles(photos: torch.Tensor):
    t = T.ColorJitter(0.4, 0.4, 0.4, 0.1, per_sample=True)
    small = photos[:2, :, :16, :16].contiguous()
    out = torch.compile(t, fullgraph=True, backend="eager")(small)
    assert out.shape == small.shape and out.dtype == small.dtype


@pytest.mark.usefixtures("fresh_dynamo")
def test_compiles_with_inductor(photos: torch.Tensor):
    t = T.GaussianBlur(3, (0.5, 2.0), per_sample=True)
    small = photos[:2, :, :12, :12].float() / 255
    out = torch.compile(t, fullgraph=True)(small)
    assert out.shape == small.shape and out.dtype == small.dtype
    assert not torch.equal(out, small)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(photos: torch.Tensor):
    for name, make in RANDOM_TRANSFORMS.items():
        for per_sample in (False, True):
            cpu = make(per_sample=per_sample, generator=seeded(5))(photos)
            gpu = make(per_sample=per_sample, generator=seeded(5))(photos.cuda())
            assert gpu.device.type == "cuda", name
            assert (gpu.cpu().int() - cpu.int()).abs().max() <= 1, name
    for kernel, arg in ((F.equalize, None), (F.adjust_hue, 0.2), (F.gaussian_blur, 5)):
        args = () if arg is None else (arg,)
        out = kernel(photos.cuda(), *args).cpu()
        assert (out.int() - kernel(photos, *args).int()).abs().max() <= 1
