"""Video decode speed of ``trivium.vision.io`` against torchcodec and plain PyAV.

What it measures (inputs are generated at start-up with the ``ffmpeg`` binary from
its ``testsrc2`` pattern, 30 fps, ``yuv420p``, in a temporary directory; H.264 with
libx264 defaults: keyframe at most every 250 frames, B-frames):

1. Sequential decode of every frame to uint8 [C, H, W] RGB tensors, 10 s clips:
   640x360 H.264, VP9 (libvpx-vp9, realtime preset) and MPEG-4 Part 2 (``mpeg4``),
   and 1280x720 H.264. ``VideoReader`` iterating, against torchcodec's
   ``VideoDecoder`` iterating (frame by frame; its batched ``get_frames_in_range`` is
   no faster here) and a bare PyAV loop
   (``for f in container.decode(video=0): t = torch.from_numpy(f.to_ndarray(format="rgb24"))``).
   Each twice: FFmpeg's default threading (``num_threads=0``, torchcodec
   ``num_ffmpeg_threads=0``, PyAV ``thread_type="AUTO"``) and one decode thread
   (``num_threads=1``, ``num_ffmpeg_threads=1``, ``thread_count=1``). Every loop
   keeps the latest frame alive until the next one, as a loop body using it would.
   At 720p also the ffmpeg-subprocess backend. Target: ≥ 1.0x torchcodec on every
   row (stretch at 360p: 1.2x).
2. 20 random 16-frame clips (same seed every call) from a 1280x720, 20 s clip:
   - one reader for all of them: ``VideoReader.get_frames_at`` over all their frames
     against torchcodec's ``get_frames_at`` on one decoder (both thread settings);
   - a new reader per clip, as a Dataset opens them: ``VideoClips.get_clip`` (which
     hands the reader the saved frame index: no demuxing) and a new ``VideoReader``
     per clip (the process keeps each file's frame index) against a plain PyAV
     container per clip that seeks to the clip's start and decodes to its 16th frame
     (converting only the clip's frames), and a new torchcodec decoder per clip
     (``seek_mode="approximate"``, which skips the whole-file scan an exact decoder
     makes on open). Target: ≥ 2x the faster of the two.
   - the same from a copy with a keyframe every 2 s (``-g 60``), where a per-clip
     seek decodes far less; and the ffmpeg backend.
   Our batches are ``[T, C, H, W]`` views of a ``[T, H, W, C]`` buffer (channels-last
   memory, as torchcodec's); the PyAV peer's ``torch.stack`` of permuted frames copies
   into contiguous ``[T, C, H, W]``.
3. A UCF101-style AVI: MPEG-4 Part 2 with packed B-frames (the ffmpeg binary's
   ``libxvid``, ``-bf 2``), 320x240 at 25 fps, 7 s. Its frame index comes from
   decoding the stream once (the packets are not the frames): that scan against a
   demux of the packets (what an index from the container costs); reading every frame
   with a new reader, the scan included, against the bare PyAV loop; and
   ``VideoClips.get_clip`` for 10 random 16-frame clips (the index saved) against a
   PyAV container per clip that seeks to the keyframe before the clip and decodes to
   its end (timing only: PyAV's frame times are swapped in pairs in this file).

torchcodec's compiled code loads only in the benchmark-only virtualenv that
``../shared/peers/setup_peers_venv.sh`` builds (``.venv-peers``): when this
interpreter cannot import it, its side runs in ``benchmarks/video_torchcodec.py``
under that virtualenv's Python (``--peers-python``), one request per call over a
pipe, interleaved with ours like any other side. The checks compare its frames and
pts with ours. torchvision (0.28) has no video decoding left (no ``io.VideoReader``).

Every side is warmed up once, then timed in ``--repeats`` repeats (default 5) of a
loop of at least ``--min-time`` seconds (default 0.2), the sides interleaved; the
median per-call time is reported. Ratio = peer time / our time (above 1: we are
faster). On a shared machine the wall-clock ratios move with the load (a side with
more threads gets a larger share of busy cores): read them with the "CPUs busy
outside this process" line. So the torchcodec comparisons also get a CPU-time row:
the CPU seconds (user + system, every thread of the process that decodes) of one
call, median of ``--repeats`` interleaved calls, which contention barely moves.

Run from the repository root::

    .venv/bin/python benchmarks/video.py [--repeats N] [--min-time S] [--json PATH]
        [--only sequential,clips,avi] [--peers-python .venv-peers/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import harness
import numpy as np
import torch
from harness import Row, Side, measure, row_from

from trivium.vision.io import VideoClips, VideoReader
from trivium.vision.io.video.backend import INDEX_CACHE
from trivium.vision.io.video.ffmpeg import ffmpeg_binaries
from trivium.vision.io.video.pyav import h264_unreferenced

ROOT = Path(__file__).resolve().parents[1]
FPS = 30
CLIP_SIZE = "1280x720"
CLIPS, CLIP_LENGTH = 20, 16
THREADS = {"": 0, " 1t": 1}  # side-name suffix -> decode threads (0: FFmpeg decides)


@dataclass(frozen=True)
class Case:
    """One sequential-decode input: a name, a size and the ffmpeg encoder arguments."""

    name: str
    size: str
    suffix: str
    encoder: tuple[str, ...]


SEQUENTIAL_CASES = (
    Case("360p H.264", "640x360", "mp4", ("-c:v", "libx264")),
    Case(
        "360p VP9",
        "640x360",
        "webm",
        ("-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M"),
    ),
    Case("360p MPEG-4", "640x360", "mp4", ("-c:v", "mpeg4", "-q:v", "4")),
    Case("720p H.264", "1280x720", "mp4", ("-c:v", "libx264")),
)


# --------------------------------------------------------------------------- peers


class TorchcodecWorker:
    """torchcodec in the peers' virtualenv: ``benchmarks/video_torchcodec.py`` over a pipe.

    ``call(op=..., ...)`` sends one request and waits for its answer (see that
    script for the requests); the process lives until :meth:`close`.
    """

    def __init__(self, python: str) -> None:
        script = Path(__file__).with_name("video_torchcodec.py")
        self._process = subprocess.Popen(
            [python, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def call(self, **request: Any) -> dict[str, Any]:
        """One request, its answer; RuntimeError with the worker's error if it failed."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the torchcodec worker exited")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"torchcodec worker: {reply['error']}")
        return reply

    def close(self) -> None:
        """Stop the worker."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)


class InProcessTorchcodec:
    """The same requests as :class:`TorchcodecWorker`, where this interpreter imports it."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def call(self, **request: Any) -> dict[str, Any]:
        """One request, its answer."""
        return self._module.answer(request)

    def close(self) -> None:
        """Nothing to stop."""


