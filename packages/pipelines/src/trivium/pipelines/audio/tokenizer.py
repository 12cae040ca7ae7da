"""A character tokenizer for CTC: index 0 is the blank, then one index per character.

Example:
    >>> tok = CharTokenizer()
    >>> tok.encode("Hi there")
    [9, 10, 1, 21, 9, 6, 19, 6]
    >>> tok.decode(tok.encode("Hi there"))
    'hi there'
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["DEFAULT_ALPHABET", "CharTokenizer"]

DEFAULT_ALPHABET = " abcdefghijklmnopqrstuvwxyz'"


class CharTokenizer:
    """Characters to CTC class indices and back (``blank`` = 0, ``alphabet[i]`` = i + 1).

    Text is lower-cased and runs of whitespace become one space; characters outside
    the alphabet raise ``ValueError`` (``strict=True``) or are dropped.

    Example:
        >>> tok = CharTokenizer("ab ")
        >>> len(tok), tok.encode("A b"), tok.decode([1, 3, 2])
        (4, [1, 3, 2], 'a b')
    """

    blank: int = 0

    def __init__(self, alphabet: str = DEFAULT_ALPHABET, strict: bool = False) -> None:
        if not alphabet or len(set(alphabet)) != len(alphabet):
            raise ValueError(f"alphabet must be non-empty without repeats, got {alphabet!r}")
        self.alphabet = alphabet
        self.strict = strict
        self._index = {c: i + 1 for i, c in enumerate(alphabet)}

    def __len__(self) -> int:
        """Number of classes, the blank included."""
        return len(self.alphabet) + 1

    def normalize(self, text: str) -> str:
        """Lower-case, collapse whitespace and (unless ``strict``) drop unknown characters.

        Example:
            >>> CharTokenizer().normalize("  Go,  NOW! ")
            'go now'
        """
        text = " ".join(text.lower().split())
        unknown = sorted({c for c in text if c not in self._index})
        if unknown and self.strict:
            raise ValueError(f"characters {unknown} are not in the alphabet {self.alphabet!r}")
        if unknown:
            text = " ".join("".join(c for c in text if c in self._index).split())
        return text

    def encode(self, text: str) -> list[int]:
        """Class indices of the normalized ``text``."""
        return [self._index[c] for c in self.normalize(text)]

    def decode(self, indices: Iterable[int]) -> str:
        """Text of class indices (blanks are skipped; nothing is collapsed)."""
        out = []
        for i in indices:
            i = int(i)
            if i == self.blank:
                continue
            if not 0 < i < len(self):
                raise ValueError(f"class index {i} is outside [0, {len(self) - 1}]")
            out.append(self.alphabet[i - 1])
        return "".join(out)
