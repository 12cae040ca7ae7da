"""``per_sample=True`` for AutoAugment, RandAugment, TrivialAugmentWide and AugMix.

The reference is the loop a user would write: the same transform with
``per_sample=False`` called on each image in turn from the same generator state.
The batched call must give exactly that loop's stacked output, chunked or not.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from image_assets import JPEG_DIR

from trivium.vision import transforms as T
from trivium.vision.io import ImageReadMode, read_image

Factory = Callable[..., T.ImageTransform]

POLICIES: dict[str, Factory] = {
    "AutoAugment": lambda **kw: T.AutoAugment(T.AutoAugmentPolicy.SVHN, **kw),
    "AutoAugment-imagenet-fill": lambda **kw: T.AutoAugment(fill=[9, 90, 200], **kw),
    "RandAugment": lambda **kw: T.RandAugment(num_ops=3, magnitude=12, **kw),
    "RandAugment-bilinear": lambda **kw: T.RandAugment(interpolation="bilinear", **kw),
    "TrivialAugmentWide": lambda **kw: T.TrivialAugmentWide(**kw),
    "AugMix": lambda **kw: T.AugMix(**kw),
    "AugMix-depth2-partial": lambda **kw: T.AugMix(
        severity=5, mixture_width=2, chain_depth=2, all_ops=False, **kw
    ),
}


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def batch() -> torch.Tensor:
    photo = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg", ImageReadMode.RGB)
    crops = [photo[:, 40 * i : 40 * i + 48, 30 * i : 30 * i + 40] for i in range(6)]
    return torch.stack(crops)  # six different images [6, 3, 48, 40]


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=str)
@pytest.mark.parametrize("seed", [0, 1])
def test_a_per_sample_batch_is_the_loop_over_its_images(
    batch: torch.Tensor, name: str, dtype: torch.dtype, seed: int
) -> None:
    images = batch if dtype == torch.uint8 else batch.float() / 255
    looped = POLICIES[name](generator=seeded(seed))
    expected = torch.stack([looped(img) for img in images])
    together = POLICIES[name](per_sample=True, generator=seeded(seed))(images)
    assert together.dtype == images.dtype
    torch.testing.assert_close(together, expected, rtol=0, atol=0)
    grouped = POLICIES[name](per_sample=True, generator=seeded(seed))(images.view(2, 3, 3, 48, 40))
    torch.testing.assert_close(grouped.view_as(expected), expected, rtol=0, atol=0)


@pytest.mark.parametrize("name", POLICIES)
def test_chunks_give_the_batched_result(batch: torch.Tensor, name: str) -> None:
    chunked = POLICIES[name](per_sample=True, generator=seeded(3))
    chunked._cpu_chunk_values = 1  # one image per call of transform
    whole = POLICIES[name](per_sample=True, generator=seeded(3))
    whole._cpu_chunk_values = None  # the one batched call CUDA makes
    torch.testing.assert_close(chunked(batch), whole(batch), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["RandAugment", "TrivialAugmentWide", "AugMix"])
def test_images_draw_independently(batch: torch.Tensor, name: str) -> None:
    t = POLICIES[name](per_sample=True, generator=seeded(0))
    same = batch[:1].expand(16, -1, -1, -1)
    params = t.make_params([same])
    plans = {tuple(map(tuple, params["ops"][i].reshape(-1, 1).tolist())) for i in range(16)}
    assert len(plans) > 1  # not one draw shared by the batch
    out = t(same)
    assert len({out[i].float().sum().item() for i in range(16)}) > 1
    shared = POLICIES[name](generator=seeded(0))(same)
    assert all(torch.equal(shared[0], shared[i]) for i in range(16)) or name == "AugMix"


def test_per_sample_must_be_a_bool_and_refuses_torch_compile(batch: torch.Tensor) -> None:
    with pytest.raises(TypeError, match="per_sample"):
        T.RandAugment(per_sample=1)  # type: ignore[arg-type]
    t = T.TrivialAugmentWide(per_sample=True)
    compiled = torch.compile(t, fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="per_sample=False"):
        compiled(batch)
