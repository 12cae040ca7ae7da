"""``on_error="skip"`` for vision's datasets: :mod:`trivium.core.skipping`.

``SkipsUnreadable``, ``check_on_error`` and ``with_path`` live in
:mod:`trivium.core.skipping` (shared with audio's ``AudioFolder``) and are
re-exported here. A new dataset subclasses ``SkipsUnreadable``: it calls
``start_skipping`` in ``__init__``, defines ``load_item`` and ``item_path``,
returns ``get_item`` from ``__getitem__`` and may set ``item_kind``.

Example:
    >>> import pathlib, tempfile, warnings, torch
    >>> from trivium.vision.datasets import ImageFolder
    >>> from trivium.vision.io import write_png
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "a").mkdir()
    >>> _ = (root / "a" / "bad.jpg").write_bytes(b"not a JPEG")
    >>> write_png(torch.zeros(3, 2, 2, dtype=torch.uint8), str(root / "a" / "good.png"))
    >>> ds = ImageFolder(root, on_error="skip")
    >>> isinstance(ds, SkipsUnreadable)
    True
    >>> with warnings.catch_warnings(record=True):
    ...     image, label = ds[0]  # bad.jpg: good.png takes its place
    >>> image.shape, ds.skipped, [pathlib.Path(p).name for p in ds.skipped_files]
    (torch.Size([3, 2, 2]), 1, ['bad.jpg'])
"""

from trivium.core.skipping import SkipsUnreadable, check_on_error, with_path

__all__ = ["SkipsUnreadable", "check_on_error", "with_path"]
