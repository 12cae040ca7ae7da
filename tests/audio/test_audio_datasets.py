"""Datasets built in tmp_path from real speech, download from a loopback HTTP server, collation."""

from __future__ import annotations

import csv
import functools
import hashlib
import socket
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from torch.utils.data import DataLoader

from trivium.audio.datasets import (
    LIBRISPEECH,
    LIBRITTS,
    AudioFolder,
    LibriMix,
    WSJ0Mix,
    pad_collate,
)
from trivium.core.download import download_url
from trivium.core.errors import DatasetError, EmptyInputError, SkippedSamplesWarning

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"
SPEAKERS = {  # speaker id -> (chapter id, [utterance names in sb-ASR_train.csv])
    "19": ("198", ["spk1_snt1", "spk1_snt4"]),
    "26": ("495", ["spk2_snt1", "spk2_snt2"]),
}


@functools.cache
def transcripts() -> dict[str, str]:
    """Real transcripts where the assets have them (sb-ASR_train.csv), else placeholders."""
    with open(AUDIO / "sb-ASR_train.csv", newline="") as f:
        known = {row["ID"]: row["wrd"].upper() for row in csv.DictReader(f)}
    names = [name for _, names in SPEAKERS.values() for name in names]
    return {name: known.get(name, f"PLACEHOLDER FOR {name.upper()}") for name in names}


def speech(name: str) -> tuple[np.ndarray, int]:
    return sf.read(AUDIO / f"sb-{name}.wav", dtype="int16")


def make_librispeech(root: Path, split: str = "dev-clean") -> list[tuple[str, str, int, int, int]]:
    """LibriSpeech layout with real speech as FLAC; returns the expected items, sorted."""
    expected = []
    for speaker, (chapter, names) in SPEAKERS.items():
        folder = root / "LibriSpeech" / split / speaker / chapter
        folder.mkdir(parents=True)
        lines = []
        for utt, name in enumerate(names):
            utt_id = f"{speaker}-{chapter}-{utt:04d}"
            data, sr = speech(name)
            sf.write(folder / f"{utt_id}.flac", data, sr, subtype="PCM_16")
            lines.append(f"{utt_id} {transcripts()[name]}")
            expected.append((utt_id, transcripts()[name], int(speaker), int(chapter), utt))
        (folder / f"{speaker}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n")
    return sorted(expected)


def test_librispeech_items(tmp_path: Path) -> None:
    expected = make_librispeech(tmp_path)
    ds = LIBRISPEECH(tmp_path, url="dev-clean")
    assert len(ds) == 4
    for i, (utt_id, text, speaker, chapter, utt) in enumerate(expected):
        waveform, sr, transcript, spk, chap, u = ds[i]
        path = tmp_path / "LibriSpeech" / "dev-clean" / str(speaker) / str(chapter)
        reference, ref_sr = sf.read(path / f"{utt_id}.flac", dtype="float32")
        assert (sr, transcript, spk, chap, u) == (ref_sr, text, speaker, chapter, utt)
        assert waveform.shape == (1, len(reference))
        np.testing.assert_array_equal(waveform[0].numpy(), reference)
        meta = ds.get_metadata(i)
        assert meta == (f"dev-clean/{speaker}/{chapter}/{utt_id}.flac", 16000, text, spk, chap, u)
    assert ds[0][2] == "THE CHILD ALMOST HURT THE SMALL DOG"


def test_librispeech_missing_and_bad_layouts(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="download=True") as info:
        LIBRISPEECH(tmp_path, url="test-clean")
    assert "test-clean.tar.gz" in str(info.value)
    with pytest.raises(ValueError, match="invalid url"):
        LIBRISPEECH(tmp_path, url="train-clean-9000")
    make_librispeech(tmp_path)
    trans = tmp_path / "LibriSpeech/dev-clean/19/198/19-198.trans.txt"
    trans.write_text("19-198-0000 ONLY ONE\n")
    ds = LIBRISPEECH(tmp_path, url="dev-clean")
    with pytest.raises(DatasetError, match="no transcript for 19-198-0001"):
        ds[1]
    trans.write_text("19-198-0000\n")
    with pytest.raises(DatasetError, match="no transcript"):
        LIBRISPEECH(tmp_path, url="dev-clean")


