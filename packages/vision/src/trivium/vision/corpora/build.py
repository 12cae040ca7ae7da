"""Building an embedded corpus on disk: reuse a finished one, render the images in parallel.

Both corpora (:mod:`~trivium.vision.corpora.classification`,
:mod:`~trivium.vision.corpora.detection`) write their images through :func:`render_all`
into folders that :func:`reuse_or_clear` prepared, between the two manifest writes of
:mod:`~trivium.vision.corpora.assets`.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from trivium.vision.corpora.assets import write_manifest
    >>> root = Path(tempfile.mkdtemp())
    >>> reuse_or_clear(root, {"seed": 0}, [], ("train",), "an example")
    False
    >>> write_manifest(root, {"seed": 0})
    >>> reuse_or_clear(root, {"seed": 0}, [], ("train",), "an example")
    True
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch

from trivium.core.errors import DatasetError
from trivium.core.progress import progress
from trivium.core.threads import parallel_map
from trivium.vision.corpora.assets import decoded_photos, read_manifest, write_manifest

__all__ = ["SPLITS", "check_range", "distinct_names", "render_all", "reuse_or_clear"]

#: The splits of both corpora, in the order they are planned.
SPLITS = ("train", "val")

_CHUNK = 64  # images per progress update

S = TypeVar("S")
R = TypeVar("R")


def _either(folders: Sequence[str]) -> str:
    names = [f"{folder}/" for folder in folders]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def check_range(name: str, value: Any, low: float, high: float) -> tuple[Any, Any]:
    """``value`` (a number, or a ``(min, max)`` pair) as ``(min, max)`` within ``[low, high]``.

    Example:
        >>> check_range("quality", 90, 1, 100), check_range("size", (0.1, 0.5), 0.02, 1.0)
        ((90, 90), (0.1, 0.5))
        >>> check_range("quality", (95, 60), 1, 100)
        Traceback (most recent call last):
        ...
        ValueError: quality must be a range within [1, 100], got (95, 60)
    """
    lo, hi = (value, value) if isinstance(value, int | float) else tuple(value)
    if not low <= lo <= hi <= high:
        raise ValueError(f"{name} must be a range within [{low}, {high}], got {value!r}")
    return lo, hi


def distinct_names(kind: str, names: Sequence[str], known: Sequence[str]) -> tuple[str, ...]:
    """``names`` as a tuple, refused unless they are distinct, at least one, all ``known``.

    Example:
        >>> distinct_names("shape", ["star"], ("circle", "star"))
        ('star',)
        >>> distinct_names("shape", ["star", "star"], ("circle", "star"))
        Traceback (most recent call last):
        ...
        ValueError: shapes must be distinct names from ('circle', 'star'), got ['star', 'star']
    """
    names = tuple(names)
    unknown = [n for n in names if n not in known]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"{kind}s must be distinct names from {known}, got {list(names)}")
    return names


def reuse_or_clear(
    root: Path, settings: dict, files: Sequence[Path], folders: Sequence[str], maker: str
) -> bool:
    """True when ``root`` holds a finished corpus of ``settings`` with all ``files``.

    Otherwise ``root`` is marked unfinished, its ``folders`` are removed, and False
    is returned; a ``root`` holding one of ``folders`` without a manifest is refused
    (:class:`trivium.core.DatasetError`, naming ``maker``) rather than overwritten.

    Example:
        >>> import os, tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> os.mkdir(root / "val")
        >>> try:
        ...     reuse_or_clear(root, {}, [], ("train", "val"), "an example")
        ... except OSError as e:
        ...     print(e.reason)
        holds train/ or val/ but no corpus.json: not a corpus an example made; choose an empty or new folder
    """  # noqa: E501
    record = read_manifest(root)
    finished = record is not None and record.get("settings") == settings
    if finished and all(f.is_file() for f in files):
        return True
    if record is None and any((root / folder).exists() for folder in folders):
        raise DatasetError(
            f"holds {_either(folders)} but no corpus.json: not a corpus {maker} made; "
            "choose an empty or new folder",
            path=root,
        )
    root.mkdir(parents=True, exist_ok=True)
    write_manifest(root, None)
    for folder in folders:
        shutil.rmtree(root / folder, ignore_errors=True)
    return False


def render_all(
    write: Callable[[S], R],
    plan: Sequence[S],
    desc: str,
    num_threads: int | None,
    progress_bar: bool | None,
) -> list[R]:
    """``[write(spec) for spec in plan]``, the specs drawn in parallel, with a progress bar.

    Images are small: splitting each op over torch's threads costs more than it
    saves (x20 slower on a busy machine), so torch runs on one thread meanwhile and
    the images are drawn in parallel instead.

    Example:
        >>> render_all(str, [1, 2, 3], "example", 2, False)
        ['1', '2', '3']
    """
    disable = None if progress_bar is None else not progress_bar
    decoded_photos()  # once, before the threads need them
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    results: list[R] = []
    try:
        with progress(total=len(plan), desc=desc, unit="img", disable=disable) as bar:
            for start in range(0, len(plan), _CHUNK):
                chunk = plan[start : start + _CHUNK]
                results += parallel_map(write, chunk, num_threads)
                bar.update(len(chunk))
    finally:
        torch.set_num_threads(torch_threads)
    return results