@dataclass
class Peers:
    """The optional peers and a line saying what became of each."""

    torchvision: Any | None
    torchvision_status: str
    torchcodec: Any | None  # TorchcodecWorker / InProcessTorchcodec
    torchcodec_status: str
    checks: list[str] = field(default_factory=list)


def load_torchcodec(peers_python: str | None) -> tuple[Any | None, str]:
    """torchcodec in this process if it imports, else in the peers' virtualenv."""
    try:
        import video_torchcodec  # imports torchcodec itself

        worker: Any = InProcessTorchcodec(video_torchcodec)
        return worker, f"torchcodec {worker.call(op='version')['version']} (in process)"
    except Exception as e:  # not installed, or its compiled code does not load here
        reason = f"{type(e).__name__}: {e}"
    if not peers_python or not Path(peers_python).exists():
        return None, (
            f"not importable here ({reason}) and no peers virtualenv at {peers_python}"
            " (build it with ../shared/peers/setup_peers_venv.sh)"
        )
    try:
        worker = TorchcodecWorker(peers_python)
        version = worker.call(op="version")["version"]
    except (OSError, RuntimeError) as e:
        return None, f"does not start under {peers_python}: {e}"
    return worker, f"torchcodec {version} (peers virtualenv, over a pipe)"


def load_peers(peers_python: str | None) -> Peers:
    """torchvision.io (through tests/peers.py) where it decodes video, and torchcodec."""
    tv, tv_status = None, "not installed"
    try:
        torchvision = harness.peers.import_torchvision()
    except Exception as e:  # a broken install fails in many ways
        torchvision, tv_status = None, f"not importable: {type(e).__name__}: {e}"
    if torchvision is not None:
        if hasattr(torchvision.io, "VideoReader"):
            tv, tv_status = torchvision.io, f"torchvision {torchvision.__version__}"
        else:  # recent releases: video decoding moved to torchcodec
            tv_status = (
                f"{torchvision.__version__} has no io.VideoReader / io.read_video (deprecated"
                " in 0.22; the open-source build no longer decodes video, its VideoClips"
                " uses torchcodec)"
            )
    tc, tc_status = load_torchcodec(peers_python)
    return Peers(tv, tv_status, tc, tc_status)


