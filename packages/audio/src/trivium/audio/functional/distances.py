"""Distances, as torchaudio's: ``edit_distance`` of sequences, ``frechet_distance`` of Gaussians.

Example:
    >>> edit_distance("kitten", "sitting")
    3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["edit_distance", "frechet_distance"]


def edit_distance(seq1: Sequence[Any], seq2: Sequence[Any]) -> int:
    """The Levenshtein distance: the fewest insertions, deletions and substitutions between two.

    Works on any sequences of comparable items: strings (characters) or lists of
    words (a word error count).

    Example:
        >>> edit_distance("the cat sat".split(), "the cat sat down".split())
        1
    """
    if len(seq1) < len(seq2):  # a row as long as the shorter sequence
        seq1, seq2 = seq2, seq1
    previous = list(range(len(seq2) + 1))
    for i, a in enumerate(seq1, 1):
        current = [i]
        for j, b in enumerate(seq2, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


def frechet_distance(mu_x: Tensor, sigma_x: Tensor, mu_y: Tensor, sigma_y: Tensor) -> Tensor:
    """The Fréchet distance of two Gaussians (means ``[d]``, covariances ``[d, d]``).

    ``||mu_x - mu_y||^2 + tr(sigma_x + sigma_y - 2 (sigma_x sigma_y)^(1/2))``: the
    distance behind FAD and FID, computed from the eigenvalues of ``sigma_x sigma_y``.

    Example:
        >>> import torch
        >>> eye = torch.eye(3, dtype=torch.float64)
        >>> float(frechet_distance(torch.zeros(3), eye, torch.ones(3), eye))
        3.0
    """
    mean_term = (mu_x - mu_y).square().sum()
    root = torch.linalg.eigvals(sigma_x @ sigma_y).sqrt().real.sum()
    return mean_term + sigma_x.trace() + sigma_y.trace() - 2 * root
