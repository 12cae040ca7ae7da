"""The video datasets Kinetics, UCF101 and HMDB51: clips of class-folder videos on ``VideoClips``.

Each indexes every video of its class folders once with
:class:`~trivium.vision.io.VideoClips` and gives torchvision's samples
``(video, audio, label)``; UCF101 and HMDB51 keep the videos of one official split
(``fold``, ``train``), Kinetics reads ``root/<split>/<class>/*.mp4``.

Example:
    >>> sorted(Kinetics._ANNOTATION_URLS)
    ['400', '600', '700']
"""

from __future__ import annotations

import csv
import glob
import os
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from trivium.core.download import fetch
from trivium.core.errors import DatasetError
from trivium.core.threads import parallel_map
from trivium.vision.datasets.folder import find_classes, make_dataset
from trivium.vision.datasets.utils import (
    VisionDataset,
    extract,
    require_file,
    require_folder,
    verify_str_arg,
)
from trivium.vision.io.video.clips import VideoClips

__all__ = ["HMDB51", "UCF101", "Kinetics"]


def _check_fold(fold: int) -> int:
    if isinstance(fold, bool) or fold not in (1, 2, 3):
        raise ValueError(f"fold should be between 1 and 3, got {fold!r}")
    return fold


def _check_unsupported(**sizes: int) -> None:
    """torchvision's resizing arguments: only their default 0 (no resize) is supported."""
    for name, value in sizes.items():
        if value:
            raise ValueError(
                f"{name}={value!r} is not supported: resize the clips in transform instead"
            )