def machine_info(peers: Peers) -> dict[str, str]:
    """Versions and CPU facts that the numbers depend on."""
    ffmpeg_exe, ffprobe_exe = ffmpeg_binaries()
    libavcodec = av.library_versions["libavcodec"]
    version = subprocess.run(
        [ffmpeg_exe, "-version"], capture_output=True, text=True, check=False
    ).stdout.split("\n", 1)[0]
    return {
        "cpu": f"{harness.cpu_model()}; usable CPUs {len(os.sched_getaffinity(0))}",
        "python": f"{platform.python_version()} ({platform.platform()})",
        "torch": torch.__version__,
        "PyAV": f"{av.__version__} (libavcodec {'.'.join(map(str, libavcodec))})",
        "ffmpeg backend": f"{ffmpeg_exe}: {version}; ffprobe {ffprobe_exe}",
        "torchvision.io": peers.torchvision_status,
        "torchcodec": peers.torchcodec_status,
    }


# -------------------------------------------------------------------------- inputs


def make_clip(
    path: Path,
    seconds: int,
    size: str = CLIP_SIZE,
    encoder: Sequence[str] = ("-c:v", "libx264"),
    gop: int | None = None,
) -> Path:
    """A testsrc2 clip at FPS, made by the ffmpeg binary (``gop``: keyint)."""
    ffmpeg_exe, _ = ffmpeg_binaries()
    keyint = [] if gop is None else ["-g", str(gop)]
    subprocess.run(
        [
            ffmpeg_exe, "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size={size}:rate={FPS}:duration={seconds}",
            *encoder, "-pix_fmt", "yuv420p", *keyint, str(path),
        ],
        check=True,
    )  # fmt: skip
    return path


def random_clips(num_frames: int, seed: int = 0) -> list[list[int]]:
    """CLIPS random clips of CLIP_LENGTH consecutive frame positions."""
    rng = random.Random(seed)
    starts = [rng.randrange(num_frames - CLIP_LENGTH + 1) for _ in range(CLIPS)]
    return [list(range(s, s + CLIP_LENGTH)) for s in starts]


# ---------------------------------------------------------------- decode callables


def pyav_sequential(path: Path, threads: int = 0) -> int:
    """The bare PyAV loop: every frame to an RGB array."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        stream.codec_context.thread_count = threads
        frames = 0
        for frame in container.decode(stream):
            # Kept until the next frame, as a loop body using it would (and as ours is).
            tensor = torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1)
            frames += 1
        del tensor
    return frames


def ours_sequential(path: Path, backend: str = "pyav", threads: int = 0) -> int:
    """VideoReader over every frame."""
    with VideoReader(path, backend=backend, num_threads=threads) as reader:
        frames = 0
        for frame in reader:
            tensor = frame["data"]  # kept until the next frame, as in the PyAV loop
            frames += 1
        del tensor
    return frames


def pyav_clips(path: Path, clips: list[list[int]]) -> list[torch.Tensor]:
    """A plain PyAV container per clip: seek to its start, decode until its 16 frames."""
    out = []
    for clip in clips:
        start, end = clip[0] / FPS, clip[-1] / FPS
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            container.seek(int(start / stream.time_base), stream=stream, backward=True)
            frames = []
            for frame in container.decode(stream):
                if frame.time < start - 1e-6:
                    continue
                frames.append(torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1))
                if frame.time >= end - 1e-6:
                    break
            out.append(torch.stack(frames))
    return out


def ours_clips(
    path: Path, clips: list[list[int]], backend: str = "pyav", threads: int = 0
) -> list[torch.Tensor]:
    """One VideoReader, get_frames_at over every clip's frames, split back into clips."""
    with VideoReader(path, backend=backend, num_threads=threads) as reader:
        frames = reader.get_frames_at([i for clip in clips for i in clip]).data
    return list(frames.split(CLIP_LENGTH))


