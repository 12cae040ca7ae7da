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
unseen speakers. What is already built with the same settings is reused
(``corpus.json`` records them), the speech and the mixtures apart, so that the
examples share one corpus folder. Needs the ``espeak-ng`` program (Debian/Ubuntu:
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
from trivium.audio.io import load, save
from trivium.core.errors import DatasetError
from trivium.core.progress import progress

__all__ = [
    "HELD_OUT_VOICES",
    "TRAIN_VOICES",
    "VOCABULARY",
    "Utterance",
    "build_corpus",
    "librimix_remedy",
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
_MANIFEST = "corpus.json"


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
    # FLAC files, whatever rounding the resampler's floating point had; + 0.0 turns
    # -0.0 into the 0.0 those files read back as.
    return torch.round(waveform * (rng.uniform(0.3, 0.9) / peak) * 32768) / 32768 + 0.0


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


def _manifest(root: Path) -> dict:
    """``{"speech": settings or None, "mixtures": [train, test] or None}`` of ``root``."""
    try:
        record = json.loads((root / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none or damaged: rebuild
    if not isinstance(record, dict):
        return {}
    if isinstance(record.get("settings"), dict):  # the format-2 manifest: both in one
        speech = dict(record["settings"], plan_sha256=record.get("plan_sha256"))
        return {"speech": speech, "mixtures": speech.pop("num_mixtures", None)}
    return record


def _write_manifest(root: Path, record: dict) -> None:
    # Written before and after each part is built: an interrupted build is never
    # taken for a finished one.
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{_MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    os.replace(tmp, root / _MANIFEST)


def _speech_files(root: Path, utt: Utterance) -> list[Path]:
    speech = root / "LibriSpeech" / utt.split / str(utt.speaker_id) / str(utt.chapter_id)
    tts = root / "LibriTTS" / utt.split / str(utt.speaker_id) / str(utt.chapter_id)
    return [
        speech / f"{utt.librispeech_id}.flac",
        speech / f"{utt.speaker_id}-{utt.chapter_id}.trans.txt",
        tts / f"{utt.libritts_id}.wav",
        tts / f"{utt.libritts_id}.original.txt",
        tts / f"{utt.libritts_id}.normalized.txt",
    ]


def _mixture_folders(root: Path, split: str) -> list[Path]:
    base = root / "Libri2Mix" / "wav16k" / "min" / MIX_SUBSETS[split]
    return [base / folder for folder in ("mix_clean", "s1", "s2")]


def _mixtures_complete(root: Path, counts: Sequence[int]) -> bool:
    return all(
        len(list(folder.glob("*.wav"))) == count
        for split, count in zip((TRAIN_SPLIT, TEST_SPLIT), counts, strict=True)
        if count
        for folder in _mixture_folders(root, split)
    )


def _synthesize_speech(root: Path, plan: Sequence[Utterance], seed: int, workers: int) -> list:
    levels = [random.Random(f"{seed}-{i}") for i in range(len(plan))]
    with ThreadPoolExecutor(max(1, workers)) as pool:
        jobs = pool.map(lambda u: synthesize(u.text, u.voice, u.speed, u.pitch), plan)
        waves = []
        for i, wave in enumerate(progress(jobs, total=len(plan), desc="espeak-ng corpus")):
            waves.append(_scaled(wave, levels[i]))
            _write_utterance(root, plan[i], waves[-1])
    _write_transcripts(root, plan)
    return waves


def build_corpus(
    root: str | os.PathLike[str],
    num_train: int = 300,
    num_test: int = 60,
    num_mixtures: tuple[int, int] | None = (600, 100),
    seed: int = 0,
    num_workers: int = 2,
) -> Path:
    """Synthesise the corpus under ``root``, reusing what is already built with these settings.

    The speech (LibriSpeech and LibriTTS layouts) and the mixtures are cached apart,
    so that programs asking for the same speech share one ``root``: the mixtures
    are made from the speech files on disk when they are first asked for, and
    ``num_mixtures=None`` (what a program that reads no mixtures passes) keeps the
    mixtures there are. New speech settings rebuild everything.

    Args:
        root: the dataset root (it gets ``LibriSpeech/``, ``LibriTTS/``, ``Libri2Mix/``).
        num_train: utterances from training voices.
        num_test: utterances from held-out voices.
        num_mixtures: 2-speaker mixtures for ``(train-100, test)``; ``None``: keep
            those already built (none if the speech is new).
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
    plan = plan_corpus(num_train, num_test, seed)
    speech = {
        "version": _FORMAT_VERSION,
        "num_train": num_train,
        "num_test": num_test,
        "seed": seed,
        "plan_sha256": hashlib.sha256(json.dumps([asdict(u) for u in plan]).encode()).hexdigest(),
    }
    record = _manifest(root)
    waves = None
    if record.get("speech") != speech or not all(
        p.is_file() for u in plan for p in _speech_files(root, u)
    ):
        _check_espeak()
        # The mixtures are made of the speech: they go with it.
        record = {"speech": None, "mixtures": None}
        _write_manifest(root, record)
        for folder in ("LibriSpeech", "LibriTTS", "Libri2Mix"):
            shutil.rmtree(root / folder, ignore_errors=True)
        waves = _synthesize_speech(root, plan, seed, num_workers)
        record["speech"] = speech
        _write_manifest(root, record)
    counts = record.get("mixtures") if num_mixtures is None else list(num_mixtures)
    if counts is None or (record.get("mixtures") == counts and _mixtures_complete(root, counts)):
        return root
    record["mixtures"] = None
    _write_manifest(root, record)
    shutil.rmtree(root / "Libri2Mix", ignore_errors=True)
    if waves is None:
        # The FLAC files hold exactly the samples synthesised (see _scaled).
        waves = [load(_speech_files(root, u)[0])[0] for u in plan]
    rng = random.Random(seed + 1)
    for split, count in zip((TRAIN_SPLIT, TEST_SPLIT), counts, strict=True):
        if count:
            _write_mixtures(root, plan, waves, split, count, rng)
    record["mixtures"] = counts
    _write_manifest(root, record)
    return root


def librimix_remedy(root: str | os.PathLike[str], mix_dir: str | os.PathLike[str]) -> str | None:
    """How to make LibriMix folder ``mix_dir`` of the embedded corpus at ``root``.

    ``None`` when ``root`` holds no embedded corpus (its ``corpus.json``).

    Example:
        >>> import tempfile
        >>> root = build_corpus(tempfile.mkdtemp(), 2, 1, num_mixtures=None)
        >>> "num_mixtures=" in librimix_remedy(root, root / "Libri2Mix/wav16k/min/test/s1")
        True
    """
    root = Path(root)
    if not (root / _MANIFEST).is_file():
        return None
    made = {f for split in MIX_SUBSETS for f in _mixture_folders(root, split)}
    if Path(mix_dir) not in made:
        subsets = " and ".join(MIX_SUBSETS.values())
        return (
            f"the embedded corpus at {root} has only Libri2Mix/wav16k/min/<subset>/"
            f"{{mix_clean,s1,s2}} (subsets {subsets}; task 'sep_clean', sample_rate 16000)"
        )
    speech = _manifest(root).get("speech") or {}
    sizes = {k: speech.get(k, v) for k, v in (("num_train", 300), ("num_test", 60), ("seed", 0))}
    call = ", ".join(f"{k}={v}" for k, v in sizes.items())
    remedy = (
        f"the embedded corpus at {root} has no such mixtures yet; make them with "
        f"trivium.audio.corpora.build_corpus({str(root)!r}, {call}, num_mixtures=(TRAIN, TEST))"
    )
    if sizes["seed"] == 0:  # the examples build with the default seed
        remedy += (
            f", or run examples/convtasnet_librimix/train.py --corpus-dir {root} "
            f"--corpus-size {sizes['num_train']} {sizes['num_test']}"
        )
    return remedy
