"""``per_sample=True`` on CPU: chunk by chunk, the same result as one batched call.

On CPU a per-sample batch goes through ``transform`` a chunk of images at a time
(``ImageTransform._apply``); ``_cpu_chunk_values = None`` forces the one batched call
that CUDA and ``torch.compile`` make. Both must give exactly the same images from
the same generator, for every transform that takes ``per_sample``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
import torch
from image_assets import JPEG_DIR

from trivium.vision import transforms as T
from trivium.vision.io import read_image
from trivium.vision.transforms.geometry import _flip_per_image, _where_per_image

Factory = Callable[..., T.ImageTransform]


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def cases(dtype: torch.dtype) -> dict[str, Factory]:
    """Every transform that takes ``per_sample``, with arguments that exercise its kernels."""
    threshold = 128 if dtype == torch.uint8 else 0.5
    return {
        "RandomResizedCrop": lambda **kw: T.RandomResizedCrop((19, 30), **kw),
        "RandomResizedCrop-shrink": lambda **kw: T.RandomResizedCrop(7, scale=(0.5, 1), **kw),
        "RandomResizedCrop-nearest": lambda **kw: T.RandomResizedCrop(
            (23, 17), interpolation="nearest", **kw
        ),
        "RandomCrop": lambda **kw: T.RandomCrop(24, padding=[3, 1, 2, 5], fill=9, **kw),
        "RandomCrop-reflect": lambda **kw: T.RandomCrop(
            (30, 20), padding=4, padding_mode="reflect", **kw
        ),
        "RandomHorizontalFlip": lambda **kw: T.RandomHorizontalFlip(**kw),
        "RandomVerticalFlip": lambda **kw: T.RandomVerticalFlip(**kw),
        "RandomAffine": lambda **kw: T.RandomAffine(
            20, (0.2, 0.1), (0.8, 1.2), (-10, 10, -5, 5), **kw
        ),
        "RandomAffine-bilinear-fill": lambda **kw: T.RandomAffine(
            30, interpolation="bilinear", fill=[10, 200, 50], center=(3, 4), **kw
        ),
        "RandomRotation": lambda **kw: T.RandomRotation(45, **kw),
        "RandomRotation-bicubic": lambda **kw: T.RandomRotation(
            (-90, 90), interpolation="bicubic", fill=77, **kw
        ),
        "RandomPerspective": lambda **kw: T.RandomPerspective(0.5, p=0.7, **kw),
        "ElasticTransform": lambda **kw: T.ElasticTransform(30.0, (3.0, 5.0), **kw),
        "ColorJitter": lambda **kw: T.ColorJitter(0.5, 0.5, 0.5, 0.3, **kw),
        "RandomPhotometricDistort": lambda **kw: T.RandomPhotometricDistort(p=0.7, **kw),
        "RandomChannelPermutation": lambda **kw: T.RandomChannelPermutation(**kw),
        "JPEG": lambda **kw: T.JPEG((20, 80), **kw),
        "GaussianBlur": lambda **kw: T.GaussianBlur((5, 9), (0.1, 3.0), **kw),
        "RandomErasing": lambda **kw: T.RandomErasing(0.8, value=[7, 70, 170], **kw),
        "RandomErasing-noise": lambda **kw: T.RandomErasing(0.8, value="random", **kw),
        "RandomGrayscale": lambda **kw: T.RandomGrayscale(0.5, **kw),
        "RandomInvert": lambda **kw: T.RandomInvert(**kw),
        "RandomPosterize": lambda **kw: T.RandomPosterize(3, **kw),
        "RandomSolarize": lambda **kw: T.RandomSolarize(threshold, **kw),
        "RandomAdjustSharpness": lambda **kw: T.RandomAdjustSharpness(3.0, **kw),
        "RandomAutocontrast": lambda **kw: T.RandomAutocontrast(**kw),
        "RandomEqualize": lambda **kw: T.RandomEqualize(**kw),
        "AutoAugment": lambda **kw: T.AutoAugment(**kw),
        "RandAugment": lambda **kw: T.RandAugment(**kw),
        "TrivialAugmentWide": lambda **kw: T.TrivialAugmentWide(**kw),
        "AugMix": lambda **kw: T.AugMix(**kw),
    }


def test_cases_cover_every_transform_that_takes_per_sample() -> None:
    covered = {type(make()).__name__ for make in cases(torch.uint8).values()}
    takes = {
        name
        for name in T.__all__
        if isinstance(getattr(T, name), type)
        and issubclass(getattr(T, name), T.ImageTransform)
        and getattr(T, name) is not T.ImageTransform
        and "per_sample" in inspect.signature(getattr(T, name)).parameters
    }
    assert takes == covered


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    return read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")


def batch_of(photo: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Crops of the photo as a batch ``shape`` + [3, h, w] (uint8, or float in [0, 1])."""
    *lead, h, w = shape
    n = 1
    for d in lead[:-1]:
        n *= d
    crops = [photo[:, 17 * k : 17 * k + h, 23 * k : 23 * k + w] for k in range(n)]
    x = torch.stack(crops).reshape(*lead[:-1], 3, h, w).contiguous()
    return x if dtype == torch.uint8 else x.to(dtype) / 255


