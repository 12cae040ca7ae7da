"""The RNN transducer loss (``rnnt_loss``, ``RNNTLoss``) against independent references.

torchaudio's loss is a C++ op that does not load here. The reference below is the
forward recursion over the lattice written cell by cell in float64, its gradient
taken by autograd through that recursion (the loss module computes its gradient
from alpha and beta instead); the values of torchaudio's own test data are checked too.
"""

from __future__ import annotations

import pytest
import torch

import trivium.audio.functional as F
import trivium.audio.transforms as T


def ints(*values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int32)


def reference_costs(
    logits: torch.Tensor, targets, logit_lengths, target_lengths, blank: int, fused: bool
) -> torch.Tensor:
    """-log P(y | x), one item and one lattice cell at a time (float64, differentiable)."""
    log_probs = logits.log_softmax(-1) if fused else logits
    costs = []
    for b in range(logits.shape[0]):
        frames, labels = int(logit_lengths[b]), int(target_lengths[b])
        y = [int(v) for v in targets[b, :labels]]
        lp = log_probs[b]
        alpha = {(0, 0): lp.new_zeros(())}
        for t in range(frames):
            for u in range(labels + 1):
                if (t, u) == (0, 0):
                    continue
                terms = []
                if t > 0:
                    terms.append(alpha[t - 1, u] + lp[t - 1, u, blank])
                if u > 0:
                    terms.append(alpha[t, u - 1] + lp[t, u - 1, y[u - 1]])
                alpha[t, u] = torch.logsumexp(torch.stack(terms), 0)
        costs.append(-(alpha[frames - 1, labels] + lp[frames - 1, labels, blank]))
    return torch.stack(costs)


def random_case(seed: int, batch=3, frames=7, labels=4, classes=5, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, frames, labels + 1, classes, generator=g, dtype=dtype)
    logit_lengths = torch.randint(1, frames + 1, (batch,), generator=g, dtype=torch.int32)
    logit_lengths[0] = frames
    target_lengths = torch.randint(0, labels + 1, (batch,), generator=g, dtype=torch.int32)
    target_lengths[-1] = labels
    targets = torch.randint(0, classes - 1, (batch, labels), generator=g, dtype=torch.int32)
    return logits, targets, logit_lengths, target_lengths


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_costs_and_gradients_equal_the_lattice_reference(seed: int, fused: bool) -> None:
    logits, targets, logit_lengths, target_lengths = random_case(seed)
    if not fused:
        logits = logits.log_softmax(-1)
    blank = logits.shape[-1] - 1
    leaf = logits.clone().requires_grad_()
    ours = F.rnnt_loss(
        leaf, targets, logit_lengths, target_lengths, reduction="none", fused_log_softmax=fused
    )
    weights = torch.tensor([1.0, -0.5, 2.0], dtype=torch.float64)  # a gradient per item
    (ours * weights).sum().backward()
    ref_leaf = logits.clone().requires_grad_()
    ref = reference_costs(ref_leaf, targets, logit_lengths, target_lengths, blank, fused)
    (ref * weights).sum().backward()
    assert torch.allclose(ours, ref.detach(), atol=1e-10)
    assert torch.allclose(leaf.grad, ref_leaf.grad, atol=1e-10)