def test_libritts_items(tmp_path: Path) -> None:
    folder = tmp_path / "LibriTTS" / "test-clean" / "19" / "198"
    folder.mkdir(parents=True)
    data, _ = speech("spk1_snt1")
    uid = "19_198_000000_000003"
    sf.write(folder / f"{uid}.wav", data, 24000)
    (folder / f"{uid}.original.txt").write_text("The child almost hurt the small dog.")
    (folder / f"{uid}.normalized.txt").write_text("The child almost hurt the small dog")
    ds = LIBRITTS(tmp_path, url="test-clean")
    assert len(ds) == 1
    waveform, sr, original, normalized, speaker, chapter, utt = ds[0]
    assert (sr, speaker, chapter, utt) == (24000, 19, 198, uid)
    assert original.endswith("dog.") and normalized.endswith("dog")
    np.testing.assert_array_equal(waveform[0].numpy(), data / 32768.0)
    (folder / f"{uid}.normalized.txt").unlink()
    with pytest.raises(DatasetError, match=r"normalized\.txt"):
        ds[0]
    with pytest.raises(DatasetError, match="LIBRITTS"):
        LIBRITTS(tmp_path, url="dev-other")


def write_mix(base: Path, folders: list[str], sr: int, names: list[str]) -> None:
    for i, name in enumerate(names):
        clips = [
            speech(n)[0][:8000].astype(np.float32) / 32768
            for n in ("spk1_snt1", "spk2_snt1", "spk2_snt2")
        ]
        for folder in folders:
            (base / folder).mkdir(parents=True, exist_ok=True)
            if folder.startswith("s"):
                data = clips[int(folder[1:]) - 1] * (i + 1) / 4
            else:
                data = sum(clips[: len([f for f in folders if f.startswith("s")])]) * (i + 1) / 4
            sf.write(base / folder / name, data, sr, subtype="FLOAT")


@pytest.mark.parametrize("num_speakers", [2, 3])
def test_librimix(tmp_path: Path, num_speakers: int) -> None:
    sources = [f"s{i + 1}" for i in range(num_speakers)]
    base = tmp_path / f"Libri{num_speakers}Mix" / "wav16k" / "max" / "test"
    write_mix(base, ["mix_clean", "mix_both", *sources], 16000, ["b.wav", "a.wav"])
    ds = LibriMix(tmp_path, "test", num_speakers, 16000, "sep_clean", "max")
    assert len(ds) == 2
    sr, mixture, srcs = ds[0]
    assert sr == 16000 and mixture.shape == (1, 8000) and len(srcs) == num_speakers
    # a.wav sorts first; the mixture is the sum of its sources, as written
    torch.testing.assert_close(mixture, sum(srcs), atol=1e-6, rtol=0)
    np.testing.assert_array_equal(srcs[0][0].numpy(), sf.read(base / "s1" / "a.wav")[0])
    assert ds.get_metadata(1)[1] == "wav16k/max/test/mix_clean/b.wav"
    _, _, targets = LibriMix(tmp_path, "test", num_speakers, 16000, "enh_both", "max")[0]
    assert len(targets) == 1 and torch.equal(targets[0], mixture)


def test_librimix_errors(tmp_path: Path) -> None:
    base = tmp_path / "Libri2Mix" / "wav8k" / "min" / "dev"
    with pytest.raises(DatasetError, match="LibriMix scripts"):
        LibriMix(tmp_path, "dev")
    write_mix(base, ["mix_clean", "s1", "s2"], 16000, ["x.wav"])  # wrong rate for wav8k
    with pytest.raises(DatasetError, match="sample rate 16000"):
        LibriMix(tmp_path, "dev")[0]
    for bad in ({"num_speakers": 4}, {"sample_rate": 44100}, {"task": "x"}, {"mode": "avg"}):
        with pytest.raises(ValueError):
            LibriMix(tmp_path, "dev", **bad)


def test_wsj0mix_layout(tmp_path: Path) -> None:
    write_mix(tmp_path / "tt", ["mix", "s1", "s2"], 8000, ["001.wav", "002.wav"])
    ds = WSJ0Mix(tmp_path / "tt", num_speakers=2, sample_rate=8000)
    sr, mixture, sources = ds[1]
    assert sr == 8000 and len(ds) == 2 and len(sources) == 2
    torch.testing.assert_close(mixture, sources[0] + sources[1], atol=1e-6, rtol=0)
    (tmp_path / "tt" / "s2" / "002.wav").unlink()
    with pytest.raises(DatasetError, match=r"002\.wav"):
        ds[1]


