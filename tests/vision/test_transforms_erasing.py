"""``erase`` and ``RandomErasing``: boxes, values, per-sample masks, reproducibility, compile."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from trivium.vision import transforms as T
from trivium.vision.transforms import functional as F


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_erase_matches_numpy_slice_assignment():
    img = torch.rand(2, 3, 10, 12)
    out = F.erase(img, 2, 3, 4, 5, torch.tensor([0.1, 0.2, 0.3]).view(3, 1, 1))
    expected = img.numpy().copy()
    expected[..., 2:6, 3:8] = np.array([0.1, 0.2, 0.3], dtype=np.float32).reshape(3, 1, 1)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert not torch.equal(out, img)  # not in place by default
    F.erase(img, 0, 0, 1, 1, torch.tensor(5.0), inplace=True)
    assert float(img[0, 0, 0, 0]) == 5.0


def test_erase_with_one_box_per_image_equals_a_loop():
    g = seeded(0)
    img = torch.randint(0, 256, (4, 3, 9, 11), dtype=torch.uint8, generator=g)
    i, j = torch.tensor([0, 2, 5, 8]), torch.tensor([1, 0, 4, 10])
    h, w = torch.tensor([3, 0, 4, 1]), torch.tensor([2, 5, 7, 1])
    out = F.erase(img, i, j, h, w, torch.tensor(7))
    for k in range(4):
        expected = F.erase(img[k], int(i[k]), int(j[k]), int(h[k]), int(w[k]), torch.tensor(7))
        assert torch.equal(out[k], expected)


def test_random_erasing_box_respects_scale_and_ratio():
    t = T.RandomErasing(
        p=1.0, scale=(0.05, 0.2), ratio=(0.5, 2.0), value=1.0, per_sample=True, generator=seeded(1)
    )
    out = t(torch.zeros(256, 1, 40, 50))
    mask = out[:, 0] == 1
    area = mask.sum(dim=(1, 2)).double() / (40 * 50)
    assert bool((area > 0).all())
    # h and w are rounded, so the area can leave the range by a rounding step.
    assert float(area.min()) >= 0.04 and float(area.max()) <= 0.22
    rows, cols = mask.any(2).sum(1).double(), mask.any(1).sum(1).double()
    assert torch.equal(rows * cols, mask.sum(dim=(1, 2)).double())  # a box, not a blob
    ratio = rows / cols
    assert float(ratio.min()) >= 0.5 / 1.3 and float(ratio.max()) <= 2.0 * 1.3
    assert float(area.std()) > 0.02 and math.isclose(float(area.mean()), 0.125, abs_tol=0.03)


def test_per_sample_erasing_equals_a_loop_with_the_drawn_boxes():
    img = torch.rand(6, 3, 20, 24)
    t = T.RandomErasing(p=0.7, value=(0.1, 0.5, 0.9), per_sample=True, generator=seeded(3))
    params = t.make_params([img])
    t.generator = seeded(3)
    batched = t(img)
    value = torch.tensor([0.1, 0.5, 0.9]).view(3, 1, 1)
    erased = 0
    for k in range(6):
        box = [int(params[key][k]) for key in "ijhw"]
        erased += box[2] * box[3] > 0
        assert torch.equal(batched[k], F.erase(img[k], *box, value))
    assert erased >= 1


def test_seeded_runs_are_reproducible_and_p_is_respected():
    img = torch.rand(8, 3, 16, 16)
    for per_sample in (False, True):
        a = T.RandomErasing(p=1.0, value="random", per_sample=per_sample, generator=seeded(5))(img)
        b = T.RandomErasing(p=1.0, value="random", per_sample=per_sample, generator=seeded(5))(img)
        assert torch.equal(a, b) and not torch.equal(a, img)
        assert torch.equal(T.RandomErasing(p=0.0, per_sample=per_sample)(img), img)
    shared = T.RandomErasing(p=1.0, value=0, generator=seeded(2))(torch.ones(4, 1, 16, 16))
    assert all(torch.equal(x, shared[0]) for x in shared)
    coins = T.RandomErasing(p=0.25, value=0, per_sample=True, generator=seeded(2))(
        torch.ones(800, 1, 8, 8)
    )
    assert 140 <= int((coins == 0).any(dim=(1, 2, 3)).sum()) <= 260


def test_random_value_is_standard_normal_noise():
    out = T.RandomErasing(
        p=1.0, scale=(0.3, 0.3), ratio=(1.0, 1.0), value="random", generator=seeded(0)
    )(torch.full((3, 64, 64), 100.0))
    noise = out[out != 100.0]
    assert noise.numel() > 3000
    assert abs(float(noise.mean())) < 0.1 and abs(float(noise.std()) - 1.0) < 0.1


def test_uint8_and_inplace():
    img = torch.full((2, 3, 16, 16), 200, dtype=torch.uint8)
    out = T.RandomErasing(p=1.0, value=(1, 2, 3), inplace=True, generator=seeded(0))(img)
    assert out.dtype == torch.uint8 and out.data_ptr() == img.data_ptr()
    assert set(out[:, 0].unique().tolist()) == {1, 200}


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="RandomErasing: value must have 1 or 3"):
        T.RandomErasing(value=(1, 2))(torch.zeros(3, 8, 8))
    with pytest.raises(ValueError, match="RandomErasing: scale"):
        T.RandomErasing(scale=(0.5, 0.1))
    with pytest.raises(ValueError, match="RandomErasing: ratio"):
        T.RandomErasing(ratio=(0.0, 1.0))
    with pytest.raises(ValueError, match="RandomErasing: value must be"):
        T.RandomErasing(value="noise")
    with pytest.raises(TypeError, match="RandomErasing: expected an image tensor"):
        T.RandomErasing()(torch.zeros(8, 8))


@pytest.mark.parametrize("per_sample", [False, True])
def test_compiles_with_fullgraph(per_sample: bool):
    torch._dynamo.reset()
    t = T.RandomErasing(p=1.0, value=0.5, per_sample=per_sample)
    out = torch.compile(t, fullgraph=True, backend="eager")(torch.zeros(3, 3, 16, 16))
    assert out.shape == (3, 3, 16, 16)
    assert bool((out == 0.5).any(dim=(1, 2, 3)).all())
    torch._dynamo.reset()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    img = torch.rand(8, 3, 32, 32)
    for per_sample in (False, True):
        cpu = T.RandomErasing(p=0.8, per_sample=per_sample, generator=seeded(4))(img)
        gpu = T.RandomErasing(p=0.8, per_sample=per_sample, generator=seeded(4))(img.cuda())
        assert gpu.device.type == "cuda" and torch.equal(gpu.cpu(), cpu)
