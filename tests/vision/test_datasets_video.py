"""Kinetics, UCF101 and HMDB51 on tiny copies of their layouts and split files.

torchvision 0.28's ``VideoClips`` decodes through TorchCodec, which is not installed
here, so its dataset classes cannot be built. The references are therefore
torchvision's pure-Python parts run on the same folders (``find_classes`` /
``make_dataset``, each class's ``_select_fold``, Kinetics' ``_make_ds_structure``)
and, for the frames, the number each synthetic frame shows (``video_testclips``).
"""

from __future__ import annotations

import csv
import io
import pickle
import shutil
import tarfile
from pathlib import Path
from types import ModuleType

import pytest
import torch
from peers import require_torchvision
from vision.video_testclips import frame_number, write_numbered

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets import HMDB51, UCF101, Kinetics
from trivium.vision.io.video import clips as clips_module

FPS = 10
# class -> (video name, frames); 8-16 frames each
UCF = {
    "ApplyEyeMakeup": [("v_ApplyEyeMakeup_g01_c01", 9), ("v_ApplyEyeMakeup_g02_c01", 12)],
    "Archery": [("v_Archery_g01_c01", 16), ("v_Archery_g02_c01", 8)],
}


@pytest.fixture(scope="module")
def tv() -> ModuleType:
    return require_torchvision()


@pytest.fixture(scope="module")
def ucf_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ucf101")
    for cls, videos in UCF.items():
        (root / cls).mkdir()
        for name, n in videos:
            write_numbered(root / cls / f"{name}.avi", n, FPS, video_codec="mpeg4")
    return root


def frames_of(video: torch.Tensor, layout: str) -> list[int]:
    chw = video.permute(0, 3, 1, 2) if layout == "THWC" else video
    return [frame_number(f) for f in chw]


def expected_clips(lengths: list[int], size: int, step: int) -> list[tuple[int, list[int]]]:
    """``(video position, frame numbers)`` of every clip, in order."""
    return [
        (v, list(range(s, s + size)))
        for v, n in enumerate(lengths)
        for s in range(0, n - size + 1, step)
    ]


def assert_samples(dataset, videos: list[tuple[Path, int]], size: int, step: int, layout: str):
    """Every sample of ``dataset`` against the clips of ``videos`` (path, label)."""
    lengths = [len(LENGTHS[p.stem]) for p, _ in videos]
    clips = expected_clips(lengths, size, step)
    assert len(dataset) == len(clips)
    for idx, (v, numbers) in enumerate(clips):
        video, audio, label = dataset[idx]
        assert video.dtype == torch.uint8 and video.shape[0] == size
        assert frames_of(video, layout) == numbers
        assert audio.shape == (1, 0)
        assert label == videos[v][1]


LENGTHS = {name: range(n) for videos in UCF.values() for name, n in videos}


def write_ucf_lists(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "trainlist01.txt").write_text(
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g02_c01.avi 1\nArchery/v_Archery_g01_c01.avi 2\n"
    )
    (folder / "testlist01.txt").write_text(
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi\nArchery/v_Archery_g02_c01.avi\n"
    )
    return folder


@pytest.mark.parametrize("train", [True, False])
def test_ucf101_split_and_clips(tv: ModuleType, ucf_root: Path, tmp_path: Path, train: bool):
    lists = write_ucf_lists(tmp_path / "ucfTrainTestlist")
    ours = UCF101(ucf_root, lists, 4, step_between_clips=3, train=train)
    classes, class_to_idx = tv.datasets.folder.find_classes(str(ucf_root))
    samples = tv.datasets.folder.make_dataset(str(ucf_root), class_to_idx, ("avi",))
    reference = tv.datasets.UCF101.__new__(tv.datasets.UCF101)
    reference.root = str(ucf_root)
    indices = reference._select_fold([p for p, _ in samples], str(lists), 1, train)
    assert ours.classes == classes and ours.samples == samples and ours.indices == indices
    assert len(indices) == 2
    chosen = [(Path(samples[i][0]), samples[i][1]) for i in indices]
    assert_samples(ours, chosen, 4, 3, "THWC")
    # the metadata covers every video, and rebuilds the same dataset without indexing
    assert len(ours.metadata["video_paths"]) == 4
    again = UCF101(ucf_root, lists, 4, 3, train=train, _precomputed_metadata=ours.metadata)
    assert len(again) == len(ours) and torch.equal(again[1][0], ours[1][0])