def test_audio_folder(tmp_path: Path) -> None:
    for label, names in (("yes", ["spk1_snt1", "spk1_snt4"]), ("no", ["spk2_snt1"])):
        (tmp_path / label / "nested").mkdir(parents=True)
        for name in names:
            data, sr = speech(name)
            sf.write(tmp_path / label / "nested" / f"{name}.FLAC", data, sr)
    (tmp_path / "yes" / "notes.txt").write_text("not audio")
    ds = AudioFolder(tmp_path)
    assert ds.classes == ["no", "yes"] and ds.class_to_idx == {"no": 0, "yes": 1}
    assert len(ds) == 3 and ds.targets == [0, 1, 1]
    waveform, sr, label = ds[0]
    assert (sr, label) == (16000, 0)
    np.testing.assert_array_equal(waveform[0].numpy(), speech("spk2_snt1")[0] / 32768.0)
    onehot = AudioFolder(tmp_path, target_transform=lambda t: torch.eye(2)[t])
    assert onehot[2][2].tolist() == [0.0, 1.0]
    with pytest.raises(DatasetError, match="no files"):
        AudioFolder(tmp_path, extensions=(".mp3",))
    with pytest.raises(DatasetError, match="no such file or directory"):
        AudioFolder(tmp_path / "missing")


def zero_byte_folder(root: Path) -> Path:
    """yes/a.wav is empty (0 bytes); yes/b.wav and no/c.wav are real speech."""
    for label in ("yes", "no"):
        (root / label).mkdir()
    (root / "yes" / "a.wav").write_bytes(b"")
    data, sr = speech("spk1_snt1")
    sf.write(root / "yes" / "b.wav", data[:800], sr)
    sf.write(root / "no" / "c.wav", data[800:1600], sr)
    return root / "yes" / "a.wav"


def test_audio_folder_a_zero_byte_wav_raises_naming_it(tmp_path: Path) -> None:
    empty = zero_byte_folder(tmp_path)
    with pytest.raises(sf.LibsndfileError):  # the reference refuses it too
        sf.read(empty)
    ds = AudioFolder(tmp_path)
    assert [p.name for p, _ in ds.samples] == ["c.wav", "a.wav", "b.wav"]
    with pytest.raises(EmptyInputError) as caught:
        ds[1]
    assert (
        caught.value.path == str(empty) and str(caught.value) == f"{empty}: empty input (0 bytes)"
    )
    with pytest.raises(ValueError, match="on_error"):
        AudioFolder(tmp_path, on_error="ignore")


def test_audio_folder_skip_puts_the_next_readable_file_in_place(tmp_path: Path) -> None:
    empty = zero_byte_folder(tmp_path)
    ds = AudioFolder(tmp_path, on_error="skip")
    with pytest.warns(SkippedSamplesWarning, match=r"a\.wav: empty input") as caught:
        waveform, sr, label = ds[1]
    assert len(caught) == 1
    reference, rate = sf.read(tmp_path / "yes" / "b.wav", dtype="float32")
    np.testing.assert_array_equal(waveform[0].numpy(), reference)
    assert (sr, label) == (rate, 1) and ds.skipped == 1 and ds.skipped_files == [empty]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once only
        assert ds[1][2] == 1
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    assert [int(item[2]) for item in loader] == [0, 1, 1]
    for name in ("b.wav", "c.wav"):
        (tmp_path / ("yes" if name == "b.wav" else "no") / name).write_bytes(b"")
    with pytest.warns(SkippedSamplesWarning), pytest.raises(DatasetError, match="none of the 3"):
        AudioFolder(tmp_path, on_error="skip")[0]


