"""What the torchvision-style datasets share: the base class, checks, downloads, image loading.

``VisionDataset`` is torchvision's base class (``root``, ``transform``,
``target_transform``, ``transforms``, the same ``repr``); :func:`check_integrity`
and :func:`verify_str_arg` are torchvision's helpers. The rest is the one place
where a dataset finds its files (:func:`require_file`: the error rule's
``PathNotFoundError`` saying ``download=True``, or a ``DatasetError`` for a file
that is there but corrupt), fetches them (:func:`download_resource`: every mirror
in turn through :mod:`trivium.core.download`, then the archive or the single
``.gz`` / ``.xz`` file extracted) and decodes an image file to the PIL image
torchvision returns (:func:`pil_loader`, on :mod:`trivium.vision.io`).

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.bin")
    >>> _ = open(path, "wb").write(b"abc")
    >>> check_integrity(path, "900150983cd24fb0d6963f7d28e17f72"), check_integrity(path + "x")
    (True, False)
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from trivium.core.download import extract_archive, fetch, file_digest
from trivium.core.errors import (
    NO_SUCH_PATH,
    DatasetError,
    DecodeError,
    EmptyInputError,
    PathNotFoundError,
    TriviumError,
)
from trivium.core.skipping import SkipsUnreadable, with_path
from trivium.vision.io import ImageReadMode, decode_image, read_file
from trivium.vision.io.image.codec import decoding_file

__all__ = [
    "ImageFileDataset",
    "VisionDataset",
    "check_integrity",
    "download_resource",
    "extract",
    "pil_decode",
    "pil_loader",
    "pil_open",
    "require_file",
    "require_folder",
    "verify_str_arg",
]

_COMPRESSED = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


def check_integrity(fpath: str | os.PathLike[str], md5: str | None = None) -> bool:
    """Whether ``fpath`` is a file and, when ``md5`` is given, has that MD5 (torchvision's).

    Example:
        >>> check_integrity("/no/such/file")
        False
    """
    if not os.path.isfile(fpath):
        return False
    return md5 is None or file_digest(fpath, "md5") == md5.lower()


def verify_str_arg(value: Any, arg: str, valid_values: Iterable[str]) -> str:
    """``value`` when it is one of ``valid_values``, else a ``ValueError`` naming ``arg``.

    Example:
        >>> verify_str_arg("train", "split", ("train", "test"))
        'train'
        >>> verify_str_arg("val", "split", ("train", "test"))
        Traceback (most recent call last):
        ...
        ValueError: split must be one of 'train', 'test'; got 'val'
    """
    valid = tuple(valid_values)
    if not isinstance(value, str) or value not in valid:
        listed = ", ".join(repr(v) for v in valid)
        raise ValueError(f"{arg} must be one of {listed}; got {value!r}")
    return value


def _not_found(path: str, can_download: bool) -> PathNotFoundError:
    """The error for a missing file or folder of a dataset, with the download hint if any."""
    hint = "pass download=True to fetch the dataset" if can_download else None
    return PathNotFoundError(f"{NO_SUCH_PATH}; {hint}" if hint else NO_SUCH_PATH, path=path)


def _files_intact(folder: str | os.PathLike[str], files: Iterable[Sequence[str]]) -> bool:
    """Whether every ``(name, md5)`` of ``files`` is in ``folder`` with that MD5."""
    return all(check_integrity(os.path.join(folder, name), md5) for name, md5 in files)


def require_file(
    path: str | os.PathLike[str], md5: str | None = None, *, can_download: bool = True
) -> str:
    """``path`` as a string when it is a file with the given MD5; else the rule's error.

    A missing file raises :class:`~trivium.core.errors.PathNotFoundError` naming it
    (saying ``download=True`` where the dataset can download); a file whose MD5
    differs raises :class:`~trivium.core.errors.DatasetError` with both digests.

    Example:
        >>> require_file("/no/such/batch")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: /no/such/batch: no such file or directory; \
pass download=True to fetch the dataset
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise _not_found(path, can_download)
    if md5 is not None:
        actual = file_digest(path, "md5")
        if actual != md5.lower():
            raise DatasetError(
                f"corrupt or not the dataset's file: expected md5 {md5}, got {actual}; "
                "delete it and pass download=True to fetch it again",
                path=path,
            )
    return path


def require_folder(path: str | os.PathLike[str], *, can_download: bool = True) -> str:
    """``path`` as a string when it is a folder; else the rule's ``PathNotFoundError``.

    Example:
        >>> require_folder("/no/such/images")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: /no/such/images: no such file or directory; \
pass download=True to fetch the dataset
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise _not_found(path, can_download)
    return path


def _decompress(path: Path, dest: Path) -> Path:
    """``path`` (one ``.gz`` / ``.xz`` / ``.bz2`` file) decompressed to ``dest``."""
    opener = _COMPRESSED[path.suffix]
    try:
        with opener(path, "rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except (OSError, EOFError, lzma.LZMAError) as e:
        dest.unlink(missing_ok=True)
        raise DatasetError(f"cannot decompress: {e}", path=str(path)) from None
    return dest


def extract(path: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Extract an archive into the folder ``dest``, or decompress one ``.gz`` file into it.

    Example:
        >>> import gzip, pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = gzip.open(d / "x.bin.gz", "wb").write(b"idx")
        >>> extract(d / "x.bin.gz", d).read_bytes()
        b'idx'
    """
    path, dest = Path(path), Path(dest)
    if path.name.endswith(_ARCHIVES):
        return extract_archive(path, dest)
    dest.mkdir(parents=True, exist_ok=True)
    return _decompress(path, dest / path.stem)


def download_resource(
    urls: str | Sequence[str],
    folder: str | os.PathLike[str],
    filename: str | None = None,
    md5: str | None = None,
    extract_to: str | os.PathLike[str] | None = None,
) -> Path:
    """Fetch a file into ``folder`` from the first of ``urls`` that serves it, then extract it.

    Through :func:`trivium.core.download.fetch`: a file already there is checked
    against ``md5`` and used (a mismatch raises, naming it); else each URL is tried in
    turn (torchvision's mirrors), resumable and MD5-verified, and when all fail one
    ``DatasetError`` lists each failure. With ``extract_to``, an archive is extracted
    there (safely) and a ``.gz`` / ``.xz`` / ``.bz2`` file decompressed there. Returns
    the downloaded file.

    Example:
        >>> import pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "labels.txt"
        >>> _ = src.write_text("cat")
        >>> download_resource([src.parent.as_uri() + "/nope", src.as_uri()],
        ...                   tempfile.mkdtemp()).read_text()
        'cat'
    """
    urls = [urls] if isinstance(urls, str) else list(urls)
    dest = Path(folder) / (filename or os.path.basename(urls[0].split("?")[0]))
    fetch(urls, dest, md5=md5)
    if extract_to is not None:
        extract(dest, extract_to)
    return dest


def pil_loader(path: str | os.PathLike[str]) -> Image.Image:
    """The image at ``path`` as a PIL RGB image, decoded by :mod:`trivium.vision.io`.

    The pixels of torchvision's default loader (Pillow's ``convert("RGB")``); a
    file that cannot be read raises a ``trivium.core`` error naming it.

    Example:
        >>> import os, tempfile, torch
        >>> from trivium.vision.io import write_png
        >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
        >>> write_png(torch.zeros(1, 2, 3, dtype=torch.uint8), path)
        >>> image = pil_loader(path)
        >>> image.mode, image.size
        ('RGB', (3, 2))
    """
    return _decode_to_pil(path, ImageReadMode.RGB)


def _decode_to_pil(path: str | os.PathLike[str], mode: ImageReadMode) -> Image.Image:
    try:
        with decoding_file(path):
            image = decode_image(read_file(path), mode, dtype=torch.uint8, path=path)
    except (TriviumError, OSError) as e:
        raise with_path(e, path) from e
    if image.dim() == 4:  # an animation: its first frame, as Pillow opens it
        image = image[0]
    pixels = np.ascontiguousarray(image.permute(1, 2, 0).numpy())
    channels = pixels.shape[2]
    return Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels, _PIL_MODES[channels])


