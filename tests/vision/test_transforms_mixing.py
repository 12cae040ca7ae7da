"""MixUp and CutMix: torchvision v2 semantics checked against NumPy, Beta statistics, inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from trivium.vision import transforms as T


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = seeded(0)
    return torch.rand(5, 3, 12, 10, generator=g), torch.tensor([0, 3, 1, 4, 2])


def test_mixup_equals_the_numpy_formula(batch):
    images, labels = batch
    t = T.MixUp(alpha=0.4, num_classes=6, generator=seeded(1))
    lam = float(t._lam(torch.device("cpu")))
    t.generator = seeded(1)
    mixed, soft = t(images, labels)
    x = images.numpy()
    np.testing.assert_allclose(
        mixed.numpy(), lam * x + (1 - lam) * np.roll(x, 1, axis=0), atol=1e-6
    )
    one_hot = np.eye(6)[labels.numpy()]
    np.testing.assert_allclose(
        soft.numpy(), lam * one_hot + (1 - lam) * np.roll(one_hot, 1, axis=0), atol=1e-6
    )


def test_cutmix_pastes_one_box_and_weights_labels_by_area(batch):
    images, labels = batch
    mixed, soft = T.CutMix(num_classes=5, generator=seeded(3))(images, labels)
    rolled = images.roll(1, 0)
    from_rolled = (mixed == rolled).all(dim=1) & (mixed != images).any(dim=1)
    box = from_rolled[0]
    assert bool(box.any())
    rows, cols = box.any(1).nonzero()[:, 0], box.any(0).nonzero()[:, 0]
    expected = torch.zeros_like(box)
    expected[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1] = True
    assert torch.equal(box, expected)  # one rectangle
    assert all(torch.equal(m, box) for m in from_rolled)  # the same box for every image
    kept = 1 - float(box.float().mean())
    one_hot = np.eye(5)[labels.numpy()]
    np.testing.assert_allclose(
        soft.numpy(), kept * one_hot + (1 - kept) * np.roll(one_hot, 1, axis=0), atol=1e-6
    )


def test_lambda_follows_beta_alpha_alpha():
    t = T.MixUp(alpha=0.5, num_classes=2, generator=seeded(0))
    lams = np.array([float(t._lam(torch.device("cpu"))) for _ in range(2000)])
    assert lams.min() >= 0 and lams.max() <= 1
    # Kolmogorov-Smirnov against scipy's Beta(0.5, 0.5).
    assert stats.kstest(lams, stats.beta(0.5, 0.5).cdf).pvalue > 0.01
    assert stats.kstest(lams, stats.beta(2.0, 2.0).cdf).pvalue < 1e-6  # the test can fail


def test_seeded_runs_are_reproducible(batch):
    images, labels = batch
    for cls in (T.MixUp, T.CutMix):
        a = cls(num_classes=5, generator=seeded(9))(images, labels)
        b = cls(num_classes=5, generator=seeded(9))(images, labels)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        c = cls(num_classes=5, generator=seeded(10))(images, labels)
        assert not torch.equal(a[1], c[1])


def test_input_forms_and_soft_labels(batch):
    images, labels = batch
    t = T.MixUp(num_classes=5, generator=seeded(0))
    _, soft = t((images, labels))
    assert soft.shape == (5, 5) and torch.allclose(soft.sum(1), torch.ones(5))
    out = T.CutMix(num_classes=5)({"image": images, "labels": labels, "id": "x"})
    assert out["id"] == "x" and out["labels"].shape == (5, 5)
    already_soft = torch.nn.functional.one_hot(labels, 5).float()
    assert T.MixUp()(images, already_soft)[1].shape == (5, 5)
    uint8 = (images * 255).to(torch.uint8)
    mixed8, _ = T.MixUp(num_classes=5, generator=seeded(0))(uint8, labels)
    assert mixed8.dtype == torch.uint8
    mixedf, _ = T.MixUp(num_classes=5, generator=seeded(0))(uint8.float(), labels)
    assert (mixed8.float() - mixedf).abs().max() <= 0.5 + 1e-4
    getter = T.MixUp(num_classes=5, labels_getter=lambda inputs: inputs[0]["y"])
    assert getter({"x": images, "y": labels})["y"].shape == (5, 5)


def test_bad_input_raises(batch):
    images, labels = batch
    with pytest.raises(ValueError, match="MixUp: num_classes is needed"):
        T.MixUp()(images, labels)
    with pytest.raises(ValueError, match="CutMix: 5 images but 4 labels"):
        T.CutMix(num_classes=5)(images, labels[:4])
    with pytest.raises(ValueError, match=r"MixUp: expected a batch \[N, C, H, W\]"):
        T.MixUp(num_classes=5)(images[0], labels)
    with pytest.raises(ValueError, match="MixUp: alpha"):
        T.MixUp(alpha=0)
    with pytest.raises(ValueError, match="labels must be a 1-D or 2-D tensor"):
        T.MixUp(num_classes=5)(images, "cat")
    with pytest.raises(ValueError, match="CutMix: labels have 5 classes, expected 4"):
        T.CutMix(num_classes=4)(images, torch.nn.functional.one_hot(labels, 5))


@pytest.mark.parametrize("cls", [T.MixUp, T.CutMix])
def test_compiles_with_fullgraph(batch, cls):
    torch._dynamo.reset()
    images, labels = batch
    compiled = torch.compile(cls(num_classes=5), fullgraph=True, backend="eager")
    mixed, soft = compiled(images, labels)
    assert mixed.shape == images.shape and soft.shape == (5, 5)
    assert torch.allclose(soft.sum(1), torch.ones(5))
    torch._dynamo.reset()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(batch):
    images, labels = batch
    for cls in (T.MixUp, T.CutMix):
        cpu = cls(num_classes=5, generator=seeded(2))(images, labels)
        gpu = cls(num_classes=5, generator=seeded(2))(images.cuda(), labels.cuda())
        assert gpu[0].device.type == "cuda"
        torch.testing.assert_close(gpu[0].cpu(), cpu[0])
        torch.testing.assert_close(gpu[1].cpu(), cpu[1])
