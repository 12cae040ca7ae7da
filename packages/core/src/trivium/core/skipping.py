"""``on_error="skip"`` for map-style datasets, the report of what was skipped, and error paths.

A map-style dataset cannot drop an index (the sampler has fixed the length), so
:class:`SkipsUnreadable` returns the next readable item in its place. Unreadable
items found are flagged in shared memory, so the findings of DataLoader workers
reach the parent; each is reported once with a
:class:`~trivium.core.errors.SkippedSamplesWarning`. Items whose loading issued a
:class:`~trivium.core.errors.DecodeWarning` (damaged, decoded as far as readable)
are flagged as recovered the same way. vision's ``ImageFolder``, ``DatasetFolder``
and ``CocoDetection`` and audio's ``AudioFolder`` are built on it.

:class:`SkipReport` names the skipped and the recovered files; the datasets, the
data pipes and ``trivium.data.DataLoader`` each give one (``skip_report``).

Example:
    >>> import warnings
    >>> from trivium.core.errors import DecodeError
    >>> class Files(SkipsUnreadable):
    ...     def __init__(self, names, on_error="raise"):
    ...         self.names = names
    ...         self.start_skipping(on_error, len(names))
    ...     def __len__(self):
    ...         return len(self.names)
    ...     def load_item(self, index):
    ...         if self.names[index].startswith("bad"):
    ...             raise DecodeError("damaged", path=self.names[index])
    ...         return self.names[index]
    ...     def item_path(self, index):
    ...         return self.names[index]
    ...     def __getitem__(self, index):
    ...         return self.get_item(index)
    >>> ds = Files(["a.png", "bad.png", "c.png"], on_error="skip")
    >>> with warnings.catch_warnings(record=True):
    ...     ds[1], ds.skipped, ds.skipped_files  # c.png takes bad.png's place
    ('c.png', 1, ['bad.png'])
    >>> print(ds.skip_report.summary())
    1 file skipped (on_error='skip'):
      bad.png: damaged
"""

from __future__ import annotations

import operator
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from trivium.core.errors import (
    DatasetError,
    PathNotFoundError,
    SkippedSamplesWarning,
    TriviumError,
    watch_decode_warnings,
)

__all__ = [
    "Origin",
    "SkipReport",
    "SkipsUnreadable",
    "check_on_error",
    "describe_error",
    "item_origin",
    "name_some",
    "recovered_file",
    "with_path",
]

#: How many files a warning names before "and N more" (the report has them all).
NAMED_IN_WARNINGS = 3