def ours_per_clip(path: Path, clips: list[list[int]]) -> list[torch.Tensor]:
    """A new VideoReader per clip (the file's frame index is kept from the first one)."""
    out = []
    for clip in clips:
        with VideoReader(path) as reader:
            out.append(reader.get_frames_at(clip).data)
    return out


def video_clips_get(clips: VideoClips, indices: list[int]) -> list[torch.Tensor]:
    """VideoClips.get_clip per clip, as a Dataset in a DataLoader calls it."""
    out = []
    for idx in indices:
        clips.close()  # no reader kept between clips: each __getitem__ pays the open
        out.append(clips.get_clip(idx)[0])
    return out


def decode_counts(path: Path, clips: list[list[int]]) -> tuple[int, int]:
    """Frames decoded for ``clips``, a decoder per clip: (ours, every frame on the way).

    Ours: from each clip's keyframe, in file order up to the clip's last packet, every
    packet but those holding only non-reference pictures outside the clip (what the
    PyAV backend sends to the decoder; ``tests/vision/test_video_reader.py`` checks
    both rules). The other: every frame from the keyframe to the clip's last frame.
    """
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        length_size = (stream.codec_context.extradata[4] & 3) + 1
        packets = [
            (p.pts, p.is_keyframe, h264_unreferenced(p, length_size))
            for p in container.demux(stream)
            if p.size
        ]
    display = sorted(pts for pts, _, _ in packets)
    ours = every = 0
    for clip in clips:
        wanted = {display[i] for i in clip}
        first = max(i for i, (pts, key, _) in enumerate(packets) if key and pts <= min(wanted))
        last = max(i for i, (pts, _, _) in enumerate(packets) if pts in wanted)
        run = packets[first : last + 1]
        ours += sum(1 for pts, _, unreferenced in run if pts in wanted or not unreferenced)
        every += clip[-1] - display.index(packets[first][0]) + 1
    return ours, every


def torchcodec_side(peers: Peers, name: str, **request: Any) -> Side:
    """A side that runs one torchcodec request per call."""
    worker = peers.torchcodec
    return Side(name, lambda: worker.call(**request))


def compare_with_torchcodec(
    peers: Peers, path: Path, positions: list[int], root: Path, what: str
) -> str:
    """A check line: torchcodec's frames and pts at ``positions`` against ours."""
    out = root / "torchcodec_frames.npy"
    peers.torchcodec.call(op="dump", path=str(path), threads=0, positions=positions, out=str(out))
    theirs, their_pts = np.load(out), np.load(str(out) + ".pts.npy")
    with VideoReader(path) as reader:
        ours = reader.get_frames_at(positions)
    ours_hwc = ours.data.permute(0, 2, 3, 1).numpy()
    same_pts = np.allclose(ours.pts.numpy(), their_pts, rtol=0, atol=1e-6)
    if ours_hwc.shape != theirs.shape:
        return f"{what}: torchcodec frames {theirs.shape} vs ours {ours_hwc.shape} (HWC)"
    diff = int(np.abs(ours_hwc.astype(np.int16) - theirs.astype(np.int16)).max())
    equal = int((ours_hwc == theirs).all(axis=(1, 2, 3)).sum())
    return (
        f"{what}: frames {positions} ours vs torchcodec: {equal}/{len(positions)} identical,"
        f" max |difference| {diff}; pts equal: {same_pts}"
    )