_PIL_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def pil_decode(path: str | os.PathLike[str]) -> Image.Image:
    """The image at ``path`` in its own mode (``"L"``, ``"RGB"``, ...), by ``trivium.vision.io``.

    For what torchvision returns from ``Image.open`` without ``convert`` on JPEG
    files (Caltech101, CelebA): a gray JPEG stays ``"L"``. Palette images decode to
    their colours (use :func:`pil_open` to keep a palette).

    Example:
        >>> import os, tempfile, torch
        >>> from trivium.vision.io import write_jpeg
        >>> path = os.path.join(tempfile.mkdtemp(), "gray.jpg")
        >>> write_jpeg(torch.zeros(1, 4, 6, dtype=torch.uint8), path)
        >>> pil_decode(path).mode, pil_loader(path).mode
        ('L', 'RGB')
    """
    return _decode_to_pil(path, ImageReadMode.UNCHANGED)


def pil_open(path: str | os.PathLike[str]) -> Image.Image:
    """The image at ``path`` opened by Pillow as it is stored (its own mode), pixels loaded.

    For what torchvision returns without ``convert``: segmentation masks keep their
    palette (mode ``"P"``), which :func:`pil_loader`'s RGB decode does not. A file that
    cannot be read raises a ``trivium.core`` error naming it.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "mask.png")
        >>> mask = Image.new("P", (3, 2), 1)
        >>> mask.putpalette([0, 0, 0, 128, 0, 0])
        >>> mask.save(path)
        >>> pil_open(path).mode
        'P'
    """
    try:
        with open(path, "rb") as f:
            image = Image.open(f)
            image.load()
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    except OSError as e:  # Pillow's UnidentifiedImageError and truncated data
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            raise EmptyInputError(path=path) from None
        raise DecodeError(str(e), path=path) from None
    except (ValueError, SyntaxError) as e:  # Pillow's parsers on damaged headers
        raise DecodeError(str(e), path=path) from None
    return image