def test_float32_and_a_blank_in_the_middle() -> None:
    logits, targets, logit_lengths, target_lengths = random_case(5, batch=2, frames=9, labels=3)
    targets[targets == 2] = 1  # blank 2 is never a target
    leaf = logits.float().requires_grad_()
    ours = F.rnnt_loss(leaf, targets, logit_lengths, target_lengths, blank=2, reduction="sum")
    ours.backward()
    ref_leaf = logits.clone().requires_grad_()
    ref = reference_costs(ref_leaf, targets, logit_lengths, target_lengths, 2, True).sum()
    ref.backward()
    assert ours.dtype == torch.float32 and torch.isclose(ours.double(), ref.detach(), rtol=1e-5)
    assert torch.allclose(leaf.grad.double(), ref_leaf.grad, atol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_clamp_and_reductions(reduction: str) -> None:
    logits, targets, logit_lengths, target_lengths = random_case(7)
    logits = logits * 4  # large gradients, so that the clamp bites
    leaf = logits.clone().requires_grad_()
    loss = F.rnnt_loss(leaf, targets, logit_lengths, target_lengths, clamp=0.3, reduction=reduction)
    loss.sum().backward()
    ref_leaf = logits.clone().requires_grad_()
    ref = reference_costs(ref_leaf, targets, logit_lengths, target_lengths, 4, True)
    per_item = torch.autograd.grad(ref.sum(), ref_leaf)[0].clamp(-0.3, 0.3)
    scale = 1 / len(ref) if reduction == "mean" else 1.0
    expected = {"none": ref, "mean": ref.mean(), "sum": ref.sum()}[reduction].detach()
    assert torch.allclose(loss, expected, atol=1e-10)
    assert torch.allclose(leaf.grad, per_item * scale, atol=1e-10)
    assert (leaf.grad.abs() <= 0.3 * scale + 1e-12).all() and (per_item.abs() == 0.3).any()


def test_torchaudio_test_values() -> None:
    # torchaudio's rnnt test data (get_B2_T4_U3_D3_data): costs, and gradients of their sum.
    logits = torch.tensor(B2_T4_U3_D3_LOGITS).reshape(2, 4, 3, 3).requires_grad_()
    costs = F.rnnt_loss(logits, ints([1, 2], [1, 1]), ints(4, 4), ints(2, 2), 0, reduction="none")
    assert torch.allclose(costs, torch.tensor([4.2806528590890736, 3.9384369822503591]))
    costs.sum().backward()
    assert torch.allclose(
        logits.grad, torch.tensor(B2_T4_U3_D3_GRADS).reshape(2, 4, 3, 3), atol=1e-5
    )


def test_module_equals_the_function() -> None:
    logits, targets, logit_lengths, target_lengths = random_case(2)
    module = T.RNNTLoss(blank=1, clamp=-1.0, reduction="sum", fused_log_softmax=True)
    expected = F.rnnt_loss(logits, targets, logit_lengths, target_lengths, 1, reduction="sum")
    assert torch.equal(module(logits, targets, logit_lengths, target_lengths), expected)
    with pytest.raises(ValueError, match="reduction"):
        T.RNNTLoss(reduction="max")


def test_errors() -> None:
    logits, targets, logit_lengths, target_lengths = random_case(0)
    call = F.rnnt_loss
    with pytest.raises(ValueError, match="reduction"):
        call(logits, targets, logit_lengths, target_lengths, reduction="avg")
    with pytest.raises(ValueError, match="4-D"):
        call(logits[0], targets, logit_lengths, target_lengths)
    with pytest.raises(ValueError, match="logit_lengths"):
        call(logits, targets, logit_lengths - 1, target_lengths)
    with pytest.raises(ValueError, match="target_lengths"):
        call(logits, targets, logit_lengths, target_lengths - 1)
    with pytest.raises(ValueError, match="batch"):
        call(logits, targets[:2], logit_lengths, target_lengths)
    with pytest.raises(ValueError, match="blank"):
        call(logits, targets, logit_lengths, target_lengths, blank=5)
    with pytest.raises(TypeError, match="targets"):
        call(logits, targets.float(), logit_lengths, target_lengths)
    with pytest.raises(TypeError, match="logits"):
        call(logits.long(), targets, logit_lengths, target_lengths)


B2_T4_U3_D3_LOGITS = [
    0.065357, 0.787530, 0.081592, 0.529716, 0.750675, 0.754135, 0.609764, 0.868140,
    0.622532, 0.668522, 0.858039, 0.164539, 0.989780, 0.944298, 0.603168, 0.946783,
    0.666203, 0.286882, 0.094184, 0.366674, 0.736168, 0.166680, 0.714154, 0.399400,
    0.535982, 0.291821, 0.612642, 0.324241, 0.800764, 0.524106, 0.779195, 0.183314,
    0.113745, 0.240222, 0.339470, 0.134160, 0.505562, 0.051597, 0.640290, 0.430733,
    0.829473, 0.177467, 0.320700, 0.042883, 0.302803, 0.675178, 0.569537, 0.558474,
    0.083132, 0.060165, 0.107958, 0.748615, 0.943918, 0.486356, 0.418199, 0.652408,
    0.024243, 0.134582, 0.366342, 0.295830, 0.923670, 0.689929, 0.741898, 0.250005,
    0.603430, 0.987289, 0.592606, 0.884672, 0.543450, 0.660770, 0.377128, 0.358021,
]  # fmt: skip
B2_T4_U3_D3_GRADS = [
    -0.186844, -0.062555, 0.249399, -0.203377, 0.202399, 0.000977, -0.141016, 0.079123,
    0.061893, -0.011552, -0.081280, 0.092832, -0.154257, 0.229433, -0.075176, -0.246593,
    0.146405, 0.100188, -0.012918, -0.061593, 0.074512, -0.055986, 0.219831, -0.163845,
    -0.497627, 0.209240, 0.288387, 0.013605, -0.030220, 0.016615, 0.113925, 0.062781,
    -0.176706, -0.667078, 0.367659, 0.299419, -0.356344, -0.055347, 0.411691, -0.096922,
    0.029459, 0.067463, -0.063518, 0.027654, 0.035863, -0.154499, -0.073942, 0.228441,
    -0.166790, -0.000088, 0.166878, -0.172370, 0.105565, 0.066804, 0.023875, -0.118256,
    0.094381, -0.104707, -0.108934, 0.213642, -0.369844, 0.180118, 0.189726, 0.025714,
    -0.079462, 0.053748, 0.122328, -0.238789, 0.116460, -0.598687, 0.302203, 0.296484,
]  # fmt: skip


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    logits, targets, logit_lengths, target_lengths = random_case(4, dtype=torch.float32)
    leaf = logits.cuda().requires_grad_()
    loss = F.rnnt_loss(leaf, targets.cuda(), logit_lengths.cuda(), target_lengths.cuda())
    loss.backward()
    cpu_leaf = logits.clone().requires_grad_()
    expected = F.rnnt_loss(cpu_leaf, targets, logit_lengths, target_lengths)
    expected.backward()
    torch.testing.assert_close(loss.cpu(), expected, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(leaf.grad.cpu(), cpu_leaf.grad, atol=1e-5, rtol=1e-4)
