"""CTC forced alignment (``forced_align``, ``merge_tokens``) against independent references.

torchaudio's ``forced_align`` is a C++ op that does not load here, so the paths are
compared with the textbook CTC Viterbi written below in NumPy (float64, one state at a
time), with a brute force over every frame labelling on small inputs, and with the
example values of torchaudio's own tests. ``merge_tokens`` is torchaudio's pure Python,
compared directly.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from peers import require_torchaudio

import trivium.audio.functional as F

# torchaudio's test emission (test_forced_align in its functional tests): blank is 5.
EMISSION = [
    [0.633766, 0.221185, 0.0917319, 0.0129757, 0.0142857, 0.0260553],
    [0.111121, 0.588392, 0.278779, 0.0055756, 0.00569609, 0.010436],
    [0.0357786, 0.633813, 0.321418, 0.00249248, 0.00272882, 0.0037688],
    [0.0663296, 0.643849, 0.280111, 0.00283995, 0.0035545, 0.00331533],
    [0.458235, 0.396634, 0.123377, 0.00648837, 0.00903441, 0.00623107],
]


def viterbi_reference(log_probs: np.ndarray, target: list[int], blank: int) -> list[int]:
    """Textbook CTC Viterbi over the extended label sequence (blank, l1, blank, ..., blank)."""
    ext = [blank]
    for label in target:
        ext += [label, blank]
    frames, states = log_probs.shape[0], len(ext)
    score = np.full((frames, states), -np.inf)
    back = np.zeros((frames, states), dtype=int)
    score[0, 0] = log_probs[0, ext[0]]
    score[0, 1] = log_probs[0, ext[1]]
    for t in range(1, frames):
        for s in range(states):
            options = [(score[t - 1, s], 0)]
            if s >= 1:
                options.append((score[t - 1, s - 1], 1))
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                options.append((score[t - 1, s - 2], 2))
            best, move = options[0]
            for value, step in options[1:]:
                if value > best:  # the later (longer) move wins only when strictly better
                    best, move = value, step
            score[t, s] = best + log_probs[t, ext[s]]
            back[t, s] = move
    s = states - 1 if score[-1, -1] > score[-1, -2] else states - 2
    path = []
    for t in range(frames - 1, -1, -1):
        path.append(ext[s])
        s -= back[t, s]
    return path[::-1]


def collapse(labels: tuple[int, ...], blank: int) -> list[int]:
    return [k for k, _ in itertools.groupby(labels) if k != blank]


def random_log_probs(frames: int, classes: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (
        (torch.randn(1, frames, classes, generator=g, dtype=torch.float64) * 2)
        .log_softmax(-1)
        .to(dtype)
    )


@pytest.mark.parametrize(
    ("targets", "expected", "dtype"),
    [
        ([0, 1, 1, 0], [0, 1, 5, 1, 0], torch.int32),
        ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], torch.int32),
        ([3, 3, 3], [3, 5, 3, 5, 3], torch.int64),
        ([0, 1, 2], [0, 1, 1, 1, 2], torch.int64),
    ],
)
@pytest.mark.parametrize("float_dtype", [torch.float32, torch.float64])
def test_torchaudio_example_values(targets, expected, dtype, float_dtype) -> None:
    log_probs = torch.tensor(EMISSION, dtype=float_dtype).log()[None]
    paths, scores = F.forced_align(log_probs, torch.tensor([targets], dtype=dtype), blank=5)
    assert paths.dtype == dtype and paths.tolist() == [expected]
    assert torch.equal(scores[0], log_probs[0, torch.arange(5), torch.tensor(expected)])


@pytest.mark.parametrize("seed", range(6))
def test_paths_equal_the_textbook_viterbi(seed: int) -> None:
    g = torch.Generator().manual_seed(100 + seed)
    frames, classes, blank = 60, 8, seed % 3
    labels = [c for c in range(classes) if c != blank]
    target = [labels[i] for i in torch.randint(len(labels), (12,), generator=g).tolist()]
    target[4] = target[3]  # a repeat, which needs a blank between
    log_probs = random_log_probs(frames, classes, seed, torch.float64)
    paths, _ = F.forced_align(log_probs, torch.tensor([target]), blank=blank)
    expected = viterbi_reference(log_probs[0].numpy(), target, blank)
    assert paths[0].tolist() == expected
    assert collapse(tuple(expected), blank) == target


@pytest.mark.parametrize(("frames", "target"), [(5, [1, 2]), (6, [2, 2, 1]), (3, [1, 1])])
def test_the_path_is_the_best_labelling_by_brute_force(frames: int, target: list[int]) -> None:
    log_probs = random_log_probs(frames, 3, seed=frames, dtype=torch.float64)
    lp = log_probs[0].numpy()
    best = max(
        (labels for labels in itertools.product(range(3), repeat=frames)),
        key=lambda labels: (
            sum(lp[t, k] for t, k in enumerate(labels))
            if collapse(labels, 0) == target
            else -np.inf
        ),
    )
    paths, scores = F.forced_align(log_probs, torch.tensor([target]))
    assert tuple(paths[0].tolist()) == best
    assert np.isclose(scores.sum().item(), sum(lp[t, k] for t, k in enumerate(best)))


def test_float32_long_input_equals_the_reference_and_scores_carry_gradients() -> None:
    log_probs = random_log_probs(400, 30, seed=3)
    target = torch.randint(1, 30, (1, 90), generator=torch.Generator().manual_seed(4))
    paths, _ = F.forced_align(log_probs, target)
    assert paths[0].tolist() == viterbi_reference(
        log_probs[0].double().numpy(), target[0].tolist(), 0
    )
    leaf = log_probs.clone().requires_grad_()
    _, scores = F.forced_align(leaf, target)
    scores.sum().backward()
    assert torch.equal(leaf.grad.sum(-1), torch.ones(1, 400))  # one frame, one label


def test_batches_align_each_item_on_its_lengths() -> None:
    a, b = random_log_probs(30, 6, seed=1), random_log_probs(30, 6, seed=2)
    targets = torch.tensor([[1, 2, 3, 4], [5, 1, 0, 0]])
    batch = torch.cat([a, b])
    paths, scores = F.forced_align(
        batch, targets, torch.tensor([30, 21]), torch.tensor([4, 2]), blank=0
    )
    alone_a, _ = F.forced_align(a, targets[:1])
    alone_b, _ = F.forced_align(b[:, :21], targets[1:, :2])
    assert torch.equal(paths[0], alone_a[0])
    assert torch.equal(paths[1, :21], alone_b[0]) and not paths[1, 21:].any()
    assert torch.equal(scores, batch.gather(-1, paths[..., None]).squeeze(-1))


def test_errors_torchaudio_raises() -> None:
    log_probs = random_log_probs(5, 4, seed=0)
    with pytest.raises(ValueError, match="blank index"):
        F.forced_align(log_probs, torch.tensor([[1, 0]]))
    with pytest.raises(ValueError, match="CTC dimension"):
        F.forced_align(log_probs, torch.tensor([[1, 4]]))
    with pytest.raises(ValueError, match="too long for CTC"):
        F.forced_align(log_probs, torch.tensor([[1, 1, 2, 2]]))  # 4 labels + 2 repeats > 5
    with pytest.raises(ValueError, match="3-D"):
        F.forced_align(log_probs[0], torch.tensor([[1]]))
    with pytest.raises(ValueError, match="2-D"):
        F.forced_align(log_probs, torch.tensor([1]))
    with pytest.raises(ValueError, match="blank"):
        F.forced_align(log_probs, torch.tensor([[1]]), blank=4)
    with pytest.raises(ValueError, match="input_lengths"):
        F.forced_align(log_probs, torch.tensor([[1]]), input_lengths=torch.tensor([4]))
    with pytest.raises(ValueError, match="target_lengths"):
        F.forced_align(log_probs, torch.tensor([[1, 2]]), target_lengths=torch.tensor([3]))
    with pytest.raises(TypeError, match="targets"):
        F.forced_align(log_probs, torch.tensor([[1.0]]))
    with pytest.raises(TypeError, match="log_probs"):
        F.forced_align(log_probs.to(torch.int64), torch.tensor([[1]]))


def test_merge_tokens_equals_torchaudio() -> None:
    taf = require_torchaudio().functional
    log_probs = random_log_probs(80, 7, seed=9)
    target = torch.tensor([[3, 3, 1, 6, 2, 2, 4]])
    paths, scores = F.forced_align(log_probs, target)
    ours = F.merge_tokens(paths[0], scores[0].exp())
    theirs = taf.merge_tokens(paths[0], scores[0].exp())
    assert [(s.token, s.start, s.end, s.score, len(s)) for s in ours] == [
        (s.token, s.start, s.end, s.score, len(s)) for s in theirs
    ]
    assert [s.token for s in ours] == target[0].tolist()
    with pytest.raises(ValueError, match="1D"):
        F.merge_tokens(paths, scores)
    with pytest.raises(ValueError, match="same length"):
        F.merge_tokens(paths[0], scores[0, :-1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    log_probs = random_log_probs(200, 12, seed=5)
    targets = torch.randint(1, 12, (1, 40), generator=torch.Generator().manual_seed(6))
    paths, scores = F.forced_align(log_probs.cuda(), targets.cuda())
    assert paths.device.type == scores.device.type == "cuda"
    expected = F.forced_align(log_probs, targets)
    assert torch.equal(paths.cpu(), expected[0]) and torch.equal(scores.cpu(), expected[1])