def check_on_error(on_error: str) -> None:
    """``ValueError`` unless ``on_error`` is ``"raise"`` or ``"skip"``.

    Example:
        >>> check_on_error("ignore")
        Traceback (most recent call last):
        ...
        ValueError: on_error must be 'raise' or 'skip', got 'ignore'
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")


def with_path(error: TriviumError | OSError, path: str | os.PathLike[str]) -> TriviumError:
    """``error`` as a ``trivium.core`` error naming ``path`` (kept if it names one already).

    Example:
        >>> str(with_path(FileNotFoundError(2, "gone"), "a/1.jpg"))
        'a/1.jpg: no such file or directory'
    """
    if isinstance(error, TriviumError):
        if error.path is not None:
            return error
        try:
            return type(error)(error.reason, path=path)
        except TypeError:  # a subclass with its own constructor
            return DatasetError(error.reason, path=path)
    if isinstance(error, FileNotFoundError):
        return PathNotFoundError(path=path)
    return DatasetError(f"cannot load the file: {error.strerror or error}", path=path)


def describe_error(error: BaseException) -> tuple[str | None, str]:
    """``(the file the error names or None, the reason without the file)``.

    Example:
        >>> from trivium.core.errors import DecodeError
        >>> describe_error(DecodeError("truncated", path="a.jpg"))
        ('a.jpg', 'truncated')
        >>> describe_error(KeyError("label"))
        (None, "KeyError: 'label'")
    """
    if isinstance(error, TriviumError):
        return error.path, error.reason
    if isinstance(error, OSError) and error.filename is not None:
        return os.fspath(error.filename), error.strerror or str(error)
    return None, f"{type(error).__name__}: {error}"


def recovered_file(message: str, origin: str | None = None) -> str:
    """The file a ``DecodeWarning`` is about: ``origin`` when known, else its message's path.

    A decoder that knows the path starts the message with it (``"{path}: ..."``); a
    message that does not name an existing file (or a URI) stands for itself.

    Example:
        >>> recovered_file("returned a partial image", origin="cat.jpg")
        'cat.jpg'
        >>> recovered_file("returned a partial image: premature end")
        'returned a partial image: premature end'
    """
    if origin is not None:
        return origin
    head, sep, _ = message.partition(": ")
    if sep and ("://" in head or os.path.exists(head)):
        return head
    return message


def name_some(names: Iterable[Any], count: int, limit: int = NAMED_IN_WARNINGS) -> str:
    """The first ``limit`` of ``names`` (``count`` in all), then ``"and N more"``.

    Example:
        >>> name_some(["a.jpg", "b.jpg", "c.jpg", "d.jpg"], 4, limit=2)
        'a.jpg, b.jpg and 2 more'
    """
    shown = [str(n) for _, n in zip(range(limit), names, strict=False)]
    more = count - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


@dataclass
class SkipReport:
    """The files a run skipped (with why) and the files it recovered, each named once.

    ``skipped`` maps each skipped file (or, where no file is known, the sample, as
    ``"item 12"``) to the reason it could not be read; ``recovered`` maps each file
    whose decoder issued a :class:`~trivium.core.errors.DecodeWarning` (damaged data
    decoded as far as it was readable) to the warning's message. ``skipped_samples``
    counts skips as they happened (a file skipped in two epochs counts twice).

    Example:
        >>> report = SkipReport()
        >>> report.skip("a.jpg", "corrupt image data")
        >>> report.recover("b.jpg", "b.jpg: returned a partial image")
        >>> report.skipped_files, report.recovered_files
        (['a.jpg'], ['b.jpg'])
        >>> print(report.summary())
        1 file skipped (on_error='skip'):
          a.jpg: corrupt image data
        1 file recovered (damaged, decoded as far as readable):
          b.jpg: returned a partial image
    """

    skipped: dict[str, str] = field(default_factory=dict)
    recovered: dict[str, str] = field(default_factory=dict)
    skipped_samples: int = 0

    def skip(self, where: str | os.PathLike[str], reason: str) -> None:
        """Note one skipped sample of ``where`` (a file, or a sample's description)."""
        self.skipped.setdefault(os.fspath(where), reason)
        self.skipped_samples += 1

    def recover(self, where: str | os.PathLike[str], message: str) -> None:
        """Note that ``where`` issued the ``DecodeWarning`` ``message``."""
        self.recovered.setdefault(os.fspath(where), message)

    def update(self, other: SkipReport) -> None:
        """Add ``other``'s findings (another worker's, another epoch's) to these.

        Example:
            >>> a, b = SkipReport(), SkipReport()
            >>> a.skip("x.png", "bad"); b.skip("x.png", "bad"); b.skip("y.png", "bad")
            >>> a.update(b)
            >>> a.skipped_files, a.skipped_samples
            (['x.png', 'y.png'], 3)
        """
        for where, reason in other.skipped.items():
            self.skipped.setdefault(where, reason)
        for where, message in other.recovered.items():
            self.recovered.setdefault(where, message)
        self.skipped_samples += other.skipped_samples

    @property
    def skipped_files(self) -> list[str]:
        """The skipped files, in the order they were found."""
        return list(self.skipped)

    @property
    def recovered_files(self) -> list[str]:
        """The recovered files, in the order they were found."""
        return list(self.recovered)

    def __bool__(self) -> bool:
        return bool(self.skipped or self.recovered)

    def brief(self, limit: int = NAMED_IN_WARNINGS) -> str:
        """One line naming the first ``limit`` files of each kind (for a warning).

        Example:
            >>> report = SkipReport()
            >>> for name in "abcde":
            ...     report.skip(f"{name}.jpg", "bad")
            >>> report.brief()
            '5 files skipped: a.jpg, b.jpg, c.jpg and 2 more'
        """
        parts = []
        if self.skipped:
            names = name_some(self.skipped, len(self.skipped), limit)
            parts.append(f"{_files(len(self.skipped))} skipped: {names}")
        if self.recovered:
            names = name_some(self.recovered, len(self.recovered), limit)
            parts.append(f"{_files(len(self.recovered))} recovered: {names}")
        return "; ".join(parts) or "nothing skipped or recovered"

    def summary(self) -> str:
        """Every file, one a line with its reason (what a run prints at an epoch's end).

        Example:
            >>> SkipReport().summary()
            'no file skipped or recovered'
        """
        lines = []
        if self.skipped:
            lines.append(f"{_files(len(self.skipped))} skipped (on_error='skip'):")
            lines += [_entry(where, reason) for where, reason in self.skipped.items()]
        if self.recovered:
            lines.append(
                f"{_files(len(self.recovered))} recovered (damaged, decoded as far as readable):"
            )
            lines += [_entry(where, message) for where, message in self.recovered.items()]
        return "\n".join(lines) or "no file skipped or recovered"

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (a run's metrics).

        Example:
            >>> report = SkipReport()
            >>> report.skip("a.jpg", "bad")
            >>> report.as_dict()
            {'skipped_samples': 1, 'skipped_files': {'a.jpg': 'bad'}, 'recovered_files': {}}
        """
        return {
            "skipped_samples": self.skipped_samples,
            "skipped_files": dict(self.skipped),
            "recovered_files": dict(self.recovered),
        }


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def _entry(where: str, detail: str) -> str:
    detail = detail.removeprefix(f"{where}: ")  # a warning's message starts with its file
    return f"  {where}: {detail}" if detail else f"  {where}"


class Origin(NamedTuple):
    """Where a sample comes from: its file, and the row (or frame) there when known.

    ``str(origin)`` is what reports list (``"shard-0.parquet, row 12"``);
    :meth:`attach` makes an error name it.

    Example:
        >>> str(Origin("shard-0.parquet", "row 12")), str(Origin("a.jpg"))
        ('shard-0.parquet, row 12', 'a.jpg')
    """

    path: str
    detail: str | None = None

    def __str__(self) -> str:
        return self.path if self.detail is None else f"{self.path}, {self.detail}"

    def attach(self, error: BaseException) -> BaseException:
        """``error`` naming this origin: the error to raise in its place.

        A ``trivium.core`` error that names no file becomes the same error naming
        this one (the row before its reason); a builtin ``OSError`` becomes the
        ``trivium.core`` error :func:`with_path` makes of it (naming its own
        ``filename`` if it has one); a ``trivium.core`` error naming its file is
        returned as is, and any other exception (a bug in a transform) too, with a
        note naming the sample.

        Example:
            >>> from trivium.core.errors import DecodeError
            >>> str(Origin("s.parquet", "row 3").attach(DecodeError("corrupt image data")))
            's.parquet: row 3: corrupt image data'
            >>> Origin("a.jpg").attach(KeyError("label")).__notes__
            ['while loading a.jpg']
        """
        if isinstance(error, OSError) and not isinstance(error, TriviumError):
            filename = error.filename
            named: BaseException = with_path(error, self.path if filename is None else filename)
            named.__cause__ = error
            return named
        if isinstance(error, TriviumError) and error.path is None:
            reason = error.reason if self.detail is None else f"{self.detail}: {error.reason}"
            try:
                named = type(error)(reason, path=self.path)
            except TypeError:  # a subclass with its own constructor
                named = DatasetError(reason, path=self.path)
            named.__cause__ = error
            return named
        if not isinstance(error, TriviumError | OSError):
            note = f"while loading {self}"
            if note not in getattr(error, "__notes__", ()):
                error.add_note(note)
        return error


def item_origin(dataset: Any, index: int) -> Origin | None:
    """Where item ``index`` of ``dataset`` comes from, as errors and skip reports name it.

    ``dataset.item_origin(index)`` where the dataset has it (``trivium.data``'s
    ``ArrowDataset``: the file and row), else ``dataset.item_path(index)`` (the
    datasets on :class:`SkipsUnreadable`), else None.

    Example:
        >>> item_origin([1, 2], 0) is None
        True
    """
    finder = getattr(dataset, "item_origin", None)
    by_path = finder is None
    if by_path:
        finder = getattr(dataset, "item_path", None)
    if finder is None:
        return None
    try:
        where = finder(index)
    except (IndexError, NotImplementedError, TypeError, KeyError):
        return None
    if where is None or isinstance(where, Origin):
        return where
    return Origin(os.fspath(where))


class SkipsUnreadable:
    """``on_error`` for a map-style dataset: ``"raise"``, or ``"skip"`` to the next readable item.

    A subclass calls :meth:`start_skipping` in ``__init__``, defines ``__len__``,
    :meth:`load_item` (raising a ``trivium.core`` error for an unreadable item; wrap
    the loader's errors with :func:`with_path`) and :meth:`item_path`, returns
    :meth:`get_item` from ``__getitem__``, and may set ``item_kind`` (the word the
    messages use, ``"sample"`` by default). ``skipped_files`` holds the paths as
    :meth:`item_path` gives them, ``recovered_files`` those of the items whose loading
    issued a :class:`~trivium.core.errors.DecodeWarning` (whatever ``on_error``), and
    :attr:`skip_report` both, in DataLoader workers (fork or spawn) too.

    Example:
        >>> from trivium.core.errors import DecodeError
        >>> class Evens(SkipsUnreadable):
        ...     item_kind = "image"
        ...     def __init__(self):
        ...         self.start_skipping("skip", 4)
        ...     def __len__(self):
        ...         return 4
        ...     def load_item(self, index):
        ...         if index % 2:
        ...             raise DecodeError("odd", path=f"{index}.jpg")
        ...         return index
        ...     def item_path(self, index):
        ...         return f"{index}.jpg"
        ...     def __getitem__(self, index):
        ...         return self.get_item(index)
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ds = Evens()
        ...     [ds[i] for i in range(4)], ds.skipped, ds.skipped_files
        ([0, 2, 2, 0], 2, ['1.jpg', '3.jpg'])
    """

    item_kind = "sample"
    on_error: str
    root: Any

    def start_skipping(self, on_error: str, count: int) -> None:
        """Check ``on_error`` and make the flags of ``count`` items (shared memory for ``"skip"``).

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("skip", 3)
            >>> ds.on_error, ds.skipped
            ('skip', 0)
        """
        check_on_error(on_error)
        self.on_error = on_error
        # One flag per item in shared memory: workers' findings reach the parent (a
        # torch DataLoader hands shared tensors to spawned workers by handle, too).
        self._bad = torch.zeros(count, dtype=torch.uint8)
        if on_error == "skip":
            self._bad.share_memory_()
        self._recovered = torch.zeros(count, dtype=torch.uint8).share_memory_()
        self._reasons: dict[int, str] = {}  # why, for the items this process found

    def __len__(self) -> int:
        raise NotImplementedError

    def load_item(self, index: int) -> Any:
        """Item ``index``, or a ``trivium.core`` error naming its file (subclasses implement it).

        Example:
            >>> SkipsUnreadable().load_item(0)
            Traceback (most recent call last):
            ...
            NotImplementedError: SkipsUnreadable must implement load_item()
        """
        raise NotImplementedError(f"{type(self).__name__} must implement load_item()")

    def item_path(self, index: int) -> str | os.PathLike[str]:
        """The file of item ``index`` (subclasses implement it).

        Example:
            >>> SkipsUnreadable().item_path(0)
            Traceback (most recent call last):
            ...
            NotImplementedError: SkipsUnreadable must implement item_path()
        """
        raise NotImplementedError(f"{type(self).__name__} must implement item_path()")

    def get_item(self, index: int) -> Any:
        """Item ``index``, or with ``on_error="skip"`` the next readable one (wrapping around).

        Example:
            >>> class One(SkipsUnreadable):
            ...     def __len__(self):
            ...         return 1
            ...     def load_item(self, index):
            ...         return "item"
            >>> ds = One()
            >>> ds.start_skipping("skip", 1)
            >>> ds.get_item(-1)
            'item'
        """
        if self.on_error == "raise":
            return self._load(index)
        count = len(self)
        index = operator.index(index)
        if not -count <= index < count:
            raise IndexError(f"index {index} is out of range for {count} {self.item_kind}s")
        first_bad = None
        for step in range(count):
            j = (index + step) % count
            try:
                return self._load(j)
            except TriviumError as e:
                self._note_bad(j, e)
                first_bad = e if first_bad is None else first_bad
        raise DatasetError(
            f"on_error='skip': none of the {count} {self.item_kind}s could be read "
            f"(the first: {first_bad})",
            path=getattr(self, "root", None),
        )

    def _load(self, index: int) -> Any:
        """:meth:`load_item`, flagging the item recovered if a ``DecodeWarning`` is issued."""
        with watch_decode_warnings(lambda message: self._note_recovered(index, message)):
            return self.load_item(index)

    def _note_recovered(self, index: int, message: str) -> None:
        flags = self._flags("_recovered")
        if -len(flags) <= index < len(flags):
            flags[index] = 1  # one write, no read: safe from several threads at once
            self.__dict__.setdefault("_messages", {}).setdefault(index % len(flags), message)

    def _flags(self, name: str) -> torch.Tensor:
        flags = getattr(self, name, None)
        if flags is None or len(flags) != len(self):  # items replaced after construction
            flags = torch.zeros(len(self), dtype=torch.uint8).share_memory_()
            setattr(self, name, flags)
        return flags

    def _note_bad(self, index: int, error: TriviumError) -> None:
        bad = self._flags("_bad")
        if bad[index]:
            return
        bad[index] = 1
        self.__dict__.setdefault("_reasons", {})[index] = describe_error(error)[1]
        warnings.warn(
            f"{error} (on_error='skip': the next readable {self.item_kind} takes its place)",
            SkippedSamplesWarning,
            stacklevel=4,  # the caller of __getitem__
        )

    @property
    def skipped(self) -> int:
        """How many distinct unreadable items ``on_error="skip"`` has found (in any worker).

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("skip", 2)
            >>> ds.skipped
            0
        """
        return int(self._bad.sum())

    @property
    def skipped_files(self) -> list[Any]:
        """The unreadable files ``on_error="skip"`` has found (in any worker), in item order.

        Each as :meth:`item_path` gives it (``str`` for vision's datasets, ``Path`` for
        audio's ``AudioFolder``, as their ``samples`` hold them).

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("skip", 2)
            >>> ds.skipped_files
            []
        """
        return [self.item_path(i) for i in self._bad.nonzero().flatten().tolist()]

    @property
    def recovered_files(self) -> list[Any]:
        """The items whose loading issued a ``DecodeWarning`` (in any worker), in item order.

        Damaged files the decoder read as far as it could (the warning says what was
        lost), each as :meth:`item_path` gives it, whatever ``on_error``.

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("raise", 2)
            >>> ds.recovered_files
            []
        """
        flags = getattr(self, "_recovered", None)
        if flags is None:
            return []
        return [self.item_path(i) for i in flags.nonzero().flatten().tolist()]

    @property
    def skip_report(self) -> SkipReport:
        """The skipped and the recovered files as a :class:`SkipReport` (in any worker).

        A reason is given for the items this process found; the workers' findings
        arrive as flags, their reasons in the workers' warnings.

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("skip", 2)
            >>> bool(ds.skip_report)
            False
        """
        report = SkipReport()
        reasons = getattr(self, "_reasons", {})
        for i in self._bad.nonzero().flatten().tolist():
            report.skip(self.item_path(i), reasons.get(i, ""))
        messages = getattr(self, "_messages", {})
        recovered = getattr(self, "_recovered", None)
        for i in [] if recovered is None else recovered.nonzero().flatten().tolist():
            report.recover(self.item_path(i), messages.get(i, ""))
        return report
