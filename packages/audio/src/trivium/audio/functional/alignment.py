"""CTC forced alignment, as torchaudio's: ``forced_align``, ``merge_tokens``, ``TokenSpan``.

The Viterbi pass over the ``2 L + 1`` states (blank, label, blank, ... blank) is the
operator ``torch.ops.trivium_audio.forced_align_paths``: on the CPU a native kernel
(``csrc/forced_align.cpp``: the items in parallel, the GIL released); on other devices
the NumPy implementation below, one vectorised step per frame over the states, on the
CPU (the recursion is sequential in time). The path comes back on the input's device
and the scores are gathered from ``log_probs`` (differentiable).

Example:
    >>> import torch
    >>> log_probs = torch.log(torch.tensor([[[0.9, 0.1], [0.1, 0.9], [0.9, 0.1]]]))
    >>> forced_align(log_probs, torch.tensor([[1]]))[0]
    tensor([[0, 1, 0]])
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from trivium.audio import _ops  # noqa: F401  (defines the trivium_audio operators)

__all__ = ["TokenSpan", "forced_align", "merge_tokens"]

_FLOATS = (torch.float16, torch.float32, torch.float64)
_INTS = (torch.int32, torch.int64)
_CHUNK = 256  # frames whose back pointers are found together


def _check_align(log_probs: Tensor, targets: Tensor, blank: int) -> None:
    if log_probs.dtype not in _FLOATS:
        raise TypeError(f"log_probs must be float64, float32 or float16, got {log_probs.dtype}")
    if targets.dtype not in _INTS:
        raise TypeError(f"targets must be int32 or int64, got {targets.dtype}")
    if log_probs.ndim != 3:
        raise ValueError(
            f"log_probs must be 3-D (batch_size, input length, num classes), got "
            f"{tuple(log_probs.shape)}"
        )
    if targets.ndim != 2:
        raise ValueError(f"targets must be 2-D (batch_size, target length), got {targets.shape}")
    if targets.shape[0] != log_probs.shape[0]:
        raise ValueError(
            f"targets ({targets.shape[0]}) and log_probs ({log_probs.shape[0]}) must have "
            f"the same batch size"
        )
    if not 0 <= blank < log_probs.shape[-1]:
        classes = log_probs.shape[-1]
        raise ValueError(f"blank must be within [0, num classes={classes}), got {blank}")
    if targets.numel() == 0:
        raise ValueError("targets must not be empty")


def _check_labels(target: np.ndarray, blank: int, classes: int) -> None:
    """One item's labels (padding excluded): no blank, each a class."""
    if (target == blank).any():
        raise ValueError(f"targets Tensor shouldn't contain blank index. Found {target}.")
    if target.max() >= classes or target.min() < 0:
        raise ValueError(
            f"targets values must be within [0, num classes={classes}) (the CTC dimension), "
            f"got {target}"
        )


def _lengths(lengths: Tensor | None, batch: int, size: int, name: str) -> list[int]:
    """Per-item lengths: ``size`` for every item when None; their maximum must be ``size``."""
    if lengths is None:
        return [size] * batch
    if lengths.ndim != 1 or lengths.shape[0] != batch:
        raise ValueError(f"{name} must be 1-D (batch_size={batch},), got {tuple(lengths.shape)}")
    values = [int(v) for v in lengths.tolist()]
    if max(values) != size or min(values) < 1:
        raise ValueError(
            f"{name} must be in [1, {size}] with maximum {size} (the padded length), got {values}"
        )
    return values