def run(make: Factory, x: Any, chunk_values: Any = ..., seed: int = 3) -> tuple[Any, Any]:
    """A seeded per-sample transform's output and generator state after; ``...``: default chunks."""
    g = seeded(seed)
    t = make(per_sample=True, generator=g)
    if chunk_values is not ...:
        t._cpu_chunk_values = chunk_values
    return t(x), g.get_state()


def image_values(x: torch.Tensor) -> int:
    return x[(0,) * (x.ndim - 3)].numel()


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("name", sorted(cases(torch.uint8)))
def test_chunks_give_the_batched_result(photo: torch.Tensor, name: str, dtype) -> None:
    if name == "JPEG" and dtype != torch.uint8:
        pytest.skip("JPEG encodes integer images only")
    make = cases(dtype)[name]
    for shape in [(10, 3, 37, 41), (2, 3, 3, 32, 33)]:
        x = batch_of(photo, shape, dtype)
        batched, state = run(make, x, None)
        for images in (1, 3):  # one image per chunk; chunks of 3 and a last one of 1
            chunked, chunked_state = run(make, x, images * image_values(x))
            assert torch.equal(chunked, batched), (name, shape, images)
            assert chunked.dtype == x.dtype
            assert torch.equal(chunked_state, state)  # the same draws
        assert not torch.equal(batched, x)  # the transform did something


@pytest.mark.parametrize("name", ["ColorJitter", "GaussianBlur", "RandomAffine-bilinear-fill"])
def test_chunks_give_the_batched_result_at_224(photo: torch.Tensor, name: str) -> None:
    # Large images: whole-image reductions split differently from per-row ones.
    for dtype in (torch.uint8, torch.float32):
        x = batch_of(photo, (6, 3, 224, 224), dtype)
        default, _ = run(cases(dtype)[name], x)
        assert torch.equal(default, run(cases(dtype)[name], x, None)[0])


def test_a_cpu_batch_goes_through_transform_a_chunk_at_a_time(photo: torch.Tensor) -> None:
    x = batch_of(photo, (5, 3, 224, 224), torch.uint8)
    sizes: list[int] = []

    class Spy(T.RandomAffine):
        def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
            sizes.append(inpt.shape[0])
            return super().transform(inpt, params)

    Spy(10, per_sample=True)(x)
    assert sizes == [4, 1]  # 224 x 224 x 3: four images per chunk for the warps
    sizes.clear()
    Spy(10)(x)
    assert sizes == [5]  # one draw for the batch: one call