class _ClipsDataset(VisionDataset):
    """What the three share: the clips of ``samples``' videos, a subset of them, the sample."""

    samples: list[tuple[str, int]]

    def _make_clips(
        self,
        indices: Sequence[int] | None,
        frames_per_clip: int,
        step_between_clips: int,
        frame_rate: float | None,
        precomputed: dict[str, Any] | None,
        num_workers: int,
        output_format: str,
    ) -> None:
        self.full_video_clips = VideoClips(
            [path for path, _ in self.samples],
            frames_per_clip,
            step_between_clips,
            frame_rate,
            num_workers,
            output_format=output_format,
            _precomputed_metadata=precomputed,
        )
        self.indices = list(range(len(self.samples))) if indices is None else list(indices)
        full = indices is None
        self.video_clips = self.full_video_clips if full else self.full_video_clips.subset(indices)

    @property
    def metadata(self) -> dict[str, Any]:
        """The index of every video (not only the split's), for ``_precomputed_metadata``."""
        return self.full_video_clips.metadata

    def __len__(self) -> int:
        return self.video_clips.num_clips()

    def __getitem__(self, idx: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        video, audio, _, video_idx = self.video_clips.get_clip(idx)
        label = self.samples[self.indices[video_idx]][1]
        if self.transform is not None:
            video = self.transform(video)
        return video, audio, label


class _SplitFileDataset(_ClipsDataset):
    """UCF101 and HMDB51: ``root/<class>/*.avi``, the split's videos from ``annotation_path``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        annotation_path: str | os.PathLike[str],
        frames_per_clip: int,
        step_between_clips: int,
        frame_rate: float | None,
        fold: int,
        train: bool,
        transform: Callable | None,
        _precomputed_metadata: dict[str, Any] | None,
        num_workers: int,
        _video_width: int,
        _video_height: int,
        _video_min_dimension: int,
        _audio_samples: int,
        output_format: str,
    ) -> None:
        super().__init__(root)
        self.fold = _check_fold(fold)
        self.train = train
        _check_unsupported(
            _video_width=_video_width,
            _video_height=_video_height,
            _video_min_dimension=_video_min_dimension,
            _audio_samples=_audio_samples,
        )
        require_folder(self.root, can_download=False)
        self.classes, class_to_idx = find_classes(self.root)
        self.samples = make_dataset(self.root, class_to_idx, ("avi",))
        selected = self._split_files(os.fspath(annotation_path))
        indices = [i for i, (path, _) in enumerate(self.samples) if self._key(path) in selected]
        self._make_clips(
            indices,
            frames_per_clip,
            step_between_clips,
            frame_rate,
            _precomputed_metadata,
            num_workers,
            output_format,
        )
        self.transform = transform

    def _split_files(self, annotation_path: str) -> set[str]:
        raise NotImplementedError

    def _key(self, path: str) -> str:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return f"fold={self.fold}, train={self.train}"


class UCF101(_SplitFileDataset):
    """UCF101 action recognition: ``(video, audio, label)`` clips, as torchvision's ``UCF101``.

    Reads ``root/<class>/*.avi`` and keeps the videos that
    ``annotation_path/{train,test}list0{fold}.txt`` (the official
    ``ucfTrainTestlist`` files, lines ``Class/v_Class_g01_c01.avi [label]``) list.
    Every video is cut into clips of ``frames_per_clip`` frames, ``step_between_clips``
    apart; the label is the class folder's index in sorted order.

    Args:
        root: the folder of class folders.
        annotation_path: the folder holding the split files.
        frames_per_clip: frames in a clip.
        step_between_clips: frames between the starts of two clips.
        frame_rate: resample every video to this rate first (None: as stored).
        fold: which official split, 1 to 3.
        train: the split's train list, else its test list.
        transform: applied to the video clip.
        _precomputed_metadata: a ``metadata`` of the same folder, to skip indexing.
        num_workers: threads that index the videos.
        _video_width: torchvision's resize on read; only 0 (no resize).
        _video_height: as ``_video_width``.
        _video_min_dimension: as ``_video_width``.
        _audio_samples: torchvision's audio resample on read; only 0.
        output_format: ``"THWC"`` (torchvision's default here) or ``"TCHW"``.

    Example:
        >>> import tempfile
        >>> UCF101(tempfile.mkdtemp(), tempfile.mkdtemp(), 8, fold=4)
        Traceback (most recent call last):
        ...
        ValueError: fold should be between 1 and 3, got 4
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        annotation_path: str | os.PathLike[str],
        frames_per_clip: int,
        step_between_clips: int = 1,
        frame_rate: float | None = None,
        fold: int = 1,
        train: bool = True,
        transform: Callable | None = None,
        _precomputed_metadata: dict[str, Any] | None = None,
        num_workers: int = 1,
        _video_width: int = 0,
        _video_height: int = 0,
        _video_min_dimension: int = 0,
        _audio_samples: int = 0,
        output_format: str = "THWC",
    ) -> None:
        super().__init__(
            root,
            annotation_path,
            frames_per_clip,
            step_between_clips,
            frame_rate,
            fold,
            train,
            transform,
            _precomputed_metadata,
            num_workers,
            _video_width,
            _video_height,
            _video_min_dimension,
            _audio_samples,
            output_format,
        )

    def _split_files(self, annotation_path: str) -> set[str]:
        name = f"{'train' if self.train else 'test'}list{self.fold:02d}.txt"
        path = require_file(os.path.join(annotation_path, name), can_download=False)
        with open(path) as f:
            return {line.split()[0] for line in f if line.strip()}

    def _key(self, path: str) -> str:
        return os.path.relpath(path, self.root).replace(os.sep, "/")


class HMDB51(_SplitFileDataset):
    """HMDB51 action recognition: ``(video, audio, label)`` clips, as torchvision's ``HMDB51``.

    Reads ``root/<class>/*.avi`` and keeps the videos tagged ``1`` (train) or ``2``
    (test) in the official ``annotation_path/*_test_split{fold}.txt`` files
    (``testTrainMulti_7030_splits``, lines ``name.avi tag``; ``0`` leaves a video
    out), matched by file name. Clips and labels as :class:`UCF101`.

    Args:
        root: the folder of class folders.
        annotation_path: the folder holding the split files.
        frames_per_clip: frames in a clip.
        step_between_clips: frames between the starts of two clips.
        frame_rate: resample every video to this rate first (None: as stored).
        fold: which official split, 1 to 3.
        train: the videos tagged 1, else those tagged 2.
        transform: applied to the video clip.
        _precomputed_metadata: a ``metadata`` of the same folder, to skip indexing.
        num_workers: threads that index the videos.
        _video_width: torchvision's resize on read; only 0 (no resize).
        _video_height: as ``_video_width``.
        _video_min_dimension: as ``_video_width``.
        _audio_samples: torchvision's audio resample on read; only 0.
        output_format: ``"THWC"`` (torchvision's default here) or ``"TCHW"``.

    Example:
        >>> HMDB51.TRAIN_TAG, HMDB51.TEST_TAG
        (1, 2)
    """

    data_url = "https://serre-lab.clps.brown.edu/wp-content/uploads/2013/10/hmdb51_org.rar"
    splits: ClassVar[dict[str, str]] = {
        "url": "https://serre-lab.clps.brown.edu/wp-content/uploads/2013/10/test_train_splits.rar",
        "md5": "15e67781e70dcfbdce2d7dbb9b3344b5",
    }
    TRAIN_TAG = 1
    TEST_TAG = 2

    def __init__(
        self,
        root: str | os.PathLike[str],
        annotation_path: str | os.PathLike[str],
        frames_per_clip: int,
        step_between_clips: int = 1,
        frame_rate: float | None = None,
        fold: int = 1,
        train: bool = True,
        transform: Callable | None = None,
        _precomputed_metadata: dict[str, Any] | None = None,
        num_workers: int = 1,
        _video_width: int = 0,
        _video_height: int = 0,
        _video_min_dimension: int = 0,
        _audio_samples: int = 0,
        output_format: str = "THWC",
    ) -> None:
        super().__init__(
            root,
            annotation_path,
            frames_per_clip,
            step_between_clips,
            frame_rate,
            fold,
            train,
            transform,
            _precomputed_metadata,
            num_workers,
            _video_width,
            _video_height,
            _video_min_dimension,
            _audio_samples,
            output_format,
        )

    def _split_files(self, annotation_path: str) -> set[str]:
        require_folder(annotation_path, can_download=False)
        target = self.TRAIN_TAG if self.train else self.TEST_TAG
        files = sorted(
            glob.glob(os.path.join(glob.escape(annotation_path), f"*test_split{self.fold}.txt"))
        )
        if not files:
            raise DatasetError(f"no *_test_split{self.fold}.txt files", path=annotation_path)
        selected = set()
        for path in files:
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        name, tag = line.split()
                        tagged = int(tag)
                    except ValueError:
                        raise DatasetError(
                            f"line {number}: expected 'name.avi tag', got {line!r}", path=path
                        ) from None
                    if tagged == target:
                        selected.add(name)
        return selected

    def _key(self, path: str) -> str:
        return os.path.basename(path)


class Kinetics(_ClipsDataset):
    """Kinetics-400/600/700: ``(video, audio, label)`` clips, as torchvision's ``Kinetics``.

    Reads ``root/<split>/<class>/*.mp4`` (``*.avi`` too); with ``_legacy=True``,
    ``root/<class>/...`` itself. ``download=True`` (when ``root/<split>`` is not
    there) fetches the split's list of video tarballs, each tarball (extracted,
    safely, into ``root/<split>``), and the annotation CSV, then moves each video
    into the folder of its label as torchvision does.

    Args:
        root: the dataset folder.
        frames_per_clip: frames in a clip.
        num_classes: ``"400"``, ``"600"`` or ``"700"``.
        split: ``"train"``, ``"val"`` or ``"test"``.
        frame_rate: resample every video to this rate first (None: as stored).
        step_between_clips: frames between the starts of two clips.
        transform: applied to the video clip.
        extensions: the video file extensions listed.
        download: fetch the split's videos and annotations.
        num_download_workers: tarballs fetched at once.
        num_workers: threads that index the videos.
        _precomputed_metadata: a ``metadata`` of the same folder, to skip indexing.
        _video_width: torchvision's resize on read; only 0 (no resize).
        _video_height: as ``_video_width``.
        _video_min_dimension: as ``_video_width``.
        _audio_samples: torchvision's audio resample on read; only 0.
        _audio_channels: as ``_audio_samples``.
        _legacy: the class folders are in ``root`` itself (output ``"THWC"``).
        output_format: ``"TCHW"`` (torchvision's default here) or ``"THWC"``.

    Example:
        >>> import tempfile
        >>> Kinetics(tempfile.mkdtemp(), 8, num_classes="500")
        Traceback (most recent call last):
        ...
        ValueError: num_classes must be one of '400', '600', '700'; got '500'
    """

    _TAR_URLS: ClassVar[dict[str, str]] = {
        "400": "https://s3.amazonaws.com/kinetics/400/{split}/k400_{split}_path.txt",
        "600": "https://s3.amazonaws.com/kinetics/600/{split}/k600_{split}_path.txt",
        "700": "https://s3.amazonaws.com/kinetics/700_2020/{split}/k700_2020_{split}_path.txt",
    }
    _ANNOTATION_URLS: ClassVar[dict[str, str]] = {
        "400": "https://s3.amazonaws.com/kinetics/400/annotations/{split}.csv",
        "600": "https://s3.amazonaws.com/kinetics/600/annotations/{split}.csv",
        "700": "https://s3.amazonaws.com/kinetics/700_2020/annotations/{split}.csv",
    }

    def __init__(
        self,
        root: str | os.PathLike[str],
        frames_per_clip: int,
        num_classes: str = "400",
        split: str = "train",
        frame_rate: float | None = None,
        step_between_clips: int = 1,
        transform: Callable | None = None,
        extensions: tuple[str, ...] = ("avi", "mp4"),
        download: bool = False,
        num_download_workers: int = 1,
        num_workers: int = 1,
        _precomputed_metadata: dict[str, Any] | None = None,
        _video_width: int = 0,
        _video_height: int = 0,
        _video_min_dimension: int = 0,
        _audio_samples: int = 0,
        _audio_channels: int = 0,
        _legacy: bool = False,
        output_format: str = "TCHW",
    ) -> None:
        self.num_classes = verify_str_arg(num_classes, "num_classes", ("400", "600", "700"))
        _check_unsupported(
            _video_width=_video_width,
            _video_height=_video_height,
            _video_min_dimension=_video_min_dimension,
            _audio_samples=_audio_samples,
            _audio_channels=_audio_channels,
        )
        self.extensions = extensions
        self.num_download_workers = num_download_workers
        self._legacy = _legacy
        root = os.fspath(root)
        if _legacy:
            if download:
                raise ValueError("Cannot download the videos using legacy_structure.")
            self.split_folder, self.split, output_format = root, "unknown", "THWC"
        else:
            self.split = verify_str_arg(split, "split", ("train", "val", "test"))
            self.split_folder = os.path.join(root, split)
        super().__init__(root)
        if download:
            self.download_and_process_videos()
        require_folder(self.split_folder, can_download=not _legacy)
        self.classes, class_to_idx = find_classes(self.split_folder)
        self.samples = make_dataset(self.split_folder, class_to_idx, extensions)
        self._make_clips(
            None,
            frames_per_clip,
            step_between_clips,
            frame_rate,
            _precomputed_metadata,
            num_workers,
            output_format,
        )
        self.transform = transform

    def download_and_process_videos(self) -> None:
        """Fetch the split's video tarballs and annotations, and sort the videos by label."""
        self._download_videos()
        self._make_ds_structure()

    def _download_videos(self) -> None:
        """Every tarball of the split's list, extracted into ``root/<split>`` (unless there)."""
        if os.path.exists(self.split_folder):
            return
        list_url = self._TAR_URLS[self.num_classes].format(split=self.split)
        listed = fetch(list_url, Path(self.root, "files", _url_name(list_url)))
        with open(listed) as f:
            urls = [urllib.parse.quote(line, safe="/,:") for line in f.read().splitlines()]
        tars = Path(self.root, "tars")

        def fetch_one(url: str) -> None:
            extract(fetch(url, tars / _url_name(url)), self.split_folder)

        parallel_map(fetch_one, [u for u in urls if u], max(1, self.num_download_workers))

    def _make_ds_structure(self) -> None:
        """Move ``root/<split>/<ytid>_<start>_<end>.mp4`` into ``root/<split>/<label>/``."""
        url = self._ANNOTATION_URLS[self.num_classes].format(split=self.split)
        annotations = fetch(url, Path(self.root, "annotations", f"{self.split}.csv"))
        with open(annotations, newline="") as f:
            for row in csv.DictReader(f):
                name = "{}_{:06}_{:06}.mp4".format(
                    row["youtube_id"], int(row["time_start"]), int(row["time_end"])
                )
                label = row["label"].replace(" ", "_")
                for char in "'()":
                    label = label.replace(char, "")
                os.makedirs(os.path.join(self.split_folder, label), exist_ok=True)
                downloaded = os.path.join(self.split_folder, name)
                if os.path.isfile(downloaded):
                    os.replace(downloaded, os.path.join(self.split_folder, label, name))

    def extra_repr(self) -> str:
        return f"split={self.split}, num_classes={self.num_classes}"


def _url_name(url: str) -> str:
    """The file name a URL's path ends with (torchvision's ``download_url`` default)."""
    return os.path.basename(urllib.parse.urlparse(url).path)