def _viterbi(emissions: np.ndarray, target: np.ndarray, blank: int) -> np.ndarray:
    """The best CTC path ``[T]`` of labels for one item (``emissions`` ``[T, C]``).

    The sums run in the emissions' dtype (float32 or float64), as torchaudio's kernel.

    torchaudio's ties: a skip wins only over both others, the previous label over staying.
    """
    frames, length = emissions.shape[0], len(target)
    repeats = int((target[1:] == target[:-1]).sum())
    if frames < length + repeats:
        raise ValueError(
            f"targets length is too long for CTC. Found log_probs length: {frames}, targets "
            f"length: {length}, and number of repeats: {repeats}"
        )
    states = 2 * length + 1
    labels = np.full(states, blank, dtype=np.int64)
    labels[1::2] = target
    scores = emissions[:, labels]  # [T, S]
    # A skip over a blank (state s - 2 to s) only between two different labels.
    skip = np.zeros(states, dtype=bool)
    skip[3::2] = target[1:] != target[:-1]
    no_skip = np.where(skip, 0, -np.inf).astype(scores.dtype)
    # Rows of alpha with two -inf states in front: state s reads s, s - 1 and s - 2.
    rows = np.full((_CHUNK + 1, states + 2), -np.inf, dtype=scores.dtype)
    rows[0, 2:4] = scores[0, :2]
    # Back pointers: one state back (a step), two (a skip, which wins), or none.
    stepped = np.zeros((frames, states), dtype=bool)
    skipped = np.zeros((frames, states), dtype=bool)
    best, jump = (np.empty(states, dtype=scores.dtype) for _ in range(2))
    for first in range(1, frames, _CHUNK):
        count = min(_CHUNK, frames - first)
        for i in range(count):
            before = rows[i]
            np.maximum(before[2:], before[1:-1], out=best)
            np.add(before[:-2], no_skip, out=jump)
            np.maximum(best, jump, out=best)
            np.add(best, scores[first + i], out=rows[i + 1, 2:])
        # The moves taken, from the same values, for the chunk at once.
        stays, steps, jumps = rows[:count, 2:], rows[:count, 1:-1], rows[:count, :-2]
        stepped[first : first + count] = steps > stays
        skipped[first : first + count] = skip & (jumps > steps) & (jumps > stays)
        rows[0] = rows[count]
    alpha = rows[0, 2:]
    state = states - 1 if alpha[-1] > alpha[-2] else states - 2
    path = np.empty(frames, dtype=np.int64)
    for t in range(frames - 1, -1, -1):
        path[t] = labels[state]
        state -= 2 if skipped[t, state] else int(stepped[t, state])
    return path


def forced_align(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | None = None,
    target_lengths: Tensor | None = None,
    blank: int = 0,
) -> tuple[Tensor, Tensor]:
    """Align a CTC label sequence to an emission (the Viterbi path), as torchaudio's.

    Args:
        log_probs: log probabilities ``[B, T, C]`` (float16, float32 or float64); ``C``
            counts the blank.
        targets: labels ``[B, L]`` (int32 or int64), without the blank.
        input_lengths: ``[B]`` frames of each item (``T`` when None; the largest is ``T``).
        target_lengths: ``[B]`` labels of each item (``L`` when None; the largest is ``L``).
        blank: the blank's index.

    Returns:
        The label of each frame ``[B, T]`` (``targets``' dtype; 0 past an item's
        length) and its log probability ``[B, T]`` (gathered from ``log_probs``).
        torchaudio takes ``B == 1`` only; here each item is aligned on its own lengths.

    Raises:
        ValueError: ``targets`` holds the blank or a class ``>= C``, the shapes or lengths
            disagree, or ``T < L + repeats`` (no CTC path fits).

    Example:
        >>> import torch
        >>> log_probs = torch.randn(1, 10, 5).log_softmax(-1)
        >>> paths, scores = forced_align(log_probs, torch.tensor([[1, 3, 3]]))
        >>> [t for t in paths[0].unique_consecutive().tolist() if t != 0]
        [1, 3, 3]
    """
    _check_align(log_probs, targets, blank)
    batch, frames = log_probs.shape[:2]
    frame_counts = _lengths(input_lengths, batch, frames, "input_lengths")
    label_counts = _lengths(target_lengths, batch, targets.shape[1], "target_lengths")
    path = torch.ops.trivium_audio.forced_align_paths(
        log_probs.detach(),
        targets,
        torch.tensor(frame_counts, device=log_probs.device),
        torch.tensor(label_counts, device=log_probs.device),
        blank,
    )
    scores = log_probs.gather(-1, path.unsqueeze(-1)).squeeze(-1)
    return path.to(targets.dtype), scores


