"""Audio speed of ``trivium.audio`` against its peers, in one process.

Workloads (inputs built at start-up from the real speech in ``tests/assets/audio``):

1. ``MelSpectrogram`` of a batch of 16 x 10 s at 16 kHz (n_fft 400, hop 160, 80 mels,
   power 2) against ``torchaudio.transforms.MelSpectrogram`` (when it imports) and
   ``librosa.feature.melspectrogram`` on the same batch.
2. ``Resample`` 48 kHz -> 16 kHz and 44.1 kHz -> 16 kHz of a batch of 16 x 3 s
   (torchaudio's default windowed-sinc settings) against
   ``torchaudio.transforms.Resample``, ``soxr.resample`` (its default "HQ" quality,
   all 16 signals as channels of one call) and ``scipy.signal.resample_poly`` (its
   default Kaiser filter); the note gives speed as seconds of audio per second.
3. ``trivium.audio.load`` of a file against a bare ``soundfile.read(path,
   dtype="float32")`` of the same file (no tensor, no transpose): a 16-bit WAV, a FLAC,
   and a 4-channel FLAC; and ``torchaudio.load`` when it imports.
4. WAV files against ``scipy.io.wavfile.read``: 200 short 16 kHz mono files (1-4 s of
   speech, a call loads them all) and one 60 s 48 kHz stereo file, all 16-bit, written
   at start-up to a temporary folder. scipy returns the stored ``int16`` samples as
   ``[time, channels]``; ``load`` returns float32 ``[channels, time]`` by default. The
   rows compare like with like:

   - ``load(path)`` (the default a user trains with) against scipy plus the conversion
     that user then writes, ``x.astype(np.float32) / np.float32(32768)`` (the same
     samples, in scipy's ``[time, channels]`` layout, where ``load`` also separates the
     channels; a float32 divisor, as NumPy 2 divides by a Python int many times slower);
   - ``load(path, channels_first=False)`` against the same peer (the same array);
   - ``load(path, normalize=False, channels_first=False)`` (the stored ``int16``, as
     scipy returns them) against the bare ``scipy.io.wavfile.read``;
   - ``load(path)`` against ``soundfile.read(path, dtype="float32")``.

   Comparing float32 ``load`` with scipy's bare ``int16`` read would charge one side
   with a conversion the other leaves to the user. The note gives speed as files per
   second or seconds of audio per second.

5. ``ffmpeg``: what ``load`` reads through FFmpeg (PyAV), files written at start-up with
   PyAV from the same speech: AAC in M4A (10 s, 44.1 kHz stereo), Opus in WebM (10 s, 48
   kHz stereo), 100 short AAC M4A clips (1-4 s, 16 kHz mono, a call loads them all), and
   1 s from 50 s into a 60 s AAC M4A (``frame_offset`` / ``num_frames``); beside them a
   60 s 48 kHz stereo 16-bit FLAC, whose frames ``load`` decodes natively, in parts on
   the thread pool. Against torchcodec's
   ``AudioDecoder(path).get_all_samples()`` (``get_samples_played_in_range`` for the
   range), ``torchaudio.load`` (which goes through torchcodec since 2.9) and PyAV itself
   (``np.concatenate`` of every frame's ``to_ndarray()``: float32 ``[channels, time]``,
   as ``load`` returns). torchcodec and torchaudio's I/O import only in the peers'
   virtualenv (``../shared/peers/setup_peers_venv.sh``): when this workload is asked for
   and torchcodec does not import here, the script runs itself again under that
   virtualenv's Python (``--peers-python``) with this environment's site-packages (where
   trivium is) added after its own, so that every side runs in one process.
6. ``filters``: ``lfilter`` of a second-order Butterworth low-pass
   (``scipy.signal.butter(2, 0.05)``) over a long multi-channel signal (8 x 60 s at
   48 kHz), the batch of 16 x 10 s at 16 kHz and one 1 s signal, against
   ``scipy.signal.lfilter`` (float32, along the time axis; target 1x on the long
   signal) and ``torchaudio.functional.lfilter`` (its C++ kernel where it loads, else
   its torch loop).
7. ``align``: ``forced_align`` of random ``[1, T, 32]`` log probabilities to random
   labels (2,000 frames and 400 labels; 10,000 frames and 300 labels) against
   torchaudio's C++ ``forced_align``.
8. ``rnnt``: ``rnnt_loss`` and its backward over ``[8, 150, 31, 128]`` logits (half the
   items shorter in frames and labels) against torchaudio's C++ loss.

   torchaudio's C++ ops load only in the peers' virtualenv: as for ``ffmpeg``, the
   script runs itself again there when these workloads are asked for.

The batches are real speech (tests/assets/audio, tiled to length). torchaudio comes
from ``tests/peers.py``; where it does not import the script says so and the
librosa / soxr / scipy rows are the comparison. Every side is warmed up, then timed
in ``--repeats`` interleaved repeats of loops of at least ``--min-time`` seconds; the
median per-call time is reported. Ratio = peer time / our time (above 1: we are
faster). torch and the ``trivium.core`` thread pool (which reads and converts long
WAV files in parts) use their default threads unless ``--threads`` sets both; librosa,
soxr, scipy and soundfile run on one thread. On a machine shared with other
busy processes, torch's multi-threaded kernels lose much more than single-threaded
code (threads wait for each other at every barrier): compare ``--threads 1`` there.

Run from the repository root::

    .venv/bin/python benchmarks/audio.py [--repeats N] [--min-time S] [--json PATH]
        [--threads N] [--only mel,resample,load,wav,ffmpeg,filters,align,rnnt]
        [--peers-python .venv-peers/bin/python]
"""

