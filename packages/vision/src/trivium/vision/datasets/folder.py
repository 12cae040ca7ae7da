"""``DatasetFolder`` and ``ImageFolder``: one sub-folder per class, as in torchvision.

Classes, their indices and the order of the samples are torchvision's (sorted), and
so are the constructor arguments and attributes (``classes``, ``class_to_idx``,
``samples``, ``targets``, ``imgs``). What differs is what a sample is by default and
what happens on a bad file:

* **The default sample** follows the transform (see :func:`loader_for`). A transform
  that starts with a fused decode (``DecodeRandomResizedCrop``, ``DecodeResize``,
  ``DecodeCenterCrop``, or a ``Compose`` whose first transform is one) gets the
  file's *encoded bytes* (a 1-D uint8 tensor from :func:`trivium.vision.io.read_file`):
  the fused decode reads the header first and then decodes only the crop's region at
  the smallest DCT scale it needs, which it cannot do from decoded pixels. Any other
  transform (or none) gets the decoded image, a uint8 ``[3, H, W]`` RGB tensor (the
  pixels Pillow's ``convert("RGB")`` gives, which torchvision's default loader uses).
  A ``loader`` you pass always wins.
* **Every sample is 8-bit**, as torchvision's default loader gives a training run:
  files deeper than 8 bits (16-bit PNGs, 12-bit and lossless JPEGs) become uint8 by
  their high byte (``v >> 8``: what Pillow gives for 16-bit RGB, and what
  ``ToDtype(torch.uint8, scale=True)`` does). Pillow's ``convert("RGB")`` of 16-bit
  *gray* saturates at 255 instead; the high byte is kept there too. A transform that
  starts with a fused decode gets such files decoded (to uint8, in its ``mode``), the
  others' bytes; a fused decode given ``dtype=`` gets the bytes of every file, and
  decodes them to that dtype.
* **Bad files** (unreadable, corrupt, truncated, not an image) raise a
  ``trivium.core`` error naming the file and the reason, whether the loader or a
  fused-decode transform found the damage. With ``on_error="skip"`` see
  :class:`DatasetFolder`.

Example:
    >>> import pathlib, tempfile, torch
    >>> from trivium.vision.io import write_jpeg
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("dog", "cat"):
    ...     (root / name).mkdir()
    ...     write_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8), str(root / name / "1.jpg"))
    >>> ds = ImageFolder(root)
    >>> ds.classes, ds[0][0].shape, ds.targets
    (['cat', 'dog'], torch.Size([3, 8, 8]), [0, 1])
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset

from trivium.core import Compose
from trivium.core.errors import DatasetError, PathNotFoundError, SkippedSamplesWarning, TriviumError
from trivium.core.folders import NO_CLASS_FOLDERS, class_folders
from trivium.core.skipping import SkipsUnreadable, with_path
from trivium.vision.io import ImageReadMode, decode_image, image_info, read_file
from trivium.vision.io.image.codec import IMAGE_EXTENSIONS, cannot_decode, decoding_file
from trivium.vision.transforms.fused_decode import (
    DecodeCenterCrop,
    DecodeRandomResizedCrop,
    DecodeResize,
)

__all__ = [
    "IMG_EXTENSIONS",
    "DatasetFolder",
    "DatasetNotFoundError",
    "ImageFolder",
    "SkippedSamplesWarning",
    "default_loader",
    "find_classes",
    "has_file_allowed_extension",
    "is_image_file",
    "loader_for",
    "make_dataset",
    "starts_with_decode",
]

# torchvision's IMG_EXTENSIONS, in its order.
_TORCHVISION_EXTENSIONS = (
    ".jpg",
    ".jpeg",
    ".png",
    ".ppm",
    ".bmp",
    ".pgm",
    ".tif",
    ".tiff",
    ".webp",
)
# Still-image formats beyond torchvision's list. GIF is left out, as torchvision leaves
# it out: an animated GIF decodes to [N, C, H, W].
_MORE_EXTENSIONS = (".avif", ".heic", ".heif")


def _decodable(extensions: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(e for e in extensions if cannot_decode(IMAGE_EXTENSIONS[e]) is None)


#: The extensions ImageFolder lists: torchvision's (in its order) and AVIF / HEIC, each
#: where its format decodes here (HEIC with the ``heif`` extra).
IMG_EXTENSIONS = _decodable(_TORCHVISION_EXTENSIONS + _MORE_EXTENSIONS)

_FUSED_DECODES = (DecodeRandomResizedCrop, DecodeResize, DecodeCenterCrop)


class DatasetNotFoundError(PathNotFoundError):
    """A dataset folder is missing, has no class folders, or a class has no files.

    A :class:`~trivium.core.errors.PathNotFoundError`: also a ``FileNotFoundError``,
    which torchvision raises in the same cases.

    Example:
        >>> isinstance(DatasetNotFoundError("no class folders", path="x"), FileNotFoundError)
        True
    """


def has_file_allowed_extension(filename: str, extensions: str | tuple[str, ...]) -> bool:
    """Whether ``filename`` ends with one of ``extensions`` (lower-case), ignoring case.

    Example:
        >>> has_file_allowed_extension("a/B.JPG", (".jpg", ".png"))
        True
    """
    return filename.lower().endswith(
        extensions if isinstance(extensions, str) else tuple(extensions)
    )


def is_image_file(filename: str) -> bool:
    """Whether ``filename`` has one of :data:`IMG_EXTENSIONS`.

    Example:
        >>> is_image_file("cat.bmp"), is_image_file("notes.txt")
        (True, False)
    """
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
    """The class folders of ``directory`` in sorted order, and their indices.

    Raises :class:`DatasetNotFoundError` (a ``FileNotFoundError``) naming
    ``directory`` when it is missing or has no sub-folders.

    Example:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> for name in ("dog", "cat"):
        ...     os.makedirs(os.path.join(root, name))
        >>> find_classes(root)
        (['cat', 'dog'], {'cat': 0, 'dog': 1})
    """
    try:
        classes = class_folders(directory)
    except DatasetError as e:  # torchvision raises FileNotFoundError for these two
        if isinstance(e, PathNotFoundError) or e.reason == NO_CLASS_FOLDERS:
            raise DatasetNotFoundError(e.reason, path=directory) from None
        raise
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(
    directory: str | os.PathLike[str],
    class_to_idx: dict[str, int] | None = None,
    extensions: str | tuple[str, ...] | None = None,
    is_valid_file: Callable[[str], bool] | None = None,
    allow_empty: bool = False,
) -> list[tuple[str, int]]:
    """``(path, class_index)`` of every valid file under the class folders, as torchvision.

    Classes in sorted order; within a class, folders (``os.walk``, following links)
    and files sorted. Exactly one of ``extensions`` and ``is_valid_file`` selects
    the files. A class without files raises :class:`DatasetNotFoundError` unless
    ``allow_empty``.

    Example:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "cat"))
        >>> for name in ("b.jpg", "a.png", "c.txt"):
        ...     open(os.path.join(root, "cat", name), "wb").close()
        >>> [(os.path.basename(p), c) for p, c in make_dataset(root, extensions=(".jpg", ".png"))]
        [('a.png', 0), ('b.jpg', 0)]
    """
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError(
            "Both extensions and is_valid_file cannot be None or not None at the same time"
        )
    if extensions is not None:
        allowed = extensions

        def is_valid_file(path: str) -> bool:
            return has_file_allowed_extension(path, allowed)

    instances = []
    available = set()
    undecodable: list[str] = []  # image files ImageFolder cannot list here
    for target_class in sorted(class_to_idx):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    available.add(target_class)
                elif extensions is IMG_EXTENSIONS and _cannot_list(path):
                    undecodable.append(path)
    if undecodable:
        _warn_undecodable(directory, undecodable)
    empty = set(class_to_idx) - available
    if empty and not allow_empty:
        reason = f"found no valid file for the classes {', '.join(sorted(empty))}"
        if extensions is not None:
            listed = extensions if isinstance(extensions, str) else ", ".join(extensions)
            reason += f" (supported extensions: {listed})"
        raise DatasetNotFoundError(
            reason + "; allow_empty=True keeps empty classes", path=directory
        )
    return instances


def _cannot_list(path: str) -> bool:
    """Whether ``path`` has the extension of an image format that does not decode here."""
    name = IMAGE_EXTENSIONS.get(os.path.splitext(path)[1].lower())
    return name is not None and name != "gif" and cannot_decode(name) is not None


def _warn_undecodable(directory: str | os.PathLike[str], paths: list[str]) -> None:
    """One warning naming the image files left out because their format does not decode here."""
    formats = sorted({IMAGE_EXTENSIONS[os.path.splitext(p)[1].lower()] for p in paths})
    why = "; ".join(cannot_decode(name) or "" for name in formats)
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    warnings.warn(
        f"{directory}: {len(paths)} image files are left out, their format does not decode "
        f"here: {shown} ({why})",
        UserWarning,
        stacklevel=4,
    )


def default_loader(path: str | os.PathLike[str]) -> torch.Tensor:
    """Decode the image at ``path`` to a uint8 ``[3, H, W]`` RGB tensor.

    Gray images are repeated over three channels and alpha is dropped, as Pillow's
    ``convert("RGB")`` in torchvision's default loader; samples deeper than 8 bits
    keep their high byte (``v >> 8``); EXIF orientation is not applied (Pillow does
    not either). Every format ``decode_image`` reads; an animation (WebP, GIF) gives
    its first frame, as Pillow opens it.

    Example:
        >>> import os, tempfile, torch
        >>> from trivium.vision.io import write_png
        >>> path = os.path.join(tempfile.mkdtemp(), "g.png")
        >>> write_png(torch.zeros(1, 4, 5, dtype=torch.uint8), path)
        >>> default_loader(path).shape
        torch.Size([3, 4, 5])
    """
    image = decode_image(read_file(path), ImageReadMode.RGB, dtype=torch.uint8, path=path)
    return image[0] if image.dim() == 4 else image


def starts_with_decode(transform: Callable | None) -> bool:
    """Whether ``transform`` takes encoded bytes: it is, or starts with, a fused decode.

    ``Compose`` (also nested, and ``nn.Sequential``) counts by its first transform.

    Example:
        >>> from trivium.vision import transforms as T
        >>> starts_with_decode(T.Compose([T.DecodeResize(32), T.RandomHorizontalFlip()]))
        True
        >>> starts_with_decode(T.Resize(32)), starts_with_decode(None)
        (False, False)
    """
    return _first_fused_decode(transform) is not None


def _first_fused_decode(transform: Callable | None) -> Any:
    """The fused decode ``transform`` is or starts with, else None."""
    while isinstance(transform, Compose | nn.Sequential) and len(_steps(transform)):
        transform = _steps(transform)[0]
    return transform if isinstance(transform, _FUSED_DECODES) else None


def _steps(transform: Compose | nn.Sequential) -> Any:
    return transform.transforms if isinstance(transform, Compose) else transform


def loader_for(transform: Callable | None) -> Callable[[str], torch.Tensor]:
    """The default loader for ``transform``: the file's bytes for a fused decode, else pixels.

    :func:`default_loader` unless :func:`starts_with_decode`. For a fused decode,
    :func:`trivium.vision.io.read_file` when it was given ``dtype=``; otherwise the
    bytes of files up to 8 bits deep and, for deeper ones, the image decoded to
    uint8 (high byte) in the fused decode's ``mode`` and orientation, which it then
    transforms as it is.

    Example:
        >>> from trivium.vision import transforms as T
        >>> loader_for(T.DecodeRandomResizedCrop(64))
        EncodedOr8Bit(mode=ImageReadMode.RGB, apply_exif_orientation=False)
        >>> loader_for(T.DecodeResize(8, dtype=torch.uint16)).__name__
        'read_file'
        >>> loader_for(None).__name__
        'default_loader'
    """
    fused = _first_fused_decode(transform)
    if fused is None:
        return default_loader
    if fused.dtype is not None:
        return read_file
    return _EncodedOr8Bit(fused.mode, fused.apply_exif_orientation)


class _EncodedOr8Bit:
    """A fused decode's loader: the file's bytes, or 8-bit pixels for deeper files.

    The header (:func:`trivium.vision.io.image_info`) says how deep the samples are.
    A file whose header cannot be read is passed on as bytes: the fused decode then
    raises for it, naming it.
    """

    def __init__(self, mode: ImageReadMode, apply_exif_orientation: bool) -> None:
        self.mode = mode
        self.apply_exif_orientation = apply_exif_orientation

    def __call__(self, path: str | os.PathLike[str]) -> torch.Tensor:
        data = read_file(path)
        try:
            deep = image_info(data).bit_depth > 8
        except TriviumError:
            return data
        if not deep:
            return data
        return decode_image(
            data, self.mode, self.apply_exif_orientation, dtype=torch.uint8, path=path
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _EncodedOr8Bit) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return (
            f"EncodedOr8Bit(mode=ImageReadMode.{self.mode.name}, "
            f"apply_exif_orientation={self.apply_exif_orientation})"
        )


class DatasetFolder(SkipsUnreadable, Dataset):
    """``(transform(loader(path)), target_transform(class_index))`` from ``root/<class>/**``.

    Arguments and attributes are torchvision's: ``classes`` (sorted folder names),
    ``class_to_idx``, ``samples`` (``(path, class_index)`` in torchvision's order),
    ``targets``, and the overridable ``find_classes`` / static ``make_dataset``.
    ``loader=None`` picks :func:`loader_for` the current ``transform`` (read at each
    item, so a transform set later counts); ``loader`` reads back the one in use.

    Errors: a file the loader or the transform cannot read raises a
    ``trivium.core`` error naming it (``DecodeError`` for damaged data,
    ``DatasetError`` for I/O), never a bare decoder message.

    ``on_error="skip"``: a map-style dataset cannot drop an index (the sampler has
    already chosen it), so a bad sample is *replaced* by the next readable one in
    index order, wrapping around: ``dataset[i]`` gives ``dataset[j]`` (its pixels and
    its label) for the smallest ``j`` after ``i`` that reads. The choice depends
    only on which files are bad, so it is the same on every run and in every
    worker; an epoch then holds the replacement twice. Bad files are tried again
    each time (their attempt draws the same random numbers every run: resumed runs
    repeat), and found ones are kept in shared memory: ``skipped`` counts the
    distinct bad files found so far, by any DataLoader worker, and
    ``skipped_files`` lists them. Each is reported once with a
    :class:`SkippedSamplesWarning` naming it. Only data errors are skipped
    (``trivium.core`` errors and ``OSError``); a bug in a transform still raises. If
    no file reads, a ``DatasetError`` is raised.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.vision.io import write_png
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "a").mkdir()
        >>> write_png(torch.zeros(3, 4, 4, dtype=torch.uint8), str(root / "a" / "1.png"))
        >>> _ = (root / "a" / "2.png").write_bytes(b"not a png")
        >>> ds = DatasetFolder(root, None, (".png",), on_error="skip")
        >>> import warnings
        >>> with warnings.catch_warnings(record=True):
        ...     image, label = ds[1]
        >>> image.shape, label, ds.skipped
        (torch.Size([3, 4, 4]), 0, 1)
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        loader: Callable[[str], Any] | None,
        extensions: tuple[str, ...] | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
        *,
        on_error: str = "raise",
    ) -> None:
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        self.transform = transform
        self.target_transform = target_transform
        classes, class_to_idx = self.find_classes(self.root)
        self.samples = self.make_dataset(
            self.root,
            class_to_idx=class_to_idx,
            extensions=extensions,
            is_valid_file=is_valid_file,
            allow_empty=allow_empty,
        )
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.targets = [s[1] for s in self.samples]
        self.start_skipping(on_error, len(self.samples))

    @property
    def loader(self) -> Callable[[str], Any]:
        """The loader in use: the one given, else :func:`loader_for` the current transform.

        Example:
            >>> import pathlib, tempfile, torch
            >>> from trivium.vision import transforms as T
            >>> from trivium.vision.io import write_png
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "a").mkdir()
            >>> write_png(torch.zeros(3, 2, 2, dtype=torch.uint8), str(root / "a" / "1.png"))
            >>> ds = ImageFolder(root)
            >>> ds.loader.__name__
            'default_loader'
            >>> ds.transform = T.DecodeResize(1)
            >>> ds.loader
            EncodedOr8Bit(mode=ImageReadMode.RGB, apply_exif_orientation=False)
        """
        return self._loader if self._loader is not None else loader_for(self.transform)

    @loader.setter
    def loader(self, loader: Callable[[str], Any] | None) -> None:
        self._loader = loader

    @staticmethod
    def make_dataset(
        directory: str | os.PathLike[str],
        class_to_idx: dict[str, int],
        extensions: tuple[str, ...] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> list[tuple[str, int]]:
        """The samples (see :func:`make_dataset`); override to read another layout.

        Example:
            >>> import os, tempfile
            >>> root = tempfile.mkdtemp()
            >>> os.makedirs(os.path.join(root, "cat"))
            >>> DatasetFolder.make_dataset(root, {"cat": 0}, (".jpg",), allow_empty=True)
            []
        """
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
        """The classes and their indices (see :func:`find_classes`); override to pick others.

        Example:
            >>> import os, tempfile
            >>> root = tempfile.mkdtemp()
            >>> os.makedirs(os.path.join(root, "b", "x"))
            >>> os.makedirs(os.path.join(root, "a"))
            >>> DatasetFolder(root, None, (".jpg",), allow_empty=True).find_classes(root)
            (['a', 'b'], {'a': 0, 'b': 1})
        """
        return find_classes(directory)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """``(sample, target)`` number ``index`` (see the class docstring for bad files).

        Example:
            >>> import pathlib, tempfile, torch
            >>> from trivium.vision.io import write_png
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "a").mkdir()
            >>> write_png(torch.zeros(3, 2, 2, dtype=torch.uint8), str(root / "a" / "1.png"))
            >>> ImageFolder(root)[0][0].shape
            torch.Size([3, 2, 2])
        """
        return self.get_item(index)

    def load_item(self, index: int) -> tuple[Any, Any]:
        """``(sample, target)`` number ``index``, or a ``trivium.core`` error naming its file.

        The hook :meth:`__getitem__` calls: it never skips, whatever ``on_error``.

        Example:
            >>> import pathlib, tempfile
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "a").mkdir()
            >>> _ = (root / "a" / "1.png").write_bytes(b"not a png")
            >>> ImageFolder(root, on_error="skip").load_item(0)
            Traceback (most recent call last):
            ...
            trivium.core.errors.DecodeError: .../a/1.png: ...
        """
        path, target = self.samples[index]
        try:
            with decoding_file(path):  # a damaged file's DecodeWarning names it
                sample = self.loader(path)
                if self.transform is not None:  # a fused decode finds damage here
                    sample = self.transform(sample)
        except (TriviumError, OSError) as e:
            raise with_path(e, path) from e
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def item_path(self, index: int) -> str:
        """The file of sample ``index`` (as ``samples`` holds it).

        Example:
            >>> import os, tempfile
            >>> root = tempfile.mkdtemp()
            >>> os.makedirs(os.path.join(root, "a"))
            >>> open(os.path.join(root, "a", "1.png"), "wb").close()
            >>> os.path.relpath(ImageFolder(root).item_path(0), root)
            'a/1.png'
        """
        return self.samples[index][0]

    def __len__(self) -> int:
        return len(self.samples)

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}", f"Root location: {self.root}"]
        if self.on_error != "raise":
            lines.append(f"on_error: {self.on_error!r}")
        for name in ("transform", "target_transform"):
            value = getattr(self, name)
            if value is not None:
                lines += f"{name.replace('_', ' ').capitalize()}: {value!r}".splitlines()
        return "\n".join([f"Dataset {type(self).__name__}", *("    " + line for line in lines)])


class ImageFolder(DatasetFolder):
    """Images ``root/<class>/**/<image>`` with class indices, as torchvision's ``ImageFolder``.

    Files with one of :data:`IMG_EXTENSIONS` (or those ``is_valid_file`` accepts):
    torchvision's extensions and AVIF / HEIC, those whose format decodes here. Image
    files left out because their format does not (``.heic`` without the ``heif``
    extra) are named in one warning at construction, instead of failing mid-epoch.
    A sample is the decoded uint8 ``[3, H, W]`` RGB image, or the encoded bytes when
    ``transform`` starts with a fused decode (see :func:`loader_for`); a ``loader``
    given wins. Every default sample is 8-bit: a file deeper than 8 bits (a 16-bit
    PNG, a 12-bit or lossless JPEG) gives uint8 by the high byte of each sample
    (``v >> 8``, as Pillow's RGB and ``ToDtype(torch.uint8, scale=True)`` give; also
    for 16-bit gray, which Pillow's ``convert("RGB")`` saturates at 255), and reaches
    a fused decode already decoded. ``imgs`` is ``samples``. See
    :class:`DatasetFolder` for ``on_error``.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.vision import transforms as T
        >>> from trivium.vision.io import write_jpeg
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "cat").mkdir()
        >>> write_jpeg(torch.zeros(3, 48, 64, dtype=torch.uint8), str(root / "cat" / "1.jpg"))
        >>> ds = ImageFolder(root, transform=T.DecodeRandomResizedCrop(32))
        >>> ds[0][0].shape
        torch.Size([3, 32, 32])
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        loader: Callable[[str], Any] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
        *,
        on_error: str = "raise",
    ) -> None:
        super().__init__(
            root,
            loader,
            IMG_EXTENSIONS if is_valid_file is None else None,
            transform=transform,
            target_transform=target_transform,
            is_valid_file=is_valid_file,
            allow_empty=allow_empty,
            on_error=on_error,
        )
        self.imgs = self.samples