def own_cpu_seconds() -> float:
    """CPU seconds this process has used, all threads, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_rows(
    sides: Sequence[Side], pairs: Sequence[tuple[str, str, str]], repeats: int
) -> list[Row]:
    """CPU seconds per call of the sides in ``pairs`` ``(workload, ours, peer)``, interleaved.

    A torchcodec side answers with its worker's own CPU time; ours is this process's.
    """
    by_name = {side.name: side for side in sides}
    names = [n for _, ours, peer in pairs for n in (ours, peer) if n in by_name]
    samples: dict[str, list[float]] = {name: [] for name in dict.fromkeys(names)}
    for _ in range(repeats):
        for name in samples:
            start = own_cpu_seconds()
            result = by_name[name].fn()
            spent = own_cpu_seconds() - start
            samples[name].append(result["cpu_s"] if isinstance(result, dict) else spent)
    rows = []
    for workload, ours, peer in pairs:
        if ours in samples and peer in samples:
            rows.append(
                Row(
                    f"{workload}, CPU time (all threads)",
                    statistics.median(samples[ours]),
                    peer.strip(),
                    statistics.median(samples[peer]),
                    samples={"ours": samples[ours], "peer": samples[peer]},
                )
            )
    return rows


def peer_row(workload: str, timings: dict, ours: str, name: str, status: str, **kw: Any) -> Row:
    """A comparison row for an optional peer, or a row saying why it is absent."""
    if name in timings:
        return row_from(workload, timings, ours, name, **kw)
    return Row(workload, timings[ours].median, f"{name.strip()}: {status}", None, kw.get("target"))


# ------------------------------------------------------------------------ workloads


def sequential_sides(case: Case, path: Path, peers: Peers) -> list[Side]:
    """Ours, PyAV and torchcodec on one input, at both thread settings."""
    sides = []
    for suffix, threads in THREADS.items():
        sides += [
            Side(f"ours{suffix}", lambda t=threads: ours_sequential(path, threads=t)),
            Side(f"PyAV{suffix}", lambda t=threads: pyav_sequential(path, t)),
        ]
        if peers.torchcodec is not None:
            sides.append(
                torchcodec_side(
                    peers,
                    f"torchcodec{suffix}",
                    op="sequential",
                    path=str(path),
                    threads=threads,
                    batch=0,
                ),
            )
    if case.size == CLIP_SIZE:
        sides.append(Side("ffmpeg", lambda: ours_sequential(path, "ffmpeg")))
    return sides


def sequential_rows(case: Case, timings: dict, peers: Peers, frames: int) -> list[Row]:
    """torchcodec and PyAV rows of one input, per thread setting."""
    rows = []
    for suffix, threads in THREADS.items():
        how = "FFmpeg threads" if threads == 0 else "1 decode thread"
        workload = f"sequential {case.name} {case.size}, {frames} frames, {how}"
        rows.append(
            peer_row(
                workload,
                timings,
                f"ours{suffix}",
                f"torchcodec{suffix}",
                peers.torchcodec_status,
                target=1.0,
            ),
        )
        rows.append(row_from(workload, timings, f"ours{suffix}", f"PyAV{suffix}", "bare PyAV loop"))
    if "ffmpeg" in timings:
        workload = f"sequential {case.name} {case.size}, {frames} frames"
        rows.append(
            row_from(workload, timings, "ffmpeg", "PyAV", "bare PyAV loop (ours: ffmpeg backend)")
        )
    return rows


def bench_sequential(
    root: Path, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 1: every frame of 10 s clips, 360p in three codecs and 720p H.264."""
    rows = []
    for case in SEQUENTIAL_CASES:
        path = make_clip(
            root / f"seq_{case.size}_{case.name.split()[-1]}.{case.suffix}",
            10,
            case.size,
            case.encoder,
        )
        counts = {"ours": ours_sequential(path), "PyAV": pyav_sequential(path)}
        checks.append(f"sequential {case.name}: frames decoded {counts} (must be {10 * FPS})")
        if peers.torchcodec is not None:
            checks.append(
                compare_with_torchcodec(peers, path, [0, 1, 2, 150, 299], root, case.name)
            )
        if case.size == CLIP_SIZE:
            with VideoReader(path) as a, VideoReader(path, backend="ffmpeg") as b:
                diff = max(
                    (x["data"].int() - y["data"].int()).abs().max().item()
                    for x, y in zip(a, b, strict=True)
                )
            checks.append(f"{case.name}: max |pyav - ffmpeg backend| pixel difference {diff}")
        sides = sequential_sides(case, path, peers)
        timings = measure(sides, repeats, min_time)
        rows += sequential_rows(case, timings, peers, counts["ours"])
        workload = f"sequential {case.name} {case.size}, {counts['ours']} frames"
        pairs = [
            (f"{workload}, {'FFmpeg threads' if t == 0 else '1 decode thread'}", f"ours{x}",
             f"torchcodec{x}")
            for x, t in THREADS.items()
        ]  # fmt: skip
        rows += cpu_rows(sides, pairs, repeats)
    return rows


