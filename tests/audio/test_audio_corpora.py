"""The embedded espeak-ng corpus: deterministic, in the three layouts, voices held out."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess

import numpy as np
import pytest
import scipy.signal
import soundfile as sf
import torch

from trivium.audio.corpora import (
    HELD_OUT_VOICES,
    TRAIN_VOICES,
    VOCABULARY,
    build_corpus,
    plan_corpus,
    synthesize,
)
from trivium.audio.datasets import LIBRISPEECH, LIBRITTS, LibriMix
from trivium.core.errors import DatasetError

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")

SIZES = {"num_train": 4, "num_test": 4, "num_mixtures": (3, 2)}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus"), **SIZES)


def digest(root) -> dict[str, str]:
    """Hashes of every text file and of every audio file's samples (float WAV headers
    hold a timestamp)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.suffix in (".wav", ".flac"):
            data = sf.read(p, dtype="float32")[0].tobytes()
        elif p.is_file():
            data = p.read_bytes()
        else:
            continue
        out[str(p.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def test_librispeech_layout_and_transcripts(corpus):
    plan = plan_corpus(SIZES["num_train"], SIZES["num_test"])
    train = LIBRISPEECH(corpus, url="train-clean-100")
    test = LIBRISPEECH(corpus, url="test-clean")
    assert (len(train), len(test)) == (4, 4)
    expected = {(u.speaker_id, u.chapter_id, u.index): u.text for u in plan}
    for dataset in (train, test):
        for i in range(len(dataset)):
            waveform, sample_rate, text, speaker, chapter, utt = dataset[i]
            assert sample_rate == 16000 and waveform.shape[0] == 1
            assert 0.3 < waveform.shape[-1] / 16000 < 6
            assert 0.2 < float(waveform.abs().max()) <= 0.9 + 1e-3
            assert text == expected[(speaker, chapter, utt)]
            assert all(word.lower() in VOCABULARY for word in text.split())


def test_voices_are_held_out(corpus):
    plan = plan_corpus(SIZES["num_train"], SIZES["num_test"])
    train_speakers = {u.speaker_id for u in plan if u.split == "train-clean-100"}
    test_speakers = {u.speaker_id for u in plan if u.split == "test-clean"}
    assert not train_speakers & test_speakers
    assert {u.voice for u in plan if u.split == "test-clean"} <= set(HELD_OUT_VOICES)
    assert not set(HELD_OUT_VOICES) & set(TRAIN_VOICES)
    speakers = {LIBRISPEECH(corpus, url="test-clean")[i][3] for i in range(4)}
    assert speakers == test_speakers


def test_libritts_layout_matches_librispeech(corpus):
    tts = LIBRITTS(corpus, url="test-clean")
    speech = LIBRISPEECH(corpus, url="test-clean")
    assert len(tts) == len(speech)
    for i in range(len(tts)):
        waveform, sample_rate, _, normalized, speaker, chapter, _ = tts[i]
        ref = speech[i]
        assert (sample_rate, speaker, chapter) == (16000, ref[3], ref[4])
        assert normalized.rstrip(".").upper() == ref[2]
        # PCM_16 wav vs FLAC of the same samples
        assert torch.equal(waveform, ref[0])


def test_librimix_mixtures(corpus):
    train = LibriMix(corpus, subset="train-100", sample_rate=16000)
    test = LibriMix(corpus, subset="test", sample_rate=16000)
    assert (len(train), len(test)) == (3, 2)
    speech = {
        LIBRISPEECH(corpus, url=u)[i][0].shape[-1]
        for u in ("train-clean-100", "test-clean")
        for i in range(4)
    }
    for sample_rate, mixture, (s1, s2) in (train[0], test[1]):
        assert mixture.shape[-1] in speech  # "min" mode: cut to the shorter utterance
        assert sample_rate == 16000
        torch.testing.assert_close(s1 + s2, mixture, rtol=0, atol=1e-6)
        assert float(mixture.abs().max()) <= 0.9 + 1e-5
        # two different voices: the sources are far from each other
        corr = float(torch.nn.functional.cosine_similarity(s1, s2).abs())
        assert corr < 0.5


def test_synthesize_matches_espeak_resampled_with_scipy():
    text, voice = "green house", "en-us+m1"
    ours = synthesize(text, voice, 160, 50)[0].numpy()
    raw = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", "160", "-p", "50", "--stdout", text],
        capture_output=True,
        check=True,
    ).stdout
    data, rate = sf.read(io.BytesIO(raw), dtype="float32")
    reference = scipy.signal.resample_poly(data, 16000, rate)
    n = min(len(ours), len(reference))
    assert abs(len(ours) - len(reference)) <= 1
    corr = np.corrcoef(ours[:n], reference[:n])[0, 1]
    assert corr > 0.99


def test_deterministic_and_cached(corpus, tmp_path):
    again = build_corpus(tmp_path / "again", **SIZES)
    assert digest(again) == digest(corpus)
    manifest = again / "corpus.json"
    stamp = manifest.stat().st_mtime_ns
    build_corpus(again, **SIZES)  # same settings: nothing is rewritten
    assert manifest.stat().st_mtime_ns == stamp
    build_corpus(again, 2, 2, (1, 1))  # new settings: rebuilt
    assert len(LIBRISPEECH(again, url="train-clean-100")) == 2


def test_plan_is_seeded():
    assert plan_corpus(6, 2, seed=1) == plan_corpus(6, 2, seed=1)
    assert plan_corpus(6, 2, seed=1) != plan_corpus(6, 2, seed=2)
    with pytest.raises(ValueError):
        plan_corpus(-1, 2)


def test_errors(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="empty"):
        synthesize("  ", "en-us")
    with pytest.raises(ValueError, match="two speakers"):
        build_corpus(tmp_path / "one", 1, 0, (1, 0))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(DatasetError, match="install"):
        synthesize("hello", "en-us")


def test_missing_mixtures_error_names_the_remedy(tmp_path):
    root = build_corpus(tmp_path / "speech", 4, 2, (0, 0))  # speech only
    with pytest.raises(DatasetError) as error:
        LibriMix(root, subset="test", sample_rate=16000)
    message = str(error.value)
    assert "LibriMix scripts" not in message
    assert "build_corpus(" in message and "num_mixtures=" in message
    assert "examples/convtasnet_librimix/train.py" in message
    # a root that is no embedded corpus still points to the LibriMix scripts
    with pytest.raises(DatasetError, match="LibriMix scripts"):
        LibriMix(tmp_path, subset="test", sample_rate=16000)


def test_speech_and_mixtures_are_cached_apart(corpus, tmp_path):
    root = tmp_path / "staged"
    build_corpus(root, SIZES["num_train"], SIZES["num_test"], num_mixtures=None)
    assert not (root / "Libri2Mix").exists()
    speech = {p: p.stat().st_mtime_ns for p in root.rglob("*.flac")}
    # the mixtures are made later from the files on disk: the same corpus as in one go
    build_corpus(root, **SIZES)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.flac")} == speech
    assert digest(root) == digest(corpus)
    # None keeps the mixtures there are; a complete corpus is not rewritten
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    build_corpus(root, SIZES["num_train"], SIZES["num_test"], num_mixtures=None)
    build_corpus(root, **SIZES)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} == stamps
    # files gone behind the manifest's back are made again
    shutil.rmtree(root / "Libri2Mix" / "wav16k" / "min" / "test")
    (root / "LibriTTS" / "test-clean" / "900" / "1000" / "900_1000_000000_000000.wav").unlink()
    build_corpus(root, **SIZES)
    assert digest(root) == digest(corpus)


def test_format_2_manifest_is_reused(tmp_path):
    root = build_corpus(tmp_path / "old", 2, 2, (1, 1))
    record = json.loads((root / "corpus.json").read_text())
    speech = record["speech"]
    old = {  # what build_corpus recorded before the speech and the mixtures were apart
        "settings": {
            "version": speech["version"],
            "num_train": 2,
            "num_test": 2,
            "num_mixtures": [1, 1],
            "seed": 0,
        },
        "plan_sha256": speech["plan_sha256"],
    }
    (root / "corpus.json").write_text(json.dumps(old))
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*.wav")}
    build_corpus(root, 2, 2, (1, 1))
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.wav")} == stamps
