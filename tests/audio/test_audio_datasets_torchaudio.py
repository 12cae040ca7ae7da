"""torchaudio's datasets on their real layouts, built in tmp_path from real speech.

Each test lays a small copy of the dataset's on-disk layout out in ``tmp_path`` and
compares Trivium's class with torchaudio's on the same folder: torchaudio's audio
decoding needs TorchCodec, which does not load here, so its ``torchaudio.load`` is
replaced by soundfile's decode, the independent reference for the waveforms; every
other field, the item order and ``get_metadata`` come from torchaudio's own code.
Downloads run against a loopback HTTP server.
"""

from __future__ import annotations

import csv
import hashlib
import importlib
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import torch
from peers import require_torchaudio
from torch.utils.data import DataLoader

from trivium.audio import datasets
from trivium.core.errors import DatasetError, PathNotFoundError

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"
CLIPS = ("spk1_snt1", "spk1_snt4", "spk2_snt1", "spk2_snt2")


def speech(k: int, frames: int = 4000, offset: int = 0) -> np.ndarray:
    """``frames`` int16 samples of real speech (clip ``k`` of the assets, 16 kHz)."""
    data, _ = sf.read(AUDIO / f"sb-{CLIPS[k % len(CLIPS)]}.wav", dtype="int16")
    return data[offset : offset + frames]


def write(path: Path, data: np.ndarray, rate: int = 16000, **kwargs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, data, rate, **kwargs)
    return path


def soundfile_load(
    path: Any, frame_offset: int = 0, num_frames: int = -1, **kwargs: Any
) -> tuple[torch.Tensor, int]:
    """torchaudio.load's ``(waveform [channels, time] float32, rate)`` by soundfile."""
    data, rate = sf.read(
        path, frames=num_frames, start=frame_offset, dtype="float32", always_2d=True
    )
    return torch.from_numpy(np.ascontiguousarray(data.T)), rate