def test_cuda_compile_and_single_images_take_one_batched_call() -> None:
    t = T.GaussianBlur(3, per_sample=True)
    cpu = torch.zeros(8, 3, 224, 224)
    assert t._images_per_chunk([cpu]) == 4
    assert t._images_per_chunk([torch.empty(8, 3, 224, 224, device="meta")]) == 0
    assert t._images_per_chunk([cpu[0]]) == 0  # one image
    assert t._images_per_chunk([cpu, cpu[:4]]) == 0  # batches that do not match
    assert T.GaussianBlur(3)._images_per_chunk([cpu]) == 0  # one draw for the batch
    # Under torch.compile a Python loop over the batch would be unrolled.
    t.forward = lambda img: torch.tensor(t._images_per_chunk([img]))
    compiled = torch.compile(t, fullgraph=True, backend="eager")
    assert int(compiled(cpu)) == 0


def test_several_inputs_share_each_chunk_of_draws(photo: torch.Tensor) -> None:
    img = batch_of(photo, (6, 3, 40, 40), torch.uint8)
    mask = (img[:, :1] > 100).to(torch.uint8)
    make = cases(torch.uint8)["ElasticTransform"]
    batched, _ = run(make, (img, mask), None)
    chunked, _ = run(make, (img, mask), image_values(img))
    assert all(torch.equal(a, b) for a, b in zip(batched, chunked, strict=True))
    # The mask moved with its image.
    warped_alone, _ = run(make, img, image_values(img))
    assert torch.equal(chunked[0], warped_alone)


def test_inputs_left_alone_or_erased_in_place_come_back_as_themselves(photo: torch.Tensor):
    x = batch_of(photo, (4, 3, 30, 30), torch.uint8)
    for chunk in (None, image_values(x)):
        t = T.RandomInvert(p=0.0, per_sample=True)
        t._cpu_chunk_values = chunk
        assert t(x) is x
        y = x.clone()
        t = T.RandomErasing(p=1.0, value=0, inplace=True, per_sample=True, generator=seeded(1))
        t._cpu_chunk_values = chunk
        assert t(y) is y and not torch.equal(y, x)
    # Some images changed, some not: a new tensor holding both.
    t = T.RandomInvert(p=0.5, per_sample=True, generator=seeded(0))
    t._cpu_chunk_values = image_values(x)
    out = t(x)
    inverted = [bool(torch.equal(o, 255 - i)) for o, i in zip(out, x, strict=True)]
    kept = [bool(torch.equal(o, i)) for o, i in zip(out, x, strict=True)]
    assert out is not x and any(inverted) and any(kept)
    assert all(a != b for a, b in zip(inverted, kept, strict=True))


@pytest.mark.parametrize("dim", [-1, -2])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=["uint8", "float32"])
def test_cpu_flips_run_by_run_give_the_batched_select(photo: torch.Tensor, dim: int, dtype):
    # Flips skip the chunks: on the CPU their kernel copies runs of images itself.
    x = batch_of(photo, (3, 3, 3, 37, 41), dtype)
    flags = torch.tensor([1, 1, 0, 1, 0, 0, 0, 1, 1], dtype=torch.bool)
    select = _where_per_image(flags, x.flip(dim), x)  # what CUDA and torch.compile run
    assert torch.equal(_flip_per_image(x, flags, dim), select)
    assert torch.equal(_flip_per_image(x, torch.ones(9, dtype=torch.bool), dim), x.flip(dim))
    assert _flip_per_image(x, torch.zeros(9, dtype=torch.bool), dim) is x


def test_big_per_image_draws_come_chunk_by_chunk_with_the_values_of_one_draw(photo):
    # ElasticTransform's noise: one draw per chunk on the CPU, no batch-sized buffer.
    x = batch_of(photo, (9, 3, 224, 224), torch.uint8)
    t = T.ElasticTransform(per_sample=True, generator=seeded(4))
    noise = t.make_params([x])["noise"]
    assert [piece.shape[0] for piece in noise] == [4, 4, 1]
    assert torch.equal(torch.cat(noise), torch.rand(9, 2, 224, 224, generator=seeded(4)))
    # transform() straight on make_params' output, as torchvision's API allows.
    t.generator = seeded(4)
    direct = t.transform(x, t.make_params([x]))
    assert torch.equal(direct, run(lambda **kw: T.ElasticTransform(**kw), x, None, seed=4)[0])