def test_pad_collate_with_dataloader(tmp_path: Path) -> None:
    make_librispeech(tmp_path)
    ds = LIBRISPEECH(tmp_path, url="dev-clean")
    loader = DataLoader(ds, batch_size=3, collate_fn=pad_collate)
    waveforms, rates, texts, speakers, _chapters, _utts, lengths = next(iter(loader))
    expected_lengths = [ds[i][0].shape[-1] for i in range(3)]
    assert lengths.tolist() == expected_lengths
    assert waveforms.shape == (3, 1, max(expected_lengths))
    for i, n in enumerate(expected_lengths):
        assert torch.equal(waveforms[i, :, :n], ds[i][0])
        assert bool((waveforms[i, :, n:] == 0).all())
    assert rates.tolist() == [16000] * 3 and texts == [ds[i][2] for i in range(3)]
    assert speakers.dtype == torch.int64


def test_pad_collate_shapes_and_errors() -> None:
    items = [
        (8000, torch.ones(1, 5), [torch.ones(1, 5), torch.ones(1, 5)]),
        (8000, torch.ones(1, 3), [torch.ones(1, 3), torch.ones(1, 3)]),
    ]
    rates, mixtures, sources, lengths = pad_collate(items)
    assert rates.tolist() == [8000, 8000]
    assert mixtures.shape == (2, 1, 5) and sources.shape == (2, 2, 1, 5)
    assert lengths.tolist() == [5, 3] and float(sources[1, :, :, 3:].abs().sum()) == 0
    padded, lengths = pad_collate([torch.ones(2, 4), torch.ones(2, 7)], padding_value=-1.0)
    assert padded.shape == (2, 2, 7) and float(padded[0, 0, 4]) == -1.0
    with pytest.raises(ValueError, match="every dimension but the last"):
        pad_collate([torch.ones(1, 4), torch.ones(2, 4)])
    with pytest.raises(ValueError, match="empty"):
        pad_collate([])
    with pytest.raises(ValueError, match="no tensor"):
        pad_collate([(1, "a")])


# ----------------------------------------------------------------------------- download


def build_archive(tmp_path: Path, served: Path, name: str) -> str:
    """A LibriSpeech-style dev-clean tar.gz in ``served``; returns its SHA-256."""
    staging = tmp_path / "staging"
    make_librispeech(staging)
    with tarfile.open(served / name, "w:gz") as tar:
        tar.add(staging / "LibriSpeech", arcname="LibriSpeech")
    return hashlib.sha256((served / name).read_bytes()).hexdigest()


def test_download_from_loopback_server(tmp_path: Path, file_server) -> None:
    base, served = file_server.url, file_server.root
    digest = build_archive(tmp_path, served, "dev-clean.tar.gz")
    root = tmp_path / "root"
    ds = LIBRISPEECH(root, url=f"{base}/dev-clean.tar.gz#sha256={digest}", download=True)
    assert len(ds) == 4 and ds[3][2] == transcripts()["spk2_snt2"]
    assert (root / "dev-clean.tar.gz").is_file()
    again = LIBRISPEECH(root, url="dev-clean")  # found locally now, no download
    assert len(again) == 4


def test_download_checksum_mismatch(tmp_path: Path, file_server) -> None:
    base, served = file_server.url, file_server.root
    build_archive(tmp_path, served, "dev-clean.tar.gz")
    root = tmp_path / "root"
    # No digest in the URL: the archive name's known OpenSLR digest applies, and this
    # home-made archive does not have it.
    with pytest.raises(DatasetError, match="checksum mismatch") as info:
        LIBRISPEECH(root, url=f"{base}/dev-clean.tar.gz", download=True)
    assert "76f87d090650617fca0cac8f88b9416e0ebf80350acb97b343a85fa903728ab3" in str(info.value)
    assert not (root / "dev-clean.tar.gz").exists() and not (root / "LibriSpeech").exists()
    with pytest.raises(DatasetError, match="expected sha256 0000"):
        LIBRISPEECH(root, url=f"{base}/dev-clean.tar.gz#sha256={'0' * 64}", download=True)


def test_download_unreachable_and_missing(tmp_path: Path, file_server) -> None:
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DatasetError, match="network") as info:
        LIBRITTS(tmp_path, url=f"http://127.0.0.1:{port}/dev-clean.tar.gz", download=True)
    message = str(info.value)
    assert "place it at" in message and str(tmp_path / "dev-clean.tar.gz") in message
    assert "LibriTTS/dev-clean" in message
    base = file_server.url
    with pytest.raises(DatasetError, match="HTTP 404"):
        download_url(f"{base}/nothing.tar.gz", tmp_path / "nothing.tar.gz")