def clips_sides(
    paths: dict[str, Path], clips: list[list[int]], dataset: VideoClips, peers: Peers
) -> list[Side]:
    """Every side of the clips workload."""
    path, short_gop = paths["g250"], paths["g60"]
    indices = [clip[0] for clip in clips]  # stride 1: clip idx == its first frame
    sides = [
        Side("ours", lambda: ours_clips(path, clips)),
        Side("ours 1t", lambda: ours_clips(path, clips, threads=1)),
        Side("VideoClips", lambda: video_clips_get(dataset, indices)),
        Side("reader per clip", lambda: ours_per_clip(path, clips)),
        Side("PyAV", lambda: pyav_clips(path, clips)),
        Side("ffmpeg", lambda: ours_clips(path, clips, "ffmpeg")),
        Side("ours g60", lambda: ours_clips(short_gop, clips)),
        Side("PyAV g60", lambda: pyav_clips(short_gop, clips)),
    ]
    if peers.torchcodec is not None:
        for suffix, threads in THREADS.items():
            sides.append(
                torchcodec_side(
                    peers,
                    f"torchcodec{suffix}",
                    op="clips",
                    path=str(path),
                    threads=threads,
                    clips=clips,
                    per_clip=False,
                    seek_mode="exact",
                ),
            )
        sides.append(
            torchcodec_side(
                peers,
                "torchcodec per clip",
                op="clips",
                path=str(path),
                threads=0,
                clips=clips,
                per_clip=True,
                seek_mode="approximate",
            ),
        )
    return sides


def clips_rows(timings: dict, peers: Peers) -> list[Row]:
    """The rows of the clips workload."""
    workload = f"{CLIPS} random {CLIP_LENGTH}-frame clips, {CLIP_SIZE} H.264 20 s"
    per_clip = f"{workload}, a new reader per clip (ours: VideoClips.get_clip)"
    status = peers.torchcodec_status
    return [
        peer_row(f"{workload}, one reader", timings, "ours", "torchcodec", status, target=1.0),
        peer_row(
            f"{workload}, one reader, 1 decode thread",
            timings,
            "ours 1t",
            "torchcodec 1t",
            status,
            target=1.0,
        ),
        row_from(
            per_clip, timings, "VideoClips", "PyAV", "PyAV seek + decode per clip", target=2.0
        ),
        peer_row(
            per_clip,
            timings,
            "VideoClips",
            "torchcodec per clip",
            status,
            target=2.0,
            peer_label="torchcodec decoder per clip (approximate seek mode)",
        ),
        peer_row(
            f"{workload}, a new reader per clip (ours: VideoReader, index kept per file)",
            timings,
            "reader per clip",
            "torchcodec per clip",
            status,
            target=2.0,
            peer_label="torchcodec decoder per clip (approximate seek mode)",
        ),
        row_from(f"{workload}, one reader", timings, "ours", "PyAV", "PyAV seek + decode per clip"),
        row_from(
            f"{workload}, one reader", timings, "ffmpeg", "PyAV", "PyAV per clip (ours: ffmpeg)"
        ),
        row_from(
            f"{workload}, keyframe every 2 s, one reader",
            timings,
            "ours g60",
            "PyAV g60",
            "PyAV seek + decode per clip",
        ),
    ]


