"""Sequence alignment: ``edit_distance`` (as torchaudio's).

Example:
    >>> edit_distance("kitten", "sitting")
    3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["edit_distance"]


def edit_distance(seq1: Sequence[Any], seq2: Sequence[Any]) -> int:
    """The Levenshtein distance: the fewest insertions, deletions and substitutions between two.

    Works on any sequences of comparable items: strings (characters) or lists of
    words (a word error count).

    Example:
        >>> edit_distance("the cat sat".split(), "the cat sat down".split())
        1
    """
    previous = list(range(len(seq2) + 1))
    for i, a in enumerate(seq1, 1):
        current = [i]
        for j, b in enumerate(seq2, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]