def _apply_each(
    transform: Callable | None, target_transform: Callable | None, input: Any, target: Any
) -> tuple[Any, Any]:
    """``(transform(input), target_transform(target))``, each skipped where it is None."""
    if transform is not None:
        input = transform(input)
    if target_transform is not None:
        target = target_transform(target)
    return input, target


class StandardTransform:
    """``transform`` on the input and ``target_transform`` on the target (torchvision's).

    Example:
        >>> StandardTransform(lambda x: x + 1, None)(1, "a")
        (2, 'a')
    """

    def __init__(
        self, transform: Callable | None = None, target_transform: Callable | None = None
    ) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:
        return _apply_each(self.transform, self.target_transform, input, target)

    def __repr__(self) -> str:
        body = [type(self).__name__]
        for head, value in (
            ("Transform: ", self.transform),
            ("Target transform: ", self.target_transform),
        ):
            if value is not None:
                lines = repr(value).splitlines()
                body += [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]
        return "\n".join(body)


class VisionDataset(Dataset):
    """torchvision's base class of the datasets: ``root`` and the transforms, and the ``repr``.

    ``transforms`` (on ``(input, target)``) and ``transform`` / ``target_transform``
    exclude each other; the two are kept as ``transforms`` too (a
    ``StandardTransform``), as torchvision keeps them.

    Example:
        >>> class Squares(VisionDataset):
        ...     def __getitem__(self, i):
        ...         return self.transforms(i * i, i) if self.transforms else (i * i, i)
        ...     def __len__(self):
        ...         return 3
        >>> Squares("data", target_transform=str)[2]
        (4, '2')
    """

    _repr_indent = 4

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        transforms: Callable | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ) -> None:
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        separate = transform is not None or target_transform is not None
        if transforms is not None and separate:
            raise ValueError(
                "Only transforms or transform/target_transform can be passed as argument"
            )
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = StandardTransform(transform, target_transform) if separate else transforms

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def _transformed(self, input: Any, target: Any) -> tuple[Any, Any]:
        """``(input, target)`` through ``transform`` and ``target_transform`` as now set."""
        return _apply_each(self.transform, self.target_transform, input, target)

    def __len__(self) -> int:
        raise NotImplementedError

    def extra_repr(self) -> str:
        """More lines for ``repr`` (the split, ...); empty by default.

        Example:
            >>> VisionDataset().extra_repr()
            ''
        """
        return ""

    def __repr__(self) -> str:
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body += repr(self.transforms).splitlines()
        return "\n".join([f"Dataset {type(self).__name__}"] + [" " * 4 + line for line in body])