def bench_clips(
    root: Path, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 2: 20 random 16-frame clips from a 20 s 720p clip."""
    paths = {
        "g250": make_clip(root / "clips.mp4", 20),
        "g60": make_clip(root / "clips_g60.mp4", 20, gop=2 * FPS),
    }
    clips = random_clips(20 * FPS)
    ours, peer = ours_clips(paths["g250"], clips), pyav_clips(paths["g250"], clips)
    same = all(torch.equal(a, b) for a, b in zip(ours, peer, strict=True))
    checks.append(f"clips: ours == plain PyAV per clip, pixel for pixel: {same}")
    dataset = VideoClips([paths["g250"]], CLIP_LENGTH, 1, with_audio=False)
    via_dataset = video_clips_get(dataset, [clip[0] for clip in clips])
    same = all(torch.equal(a, b) for a, b in zip(ours, via_dataset, strict=True))
    checks.append(f"clips: VideoClips.get_clip == ours: {same}")
    per_reader = ours_per_clip(paths["g250"], clips)
    same = all(torch.equal(a, b) for a, b in zip(ours, per_reader, strict=True))
    checks.append(f"clips: a new VideoReader per clip == ours: {same}")
    if peers.torchcodec is not None:
        checks.append(compare_with_torchcodec(peers, paths["g250"], clips[0], root, "clips"))
    ours_n, every_n = decode_counts(paths["g250"], clips)
    checks.append(
        f"clips, a decoder per clip: {ours_n} frames decoded by ours (reference frames from"
        f" the keyframe on, the clip's frames and the reference frames they need), {every_n}"
        f" from each keyframe to the clip's end (as torchcodec decodes): {every_n / ours_n:.2f}x"
    )
    sides = clips_sides(paths, clips, dataset, peers)
    timings = measure(sides, repeats, min_time)
    workload = f"{CLIPS} random {CLIP_LENGTH}-frame clips, {CLIP_SIZE} H.264 20 s"
    pairs = [
        (f"{workload}, one reader", "ours", "torchcodec"),
        (f"{workload}, one reader, 1 decode thread", "ours 1t", "torchcodec 1t"),
        (f"{workload}, a new reader per clip", "VideoClips", "torchcodec per clip"),
    ]
    return clips_rows(timings, peers) + cpu_rows(sides, pairs, repeats)


# ------------------------------------------------------------------------ UCF101 AVI

AVI_FPS, AVI_SECONDS, AVI_CLIPS = 25, 7, 10


def make_packed_avi(path: Path) -> Path | None:
    """A UCF101-style AVI from the ffmpeg binary's libxvid (None: the binary lacks it)."""
    ffmpeg_exe, _ = ffmpeg_binaries()
    done = subprocess.run(
        [
            ffmpeg_exe, "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size=320x240:rate={AVI_FPS}:duration={AVI_SECONDS}",
            "-c:v", "libxvid", "-bf", "2", "-q:v", "4", str(path),
        ],
        capture_output=True, check=False,
    )  # fmt: skip
    return path if done.returncode == 0 else None


def scan_index(path: Path) -> int:
    """The frame index of a file no reader in this process has indexed yet."""
    INDEX_CACHE.clear()
    with VideoReader(path) as reader:
        return len(reader.backend.frame_index(reader.stream))


def demux_packets(path: Path) -> int:
    """Every packet of the video stream, demuxed only: an index from the container."""
    with av.open(str(path)) as container:
        return sum(1 for p in container.demux(container.streams.video[0]) if p.size)


def first_read(path: Path) -> int:
    """Every frame, by the first reader of the file (its index scan included)."""
    INDEX_CACHE.clear()
    return ours_sequential(path)


def pyav_avi_clips(path: Path, starts: list[float], length: int) -> list[torch.Tensor]:
    """A PyAV container per clip: seek before ``start`` (seconds), decode ``length`` frames."""
    out = []
    for start in starts:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            container.seek(int(start / stream.time_base), stream=stream, backward=True)
            frames = []
            for frame in container.decode(stream):
                if frame.time >= start - 1e-6:
                    rgb = torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1)
                    frames.append(rgb)
                if len(frames) == length:
                    break
            out.append(torch.stack(frames))
    return out