from __future__ import annotations

import os
import site

# Under the peers' virtualenv (see ``harness.rerun_under_peers``): trivium from the project's
# environment, whose site-packages must be on the path before trivium imports.
if os.environ.get("TRIVIUM_PROJECT_SITE"):
    site.addsitedir(os.environ["TRIVIUM_PROJECT_SITE"])

import argparse
import importlib
import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import av
import harness
import librosa
import numpy as np
import scipy
import scipy.io.wavfile
import scipy.signal
import soundfile as sf
import soxr
import torch

import trivium.audio as ta
import trivium.audio.functional as AF
import trivium.audio.transforms as T
import trivium.core

ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "tests" / "assets" / "audio"

BATCH = 16
LOAD_FILES = ("ds-LDC93S1.wav", "sb-example2.flac", "sb-multi-mic-speech.flac")
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
FFMPEG_PEER_MODULES = ["torchcodec"]


def speech_batch(sample_rate: int, seconds: float) -> torch.Tensor:
    """``[BATCH, time]`` float32 of real speech, resampled to ``sample_rate`` and tiled."""
    clips = []
    for path in [*sorted(AUDIO.glob("sb-spk*.wav")), AUDIO / "ds-LDC93S1.wav"]:
        waveform, rate = ta.load(path)
        clips.append(ta.functional.resample(waveform[0], rate, sample_rate))
    speech = torch.cat(clips)
    length, shift = int(sample_rate * seconds), 7919  # each row starts elsewhere
    tiled = speech.repeat(-(-(length + BATCH * shift) // len(speech)))
    return torch.stack([tiled[i * shift : i * shift + length] for i in range(BATCH)])


def compare(label: str, ours: np.ndarray, theirs: np.ndarray) -> str:
    """How close two outputs are (relative max difference)."""
    scale = float(np.abs(theirs).max()) or 1.0
    diff = float(np.abs(ours - theirs).max()) / scale
    return f"{label}: shapes {ours.shape} vs {theirs.shape}, max |diff| / max = {diff:.2e}"


def torchaudio_row(
    workload: str, timings: dict[str, harness.Timing], torchaudio: harness.Peer
) -> harness.Row:
    """The row against torchaudio (target 1x), or ours alone saying why torchaudio is missing."""
    module, status = torchaudio
    label = status if module is not None else "torchaudio"  # status: its version, or why not
    return harness.row_from(
        workload, timings, "ours", "torchaudio", label, target=1.0, missing=status
    )


def bench_mel(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 1: MelSpectrogram against torchaudio and librosa."""
    batch = speech_batch(16000, 10.0)
    ours = T.MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80)
    numpy_batch = batch.numpy()

    def librosa_mel() -> np.ndarray:
        return librosa.feature.melspectrogram(
            y=numpy_batch,
            sr=16000,
            n_fft=400,
            hop_length=160,
            n_mels=80,
            pad_mode="reflect",
            htk=True,
            norm=None,
        )

    with torch.inference_mode():
        sides = [harness.Side("ours", lambda: ours(batch)), harness.Side("librosa", librosa_mel)]
        module = torchaudio[0]
        if module is not None:
            theirs = module.transforms.MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80)
            sides.append(harness.Side("torchaudio", lambda: theirs(batch)))
            checks.append(compare("mel vs torchaudio", ours(batch).numpy(), theirs(batch).numpy()))
        checks.append(compare("mel vs librosa", ours(batch).numpy(), librosa_mel()))
        timings = harness.measure(sides, repeats, min_time)
    workload = "MelSpectrogram 16 x 10 s, 16 kHz, 80 mels"
    rows = [torchaudio_row(workload, timings, torchaudio)]
    fallback = None if module is not None else 1.0  # the target is torchaudio's where it runs
    rows.append(
        harness.row_from(
            workload, timings, "ours", "librosa", f"librosa {librosa.__version__}", target=fallback
        )
    )
    return rows


def bench_resample(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 2: Resample 48 -> 16 and 44.1 -> 16 kHz against torchaudio, soxr and scipy."""
    rows = []
    for orig_freq, new_freq in ((48000, 16000), (44100, 16000)):
        rows += _bench_resample_pair(orig_freq, new_freq, torchaudio, repeats, min_time, checks)
    return rows


def _bench_resample_pair(
    orig_freq: int,
    new_freq: int,
    torchaudio: harness.Peer,
    repeats: int,
    min_time: float,
    checks: list[str],
) -> list[harness.Row]:
    seconds = 3.0
    batch = speech_batch(orig_freq, seconds)
    ours = T.Resample(orig_freq, new_freq)
    numpy_batch = batch.numpy()
    interleaved = np.ascontiguousarray(numpy_batch.T)  # soxr wants [time, channels]
    gcd = np.gcd(orig_freq, new_freq)
    up, down = new_freq // gcd, orig_freq // gcd
    with torch.inference_mode():
        sides = [
            harness.Side("ours", lambda: ours(batch)),
            harness.Side("soxr", lambda: soxr.resample(interleaved, orig_freq, new_freq)),
            harness.Side(
                "scipy", lambda: scipy.signal.resample_poly(numpy_batch, up, down, axis=-1)
            ),
        ]
        module = torchaudio[0]
        if module is not None:
            theirs = module.transforms.Resample(orig_freq, new_freq)
            sides.append(harness.Side("torchaudio", lambda: theirs(batch)))
            checks.append(
                compare(
                    f"resample {orig_freq} -> {new_freq} vs torchaudio",
                    ours(batch).numpy(),
                    theirs(batch).numpy(),
                )
            )
        ref = scipy.signal.resample_poly(numpy_batch, up, down, axis=-1)
        checks.append(
            compare(
                f"resample {orig_freq} -> {new_freq} vs scipy (edges included)",
                ours(batch).numpy(),
                ref,
            )
        )
        timings = harness.measure(sides, repeats, min_time)
    workload = f"Resample {orig_freq / 1000:g} -> {new_freq / 1000:g} kHz, {BATCH} x {seconds:g} s"
    audio_s = BATCH * seconds
    speed = ", ".join(
        f"{name} {audio_s / timing.median:,.0f}x real time" for name, timing in timings.items()
    )
    checks.append(f"{workload}: {speed}")
    rows = [torchaudio_row(workload, timings, torchaudio)]
    rows.append(
        harness.row_from(workload, timings, "ours", "soxr", f"soxr {soxr.__version__} (HQ)", 1.0)
    )
    rows.append(
        harness.row_from(
            workload, timings, "ours", "scipy", f"scipy {scipy.__version__} resample_poly"
        )
    )
    return rows


def bench_load(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 3: load against a bare soundfile.read of the same file (and torchaudio.load)."""
    rows = []
    module, status = torchaudio
    for name in LOAD_FILES:
        path = AUDIO / name
        meta = sf.info(path)
        sides = [
            harness.Side("ours", lambda p=path: ta.load(p)),
            harness.Side("soundfile", lambda p=path: sf.read(p, dtype="float32")),
        ]
        ta_load: Callable | None = getattr(module, "load", None) if module is not None else None
        if ta_load is not None:
            try:
                ta_load(path)
                sides.append(harness.Side("torchaudio", lambda p=path, f=ta_load: f(p)))
            except Exception as e:  # its I/O needs the C++ extension / torchcodec
                checks.append(f"torchaudio.load unusable here: {type(e).__name__}: {e}")
                ta_load = None
        timings = harness.measure(sides, repeats, min_time)
        workload = f"load {name} ({meta.subtype}, {meta.channels} ch, {meta.duration:.1f} s)"
        rows.append(
            harness.row_from(
                workload, timings, "ours", "soundfile", "bare soundfile.read", target=0.95
            )
        )
        if ta_load is not None:
            rows.append(
                harness.row_from(workload, timings, "ours", "torchaudio", status, target=1.0)
            )
    return rows


def write_wav_files(folder: Path) -> tuple[list[Path], Path]:
    """200 short 16 kHz mono WAVs (1-4 s of speech) and one 60 s 48 kHz stereo WAV."""
    speech = speech_batch(16000, 4.0).numpy()
    lengths = np.random.default_rng(0).integers(16000, 64000, size=200)
    short = []
    for i, length in enumerate(lengths):
        path = folder / f"short{i:03d}.wav"
        sf.write(path, 0.5 * speech[i % BATCH, :length], 16000, subtype="PCM_16")
        short.append(path)
    stereo = speech_batch(48000, 2 * 60.0 / BATCH).numpy().reshape(2, -1).T * 0.5
    long = folder / "long48k.wav"
    sf.write(long, stereo, 48000, subtype="PCM_16")
    return short, long


def bench_wav(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 4: WAV files (short and long) against scipy.io.wavfile.read."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        short, long = write_wav_files(Path(tmp))
        cases = [
            (f"load {len(short)} short 16 kHz WAVs (1-4 s, PCM_16)", short, "files"),
            ("load a 60 s 48 kHz stereo WAV (PCM_16)", [long], "audio"),
        ]
        for workload, paths, unit in cases:
            rows += _bench_wav_case(workload, paths, unit, repeats, min_time, checks)
    return rows


def _bench_wav_case(
    workload: str,
    paths: list[Path],
    unit: str,
    repeats: int,
    min_time: float,
    checks: list[str],
) -> list[harness.Row]:
    def scipy_float(path: Path) -> np.ndarray:
        # A float32 divisor: NumPy 2 divides by a Python int 32768 many times slower.
        return scipy.io.wavfile.read(path)[1].astype(np.float32) / np.float32(32768)

    for path in paths[:3]:  # the same samples on every side (scipy gives mono as 1-D)
        stored = scipy.io.wavfile.read(path)[1]
        ours = ta.load(path, normalize=False, channels_first=False)[0].numpy()
        assert np.array_equal(ours.reshape(stored.shape), stored)
        converted = scipy_float(path).reshape(len(stored), -1)
        assert np.array_equal(ta.load(path, channels_first=False)[0].numpy(), converted)
        assert np.array_equal(ta.load(path)[0].numpy(), converted.T)
    sides = [
        harness.Side("ours", lambda: [ta.load(p) for p in paths]),
        harness.Side("scipy float", lambda: [scipy_float(p) for p in paths]),
        harness.Side(
            "ours int16",
            lambda: [ta.load(p, normalize=False, channels_first=False) for p in paths],
        ),
        harness.Side("scipy", lambda: [scipy.io.wavfile.read(p) for p in paths]),
        harness.Side("ours [time, ch]", lambda: [ta.load(p, channels_first=False) for p in paths]),
        harness.Side("soundfile", lambda: [sf.read(p, dtype="float32") for p in paths]),
    ]
    timings = harness.measure(sides, repeats, min_time)
    seconds = sum(sf.info(p).duration for p in paths)
    if unit == "files":
        speed = [f"{name} {len(paths) / t.median:,.0f} files/s" for name, t in timings.items()]
    else:
        speed = [f"{name} {seconds / t.median:,.0f}x real time" for name, t in timings.items()]
    checks.append(f"{workload}: {', '.join(speed)}")
    version = f"scipy {scipy.__version__} wavfile.read"
    float_peer = f"{version} + astype(float32) / float32(32768)"
    return [
        harness.row_from(
            f"{workload}, float32 (load's default)",
            timings,
            "ours",
            "scipy float",
            float_peer,
            target=1.0,
        ),
        harness.row_from(
            f"{workload}, int16 as stored",
            timings,
            "ours int16",
            "scipy",
            f"{version} (int16 as stored)",
            target=1.0,
        ),
        harness.row_from(
            f"{workload}, float32 [time, channels]",
            timings,
            "ours [time, ch]",
            "scipy float",
            float_peer,
            target=1.0,
        ),
        harness.row_from(
            f"{workload}, float32 (load's default)",
            timings,
            "ours",
            "soundfile",
            "soundfile.read float32",
            target=1.0,
        ),
    ]


def write_with_pyav(path: Path, muxer: str, codec: str, waveform: np.ndarray, rate: int) -> Path:
    """``[channels, time]`` float32 ``waveform`` encoded by PyAV into ``path``."""
    layout = "mono" if waveform.shape[0] == 1 else "stereo"
    with av.open(str(path), "w", format=muxer) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        for start in range(0, waveform.shape[1], 4096):
            chunk = np.ascontiguousarray(waveform[:, start : start + 4096])
            if codec == "libopus":  # its encoder takes interleaved float
                frame = av.AudioFrame.from_ndarray(chunk.T.reshape(1, -1).copy(), "flt", layout)
            else:
                frame = av.AudioFrame.from_ndarray(chunk, "fltp", layout)
            frame.sample_rate, frame.pts = rate, start
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


def write_ffmpeg_files(folder: Path) -> dict[str, list[Path]]:
    """The ``ffmpeg`` workload's files (see the module docstring), by workload name."""
    stereo44 = 0.5 * speech_batch(44100, 10.0)[:2].numpy()
    stereo48 = 0.5 * speech_batch(48000, 10.0)[:2].numpy()
    long = 0.5 * speech_batch(44100, 60.0 / BATCH * 2).numpy().reshape(2, -1)
    long48 = 0.5 * speech_batch(48000, 60.0 / BATCH * 2).numpy().reshape(2, -1)
    short = 0.5 * speech_batch(16000, 4.0).numpy()
    lengths = np.random.default_rng(0).integers(16000, 64000, size=100)
    return {
        "AAC in M4A, 10 s, 44.1 kHz stereo": [
            write_with_pyav(folder / "speech.m4a", "ipod", "aac", stereo44, 44100)
        ],
        "Opus in WebM, 10 s, 48 kHz stereo": [
            write_with_pyav(folder / "speech.webm", "webm", "libopus", stereo48, 48000)
        ],
        "100 short AAC M4A clips (1-4 s, 16 kHz mono)": [
            write_with_pyav(
                folder / f"short{i:03d}.m4a",
                "ipod",
                "aac",
                short[i % BATCH : i % BATCH + 1, :n],
                16000,
            )
            for i, n in enumerate(lengths)
        ],
        "1 s at 50 s of a 60 s AAC M4A (44.1 kHz stereo)": [
            write_with_pyav(folder / "long.m4a", "ipod", "aac", long, 44100)
        ],
        LONG_FLAC: [write_flac(folder / "long.flac", long48)],
    }


# Not FFmpeg: a long FLAC's frames decode natively, in parts on the thread pool.
LONG_FLAC = "a 60 s 48 kHz stereo FLAC (16-bit)"


def write_flac(path: Path, waveform: np.ndarray) -> Path:
    """``[channels, time]`` float32 ``waveform`` at 48 kHz as a 16-bit FLAC (soundfile)."""
    sf.write(path, waveform.T, 48000, subtype="PCM_16", format="FLAC")
    return path


def pyav_load(path: Path) -> np.ndarray:
    """PyAV by hand: every frame of the first audio stream, ``[channels, time]``."""
    with av.open(str(path)) as container:
        frames = container.decode(container.streams.audio[0])
        return np.concatenate([frame.to_ndarray() for frame in frames], axis=1)


def bench_ffmpeg(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 5: formats read through FFmpeg against torchcodec, torchaudio and PyAV."""
    torchcodec, status = harness.load_peer(
        lambda: importlib.import_module("torchcodec"),
        "not installed here (run with the peers' virtualenv, see --peers-python)",
    )
    decoders = None if torchcodec is None else importlib.import_module("torchcodec.decoders")
    ta_load = getattr(torchaudio[0], "load", None) if decoders is not None else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload, paths in write_ffmpeg_files(Path(tmp)).items():
            ranged = workload.startswith("1 s at 50 s")
            rate = ta.info(paths[0]).sample_rate
            offset, count = (50 * rate, rate) if ranged else (0, -1)

            def ours(paths: list[Path] = paths, offset: int = offset, count: int = count):
                return [ta.load(p, frame_offset=offset, num_frames=count)[0] for p in paths]

            sides = [harness.Side("ours", ours)]
            if not ranged and workload != LONG_FLAC:  # PyAV gives FLAC's int16 samples
                sides.append(
                    harness.Side("pyav", lambda paths=paths: [pyav_load(p) for p in paths])
                )
                reference = pyav_load(paths[0])
                same = np.array_equal(ours()[0].numpy(), reference)
                checks.append(f"{workload}: load equals PyAV's decode: {same}")
            if decoders is not None:
                sides.append(harness.Side("torchcodec", _torchcodec_call(decoders, paths, ranged)))
                theirs = sides[-1].fn()[0].numpy()
                checks.append(compare(f"{workload} vs torchcodec", ours()[0].numpy(), theirs))
            if ta_load is not None:
                sides.append(
                    harness.Side(
                        "torchaudio",
                        lambda paths=paths, o=offset, n=count: [
                            ta_load(p, frame_offset=o, num_frames=n)[0] for p in paths
                        ],
                    )
                )
            timings = harness.measure(sides, repeats, min_time)
            label = f"load {workload}"
            rows.append(
                harness.row_from(
                    label, timings, "ours", "torchcodec", status, target=1.0, missing=status
                )
            )
            if ta_load is not None:
                rows.append(harness.row_from(label, timings, "ours", "torchaudio", torchaudio[1]))
            if "pyav" in timings:
                rows.append(
                    harness.row_from(label, timings, "ours", "pyav", f"PyAV {av.__version__}")
                )
    return rows


def _torchcodec_call(decoders: Any, paths: list[Path], ranged: bool) -> Callable[[], list]:
    """torchcodec's decode of every path (the 1 s range where ``ranged``)."""
    if ranged:
        return lambda: [
            decoders.AudioDecoder(str(p)).get_samples_played_in_range(50.0, 51.0).data
            for p in paths
        ]
    return lambda: [decoders.AudioDecoder(str(p)).get_all_samples().data for p in paths]


def bench_filters(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 6: lfilter and a biquad against scipy.signal and torchaudio."""
    b, a = scipy.signal.butter(2, 0.05)
    b32, a32 = b.astype(np.float32), a.astype(np.float32)
    bt, at = torch.from_numpy(b32), torch.from_numpy(a32)
    rows = []
    module = torchaudio[0]
    for batch, name, target in (
        (speech_batch(48000, 60.0)[:8], "8 x 60 s at 48 kHz", 1.0),
        (speech_batch(16000, 10.0), "16 x 10 s at 16 kHz", None),
        (speech_batch(16000, 1.0)[:1], "1 x 1 s at 16 kHz", None),
    ):
        numpy_batch = batch.numpy()
        sides = [
            harness.Side("ours", lambda x=batch: AF.lfilter(x, at, bt, clamp=False)),
            harness.Side("scipy", lambda x=numpy_batch: scipy.signal.lfilter(b32, a32, x, axis=-1)),
        ]
        # torchaudio's torch loop takes minutes over the long signal: timed there only
        # where its C++ kernel runs.
        timed = module is not None and (target is None or _torchaudio_lfilter_is_native())
        if timed:
            sides.append(
                harness.Side(
                    "torchaudio", lambda x=batch: module.functional.lfilter(x, at, bt, clamp=False)
                )
            )
        with torch.inference_mode():
            ours = AF.lfilter(batch, at, bt, clamp=False).numpy()
            checks.append(
                compare(f"lfilter {name} vs scipy", ours, scipy.signal.lfilter(b, a, numpy_batch))
            )
            timings = harness.measure(sides, repeats, min_time)
        workload = f"lfilter, 2nd-order Butterworth, {name}"
        label = f"scipy {scipy.__version__}"
        rows.append(harness.row_from(workload, timings, "ours", "scipy", label, target=target))
        if timed or module is None:
            rows.append(torchaudio_row(workload, timings, torchaudio))
        else:
            rows.append(
                harness.row_from(
                    workload,
                    timings,
                    "ours",
                    "torchaudio",
                    torchaudio[1],
                    target=1.0,
                    missing="its torch loop (no C++ extension here), not timed at this length",
                )
            )
    return rows


def _torchaudio_lfilter_is_native() -> bool:
    """Whether torchaudio's C++ ``lfilter`` loop is registered (its extension loaded)."""
    try:
        torch.ops.torchaudio._lfilter_core_loop.default  # noqa: B018
    except (AttributeError, RuntimeError):
        return False
    return True


def _native_op(call: Callable[[], Any]) -> str | None:
    """None when torchaudio's C++ op runs ``call``, else why not."""
    try:
        call()
    except Exception as error:  # the extension is missing or a stub: the row says so
        return f"torchaudio's C++ op does not run here ({type(error).__name__})"
    return None


def bench_align(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 7: CTC forced_align against torchaudio's C++ op."""
    rows = []
    module = torchaudio[0]
    for frames, labels in ((2_000, 400), (10_000, 300)):
        g = torch.Generator().manual_seed(frames)
        log_probs = torch.randn(1, frames, 32, generator=g).log_softmax(-1)
        targets = torch.randint(1, 32, (1, labels), generator=g, dtype=torch.int32)
        sides = [harness.Side("ours", lambda lp=log_probs, t=targets: AF.forced_align(lp, t))]
        peer = torchaudio
        if module is not None:
            theirs = lambda lp=log_probs, t=targets: module.functional.forced_align(lp, t)  # noqa: E731
            why = _native_op(theirs)
            if why is None:
                sides.append(harness.Side("torchaudio", theirs))
                same = torch.equal(AF.forced_align(log_probs, targets)[0], theirs()[0])
                checks.append(f"forced_align {frames} frames: paths equal torchaudio's: {same}")
            else:
                peer = (None, why)
        timings = harness.measure(sides, repeats, min_time)
        workload = f"forced_align, {frames:,} frames x 32 classes, {labels} labels"
        rows.append(torchaudio_row(workload, timings, peer))
    return rows


def bench_rnnt(
    torchaudio: harness.Peer, repeats: int, min_time: float, checks: list[str]
) -> list[harness.Row]:
    """Workload 8: rnnt_loss forward and backward against torchaudio's C++ op."""
    g = torch.Generator().manual_seed(0)
    batch, frames, labels, classes = 8, 150, 30, 128
    logits = torch.randn(batch, frames, labels + 1, classes, generator=g).requires_grad_()
    targets = torch.randint(0, classes - 1, (batch, labels), generator=g, dtype=torch.int32)
    logit_lengths = torch.full((batch,), frames, dtype=torch.int32)
    logit_lengths[1::2] = frames - 20
    target_lengths = torch.full((batch,), labels, dtype=torch.int32)
    target_lengths[1::2] = labels - 5

    def step(loss_fn: Callable[..., torch.Tensor]) -> Callable[[], torch.Tensor]:
        def run() -> torch.Tensor:
            logits.grad = None
            loss = loss_fn(logits, targets, logit_lengths, target_lengths)
            loss.backward()
            return logits.grad

        return run

    sides = [harness.Side("ours", step(AF.rnnt_loss))]
    module, status = torchaudio
    if module is not None:
        theirs = step(module.functional.rnnt_loss)
        why = _native_op(theirs)
        if why is None:
            sides.append(harness.Side("torchaudio", theirs))
            ours_grad = step(AF.rnnt_loss)().clone()
            checks.append(
                compare("rnnt_loss gradient vs torchaudio", ours_grad.numpy(), theirs().numpy())
            )
        else:
            module, status = None, why
    timings = harness.measure(sides, repeats, min_time)
    workload = f"rnnt_loss + backward, {batch} x {frames} frames x {labels + 1} x {classes} classes"
    return [torchaudio_row(workload, timings, (module, status))]


WORKLOADS = {
    "mel": bench_mel,
    "resample": bench_resample,
    "load": bench_load,
    "wav": bench_wav,
    "ffmpeg": bench_ffmpeg,
    "filters": bench_filters,
    "align": bench_align,
    "rnnt": bench_rnnt,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = harness.benchmark_parser(__doc__.splitlines()[0], list(WORKLOADS))
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op and trivium.core pool threads (default: theirs); 1 matches the "
        "single-threaded peers",
    )
    parser.add_argument(
        "--peers-python",
        default=str(PEERS_PYTHON),
        help="the peers' virtualenv Python, run under for the ffmpeg workload ('': never)",
    )
    return harness.parse_benchmark_args(parser, list(WORKLOADS), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every workload, print machine info and the table, optionally write JSON."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if {"ffmpeg", "align", "rnnt"} & set(args.only):
        harness.rerun_under_peers(__file__, FFMPEG_PEER_MODULES, args.peers_python, argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
        trivium.core.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=UserWarning, module="torchaudio")
    run = harness.Session(args)
    torchaudio = harness.load_peer(
        harness.peers.import_torchaudio, "not installed (does not import here)"
    )
    info = harness.machine_info(
        torch.get_num_threads(),
        numpy=np.__version__,
        soundfile=f"{sf.__version__} (libsndfile {sf.__libsndfile_version__})",
        librosa=librosa.__version__,
        soxr=soxr.__version__,
        scipy=scipy.__version__,
        torchaudio=torchaudio[1],
        pyav=f"{av.__version__} (FFmpeg libavcodec {av.library_versions['libavcodec']})",
    )
    if torchaudio[0] is None:
        info["note"] = "torchaudio does not import here: librosa / soxr / scipy are the comparison"
    run.header("trivium.audio benchmark", info)
    for name, bench in WORKLOADS.items():
        if name in args.only:
            run.rows += bench(torchaudio, args.repeats, args.min_time, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
