"""Error rates against hand-checked cases and jiwer; signal metrics against NumPy formulas."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from trivium.audio.metrics import (
    PITLoss,
    char_error_rate,
    edit_distance,
    pit_loss,
    sdr,
    si_snr,
    si_snr_improvement,
    word_error_rate,
)

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"


def test_edit_distance_hand_checked() -> None:
    assert edit_distance("kitten", "sitting") == 3  # k->s, e->i, +g
    assert edit_distance("", "abc") == 3 and edit_distance("abc", "") == 3
    assert edit_distance("flaw", "lawn") == 2
    assert edit_distance(["a", "b", "c"], ["a", "c"]) == 1
    assert edit_distance([1, 2, 3], [3, 2, 1]) == 2


def test_error_rates_hand_checked() -> None:
    # 1 substitution (sat->sit) + 1 deletion (the) over 6 reference words
    assert word_error_rate("the cat sit on mat", "the cat sat on the mat") == pytest.approx(2 / 6)
    # batch: errors and reference words are summed, not the per-utterance rates averaged
    wer = word_error_rate(["a b", "c d e f"], ["a x", "c d e f g h i j"])
    assert wer == pytest.approx((1 + 4) / (2 + 8))
    assert word_error_rate(["hello"], ["hello"]) == 0.0
    assert word_error_rate("one two three four", "one") == 3.0  # insertions can exceed 1
    assert char_error_rate("helo wrld", "hello world") == pytest.approx(2 / 11)
    assert char_error_rate("  a   b ", "a b") == 0.0  # whitespace runs collapse
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        word_error_rate(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="no words"):
        word_error_rate([""], ["   "])
    with pytest.raises(TypeError, match="predictions"):
        word_error_rate([1], ["a"])  # type: ignore[list-item]


def test_error_rates_match_jiwer() -> None:
    jiwer = pytest.importorskip("jiwer")
    rng = np.random.default_rng(0)
    vocab = ["the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "log", "quickly"]
    refs, preds = [], []
    for _ in range(60):
        ref = list(rng.choice(vocab, rng.integers(1, 12)))
        pred = [w for w in ref if rng.random() > 0.2]
        pred = [rng.choice(vocab) if rng.random() < 0.2 else w for w in pred]
        pred += list(rng.choice(vocab, rng.integers(0, 3)))
        refs.append(" ".join(ref))
        preds.append(" ".join(pred))
    assert word_error_rate(preds, refs) == pytest.approx(jiwer.wer(refs, preds), abs=1e-12)
    assert char_error_rate(preds, refs) == pytest.approx(jiwer.cer(refs, preds), abs=1e-12)
    real_ref = (AUDIO / "ds-LDC93S1.txt").read_text().split(" ", 2)[2].strip()
    real_pred = "she had your dark suit and greasy wash water all year"
    ours = word_error_rate(real_pred, real_ref.lower().rstrip("."))
    assert ours == pytest.approx(jiwer.wer(real_ref.lower().rstrip("."), real_pred)) == 1 / 11


@pytest.fixture(scope="module")
def sources() -> torch.Tensor:
    """Three real speech clips, 1 s each, float64 [3, 16000]."""
    names = ["sb-spk1_snt1.wav", "sb-spk2_snt1.wav", "ds-LDC93S1.wav"]
    return torch.stack([torch.from_numpy(sf.read(AUDIO / n)[0][:16000]) for n in names])


def np_si_snr(est: np.ndarray, ref: np.ndarray) -> float:
    est, ref = est - est.mean(), ref - ref.mean()
    target = np.dot(est, ref) / np.dot(ref, ref) * ref
    return float(10 * np.log10(np.sum(target**2) / np.sum((est - target) ** 2)))


def test_si_snr_and_sdr_against_numpy(sources: torch.Tensor) -> None:
    target, other = sources[0], sources[1]
    for gain, mix in ((1.0, 0.1), (0.3, 0.5), (-2.0, 1.0)):
        est = gain * target + mix * other + 0.01
        assert float(si_snr(est, target)) == pytest.approx(
            np_si_snr(est.numpy(), target.numpy()), abs=1e-6
        )
    est = target + 0.1 * other
    expected_sdr = 10 * np.log10(np.sum(target.numpy() ** 2) / np.sum((0.1 * other.numpy()) ** 2))
    assert float(sdr(est, target)) == pytest.approx(expected_sdr, abs=1e-6)
    assert float(si_snr(5 * target, target)) > 80  # scale invariant
    assert float(sdr(5 * target, target)) < 0  # SDR is not
    batched = si_snr(sources[:, None] + 0.2 * sources.roll(1, 0)[:, None], sources[:, None])
    assert batched.shape == (3, 1)
    mixture = target + other
    improvement = si_snr_improvement(target + 0.1 * other, target, mixture)
    assert float(improvement) == pytest.approx(
        np_si_snr((target + 0.1 * other).numpy(), target.numpy())
        - np_si_snr(mixture.numpy(), target.numpy()),
        abs=1e-6,
    )
    with pytest.raises(ValueError, match="broadcast"):
        si_snr(torch.zeros(3, 10), torch.zeros(2, 10))


def test_pit_loss_finds_the_permutation(sources: torch.Tensor) -> None:
    g = torch.Generator().manual_seed(0)
    targets = sources.float().unsqueeze(0).repeat(4, 1, 1)  # [4, 3, T]
    perms = [(2, 0, 1), (0, 1, 2), (1, 2, 0), (2, 1, 0)]
    estimates = torch.stack([targets[b, list(p)] for b, p in enumerate(perms)])
    estimates = estimates + 0.05 * torch.randn(estimates.shape, generator=g)
    loss, perm = pit_loss(estimates, targets, reduction="none")
    for b in range(4):  # estimates[b, perm[b, i]] is target i
        torch.testing.assert_close(estimates[b, perm[b]], targets[b], atol=0.3, rtol=0)
        for i in range(3):
            assert perms[b][perm[b, i]] == i
    # brute force with NumPy
    for b in range(4):
        best = min(
            np.mean(
                [
                    -np_si_snr(estimates[b, p[i]].double().numpy(), targets[b, i].double().numpy())
                    for i in range(3)
                ]
            )
            for p in itertools.permutations(range(3))
        )
        assert float(loss[b]) == pytest.approx(best, abs=1e-3)
    mean_loss, _ = pit_loss(estimates, targets)
    assert float(mean_loss) == pytest.approx(float(loss.mean()), abs=1e-5)
    mse = lambda e, t: (e - t).pow(2).mean(-1)  # noqa: E731
    _, perm_mse = pit_loss(estimates, targets, loss_fn=mse)
    assert torch.equal(perm_mse, perm)


def test_pit_loss_module_trains(sources: torch.Tensor) -> None:
    targets = sources.float()[:2].unsqueeze(0)  # [1, 2, T]
    estimates = targets.flip(1).clone().mul(0.5).requires_grad_(True)
    loss = PITLoss()(estimates, targets)
    loss.backward()
    assert float(loss.detach()) < -60 and estimates.grad is not None
    with pytest.raises(ValueError, match="n_sources"):
        pit_loss(torch.zeros(2, 10), torch.zeros(2, 10))
    with pytest.raises(ValueError, match="reduction"):
        pit_loss(estimates, targets, reduction="max")
