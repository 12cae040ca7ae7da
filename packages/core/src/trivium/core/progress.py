"""Progress bars that stay quiet in logs.

A bar is shown only when stderr is a terminal; ``TRIVIUM_PROGRESS=0`` silences every
bar and ``TRIVIUM_PROGRESS=1`` forces them on (e.g. under a job scheduler).

Example:
    >>> from trivium.core.progress import progress
    >>> sum(progress(range(3), desc="demo", disable=True))
    3
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from tqdm.std import tqdm

__all__ = ["progress", "progress_enabled"]

_ENV_VAR = "TRIVIUM_PROGRESS"
_OFF = frozenset({"0", "false", "no", "off"})
_ON = frozenset({"1", "true", "yes", "on"})


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def progress_enabled() -> bool:
    """Whether progress bars are shown: ``TRIVIUM_PROGRESS`` if set, else whether stderr is a TTY.

    Example:
        >>> import os
        >>> os.environ["TRIVIUM_PROGRESS"] = "0"
        >>> progress_enabled()
        False
        >>> del os.environ["TRIVIUM_PROGRESS"]
    """
    env = os.environ.get(_ENV_VAR, "").strip().lower()
    if env in _OFF:
        return False
    if env in _ON:
        return True
    return _stderr_is_tty()


def progress(
    iterable: Iterable[Any] | None = None,
    total: float | None = None,
    desc: str | None = None,
    unit: str = "it",
    disable: bool | None = None,
    **kwargs: Any,
) -> tqdm:
    """A ``tqdm`` bar over ``iterable``, disabled unless :func:`progress_enabled`.

    An explicit ``disable=True/False`` wins over the environment; other keyword
    arguments go to ``tqdm``.

    Example:
        >>> with progress(total=2, desc="files", disable=True) as bar:
        ...     bar.update(2)
        >>> [x for x in progress([1, 2], disable=True)]
        [1, 2]
    """
    if disable is None:
        disable = not progress_enabled()
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, **kwargs)
