"""The CMU Pronouncing Dictionary 0.7b, read from its two files like torchaudio's.

``root/cmudict-0.7b`` (Latin-1, ``WORD  PH1 PH2 ...`` lines, ``;;;`` comments,
``WORD(1)`` for alternative pronunciations) and ``root/cmudict-0.7b.symbols``.

Example:
    >>> import tempfile
    >>> try:
    ...     CMUDict(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, read_lines
from trivium.core.download import split_url
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError

__all__ = ["CMUDict"]

URL = "http://svn.code.sf.net/p/cmusphinx/code/trunk/cmudict/cmudict-0.7b"
URL_SYMBOLS = "http://svn.code.sf.net/p/cmusphinx/code/trunk/cmudict/cmudict-0.7b.symbols"
# SHA-256 of the two files (the digests torchaudio checks).
CHECKSUMS = {
    "cmudict-0.7b": "209a8b4cd265013e96f4658632a9878103b0c5abf62b50d4ef3ae1be226b29e4",
    "cmudict-0.7b.symbols": "408ccaae803641c6d7b626b6299949320c2dbca96b2220fd3fb17887b023b027",
}
# The dictionary's spelled-out punctuation entries.
_PUNCTUATION_ENTRIES = """
    !EXCLAMATION-POINT "CLOSE-QUOTE "DOUBLE-QUOTE "END-OF-QUOTE "END-QUOTE "IN-QUOTES "QUOTE
    "UNQUOTE #HASH-MARK #POUND-SIGN #SHARP-SIGN %PERCENT &AMPERSAND 'END-INNER-QUOTE
    'END-QUOTE 'INNER-QUOTE 'QUOTE 'SINGLE-QUOTE (BEGIN-PARENS (IN-PARENTHESES (LEFT-PAREN
    (OPEN-PARENTHESES (PAREN (PARENS (PARENTHESES )CLOSE-PAREN )CLOSE-PARENTHESES )END-PAREN
    )END-PARENS )END-PARENTHESES )END-THE-PAREN )PAREN )PARENS )RIGHT-PAREN )UN-PARENTHESES
    +PLUS ,COMMA --DASH -DASH -HYPHEN ...ELLIPSIS .DECIMAL .DOT .FULL-STOP .PERIOD .POINT
    /SLASH :COLON ;SEMI-COLON ;SEMI-COLON(1) ?QUESTION-MARK {BRACE {LEFT-BRACE {OPEN-BRACE
    }CLOSE-BRACE }RIGHT-BRACE
"""
PUNCTUATIONS = frozenset(_PUNCTUATION_ENTRIES.split())
_ALTERNATIVE = re.compile(r"\([0-9]+\)")

Item = tuple[str, list[str]]


def _punctuation(word: str) -> str:
    """The mark a spelled-out entry stands for: ``!EXCLAMATION-POINT`` is ``!``."""
    for mark in ("...", "--"):
        if word.startswith(mark):
            return mark
    return word[0]


def parse_dictionary(
    lines: list[str], exclude_punctuations: bool, path: str | os.PathLike[str]
) -> list[Item]:
    """``(word, phones)`` for each entry; ``WORD(1)`` becomes ``WORD``.

    Example:
        >>> parse_dictionary([";;; c", "A  AH0", "A(1)  EY1", ",COMMA  K AA1 M AH0"], False, "d")
        [('A', ['AH0']), ('A', ['EY1']), (',', ['K', 'AA1', 'M', 'AH0'])]
    """
    entries = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.startswith(";;;"):
            continue
        word, sep, phones = line.strip().partition("  ")
        if not sep or "  " in phones:
            raise DatasetError(f"line {lineno} is not 'WORD  PHONES': {line!r}", path=path)
        if word in PUNCTUATIONS:
            if exclude_punctuations:
                continue
            word = _punctuation(word)
        entries.append((_ALTERNATIVE.sub("", word), phones.split(" ")))
    return entries


class CMUDict(Dataset):
    """CMUDict entries ``(word, phones)``; ``symbols`` lists the phone set.

    ``exclude_punctuations`` drops the spelled-out punctuation entries (kept, they
    become the mark itself: ``,COMMA`` is ``,``). ``root`` must exist; with
    ``download=True`` the two files are fetched into it from ``url`` and
    ``url_symbols`` (SHA-256 checked) when missing.

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "cmudict-0.7b").write_text("HELLO  HH AH0 L OW1\\n")
        >>> _ = (root / "cmudict-0.7b.symbols").write_text("AH0\\nHH\\nL\\nOW1\\n")
        >>> d = CMUDict(root)
        >>> d[0], d.symbols
        (('HELLO', ['HH', 'AH0', 'L', 'OW1']), ['AH0', 'HH', 'L', 'OW1'])
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        exclude_punctuations: bool = True,
        *,
        download: bool = False,
        url: str = URL,
        url_symbols: str = URL_SYMBOLS,
    ) -> None:
        self.exclude_punctuations = exclude_punctuations
        self._root_path = Path(root)
        if not self._root_path.is_dir():
            raise PathNotFoundError(
                f"{NO_SUCH_PATH}; CMUDict: create the folder (with download=True the "
                "dictionary is fetched into it)",
                path=self._root_path,
            )
        files = []
        for file_url in (url, url_symbols):
            path = self._root_path / os.path.basename(split_url(file_url)[0])
            ensure_path(path, "CMUDict", file_url, download, checksums=CHECKSUMS)
            files.append(path)
        dict_file, symbol_file = files
        self._symbols = [line.strip() for line in read_lines(symbol_file)]
        lines = read_lines(dict_file, encoding="latin-1")
        self._dictionary = parse_dictionary(lines, exclude_punctuations, dict_file)

    def __getitem__(self, n: int) -> Item:
        """Entry ``n``: ``(word, phones)``."""
        return self._dictionary[n]

    def __len__(self) -> int:
        return len(self._dictionary)

    @property
    def symbols(self) -> list[str]:
        """The phone symbols, in the symbols file's order (a copy)."""
        return self._symbols.copy()