@pytest.fixture
def ta(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """torchaudio.datasets, decoding with soundfile."""
    torchaudio = require_torchaudio()
    monkeypatch.setattr(torchaudio, "load", soundfile_load)
    return importlib.import_module("torchaudio.datasets")


def assert_same_item(ours: Any, theirs: Any, atol: float = 0.0) -> None:
    """Equal fields; waveforms equal (``atol``: for MP3, decoded at float precision)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, torch.Tensor) and ours.dtype == torch.float32
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=atol)
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_same_item(a, b, atol)
    else:
        assert type(ours) is type(theirs) and ours == theirs


# Trivium's MP3 decode and soundfile's float32 read of the same file agree to within
# float32 rounding (at most 1.5e-8 here), not bit for bit.
MP3_ATOL = 5e-8


def assert_same_dataset(ours: Any, theirs: Any, metadata: bool = True, atol: float = 0.0) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        assert_same_item(ours[i], theirs[i], atol)
        if metadata:
            assert_same_item(ours.get_metadata(i), theirs.get_metadata(i))


def tar_folder(served: Path, name: str, folder: Path, arcname: str) -> str:
    """``folder`` packed as ``served/name`` under ``arcname``; returns the SHA-256."""
    compression = next((c for c in ("gz", "bz2", "xz") if name.endswith(c)), "")
    with tarfile.open(served / name, f"w:{compression}") as t:
        t.add(folder, arcname=arcname)
    return hashlib.sha256((served / name).read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- SPEECHCOMMANDS


def make_speechcommands(root: Path, version: str = "speech_commands_v0.02") -> Path:
    """Two labels, three speakers, background noise, and the split lists."""
    path = root / "SpeechCommands" / version
    clips = {
        "yes/0a7c2a8d_nohash_0.wav": 0,
        "yes/0a7c2a8d_nohash_1.wav": 1,
        "yes/c1d39ce8_nohash_0.wav": 2,
        "no/0a7c2a8d_nohash_0.wav": 3,
        "no/b5cf6ea8_nohash_2.wav": 0,
        "no/c1d39ce8_nohash_0.wav": 1,
    }
    for relpath, k in clips.items():
        write(path / relpath, speech(k, 1600, offset=800 * k))
    write(path / "_background_noise_" / "white_noise.wav", speech(2, 3200))
    (path / "validation_list.txt").write_text("yes/c1d39ce8_nohash_0.wav\n")
    (path / "testing_list.txt").write_text("no/c1d39ce8_nohash_0.wav\nno/b5cf6ea8_nohash_2.wav\n")
    (path / "LICENSE").write_text("CC-BY-4.0\n")
    return path


@pytest.mark.parametrize("subset", [None, "training", "validation", "testing"])
def test_speechcommands_subsets(tmp_path: Path, ta: ModuleType, subset: str | None) -> None:
    make_speechcommands(tmp_path)
    ours = datasets.SPEECHCOMMANDS(tmp_path, subset=subset)
    theirs = ta.SPEECHCOMMANDS(str(tmp_path), subset=subset)
    assert_same_dataset(ours, theirs)
    sizes = {None: 6, "training": 3, "validation": 1, "testing": 2}
    assert len(ours) == sizes[subset]
    assert all("_background_noise_" not in ours.get_metadata(i)[0] for i in range(len(ours)))


def test_speechcommands_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="subset"):
        datasets.SPEECHCOMMANDS(tmp_path, subset="train")
    with pytest.raises(PathNotFoundError, match="download=True") as info:
        datasets.SPEECHCOMMANDS(tmp_path, url="speech_commands_v0.01")
    assert "speech_commands_v0.01.tar.gz" in str(info.value)
    path = make_speechcommands(tmp_path)
    (path / "testing_list.txt").unlink()
    with pytest.raises(PathNotFoundError) as missing:
        datasets.SPEECHCOMMANDS(tmp_path, subset="training")
    assert missing.value.path == str(path / "testing_list.txt")
    # sorted, both come right after no/* (3 clips) and yes/0a7c2a8d_nohash_{0,1}
    bad = write(path / "yes" / "0a7c2a8d_nohash_x.wav", speech(0, 160))
    with pytest.raises(DatasetError, match="nohash_x"):
        datasets.SPEECHCOMMANDS(tmp_path)[5]
    bad.unlink()
    write(path / "yes" / "0a7c2a8d_nohash_7.wav", speech(0, 160), 8000)
    with pytest.raises(DatasetError, match="sample rate 8000"):
        datasets.SPEECHCOMMANDS(tmp_path)[5]


def test_speechcommands_download(tmp_path: Path, file_server) -> None:
    staging = make_speechcommands(tmp_path / "staging")
    name = "speech_commands_v0.02.tar.gz"
    digest = tar_folder(file_server.root, name, staging, ".")
    url = f"{file_server.url}/{name}"
    root = tmp_path / "root"
    with pytest.raises(DatasetError, match="checksum mismatch") as info:
        datasets.SPEECHCOMMANDS(root, url=url, download=True)  # the real archive's digest
    assert datasets.speechcommands.CHECKSUMS[name] in str(info.value)
    assert not (root / name).exists()
    ds = datasets.SPEECHCOMMANDS(root, url=f"{url}#sha256={digest}", download=True)
    assert len(ds) == 6 and (root / name).is_file()
    assert ds.get_metadata(5)[0] == "speech_commands_v0.02/yes/c1d39ce8_nohash_0.wav"
    assert len(datasets.SPEECHCOMMANDS(root, subset="testing")) == 2  # found locally now


# ----------------------------------------------------------------------------- YESNO


def make_yesno(root: Path) -> None:
    for k, name in enumerate(("0_0_1_0_1_0_1_1", "1_1_1_1_0_0_0_0", "0_1_0_0_1_0_1_1")):
        write(root / "waves_yesno" / f"{name}.wav", speech(k, 2000), 8000)
    (root / "waves_yesno" / "README").write_text("yes/no\n")


def test_yesno(tmp_path: Path, ta: ModuleType) -> None:
    make_yesno(tmp_path)
    ours = datasets.YESNO(tmp_path)
    assert_same_dataset(ours, ta.YESNO(tmp_path), metadata=False)
    assert ours[0][1:] == (8000, [0, 0, 1, 0, 1, 0, 1, 1])
    write(tmp_path / "waves_yesno" / "1_x.wav", speech(0, 80), 8000)
    with pytest.raises(DatasetError, match=r"1_x\.wav"):
        datasets.YESNO(tmp_path)[3]
    with pytest.raises(PathNotFoundError, match=r"waves_yesno\.tar\.gz"):
        datasets.YESNO(tmp_path / "elsewhere")


def test_yesno_download(tmp_path: Path, file_server) -> None:
    make_yesno(tmp_path / "staging")
    name = "waves_yesno.tar.gz"
    tar_folder(file_server.root, name, tmp_path / "staging" / "waves_yesno", "waves_yesno")
    root = tmp_path / "root"
    with pytest.raises(DatasetError, match="checksum mismatch"):
        datasets.YESNO(root, url=f"{file_server.url}/{name}", download=True)
    digest = hashlib.sha256((file_server.root / name).read_bytes()).hexdigest()
    ds = datasets.YESNO(root, url=f"{file_server.url}/{name}#sha256={digest}", download=True)
    assert len(ds) == 3 and ds[2][2] == [1, 1, 1, 1, 0, 0, 0, 0]


# ----------------------------------------------------------------------------- LJSPEECH

LJ_ROWS = [
    ("LJ001-0001", "Printing, in the only sense", "Printing, in the only sense"),
    ("LJ001-0002", "in being comparatively modern.", "in being comparatively modern."),
    ("LJ002-0010", "in 1829, the year", "in eighteen twenty-nine, the year"),
]


def make_ljspeech(root: Path) -> Path:
    base = root / "LJSpeech-1.1"
    for k, (fileid, _, _) in enumerate(LJ_ROWS):
        write(base / "wavs" / f"{fileid}.wav", speech(k, 2205), 22050)
    (base / "metadata.csv").write_text("".join("|".join(row) + "\n" for row in LJ_ROWS))
    return base


def test_ljspeech(tmp_path: Path, ta: ModuleType) -> None:
    base = make_ljspeech(tmp_path)
    ours = datasets.LJSPEECH(tmp_path)
    assert_same_dataset(ours, ta.LJSPEECH(tmp_path), metadata=False)
    assert ours[2][1:] == (22050, *LJ_ROWS[2][1:])
    with open(base / "metadata.csv", "a") as f:
        f.write("LJ003-0001|no normalized text\n")
    with pytest.raises(DatasetError, match="line 4 has 2 fields"):
        datasets.LJSPEECH(tmp_path)
    (base / "metadata.csv").unlink()
    with pytest.raises(PathNotFoundError) as info:
        datasets.LJSPEECH(tmp_path)
    assert info.value.path == str(base / "metadata.csv")


def test_ljspeech_download_bz2(tmp_path: Path, file_server) -> None:
    base = make_ljspeech(tmp_path / "staging")
    name = "LJSpeech-1.1.tar.bz2"
    digest = tar_folder(file_server.root, name, base, "LJSpeech-1.1")
    root = tmp_path / "root"
    with pytest.raises(DatasetError, match="checksum mismatch"):
        datasets.LJSPEECH(root, url=f"{file_server.url}/{name}", download=True)
    ds = datasets.LJSPEECH(root, url=f"{file_server.url}/{name}#sha256={digest}", download=True)
    assert len(ds) == 3 and ds[0][2] == LJ_ROWS[0][1]


# ----------------------------------------------------------------------------- GTZAN


def make_gtzan(root: Path) -> None:
    """Clips of the filtered test split, one a genre missing, and files GTZAN skips."""
    names = ["blues.00012", "blues.00013", "jazz.00000", "rock.00084"]
    for k, name in enumerate(names):
        write(root / "genres" / name.split(".")[0] / f"{name}.wav", speech(k, 2205), 22050)
    write(root / "genres" / "jazz" / "jazz.0001.wav", speech(0, 80), 22050)  # 4 digits
    write(root / "genres" / "jazz" / "notes.00001.wav", speech(0, 80), 22050)
    write(root / "genres" / "polka" / "polka.00001.wav", speech(0, 80), 22050)
    (root / "genres" / "jazz" / "jazz.00001.txt").write_text("not audio")


@pytest.mark.parametrize("subset", [None, "testing"])
def test_gtzan(tmp_path: Path, ta: ModuleType, subset: str | None) -> None:
    make_gtzan(tmp_path)
    ours, theirs = datasets.GTZAN(tmp_path, subset=subset), ta.GTZAN(tmp_path, subset=subset)
    assert len(ours) == len(theirs) == (4 if subset is None else 290)
    for i in (0, 1) if subset else range(4):
        assert_same_item(ours[i], theirs[i])
    if subset is None:
        assert [ours[i][2] for i in range(4)] == ["blues", "blues", "jazz", "rock"]
    else:
        with pytest.raises(PathNotFoundError, match=r"blues\.00014\.wav"):
            ours[2]


def test_gtzan_split_lists_are_torchaudios(ta: ModuleType) -> None:
    from trivium.audio.datasets import gtzan_splits

    module = importlib.import_module("torchaudio.datasets.gtzan")
    assert list(gtzan_splits.GENRES) == module.gtzan_genres
    assert list(gtzan_splits.FILTERED_TRAIN) == module.filtered_train
    assert list(gtzan_splits.FILTERED_VALID) == module.filtered_valid
    assert list(gtzan_splits.FILTERED_TEST) == module.filtered_test
    with pytest.raises(ValueError, match="subset"):
        datasets.GTZAN("unused", subset="train")


# ----------------------------------------------------------------------------- CMUARCTIC

ARCTIC_LINES = [
    '( arctic_a0001 "Author of the danger trail, Philip Steels, etc." )',
    '( arctic_a0002 "Not at this particular case, Tom, apologized Whittemore." )',
    "( arctic_b0539 \"For a moment he thought of 'bagging' the gun.\" )",
]


def make_cmuarctic(root: Path, speaker: str = "aew") -> Path:
    base = root / "ARCTIC" / f"cmu_us_{speaker}_arctic"
    for k, line in enumerate(ARCTIC_LINES):
        write(base / "wav" / f"{line.split()[1]}.wav", speech(k, 1600), 16000)
    (base / "etc").mkdir()
    (base / "etc" / "txt.done.data").write_text("\n".join(ARCTIC_LINES) + "\n")
    return base


def test_cmuarctic(tmp_path: Path, ta: ModuleType) -> None:
    base = make_cmuarctic(tmp_path, "slt")
    ours = datasets.CMUARCTIC(tmp_path, url="slt")
    assert_same_dataset(ours, ta.CMUARCTIC(tmp_path, url="slt"), metadata=False)
    assert ours[2][2:] == ("For a moment he thought of 'bagging' the gun.", "b0539")
    with open(base / "etc" / "txt.done.data", "a") as f:
        f.write("arctic_a0003 no parentheses\n")
    with pytest.raises(DatasetError, match="line 4"):
        datasets.CMUARCTIC(tmp_path, url="slt")
    with pytest.raises(PathNotFoundError, match=r"cmu_us_aew_arctic\.tar\.bz2"):
        datasets.CMUARCTIC(tmp_path)
    with pytest.raises(ValueError, match="invalid url"):
        datasets.CMUARCTIC(tmp_path, url="xyz")


# ----------------------------------------------------------------------------- CMUDict

CMUDICT = """;;; # CMUdict  --  Major Version: 0.07
!EXCLAMATION-POINT  EH2 K S K L AH0 M EY1 SH AH0 N P OY2 N T
"CLOSE-QUOTE  K L OW1 Z K W OW1 T
,COMMA  K AA1 M AH0
...ELLIPSIS  IH2 L IH1 P S IH0 S
A  AH0
A(1)  EY1
ABBE  AE1 B IY0
CAF\xc9  K AH0 F EY1
"""


def make_cmudict(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cmudict-0.7b").write_bytes(CMUDICT.encode("latin-1"))
    (root / "cmudict-0.7b.symbols").write_text("AA\nAA0\nAA1\nAE1\nAH0\nB\n")


@pytest.mark.parametrize("exclude_punctuations", [True, False])
def test_cmudict(tmp_path: Path, ta: ModuleType, exclude_punctuations: bool) -> None:
    make_cmudict(tmp_path)
    ours = datasets.CMUDict(tmp_path, exclude_punctuations)
    theirs = ta.CMUDict(tmp_path, exclude_punctuations)
    assert_same_dataset(ours, theirs, metadata=False)
    assert ours.symbols == theirs.symbols == ["AA", "AA0", "AA1", "AE1", "AH0", "B"]
    assert len(ours) == (4 if exclude_punctuations else 8) and ours[-1][0] == "CAF\xc9"


def test_cmudict_errors(tmp_path: Path) -> None:
    with pytest.raises(PathNotFoundError):
        datasets.CMUDict(tmp_path / "missing")
    with pytest.raises(PathNotFoundError, match="download=True") as info:
        datasets.CMUDict(tmp_path)
    assert info.value.path == str(tmp_path / "cmudict-0.7b")
    make_cmudict(tmp_path)
    with open(tmp_path / "cmudict-0.7b", "a") as f:
        f.write("BROKEN K\n")
    with pytest.raises(DatasetError, match="line 10"):
        datasets.CMUDict(tmp_path)


def test_cmudict_download_two_files(tmp_path: Path, file_server) -> None:
    make_cmudict(file_server.root)
    root = tmp_path / "root"
    root.mkdir()
    urls = {"url": f"{file_server.url}/cmudict-0.7b"}
    urls["url_symbols"] = f"{file_server.url}/cmudict-0.7b.symbols"
    with pytest.raises(DatasetError, match="checksum mismatch") as info:
        datasets.CMUDict(root, download=True, **urls)
    assert datasets.cmudict.CHECKSUMS["cmudict-0.7b"] in str(info.value)
    digests = {
        k: hashlib.sha256((file_server.root / u.rsplit("/", 1)[1]).read_bytes())
        for k, u in urls.items()
    }
    pinned = {k: f"{u}#sha256={digests[k].hexdigest()}" for k, u in urls.items()}
    d = datasets.CMUDict(root, download=True, **pinned)
    assert len(d) == 4 and d.symbols[0] == "AA"
    assert (root / "cmudict-0.7b").read_bytes() == (file_server.root / "cmudict-0.7b").read_bytes()


# ----------------------------------------------------------------------------- VCTK_092

VCTK = {  # speaker -> utterances with transcripts (mic2 missing for p280, as in the corpus)
    "p225": ["Please call Stella.", "Ask her to bring these things with her from the store."],
    "p280": ["Six spoons of fresh snow peas."],
    "p362": ["Five thick slabs of blue cheese.", "And maybe a snack for her brother Bob."],
}


def make_vctk(root: Path) -> Path:
    base = root / "VCTK-Corpus-0.92"
    k = 0
    for speaker, texts in VCTK.items():
        for i, text in enumerate(texts, 1):
            name = f"{speaker}_{i:03d}"
            (base / "txt" / speaker).mkdir(parents=True, exist_ok=True)
            (base / "txt" / speaker / f"{name}.txt").write_text(text + "\n")
            audio = base / "wav48_silence_trimmed" / speaker
            write(audio / f"{name}_mic1.flac", speech(k, 4800), 48000)
            if speaker != "p280" and name != "p362_002":
                write(audio / f"{name}_mic2.flac", speech(k + 1, 4800), 48000)
            k += 1
    (base / "README.txt").write_text("VCTK 0.92\n")
    return base


@pytest.mark.parametrize("mic_id", ["mic1", "mic2"])
def test_vctk(tmp_path: Path, ta: ModuleType, mic_id: str) -> None:
    make_vctk(tmp_path)
    ours = datasets.VCTK_092(tmp_path, mic_id=mic_id)
    assert_same_dataset(ours, ta.VCTK_092(str(tmp_path), mic_id=mic_id), metadata=False)
    assert len(ours) == (5 if mic_id == "mic1" else 3)
    assert ours[0][2:] == ("Please call Stella.\n", "p225", "001")
    with pytest.raises(ValueError, match="mic_id"):
        datasets.VCTK_092(tmp_path, mic_id="mic3")


def test_vctk_download_zip(tmp_path: Path, file_server) -> None:
    base = make_vctk(tmp_path / "staging")
    name = "VCTK-Corpus-0.92.zip"
    with zipfile.ZipFile(file_server.root / name, "w") as z:
        for path in sorted(base.rglob("*")):
            z.write(path, path.relative_to(base).as_posix())
    url = f"{file_server.url}/{name}"
    root = tmp_path / "root"
    with pytest.raises(PathNotFoundError, match="download=True"):
        datasets.VCTK_092(root, url=url)
    with pytest.raises(DatasetError, match="checksum mismatch"):
        datasets.VCTK_092(root, url=url, download=True)
    digest = hashlib.sha256((file_server.root / name).read_bytes()).hexdigest()
    ds = datasets.VCTK_092(root, url=f"{url}#sha256={digest}", download=True)
    assert len(ds) == 3 and ds[2][3:] == ("p362", "001")


# ----------------------------------------------------------------------------- COMMONVOICE

CV_HEADER = "client_id path sentence up_votes down_votes age gender accents locale segment"
CV_ROWS = [
    ["c1", "common_voice_en_1.mp3", "The quick brown fox.", "2", "0", "twenties", "", "", "en", ""],
    ["c2", "common_voice_en_2", 'He said "yes".', "3", "1", "", "female", "", "en", ""],
]


def make_commonvoice(root: Path) -> None:
    for k, row in enumerate(CV_ROWS):
        name = row[1] if row[1].endswith(".mp3") else row[1] + ".mp3"
        write(root / "clips" / name, speech(k, 4800).astype(np.float32) / 32768, 48000)
    with open(root / "train.tsv", "w", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerows([CV_HEADER.split(), *CV_ROWS])


def test_commonvoice(tmp_path: Path, ta: ModuleType) -> None:
    make_commonvoice(tmp_path)
    ours = datasets.COMMONVOICE(tmp_path)
    assert_same_dataset(ours, ta.COMMONVOICE(tmp_path), metadata=False, atol=MP3_ATOL)
    assert ours[1][2]["sentence"] == 'He said "yes".' and ours[1][1] == 48000
    with pytest.raises(PathNotFoundError, match=r"commonvoice\.mozilla\.org"):
        datasets.COMMONVOICE(tmp_path, tsv="dev.tsv")
    (tmp_path / "test.tsv").write_text("client_id\tsentence\nc1\thi\n")
    with pytest.raises(DatasetError, match="'path'"):
        datasets.COMMONVOICE(tmp_path, tsv="test.tsv")


# ----------------------------------------------------------------------------- TEDLIUM

TED_TALKS = {  # talk -> stm lines (start, end, transcript)
    "AlGore_2009": [("0.00", "0.20", "one"), ("0.20", "0.45", "two words")],
    "BillGates_2010": [("0.10", "0.30", "i 'm here")],
}


def make_tedlium(root: Path, release: str = "release1", subset: str = "dev") -> Path:
    folder = {"release1": "TEDLIUM_release1", "release3": "TEDLIUM_release-3"}[release]
    if release == "release3":
        base = root / folder / ("data" if subset == "train" else f"legacy/{subset}")
    else:
        base = root / folder / subset
    for k, (talk, segments) in enumerate(TED_TALKS.items()):
        write(base / "sph" / f"{talk}.sph", speech(k, 8000), 16000, format="NIST")
        (base / "stm").mkdir(parents=True, exist_ok=True)
        lines = [f"{talk} 1 {talk} {a} {b} <o,f0,male> {text}\n" for a, b, text in segments]
        (base / "stm" / f"{talk}.stm").write_text("".join(lines))
    dictionary = "TEDLIUM.150K.dic" if release == "release1" else "TEDLIUM.152k.dic"
    (root / folder / dictionary).write_text("one W AH N\ntwo T UW\n'em\n")
    return base


@pytest.mark.parametrize(("release", "subset"), [("release1", "dev"), ("release3", "train")])
def test_tedlium(tmp_path: Path, ta: ModuleType, release: str, subset: str) -> None:
    base = make_tedlium(tmp_path, release, subset)
    ours = datasets.TEDLIUM(tmp_path, release=release, subset=subset)
    theirs = ta.TEDLIUM(str(tmp_path), release=release, subset=subset)
    assert_same_dataset(ours, theirs, metadata=False)
    assert ours.phoneme_dict == theirs.phoneme_dict
    assert ours.phoneme_dict["'em"] == ()
    waveform, *_ = ours[1]  # 0.20 s to 0.45 s of the first talk
    reference = speech(0, 8000)[3200:7200] / 32768
    np.testing.assert_array_equal(waveform[0].numpy(), reference.astype(np.float32))
    with open(base / "stm" / "AlGore_2009.stm", "a") as f:
        f.write("AlGore_2009 1 AlGore_2009 0.5\n")
    with pytest.raises(DatasetError, match="line 3 has 4 of 7 fields"):
        datasets.TEDLIUM(tmp_path, release=release, subset=subset)


def test_tedlium_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="release"):
        datasets.TEDLIUM(tmp_path, release="release4")
    with pytest.raises(ValueError, match="subset"):
        datasets.TEDLIUM(tmp_path, subset="validation")
    with pytest.raises(PathNotFoundError, match=r"TEDLIUM_release-3\.tgz"):
        datasets.TEDLIUM(tmp_path, release="release3", subset="test")


# ----------------------------------------------------------------------------- LibriLightLimited


def make_librilight(root: Path) -> Path:
    """Folds 1h/0 and 1h/1 and 9h, clean and other, one chapter each."""
    base = root / "librispeech_finetuning"
    for k, fold in enumerate(("1h/0/clean", "1h/0/other", "1h/1/clean", "9h/clean")):
        speaker, chapter = str(100 + k), str(2000 + k)
        folder = base / fold / speaker / chapter
        lines = []
        for utt in range(2):
            fileid = f"{speaker}-{chapter}-{utt:04d}"
            write(folder / f"{fileid}.flac", speech(k + utt, 1600), 16000)
            lines.append(f"{fileid} TRANSCRIPT {k} {utt}\n")
        (folder / f"{speaker}-{chapter}.trans.txt").write_text("".join(lines))
    return base


@pytest.mark.parametrize(("subset", "size"), [("10min", 4), ("1h", 6), ("10h", 8)])
def test_librilight_limited(tmp_path: Path, ta: ModuleType, subset: str, size: int) -> None:
    make_librilight(tmp_path)
    ours = datasets.LibriLightLimited(tmp_path, subset)
    assert_same_dataset(ours, ta.LibriLightLimited(tmp_path, subset), metadata=False)
    assert len(ours) == size
    with pytest.raises(ValueError, match="subset"):
        datasets.LibriLightLimited(tmp_path, "1min")


def test_librilight_download(tmp_path: Path, file_server, monkeypatch) -> None:
    base = make_librilight(tmp_path / "staging")
    name = "librispeech_finetuning.tgz"
    tar_folder(file_server.root, name, base, "librispeech_finetuning")
    module = datasets.librilight_limited
    monkeypatch.setattr(module, "URL", f"{file_server.url}/{name}")
    root = tmp_path / "root"
    with pytest.raises(DatasetError, match="checksum mismatch"):
        datasets.LibriLightLimited(root, download=True)
    digest = hashlib.sha256((file_server.root / name).read_bytes()).hexdigest()
    monkeypatch.setitem(module.CHECKSUMS, name, digest)
    assert len(datasets.LibriLightLimited(root, "10h", download=True)) == 8


# ----------------------------------------------------------------------------- LibriSpeechBiasing


def make_librispeech(root: Path, split: str = "dev-clean") -> None:
    texts = ["THE ABBEY AND THE ABBOT", "NO BIAS HERE", "ABBOT ABBOT NUN"]
    for k, text in enumerate(texts):
        speaker, chapter = ("19", "198") if k < 2 else ("26", "495")
        folder = root / "LibriSpeech" / split / speaker / chapter
        fileid = f"{speaker}-{chapter}-{k:04d}"
        write(folder / f"{fileid}.flac", speech(k, 1600), 16000)
        with open(folder / f"{speaker}-{chapter}.trans.txt", "a") as f:
            f.write(f"{fileid} {text}\n")


@pytest.mark.parametrize("blist", [None, ["ABBOT", "NUN", "ABBEY"]])
def test_librispeech_biasing(tmp_path: Path, ta: ModuleType, blist: list[str] | None) -> None:
    make_librispeech(tmp_path)
    ours = datasets.LibriSpeechBiasing(tmp_path, "dev-clean", blist=blist)
    assert_same_dataset(ours, ta.LibriSpeechBiasing(tmp_path, "dev-clean", blist=blist))
    assert ours[0][-1] == ([] if blist is None else ["ABBEY", "ABBOT"])
    with pytest.raises(ValueError, match="invalid url"):
        datasets.LibriSpeechBiasing(tmp_path, "dev-clean.tar.gz")


# ----------------------------------------------------------------------------- MUSDB_HQ

SONGS = ["Actions - One Minute Smile", "Al James - Schoolboy Facination", "ANiMAL - Clinic A"]


def make_musdb(root: Path, subset: str = "train") -> Path:
    base = root / "musdb18hq" / subset
    for k, song in enumerate(SONGS):
        for j, stem in enumerate(("bass", "drums", "other", "vocals", "mixture")):
            stereo = np.stack([speech(k + j, 1000), speech(k + j + 1, 1000)], axis=1)
            write(base / song / f"{stem}.wav", stereo, 44100)
    (base / ".hidden").mkdir()
    return base


@pytest.mark.parametrize("split", [None, "train", "validation"])
def test_musdb_hq(tmp_path: Path, ta: ModuleType, split: str | None) -> None:
    make_musdb(tmp_path)
    ours = datasets.MUSDB_HQ(tmp_path, "train", split=split)
    theirs = ta.MUSDB_HQ(tmp_path, "train", split=split)
    assert ours.names == theirs.names
    assert len(ours) == {None: 3, "train": 2, "validation": 14}[split]
    assert_same_item(ours[0], theirs[0])
    waveforms, rate, frames, _ = ours[0]
    assert waveforms.shape == (4, 2, 1000) and (rate, frames) == (44100, 1000)


def test_musdb_hq_sources_and_errors(tmp_path: Path, ta: ModuleType) -> None:
    base = make_musdb(tmp_path)
    sources = ["mixture", "vocals"]
    ours = datasets.MUSDB_HQ(tmp_path, "train", sources=sources)
    assert_same_item(ours[2], ta.MUSDB_HQ(tmp_path, "train", sources=sources)[2])
    write(base / SONGS[1] / "vocals.wav", speech(0, 900), 44100)
    with pytest.raises(DatasetError, match="900 frames") as info:
        ours[ours.names.index(SONGS[1])]
    assert info.value.path == str(base / SONGS[1] / "vocals.wav")
    with pytest.raises(PathNotFoundError, match=r"musdb18hq\.zip"):
        datasets.MUSDB_HQ(tmp_path, "test")
    with pytest.raises(ValueError, match="split"):
        datasets.MUSDB_HQ(tmp_path, "train", split="valid")


# ----------------------------------------------------------------------------- FluentSpeechCommands

FSC_ROWS = [
    ["0", "wavs/speakers/2BqVo8kVB2Skwgyb/0a3129c0-4474-11e9-a9a5-5dbec3b8816a.wav",
     "2BqVo8kVB2Skwgyb", "Change language", "change language", "none", "none"],
    ["1", "wavs/speakers/2BqVo8kVB2Skwgyb/0ee42a80-4474-11e9-a9a5-5dbec3b8816a.wav",
     "2BqVo8kVB2Skwgyb", "Resume", "activate", "music", "none"],
    ["2", "wavs/speakers/xRQE5VD7rRHVdyvM/1a5b3c9d-4475-11e9-a9a5-5dbec3b8816a.wav",
     "xRQE5VD7rRHVdyvM", "Turn the lights on in the kitchen", "activate", "lights", "kitchen"],
]  # fmt: skip


def make_fsc(root: Path, subset: str = "train") -> Path:
    base = root / "fluent_speech_commands_dataset"
    for k, row in enumerate(FSC_ROWS):
        write(base / row[1], speech(k, 1600), 16000)
    (base / "data").mkdir(parents=True, exist_ok=True)
    with open(base / "data" / f"{subset}_data.csv", "w", newline="") as f:
        writer = csv.writer(f)
        header = ["", "path", "speakerId", "transcription", "action", "object", "location"]
        writer.writerows([header, *FSC_ROWS])
    return base


def test_fluent_speech_commands(tmp_path: Path, ta: ModuleType) -> None:
    base = make_fsc(tmp_path, "valid")
    ours = datasets.FluentSpeechCommands(tmp_path, "valid")
    assert_same_dataset(ours, ta.FluentSpeechCommands(tmp_path, "valid"))
    assert ours.get_metadata(2)[5:] == ("activate", "lights", "kitchen")
    with pytest.raises(PathNotFoundError):
        datasets.FluentSpeechCommands(tmp_path, "test")
    with open(base / "data" / "valid_data.csv", "a") as f:
        f.write("3,wavs/x.wav,spk,Stop\n")
    with pytest.raises(DatasetError, match="line 5 has 4 fields"):
        datasets.FluentSpeechCommands(tmp_path, "valid")
    with pytest.raises(PathNotFoundError, match=r"Fluent\.ai"):
        datasets.FluentSpeechCommands(tmp_path / "elsewhere")


# ----------------------------------------------------------------------------- Snips


def make_snips(root: Path, audio_format: str = "wav") -> Path:
    base = root / "SNIPS"
    lines = []
    for subset in ("train", "test"):
        for k, speaker in enumerate(("Aditi", "Brian", "Salli")):
            stem = f"{speaker}-snips-{subset}-{k}"
            data = speech(k, 1600).astype(np.float32) / 32768
            write(base / subset / f"{stem}.{audio_format}", data, 16000)
            words = ["play", "some", "jazz", "by", speaker]
            tags = ["O", "O", "B-genre", "O", "B-artist"]
            lines.append(f"{stem} BOS {' '.join(words)} EOS\tO {' '.join(tags)} PlayMusic\n")
    (base / "all.iob.snips.txt").write_text("".join(lines))
    return base


@pytest.mark.parametrize("audio_format", ["wav", "mp3"])
def test_snips(tmp_path: Path, ta: ModuleType, audio_format: str) -> None:
    make_snips(tmp_path, audio_format)
    speakers = ["Aditi", "Salli"]
    ours = datasets.Snips(tmp_path, "test", speakers, audio_format)
    theirs = ta.Snips(tmp_path, "test", speakers, audio_format)
    assert_same_dataset(ours, theirs, atol=MP3_ATOL if audio_format == "mp3" else 0.0)
    assert len(ours) == 2 and len(datasets.Snips(tmp_path, "test", None, audio_format)) == 3
    assert ours.get_metadata(1)[2:] == (
        "Salli-snips-test-2",
        "play some jazz by Salli",
        "O O B-genre O B-artist",
        "PlayMusic",
    )


def test_snips_errors(tmp_path: Path) -> None:
    base = make_snips(tmp_path)
    with pytest.raises(ValueError, match="audio_format"):
        datasets.Snips(tmp_path, "test", audio_format="flac")
    with open(base / "all.iob.snips.txt", "a") as f:
        f.write("Amy-snips-test-9 no tab here\n")
    with pytest.raises(DatasetError, match="line 7"):
        datasets.Snips(tmp_path, "test")
    (base / "all.iob.snips.txt").write_text("")
    with pytest.raises(DatasetError, match="no line for Aditi-snips-train-0"):
        datasets.Snips(tmp_path, "train", audio_format="wav").get_metadata(0)


# ----------------------------------------------------------------------------- VoxCeleb1

VOX_CLIPS = [
    "id10001/1zcIwhmdeo4/00001.wav",
    "id10001/1zcIwhmdeo4/00002.wav",
    "id10002/6WO410QOeuo/00001.wav",
    "id10270/x6uYqmx31kE/00001.wav",
]


def make_voxceleb(root: Path) -> Path:
    for k, clip in enumerate(VOX_CLIPS):
        write(root / "wav" / clip, speech(k, 1600), 16000)
    splits = ["1", "3", "1", "2"]
    (root / "iden_split.txt").write_text(
        "".join(f"{s} {c}\n" for s, c in zip(splits, VOX_CLIPS, strict=True))
    )
    (root / "veri_test.txt").write_text(
        f"1 {VOX_CLIPS[0]} {VOX_CLIPS[1]}\n0 {VOX_CLIPS[2]} {VOX_CLIPS[3]}\n"
    )
    return root / "wav"


@pytest.mark.parametrize("subset", ["train", "dev", "test"])
def test_voxceleb1_identification(tmp_path: Path, ta: ModuleType, subset: str) -> None:
    make_voxceleb(tmp_path)
    ours = datasets.VoxCeleb1Identification(tmp_path, subset)
    assert_same_dataset(ours, ta.VoxCeleb1Identification(tmp_path, subset))
    assert len(ours) == {"train": 2, "dev": 1, "test": 1}[subset]


def test_voxceleb1_verification(tmp_path: Path, ta: ModuleType) -> None:
    make_voxceleb(tmp_path)
    ours = datasets.VoxCeleb1Verification(tmp_path)
    assert_same_dataset(ours, ta.VoxCeleb1Verification(tmp_path))
    assert ours.get_metadata(1)[3:] == (0, "id10002-6WO410QOeuo-00001", "id10270-x6uYqmx31kE-00001")
    (tmp_path / "veri_test.txt").write_text("1 only-one-path\n")
    with pytest.raises(DatasetError, match="line 1"):
        datasets.VoxCeleb1Verification(tmp_path)
    (tmp_path / "iden_split.txt").unlink()
    with pytest.raises(PathNotFoundError, match="download=True"):
        datasets.VoxCeleb1Identification(tmp_path)


def test_voxceleb1_download_joins_the_parts(tmp_path: Path, file_server, monkeypatch) -> None:
    """The dev zip comes in pieces that are joined; the test zip whole; lists from meta_url."""
    staging = tmp_path / "staging"
    make_voxceleb(staging)
    served, url = file_server.root, file_server.url
    for name, clips in (("dev", VOX_CLIPS[:3]), ("test", VOX_CLIPS[3:])):
        with zipfile.ZipFile(staging / f"{name}.zip", "w") as z:
            for clip in clips:
                z.write(staging / "wav" / clip, f"wav/{clip}")
    dev = (staging / "dev.zip").read_bytes()
    half = len(dev) // 2
    (served / "vox1_dev_wav_partaa").write_bytes(dev[:half])
    (served / "vox1_dev_wav_partab").write_bytes(dev[half:])
    (served / "vox1_test_wav.zip").write_bytes((staging / "test.zip").read_bytes())
    (served / "iden_split.txt").write_bytes((staging / "iden_split.txt").read_bytes())

    def sha(name: str) -> str:
        return hashlib.sha256((served / name).read_bytes()).hexdigest()

    parts = [(f"{url}/vox1_dev_wav_part{p}", sha(f"vox1_dev_wav_part{p}")) for p in ("aa", "ab")]
    archives = datasets.voxceleb1.ARCHIVES
    monkeypatch.setitem(archives, "vox1_dev_wav.zip", parts)
    monkeypatch.setitem(archives, "vox1_test_wav.zip", [(f"{url}/vox1_test_wav.zip", "0" * 64)])
    root = tmp_path / "root"
    meta = f"{url}/iden_split.txt"
    with pytest.raises(DatasetError, match="checksum mismatch"):
        datasets.VoxCeleb1Identification(root, meta_url=meta, download=True)
    assert not (root / "wav").exists()  # nothing extracted until every archive checks out
    test_zip = [(f"{url}/vox1_test_wav.zip", sha("vox1_test_wav.zip"))]
    monkeypatch.setitem(archives, "vox1_test_wav.zip", test_zip)
    ours = datasets.VoxCeleb1Identification(root, meta_url=meta, download=True)
    assert (root / "vox1_dev_wav.zip").read_bytes() == dev
    assert len(ours) == 2 and ours.get_metadata(1)[2:] == (2, "id10002-6WO410QOeuo-00001")
    assert len(datasets.VoxCeleb1Identification(root, "dev")) == 1  # all local now
    shutil.rmtree(root / "wav")
    (root / "vox1_dev_wav.zip").unlink()
    asked = len(file_server.requests)
    again = datasets.VoxCeleb1Identification(root, meta_url=meta, download=True)
    assert len(again) == 2 and len(file_server.requests) == asked  # the parts were reused


# ----------------------------------------------------------------------------- IEMOCAP

IEMOCAP_LINES = {  # dialog -> (utterance, label)
    "Ses01F_impro01": [("Ses01F_impro01_F000", "neu"), ("Ses01F_impro01_M001", "xxx")],
    "Ses01F_script01_1": [("Ses01F_script01_1_F002", "ang"), ("Ses01F_script01_1_M000", "fru")],
}


def make_iemocap(root: Path) -> Path:
    session = root / "IEMOCAP" / "Session1"
    k = 0
    for dialog, utterances in IEMOCAP_LINES.items():
        lines = ["% [START_TIME - END_TIME] TURN_NAME EMOTION [V, A, D]\n", "\n"]
        for utterance, label in utterances:
            write(session / "sentences" / "wav" / dialog / f"{utterance}.wav", speech(k, 1600))
            lines.append(f"[{k}.0 - {k}.9]\t{utterance}\t{label}\t[2.5, 2.5, 2.5]\n")
            k += 1
        (session / "dialog" / "EmoEvaluation").mkdir(parents=True, exist_ok=True)
        (session / "dialog" / "EmoEvaluation" / f"{dialog}.txt").write_text("".join(lines))
    return session


@pytest.mark.parametrize("utterance_type", [None, "scripted", "improvised"])
def test_iemocap(tmp_path: Path, ta: ModuleType, utterance_type: str | None) -> None:
    make_iemocap(tmp_path)
    ours = datasets.IEMOCAP(tmp_path, sessions=(1,), utterance_type=utterance_type)
    theirs = ta.IEMOCAP(tmp_path, sessions=(1,), utterance_type=utterance_type)
    assert_same_dataset(ours, theirs)
    assert len(ours) == {None: 3, "scripted": 2, "improvised": 1}[utterance_type]


def test_iemocap_errors(tmp_path: Path) -> None:
    make_iemocap(tmp_path)
    with pytest.raises(PathNotFoundError, match="Session2"):
        datasets.IEMOCAP(tmp_path, sessions=(1, 2))
    with pytest.raises(ValueError, match="utterance_type"):
        datasets.IEMOCAP(tmp_path, sessions=(1,), utterance_type="read")
    with pytest.raises(PathNotFoundError, match=r"sail\.usc\.edu"):
        datasets.IEMOCAP(tmp_path / "elsewhere")


# ----------------------------------------------------------------------------- QUESST14


def make_quesst(root: Path) -> Path:
    base = root / "quesst14Database"
    keys = {
        "language_key_utterances.lst": [("Audio/quesst14_00001", "nnenglish"),
                                        ("Audio/quesst14_00002", "basque"),
                                        ("Audio/quesst14_00003", "nnenglish")],
        "language_key_dev.lst": [("dev_queries/quesst14_dev_0001", "nnenglish")],
        "language_key_eval.lst": [("eval_queries/quesst14_eval_0001", "czech")],
    }  # fmt: skip
    (base / "scoring").mkdir(parents=True)
    k = 0
    for lst, entries in keys.items():
        lines = []
        for relpath, language in entries:
            write(base / f"{relpath}.wav", speech(k, 800), 8000)
            lines.append(f"quesst14Database/{relpath}.wav {language}\n")
            k += 1
        (base / "scoring" / lst).write_text("".join(lines))
    return base


@pytest.mark.parametrize(("subset", "language", "size"), [
    ("docs", "nnenglish", 2), ("docs", None, 3), ("dev", "nnenglish", 1), ("eval", "czech", 1),
])  # fmt: skip
def test_quesst14(tmp_path: Path, ta: ModuleType, subset: str, language: str, size: int) -> None:
    make_quesst(tmp_path)
    ours = datasets.QUESST14(tmp_path, subset, language)
    assert_same_dataset(ours, ta.QUESST14(tmp_path, subset, language))
    assert len(ours) == size
    with pytest.raises(ValueError, match="language"):
        datasets.QUESST14(tmp_path, subset, "english")


# ----------------------------------------------------------------------------- DR_VCTK


def make_dr_vctk(root: Path, subset: str = "train") -> Path:
    base = root / "DR-VCTK" / "DR-VCTK"
    names = ["p226_001.wav", "p226_002.wav", "p225_010.wav"]
    lines = ["File Name\tSource\tChannel\n"] + (["---\n"] if subset == "train" else [])
    for k, name in enumerate(names):
        write(base / f"clean_{subset}set_wav_16k" / name, speech(k, 1600))
        write(base / f"device-recorded_{subset}set_wav_16k" / name, speech(k + 1, 1600))
        lines.append(f"{name}\t{['iPhone', 'laptop', 'tablet'][k]}\t{k + 1}\n")
    (base / "configurations").mkdir()
    (base / "configurations" / f"{subset}_ch_log.txt").write_text("".join(lines))
    return base


@pytest.mark.parametrize("subset", ["train", "test"])
def test_dr_vctk(tmp_path: Path, ta: ModuleType, subset: str) -> None:
    make_dr_vctk(tmp_path, subset)
    ours = datasets.DR_VCTK(tmp_path, subset)
    assert_same_dataset(ours, ta.DR_VCTK(tmp_path, subset), metadata=False)
    assert len(ours) == 3 and ours[0][4:] == ("p225", "010", "tablet", 3)


def test_dr_vctk_errors(tmp_path: Path) -> None:
    base = make_dr_vctk(tmp_path, "test")
    with pytest.raises(ValueError, match="subset"):
        datasets.DR_VCTK(tmp_path, "dev")
    with open(base / "configurations" / "test_ch_log.txt", "a") as f:
        f.write("p226_003.wav\tiPhone\n")
    with pytest.raises(DatasetError, match="line 5"):
        datasets.DR_VCTK(tmp_path, "test")
    with pytest.raises(PathNotFoundError, match=r"DR-VCTK\.zip"):
        datasets.DR_VCTK(tmp_path / "elsewhere")


def test_dr_vctk_extracts_an_archive_already_there_after_checking_it(tmp_path: Path) -> None:
    base = make_dr_vctk(tmp_path / "staging", "test")
    root = tmp_path / "root"
    root.mkdir()
    with zipfile.ZipFile(root / "DR-VCTK.zip", "w") as z:
        for path in sorted(base.rglob("*")):
            z.write(path, path.relative_to(tmp_path / "staging").as_posix())
    with pytest.raises(DatasetError, match="checksum mismatch of the file present"):
        datasets.DR_VCTK(root, "test")  # a home-made zip: not the published digest
    assert not (root / "DR-VCTK").exists()
    digest = hashlib.sha256((root / "DR-VCTK.zip").read_bytes()).hexdigest()
    pinned = f"http://unused.invalid/DR-VCTK.zip#sha256={digest}"
    assert len(datasets.DR_VCTK(root, "test", url=pinned)) == 3  # no request made


# ----------------------------------------------------------------------------- DataLoader

MAKERS: dict[str, tuple[Callable[[Path], object], Callable[[Path], Any]]] = {
    "SPEECHCOMMANDS": (make_speechcommands, datasets.SPEECHCOMMANDS),
    "YESNO": (make_yesno, datasets.YESNO),
    "LJSPEECH": (make_ljspeech, datasets.LJSPEECH),
    "GTZAN": (make_gtzan, datasets.GTZAN),
    "CMUARCTIC": (make_cmuarctic, datasets.CMUARCTIC),
    "CMUDict": (make_cmudict, datasets.CMUDict),
    "VCTK_092": (make_vctk, datasets.VCTK_092),
    "COMMONVOICE": (make_commonvoice, datasets.COMMONVOICE),
    "TEDLIUM": (make_tedlium, lambda root: datasets.TEDLIUM(root, subset="dev")),
    "LibriLightLimited": (make_librilight, datasets.LibriLightLimited),
    "LibriSpeechBiasing": (
        make_librispeech,
        lambda root: datasets.LibriSpeechBiasing(root, "dev-clean"),
    ),
    "MUSDB_HQ": (make_musdb, lambda root: datasets.MUSDB_HQ(root, "train")),
    "FluentSpeechCommands": (make_fsc, datasets.FluentSpeechCommands),
    "Snips": (make_snips, lambda root: datasets.Snips(root, "train", audio_format="wav")),
    "VoxCeleb1Identification": (make_voxceleb, datasets.VoxCeleb1Identification),
    "VoxCeleb1Verification": (make_voxceleb, datasets.VoxCeleb1Verification),
    "IEMOCAP": (make_iemocap, lambda root: datasets.IEMOCAP(root, sessions=(1,))),
    "QUESST14": (make_quesst, lambda root: datasets.QUESST14(root, "docs")),
    "DR_VCTK": (make_dr_vctk, datasets.DR_VCTK),
}


@pytest.mark.parametrize("name", list(MAKERS))
def test_in_a_dataloader(tmp_path: Path, name: str) -> None:
    make, cls = MAKERS[name]
    make(tmp_path)
    ds = cls(tmp_path)
    workers = 2 if name == "SPEECHCOMMANDS" else 0
    context = "fork" if workers else None
    loader = DataLoader(ds, batch_size=None, num_workers=workers, multiprocessing_context=context)
    items = list(loader)
    assert len(items) == len(ds)
    for i, item in enumerate(items):
        assert_same_item(tuple(item), ds[i])  # the loader hands tuples on as lists
