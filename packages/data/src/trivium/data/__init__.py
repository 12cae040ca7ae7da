"""Trivium data: iterable datasets and loaders over files and Arrow tables.

Example:
    >>> import trivium.data as td
    >>> isinstance(td.FileLister("."), td.FileLister)
    True
"""

from trivium.data.file_lister import FileLister

__version__ = "0.1.0"

__all__ = ["FileLister", "__version__"]