class ImageFileDataset(SkipsUnreadable, VisionDataset):
    """A dataset of image files with targets: ``transforms(loader(file), target)``.

    The base of the datasets that list their image files (Flowers102, DTD, ...). A
    subclass fills ``_image_files`` (and, by default, ``_labels``, or overrides
    :meth:`_target`), then calls :meth:`_ready` with the ``loader`` and ``on_error``.
    A file the loader cannot read raises a ``trivium.core`` error naming it; with
    ``on_error="skip"`` it is replaced by the next readable one, as in
    :class:`~trivium.vision.datasets.ImageFolder`.

    Example:
        >>> import os, tempfile, torch
        >>> from trivium.vision.io import write_png
        >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
        >>> write_png(torch.zeros(3, 2, 2, dtype=torch.uint8), path)
        >>> class Two(ImageFileDataset):
        ...     def __init__(self):
        ...         super().__init__(None)
        ...         self._image_files, self._labels = [path, path], [0, 1]
        ...         self._ready(pil_loader, "raise")
        >>> image, label = Two()[1]
        >>> image.mode, label
        ('RGB', 1)
    """

    item_kind = "image"
    _image_files: list[Any]
    _labels: list[Any]

    def _ready(self, loader: Callable[[Any], Any], on_error: str) -> None:
        self.loader = loader
        self.start_skipping(on_error, len(self._image_files))

    def _target(self, index: int) -> Any:
        return self._labels[index]

    def load_item(self, index: int) -> tuple[Any, Any]:
        """``(image, target)`` number ``index``, or a ``trivium.core`` error naming its file.

        Example:
            >>> import os, tempfile
            >>> class One(ImageFileDataset):
            ...     def __init__(self, path):
            ...         super().__init__(None)
            ...         self._image_files, self._labels = [path], [0]
            ...         self._ready(pil_loader, "skip")
            >>> missing = os.path.join(tempfile.mkdtemp(), "gone.jpg")
            >>> One(missing).load_item(0)  # never skips, whatever on_error
            Traceback (most recent call last):
            ...
            trivium.core.errors.PathNotFoundError: .../gone.jpg: no such file or directory
        """
        path = self._image_files[index]
        try:
            with decoding_file(path):
                image = self.loader(path)
        except (TriviumError, OSError) as e:
            raise with_path(e, path) from e
        target = self._target(index)
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target

    def item_path(self, index: int) -> str:
        """The image file of sample ``index``.

        Example:
            >>> from pathlib import Path
            >>> ds = ImageFileDataset.__new__(ImageFileDataset)
            >>> ds._image_files = [Path("jpg") / "image_00001.jpg"]
            >>> ds.item_path(0)
            'jpg/image_00001.jpg'
        """
        return os.fspath(self._image_files[index])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return self.get_item(index)

    def __len__(self) -> int:
        return len(self._image_files)
