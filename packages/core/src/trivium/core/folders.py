"""Class folders: the ``ROOT/<class>/<file>`` layout that folder datasets and converters read.

Example:
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> for name in ("dog", "cat", ".cache"):
    ...     os.makedirs(os.path.join(root, name))
    >>> class_folders(root), class_folders(root, skip_hidden=True)
    (['.cache', 'cat', 'dog'], ['cat', 'dog'])
"""

from __future__ import annotations

import os

from trivium.core.errors import DatasetError, PathNotFoundError

__all__ = ["NO_CLASS_FOLDERS", "class_folders"]

#: The reason given for a root without sub-folders.
NO_CLASS_FOLDERS = "no class folders (expected ROOT/<class>/<file>)"


def class_folders(root: str | os.PathLike[str], *, skip_hidden: bool = False) -> list[str]:
    """The names of the sub-folders of ``root``, sorted: the classes of a folder dataset.

    Args:
        root: the dataset's folder.
        skip_hidden: leave out folders whose name starts with ``.``.

    Raises :class:`~trivium.core.errors.PathNotFoundError` when ``root`` does not
    exist, and :class:`~trivium.core.errors.DatasetError` naming ``root`` when it is
    not a folder, cannot be listed, or holds no sub-folder (reason
    :data:`NO_CLASS_FOLDERS`).

    Example:
        >>> import tempfile
        >>> try:
        ...     class_folders(tempfile.mkdtemp())
        ... except OSError as e:
        ...     print(type(e).__name__, e.reason)
        DatasetError no class folders (expected ROOT/<class>/<file>)
    """
    try:
        with os.scandir(root) as entries:
            names = [
                entry.name
                for entry in entries
                if entry.is_dir() and not (skip_hidden and entry.name.startswith("."))
            ]
    except FileNotFoundError:
        raise PathNotFoundError(path=root) from None
    except NotADirectoryError:
        raise DatasetError("not a directory", path=root) from None
    except OSError as e:
        raise DatasetError(f"cannot list the class folders: {e.strerror or e}", path=root) from e
    if not names:
        raise DatasetError(NO_CLASS_FOLDERS, path=root)
    return sorted(names)
