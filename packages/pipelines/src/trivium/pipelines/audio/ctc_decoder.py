"""CTC decoding of ``[frames, classes]`` log-probabilities: greedy and character beam search.

Example:
    >>> import torch
    >>> log_probs = torch.log(torch.tensor([[0.1, 0.9], [0.1, 0.9], [0.9, 0.1], [0.1, 0.9]]))
    >>> ctc_greedy_decode(log_probs)
    [1, 1]
    >>> ctc_beam_search(log_probs, beam_width=4)
    [1, 1]
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch
from torch import Tensor

__all__ = ["ctc_beam_search", "ctc_greedy_decode"]


def _check(log_probs: Tensor) -> None:
    if log_probs.dim() != 2:
        raise ValueError(f"log_probs must be [frames, classes], got {tuple(log_probs.shape)}")


def ctc_greedy_decode(log_probs: Tensor, blank: int = 0) -> list[int]:
    """Best class per frame, repeats merged, blanks removed.

    Example:
        >>> import torch
        >>> ctc_greedy_decode(torch.eye(3)[[1, 1, 0, 2, 2, 1]])
        [1, 2, 1]
    """
    _check(log_probs)
    best = torch.argmax(log_probs, dim=-1).tolist()
    out, previous = [], None
    for c in best:
        if c != previous and c != blank:
            out.append(c)
        previous = c
    return out


def _logaddexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    hi, lo = max(a, b), min(a, b)
    return hi + math.log1p(math.exp(lo - hi))


def ctc_beam_search(
    log_probs: Tensor, beam_width: int = 10, blank: int = 0, prune: float = -12.0
) -> list[int]:
    """Prefix beam search (no language model): the most probable label sequence found.

    Each prefix keeps its probability of ending in a blank and in a non-blank;
    classes whose frame log-probability is below ``prune`` are skipped.

    Example:
        >>> import torch
        >>> # greedy picks blank at every frame; summing over paths gives "1"
        >>> p = torch.tensor([[0.4, 0.35, 0.25], [0.4, 0.35, 0.25]])
        >>> ctc_greedy_decode(p.log()), ctc_beam_search(p.log())
        ([], [1])
    """
    _check(log_probs)
    if beam_width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    frames = log_probs.detach().float().cpu().tolist()
    beams: dict[tuple[int, ...], tuple[float, float]] = {(): (0.0, -math.inf)}
    for row in frames:
        candidates = [c for c, lp in enumerate(row) if lp >= prune] or [
            max(range(len(row)), key=row.__getitem__)
        ]
        nxt: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [-math.inf, -math.inf])
        for prefix, (p_b, p_nb) in beams.items():
            total = _logaddexp(p_b, p_nb)
            for c in candidates:
                lp = row[c]
                if c == blank:
                    entry = nxt[prefix]
                    entry[0] = _logaddexp(entry[0], total + lp)
                    continue
                extended = (*prefix, c)
                entry = nxt[extended]
                if prefix and prefix[-1] == c:
                    # a repeat needs a blank in between; without one it stays the same prefix
                    entry[1] = _logaddexp(entry[1], p_b + lp)
                    same = nxt[prefix]
                    same[1] = _logaddexp(same[1], p_nb + lp)
                else:
                    entry[1] = _logaddexp(entry[1], total + lp)
        ranked = sorted(nxt.items(), key=lambda kv: _logaddexp(*kv[1]), reverse=True)
        beams = {prefix: (p[0], p[1]) for prefix, p in ranked[:beam_width]}
    best = max(beams.items(), key=lambda kv: _logaddexp(*kv[1]))[0]
    return list(best)