def test_precomputed_metadata_skips_indexing(
    ucf_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lists = write_ucf_lists(tmp_path / "lists")
    train = UCF101(ucf_root, lists, 4, 3)
    metadata = pickle.loads(pickle.dumps(train.metadata))  # as saved and loaded by a user
    plain = {key: list(value) for key, value in metadata.items()}  # torchvision's dict
    assert plain == metadata and set(plain) == {"video_paths", "video_pts", "video_fps"}

    def no_indexing(path: str, backend: str) -> None:
        raise AssertionError(f"{path} indexed again")

    with monkeypatch.context() as patched:
        patched.setattr(clips_module, "_index_video", no_indexing)
        test = UCF101(ucf_root, lists, 4, 3, train=False, _precomputed_metadata=metadata)
    assert test.indices == [0, 3] and len(test) == 2 + 2  # 9 and 8 frames
    assert frames_of(test[2][0], "THWC") == [0, 1, 2, 3] and test[2][2] == 1
    # a plain dict (torchvision's) names the videos, which are then indexed anew
    again = UCF101(ucf_root, lists, 4, 3, train=False, _precomputed_metadata=plain)
    assert again.metadata["video_fps"] == metadata["video_fps"] and len(again) == len(test)
    copied = pickle.loads(pickle.dumps(test))  # as a DataLoader worker gets it
    assert torch.equal(copied[1][0], test[1][0])


def test_ucf101_tchw_and_frame_rate(ucf_root: Path, tmp_path: Path) -> None:
    lists = write_ucf_lists(tmp_path / "lists")
    ours = UCF101(ucf_root, lists, 3, 3, frame_rate=5, output_format="TCHW")
    # 12 and 16 frames at 10 fps resampled to 5 fps: every second frame, 6 and 8 of them
    assert len(ours) == 2 + 2
    video, _, label = ours[2]
    assert video.shape == (3, 3, 16, 64) and frames_of(video, "TCHW") == [0, 2, 4]
    assert label == 1


def test_ucf101_bad_arguments(ucf_root: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fold should be between 1 and 3, got 0"):
        UCF101(ucf_root, tmp_path, 4, fold=0)
    with pytest.raises(PathNotFoundError) as missing:
        UCF101(ucf_root, tmp_path, 4, fold=2)
    assert missing.value.filename == str(tmp_path / "trainlist02.txt")
    with pytest.raises(ValueError, match="_video_width=32 is not supported"):
        UCF101(ucf_root, tmp_path, 4, _video_width=32)


@pytest.fixture(scope="module")
def hmdb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("hmdb51")
    root, splits = base / "videos", base / "testTrainMulti_7030_splits"
    videos = {"brush_hair": [("a_brush_hair_f_nm_np1_ba_goo_0", 8), ("b_brush_hair", 10)],
              "cartwheel": [("c_cartwheel_f_cm_np1_le_med_0", 11), ("d_cartwheel", 9)]}  # fmt: skip
    splits.mkdir(parents=True)
    tags = {1: "1", 2: "0"}  # fold 1: the first of each class trains, the second is left out
    for cls, items in videos.items():
        (root / cls).mkdir(parents=True)
        for name, n in items:
            write_numbered(root / cls / f"{name}.avi", n, FPS, video_codec="mpeg4")
            LENGTHS[name] = range(n)
        for fold in (1, 2):
            lines = [f"{items[0][0]}.avi {tags[fold]} ", f"{items[1][0]}.avi 2 "]
            (splits / f"{cls}_test_split{fold}.txt").write_text("\n".join(lines) + "\n")
    return root, splits


@pytest.mark.parametrize(("fold", "train"), [(1, True), (1, False), (2, True)])
def test_hmdb51_tags_select_videos(tv: ModuleType, hmdb: tuple[Path, Path], fold, train) -> None:
    root, splits = hmdb
    ours = HMDB51(root, splits, 8, 2, fold=fold, train=train)
    samples = tv.datasets.folder.make_dataset(str(root), extensions=("avi",))
    reference = tv.datasets.HMDB51.__new__(tv.datasets.HMDB51)
    reference.root = str(root)
    indices = reference._select_fold([p for p, _ in samples], str(splits), fold, train)
    assert ours.samples == samples and ours.indices == indices
    assert len(indices) == {(1, True): 2, (1, False): 2, (2, True): 0}[(fold, train)]
    assert_samples(ours, [(Path(samples[i][0]), samples[i][1]) for i in indices], 8, 2, "THWC")


def test_hmdb51_bad_split_files(hmdb: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = hmdb
    with pytest.raises(DatasetError, match=r"no \*_test_split3\.txt files"):
        HMDB51(root, tmp_path, 8, fold=3)
    (tmp_path / "x_test_split1.txt").write_text("a.avi one\n")
    with pytest.raises(DatasetError, match=r"line 1: expected 'name\.avi tag'") as bad:
        HMDB51(root, tmp_path, 8)
    assert bad.value.path == str(tmp_path / "x_test_split1.txt")


KINETICS = [("abcdefghijk", 0, 10, "riding a bike", 12), ("lmnopqrstuv", 5, 15, "tai chi", 9),
            ("wxyz0123456", 20, 30, "riding a bike", 16)]  # fmt: skip


def serve_kinetics(served: Path, url: str, source: Path) -> None:
    """The split's tarball list, two tarballs of flat videos and the annotation CSV."""
    (served / "400" / "train").mkdir(parents=True)
    (served / "400" / "annotations").mkdir()
    source.mkdir()
    tars = []
    for part, rows in enumerate([KINETICS[:2], KINETICS[2:]]):
        tar_name = f"part {part}.tar.gz"  # a space: the listed URLs are quoted
        with tarfile.open(served / "400" / "train" / tar_name, "w:gz") as tar:
            for ytid, start, end, _, n in rows:
                name = f"{ytid}_{start:06}_{end:06}.mp4"
                write_numbered(source / name, n, FPS)
                tar.add(source / name, name)
        tars.append(f"{url}/400/train/{tar_name}")
    (served / "400" / "train" / "k400_train_path.txt").write_text("\n".join(tars) + "\n")
    with open(served / "400" / "annotations" / "train.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["label", "youtube_id", "time_start", "time_end", "split"])
        for ytid, start, end, label, _ in KINETICS:
            writer.writerow([label, ytid, start, end, "train"])


def test_kinetics_download_lays_out_and_reads(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve_kinetics(file_server.root, file_server.url, tmp_path / "source")
    urls = {"400": f"{file_server.url}/400/{{split}}/k400_{{split}}_path.txt"}
    monkeypatch.setattr(Kinetics, "_TAR_URLS", urls)
    monkeypatch.setattr(
        Kinetics, "_ANNOTATION_URLS", {"400": f"{file_server.url}/400/annotations/{{split}}.csv"}
    )
    root = tmp_path / "kinetics"
    ours = Kinetics(root, 8, step_between_clips=4, download=True, num_download_workers=2)
    # torchvision's own restructuring of the same flat videos gives the same tree
    theirs = tmp_path / "theirs"
    (theirs / "annotations").mkdir(parents=True)
    shutil.copy(root / "annotations" / "train.csv", theirs / "annotations")
    shutil.copytree(tmp_path / "source", theirs / "train")
    reference = tv.datasets.Kinetics.__new__(tv.datasets.Kinetics)
    reference.root, reference.split, reference.num_classes = str(theirs), "train", "400"
    reference.split_folder = str(theirs / "train")
    reference._make_ds_structure()
    tree = sorted(str(p.relative_to(theirs / "train")) for p in (theirs / "train").rglob("*"))
    assert sorted(str(p.relative_to(root / "train")) for p in (root / "train").rglob("*")) == tree
    assert ours.classes == ["riding_a_bike", "tai_chi"]
    samples = tv.datasets.folder.make_dataset(str(root / "train"), extensions=("avi", "mp4"))
    assert ours.samples == samples
    lengths = {f"{y}_{s:06}_{e:06}": n for y, s, e, _, n in KINETICS}
    LENGTHS.update({k: range(n) for k, n in lengths.items()})
    assert_samples(ours, [(Path(p), c) for p, c in samples], 8, 4, "TCHW")
    # a second run finds the split folder and fetches nothing more
    served = len(file_server.requests)
    assert len(Kinetics(root, 8, step_between_clips=4, download=True)) == len(ours)
    assert len(file_server.requests) == served


def test_kinetics_refuses_a_tarball_escaping_its_folder(
    tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tarfile.open(file_server.root / "evil.tar.gz", "w:gz") as tar:
        data = b"x"
        member = tarfile.TarInfo("../../escaped.mp4")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    (file_server.root / "list.txt").write_text(f"{file_server.url}/evil.tar.gz\n")
    monkeypatch.setattr(Kinetics, "_TAR_URLS", {"400": f"{file_server.url}/list.txt"})
    root = tmp_path / "deep" / "kinetics"
    with pytest.raises(DatasetError):
        Kinetics(root, 8, download=True)
    assert not list(tmp_path.rglob("escaped.mp4"))


def test_kinetics_missing_split_says_download(tmp_path: Path) -> None:
    with pytest.raises(PathNotFoundError, match="pass download=True") as missing:
        Kinetics(tmp_path, 8, split="val")
    assert missing.value.filename == str(tmp_path / "val")
    with pytest.raises(ValueError, match="legacy_structure"):
        Kinetics(tmp_path, 8, _legacy=True, download=True)
