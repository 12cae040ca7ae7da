"""``FileLister``: an iterable dataset of the file paths under one or more roots.

Example:
    >>> import os, tempfile
    >>> from trivium.data.file_lister import FileLister
    >>> root = tempfile.mkdtemp()
    >>> for name in ("b.jpg", "a.jpg", "notes.txt"):
    ...     open(os.path.join(root, name), "w").close()
    >>> [os.path.basename(p) for p in FileLister(root, "*.jpg")]
    ['a.jpg', 'b.jpg']
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence

from torch.utils.data import IterableDataset

from trivium.core.errors import DatasetError, PathNotFoundError

__all__ = ["FileLister"]

PathLike = str | os.PathLike[str]


def _match(name: str, masks: Sequence[str]) -> bool:
    return not masks or any(fnmatch.fnmatch(name, mask) for mask in masks)


def _check_masks(masks: str | Sequence[str]) -> list[str]:
    mask_list = [masks] if isinstance(masks, str) else list(masks)
    if not all(isinstance(m, str) for m in mask_list):
        raise TypeError(f"FileLister: masks must be a str or a list of str, got {masks!r}")
    return [m for m in mask_list if m]  # "" in a list also means "no filter"


def _walk_error(err: OSError) -> None:
    if isinstance(err, FileNotFoundError):  # removed while listing
        raise PathNotFoundError(path=err.filename) from err
    raise DatasetError(err.strerror or str(err), path=err.filename) from err


class FileLister(IterableDataset[str]):
    """Yield the paths (``str``) of the files under ``root`` whose names match ``masks``.

    Mirrors ``torchdata.datapipes.iter.FileLister``.

    Args:
        root: a directory or file, or a sequence of them (listed in the given order).
            A file root yields itself if its name matches.
        masks: a glob (``fnmatch``) pattern or a list of them, matched against file
            names; empty means every file.
        recursive: also list the files in subdirectories.
        abspath: yield absolute paths.
        non_deterministic: skip sorting (files, and the walk order of subdirectories,
            are sorted by name otherwise).

    A root that does not exist raises :class:`trivium.core.PathNotFoundError` (a
    ``FileNotFoundError`` and a ``DatasetError``), a directory that cannot be read
    :class:`trivium.core.DatasetError`, naming the path when iterated. In a
    ``DataLoader`` with several workers each worker lists every file; shard
    the paths if that is not what you want.

    Example:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "sub"))
        >>> open(os.path.join(root, "sub", "x.wav"), "w").close()
        >>> [os.path.relpath(p, root) for p in FileLister(root, ["*.wav"], recursive=True)]
        ['sub/x.wav']
    """

    def __init__(
        self,
        root: PathLike | Sequence[PathLike] = ".",
        masks: str | list[str] = "",
        *,
        recursive: bool = False,
        abspath: bool = False,
        non_deterministic: bool = False,
    ) -> None:
        super().__init__()
        roots = [root] if isinstance(root, (str, os.PathLike)) else list(root)
        self.roots = [os.fspath(r) for r in roots]
        self.masks = _check_masks(masks)
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic

    def __iter__(self) -> Iterator[str]:
        for root in self.roots:
            yield from self._list(root)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(root={self.roots!r}, masks={self.masks!r}, "
            f"recursive={self.recursive}, abspath={self.abspath}, "
            f"non_deterministic={self.non_deterministic})"
        )

    def _list(self, root: str) -> Iterator[str]:
        if os.path.isfile(root):
            path = os.path.abspath(root) if self.abspath else root
            if _match(os.path.basename(path), self.masks):
                yield path
            return
        if not os.path.isdir(root):
            raise PathNotFoundError(path=root)
        yield from self._walk(root)

    def _walk(self, root: str) -> Iterator[str]:
        for dirpath, dirnames, filenames in os.walk(root, onerror=_walk_error):
            if self.abspath:
                dirpath = os.path.abspath(dirpath)
            if not self.non_deterministic:
                filenames.sort()
                dirnames.sort()  # in place: os.walk descends in this order
            for name in filenames:
                if _match(name, self.masks):
                    yield os.path.join(dirpath, name)
            if not self.recursive:
                return
