"""An embedded speech corpus synthesised with espeak-ng: real speech with no download.

:func:`build_corpus` writes a deterministic corpus of short sentences over a fixed
vocabulary, spoken by several espeak-ng voices at several speeds and pitches,
resampled to 16 kHz, in three standard layouts the datasets of
:mod:`trivium.audio.datasets` read:

* LibriSpeech: ``root/LibriSpeech/<split>/<speaker>/<chapter>/*.flac`` + ``*.trans.txt``
* LibriTTS: ``root/LibriTTS/<split>/<speaker>/<chapter>/*.wav`` + ``*.normalized.txt``
  (16 kHz here, where the real LibriTTS is 24 kHz)
* LibriMix: ``root/Libri2Mix/wav16k/min/<subset>/{mix_clean,s1,s2}/*.wav``, two
  speakers of the same split mixed at a random level difference, cut to the shorter.

Splits are by voice: ``train-clean-100`` (LibriMix ``train-100``) uses the training
voices, ``test-clean`` (LibriMix ``test``) the held-out ones, so evaluation is on
unseen speakers. A finished corpus is reused when its settings match
(``corpus.json`` records them). Needs the ``espeak-ng`` program (Debian/Ubuntu:
``apt-get install espeak-ng``).

Example:
    >>> import tempfile
    >>> from trivium.audio.datasets import LIBRISPEECH
    >>> root = build_corpus(tempfile.mkdtemp(), num_train=2, num_test=2, num_mixtures=(1, 1))
    >>> waveform, sample_rate, text, *_ = LIBRISPEECH(root, url="test-clean")[0]
    >>> sample_rate, waveform.shape[0], text.isupper()
    (16000, 1, True)
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import soundfile as sf
import torch
from torch import Tensor

from trivium.audio.functional import resample
from trivium.audio.io import save
from trivium.core.errors import DatasetError
from trivium.core.progress import progress

__all__ = [
    "HELD_OUT_VOICES",
    "TRAIN_VOICES",
    "VOCABULARY",
    "Utterance",
    "build_corpus",
    "plan_corpus",
    "synthesize",
]

SAMPLE_RATE = 16000
TRAIN_SPLIT, TEST_SPLIT = "train-clean-100", "test-clean"
MIX_SUBSETS = {TRAIN_SPLIT: "train-100", TEST_SPLIT: "test"}

VOCABULARY = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "red",
    "green",
    "blue",
    "black",
    "white",
    "yellow",
    "brown",
    "cat",
    "dog",
    "bird",
    "fish",
    "horse",
    "cow",
    "sheep",
    "big",
    "small",
    "old",
    "new",
    "hot",
    "cold",
    "run",
    "walk",
    "jump",
    "sit",
    "stop",
    "go",
    "see",
    "the",
    "a",
    "and",
    "on",
    "in",
    "under",
    "over",
    "near",
    "house",
    "tree",
    "car",
    "boat",
    "road",
    "river",
    "hill",
)

# espeak-ng language + variant; one voice = one speaker id.
TRAIN_VOICES = (
    "en-us+m1",
    "en-us+f1",
    "en-us+m3",
    "en-us+f3",
    "en+m2",
    "en+f2",
    "en+m4",
    "en+f4",
    "en-gb-x-rp+m5",
    "en-029+m6",
)
HELD_OUT_VOICES = ("en-us+m7", "en+f5")
SPEEDS = (140, 160, 180)  # words per minute
PITCHES = (35, 50, 65)  # 0-99
WORDS_PER_SENTENCE = (3, 6)

_FORMAT_VERSION = 2


@dataclass(frozen=True)
class Utterance:
    """One sentence to synthesise and where it goes."""

    split: str
    speaker_id: int
    chapter_id: int
    index: int
    voice: str
    speed: int
    pitch: int
    text: str

    @property
    def librispeech_id(self) -> str:
        """``<speaker>-<chapter>-<index:04d>``."""
        return f"{self.speaker_id}-{self.chapter_id}-{self.index:04d}"

    @property
    def libritts_id(self) -> str:
        """``<speaker>_<chapter>_000000_<index:06d>``."""
        return f"{self.speaker_id}_{self.chapter_id}_000000_{self.index:06d}"


def _check_espeak() -> str:
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise DatasetError(
            "the embedded corpus needs the espeak-ng program; install it "
            "(Debian/Ubuntu: apt-get install espeak-ng)"
        )
    return exe


def synthesize(text: str, voice: str, speed: int = 160, pitch: int = 50) -> Tensor:
    """Speak ``text`` with espeak-ng; a 16 kHz float32 ``[1, time]`` waveform.

    Example:
        >>> synthesize("hello", "en-us").shape[0]
        1
    """
    if not text.strip():
        raise ValueError("synthesize: text is empty")
    exe = _check_espeak()
    cmd = [exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text]
    result = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    if result.returncode != 0 or not result.stdout:
        message = result.stderr.decode(errors="replace").strip()
        raise DatasetError(f"espeak-ng failed for voice {voice!r}: {message or 'no audio'}")
    # espeak-ng streams a WAV whose header has no final length: read it as raw PCM.
    data, rate = sf.read(io.BytesIO(result.stdout), dtype="float32", always_2d=True)
    if data.shape[0] == 0:
        raise DatasetError(f"espeak-ng produced no audio for {text!r} (voice {voice!r})")
    waveform = torch.from_numpy(data.T.copy())
    return resample(waveform, rate, SAMPLE_RATE)


def _sentence(rng: random.Random) -> str:
    n = rng.randint(*WORDS_PER_SENTENCE)
    return " ".join(rng.choice(VOCABULARY) for _ in range(n)).upper()


def plan_corpus(num_train: int = 300, num_test: int = 60, seed: int = 0) -> list[Utterance]:
    """The utterances of the corpus: sentences, voices, speeds and pitches, from ``seed``.

    Training utterances cycle through :data:`TRAIN_VOICES`, test ones through
    :data:`HELD_OUT_VOICES`.

    Example:
        >>> [u.voice for u in plan_corpus(2, 1)]
        ['en-us+m1', 'en-us+f1', 'en-us+m7']
    """
    if num_train < 0 or num_test < 0:
        raise ValueError(f"utterance counts must be >= 0, got {num_train}, {num_test}")
    rng = random.Random(seed)
    plan = []
    for split, count, voices, first_speaker in (
        (TRAIN_SPLIT, num_train, TRAIN_VOICES, 100),
        (TEST_SPLIT, num_test, HELD_OUT_VOICES, 900),
    ):
        for i in range(count):
            v = i % len(voices)
            plan.append(
                Utterance(
                    split=split,
                    speaker_id=first_speaker + v,
                    chapter_id=1000 + v,
                    index=i // len(voices),
                    voice=voices[v],
                    speed=rng.choice(SPEEDS),
                    pitch=rng.choice(PITCHES),
                    text=_sentence(rng),
                )
            )
    return plan


def _scaled(waveform: Tensor, rng: random.Random) -> Tensor:
    peak = waveform.abs().max().clamp_min(1e-6)
    # On the 16-bit grid: the mixtures are then made of exactly the samples in the
    # FLAC files, whatever rounding the resampler's floating point had.
    return torch.round(waveform * (rng.uniform(0.3, 0.9) / peak) * 32768) / 32768


def _write_utterance(root: Path, utt: Utterance, waveform: Tensor) -> None:
    speech = root / "LibriSpeech" / utt.split / str(utt.speaker_id) / str(utt.chapter_id)
    speech.mkdir(parents=True, exist_ok=True)
    save(speech / f"{utt.librispeech_id}.flac", waveform, SAMPLE_RATE)
    tts = root / "LibriTTS" / utt.split / str(utt.speaker_id) / str(utt.chapter_id)
    tts.mkdir(parents=True, exist_ok=True)
    save(tts / f"{utt.libritts_id}.wav", waveform, SAMPLE_RATE, subtype="PCM_16")
    sentence = utt.text.capitalize() + "."
    (tts / f"{utt.libritts_id}.original.txt").write_text(sentence, encoding="utf-8")
    (tts / f"{utt.libritts_id}.normalized.txt").write_text(sentence, encoding="utf-8")


def _write_transcripts(root: Path, plan: Sequence[Utterance]) -> None:
    chapters: dict[Path, list[str]] = {}
    for utt in plan:
        folder = root / "LibriSpeech" / utt.split / str(utt.speaker_id) / str(utt.chapter_id)
        chapters.setdefault(folder, []).append(f"{utt.librispeech_id} {utt.text}")
    for folder, lines in chapters.items():
        name = f"{folder.parent.name}-{folder.name}.trans.txt"
        (folder / name).write_text("\n".join(sorted(lines)) + "\n", encoding="utf-8")


def _write_mixtures(
    root: Path,
    plan: Sequence[Utterance],
    waves: Sequence[Tensor],
    split: str,
    count: int,
    rng: random.Random,
) -> None:
    members = [i for i, u in enumerate(plan) if u.split == split]
    base = root / "Libri2Mix" / "wav16k" / "min" / MIX_SUBSETS[split]
    for folder in ("mix_clean", "s1", "s2"):
        (base / folder).mkdir(parents=True, exist_ok=True)
    for n in range(count):
        a = rng.choice(members)
        others = [i for i in members if plan[i].speaker_id != plan[a].speaker_id]
        if not others:
            raise ValueError(f"split {split} needs two speakers to make mixtures")
        b = rng.choice(others)
        length = min(waves[a].shape[-1], waves[b].shape[-1])
        gain_db = rng.uniform(-5.0, 5.0)
        s1 = waves[a][..., :length]
        s2 = (
            waves[b][..., :length]
            * (s1.pow(2).mean() / waves[b][..., :length].pow(2).mean()).clamp_min(1e-12).sqrt()
            * 10 ** (gain_db / 20)
        )
        peak = (s1 + s2).abs().max().clamp_min(1e-6)
        scale = min(1.0, 0.9 / float(peak))
        s1, s2 = s1 * scale, s2 * scale
        name = f"{plan[a].librispeech_id}_{plan[b].librispeech_id}_{n:04d}.wav"
        # FLOAT keeps s1 + s2 == mix_clean exactly.
        for folder, wave in (("s1", s1), ("s2", s2), ("mix_clean", s1 + s2)):
            save(base / folder / name, wave, SAMPLE_RATE, subtype="FLOAT")


def build_corpus(
    root: str | os.PathLike[str],
    num_train: int = 300,
    num_test: int = 60,
    num_mixtures: tuple[int, int] = (600, 100),
    seed: int = 0,
    num_workers: int = 2,
) -> Path:
    """Synthesise the corpus under ``root`` (reused if already built with these settings).

    Args:
        root: the dataset root (it gets ``LibriSpeech/``, ``LibriTTS/``, ``Libri2Mix/``).
        num_train, num_test: utterances from training / held-out voices.
        num_mixtures: 2-speaker mixtures for ``(train-100, test)``.
        seed: everything random (sentences, speeds, pitches, levels, pairs) follows it.
        num_workers: espeak-ng processes run at once.

    Returns ``root`` as a ``Path``. The same arguments always give the same files.

    Example:
        >>> import tempfile
        >>> root = build_corpus(tempfile.mkdtemp(), 2, 1, (1, 0))
        >>> sorted(p.name for p in root.iterdir())
        ['Libri2Mix', 'LibriSpeech', 'LibriTTS', 'corpus.json']
    """
    root = Path(root)
    settings = {
        "version": _FORMAT_VERSION,
        "num_train": num_train,
        "num_test": num_test,
        "num_mixtures": list(num_mixtures),
        "seed": seed,
    }
    manifest = root / "corpus.json"
    if manifest.is_file():
        try:
            if json.loads(manifest.read_text(encoding="utf-8"))["settings"] == settings:
                return root
        except (ValueError, KeyError):
            pass  # damaged manifest: rebuild
    for folder in ("LibriSpeech", "LibriTTS", "Libri2Mix"):
        shutil.rmtree(root / folder, ignore_errors=True)
    _check_espeak()
    plan = plan_corpus(num_train, num_test, seed)
    rng = random.Random(seed + 1)
    levels = [random.Random(f"{seed}-{i}") for i in range(len(plan))]
    with ThreadPoolExecutor(max(1, num_workers)) as pool:
        jobs = pool.map(lambda u: synthesize(u.text, u.voice, u.speed, u.pitch), plan)
        waves = []
        for i, wave in enumerate(progress(jobs, total=len(plan), desc="espeak-ng corpus")):
            waves.append(_scaled(wave, levels[i]))
            _write_utterance(root, plan[i], waves[-1])
    _write_transcripts(root, plan)
    for split, count in zip((TRAIN_SPLIT, TEST_SPLIT), num_mixtures, strict=True):
        if count:
            _write_mixtures(root, plan, waves, split, count, rng)
    digest = hashlib.sha256(json.dumps([asdict(u) for u in plan]).encode()).hexdigest()
    record = {"settings": settings, "plan_sha256": digest}
    manifest.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return root