def bench_avi(
    root: Path, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 3: a UCF101-style AVI with packed B-frames."""
    path = make_packed_avi(root / "ucf101_style.avi")
    if path is None:
        checks.append("avi: skipped, the ffmpeg binary has no libxvid encoder")
        return []
    dataset = VideoClips([path], CLIP_LENGTH, 1, with_audio=False)
    rng = random.Random(0)
    indices = [rng.randrange(dataset.num_clips()) for _ in range(AVI_CLIPS)]
    times = dataset.metadata["video_pts"][0].tolist()
    base = VideoReader(path).stream.time_base
    starts = [float(times[i] * base) for i in indices]
    n = scan_index(path)
    checks.append(
        f"avi: {n} frames in the index, {ours_sequential(path)} by iteration,"
        f" {pyav_sequential(path)} by the bare PyAV loop; {demux_packets(path)} packets"
    )
    sides = [
        Side("scan", lambda: scan_index(path)),
        Side("demux", lambda: demux_packets(path)),
        Side("first read", lambda: first_read(path)),
        Side("PyAV loop", lambda: pyav_sequential(path)),
        Side("VideoClips", lambda: video_clips_get(dataset, indices)),
        Side("PyAV clips", lambda: pyav_avi_clips(path, starts, CLIP_LENGTH)),
    ]
    timings = measure(sides, repeats, min_time)
    workload = f"UCF101-style AVI, MPEG-4 packed B-frames 320x240, {n} frames"
    return [
        row_from(
            f"{workload}, frame index (decode scan)",
            timings,
            "scan",
            "demux",
            "packet demux (an index from the container)",
        ),
        row_from(
            f"{workload}, every frame, a new reader (index scan included)",
            timings,
            "first read",
            "PyAV loop",
            "bare PyAV loop",
        ),
        row_from(
            f"{workload}, {AVI_CLIPS} random {CLIP_LENGTH}-frame clips, VideoClips.get_clip",
            timings,
            "VideoClips",
            "PyAV clips",
            "PyAV seek + decode per clip",
        ),
    ]


# ----------------------------------------------------------------------------- main


Workload = Callable[[Path, Peers, int, float, list[str]], list[Row]]
WORKLOADS: dict[str, Workload] = {
    "sequential": bench_sequential,
    "clips": bench_clips,
    "avi": bench_avi,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = harness.benchmark_parser(__doc__.splitlines()[0], list(WORKLOADS), repeats=5)
    parser.add_argument(
        "--peers-python",
        default=str(ROOT / ".venv-peers" / "bin" / "python"),
        help="Python of the peers' virtualenv, for torchcodec (default: .venv-peers)",
    )
    return harness.parse_benchmark_args(parser, list(WORKLOADS), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads, print machine info and the table, optionally write JSON."""
    run = harness.Session(parse_args(argv))
    peers = load_peers(run.args.peers_python)
    run.header("trivium.vision.io video benchmark", machine_info(peers))
    try:
        with tempfile.TemporaryDirectory(prefix="trivium-video-bench") as tmp:
            for name, bench in WORKLOADS.items():
                if name in run.args.only:
                    run.rows += bench(
                        Path(tmp), peers, run.args.repeats, run.args.min_time, run.checks
                    )
    finally:
        if peers.torchcodec is not None:
            peers.torchcodec.close()
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