def _forced_align_paths_numpy(
    log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor, blank: int
) -> Tensor:
    """The operator on any device: each item's :func:`_viterbi` in NumPy, on the CPU."""
    emissions = log_probs.detach().cpu()
    emissions = (emissions.float() if emissions.dtype == torch.float16 else emissions).numpy()
    labels = targets.detach().cpu().numpy().astype(np.int64)
    frame_counts, label_counts = input_lengths.tolist(), target_lengths.tolist()
    paths = np.zeros(log_probs.shape[:2], dtype=np.int64)
    for b in range(log_probs.shape[0]):
        n, length = frame_counts[b], label_counts[b]
        _check_labels(labels[b, :length], blank, log_probs.shape[-1])
        paths[b, :n] = _viterbi(emissions[b, :n], labels[b, :length], blank)
    return torch.from_numpy(paths).to(device=log_probs.device)


torch.library.impl(
    "trivium_audio::forced_align_paths", "CompositeExplicitAutograd", _forced_align_paths_numpy
)


@torch.library.register_fake("trivium_audio::forced_align_paths")
def _(log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor, blank):
    return log_probs.new_empty(log_probs.shape[:2], dtype=torch.int64)


@dataclass
class TokenSpan:
    """A token with its frames and score, as :func:`merge_tokens` returns it.

    Example:
        >>> len(TokenSpan(token=3, start=4, end=7, score=-0.2))
        3
    """

    token: int
    """The token."""
    start: int
    """The first frame (inclusive)."""
    end: int
    """The frame after the last (exclusive)."""
    score: float
    """The mean score over the frames."""

    def __len__(self) -> int:
        """The number of frames."""
        return self.end - self.start


def merge_tokens(tokens: Tensor, scores: Tensor, blank: int = 0) -> list[TokenSpan]:
    """Collapse a CTC alignment into token spans: repeats merged, blanks dropped.

    Args:
        tokens: one item's frame labels ``[T]`` (from :func:`forced_align`).
        scores: their scores ``[T]``; a span's score is the mean over its frames.
        blank: the blank's index.

    Returns:
        The spans, in time order.

    Example:
        >>> import torch
        >>> tokens = torch.tensor([0, 2, 2, 0, 3])
        >>> for span in merge_tokens(tokens, torch.tensor([0.0, -1.0, -3.0, 0.0, -1.0])):
        ...     print(span)
        TokenSpan(token=2, start=1, end=3, score=-2.0)
        TokenSpan(token=3, start=4, end=5, score=-1.0)
    """
    if tokens.ndim != 1 or scores.ndim != 1:
        raise ValueError(
            f"`tokens` and `scores` must be 1D Tensor, got {tuple(tokens.shape)} and "
            f"{tuple(scores.shape)}"
        )
    if len(tokens) != len(scores):
        raise ValueError(
            f"`tokens` and `scores` must be the same length, got {len(tokens)} and {len(scores)}"
        )
    tokens, scores = tokens.detach().cpu(), scores.detach().cpu()
    edge = torch.tensor([-1], dtype=tokens.dtype)
    changes = torch.nonzero(torch.diff(tokens, prepend=edge, append=edge) != 0).flatten().tolist()
    labels = tokens.tolist()
    return [
        TokenSpan(token=labels[start], start=start, end=end, score=scores[start:end].mean().item())
        for start, end in itertools.pairwise(changes)
        if labels[start] != blank
    ]
