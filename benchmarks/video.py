"""Video decode speed of ``trivium.vision.io`` against plain PyAV (and its other peers).

What it measures (inputs are generated at start-up with the ``ffmpeg`` binary from
its ``testsrc2`` pattern, H.264 ``yuv420p``, 30 fps, libx264 defaults (keyframe at
most every 250 frames, B-frames), in a temporary directory):

1. Sequential decode of a 1280x720, 10 s clip to uint8 [C, H, W] RGB tensors:
   ``VideoReader`` (PyAV backend) against a bare PyAV loop
   (``for f in container.decode(video=0): t = torch.from_numpy(f.to_ndarray(format="rgb24"))``,
   same thread settings; both keep the latest frame alive until the next one, as a
   loop body using it would: dropping it at once makes both sides about 20 % faster,
   the allocator reusing the freed buffer), and the ffmpeg-subprocess backend.
   Target: ≥ 0.95x (the bare loop is this backend's limit).
2. 20 random 16-frame clips (same seed every call) from a 1280x720, 20 s clip:
   one ``VideoReader`` and ``get_frames_at`` over all their frames, against a
   plain PyAV container per clip that seeks to the clip's start and decodes to its
   16th frame (converting only the clip's frames). Target: ≥ 2x. Also the ffmpeg
   backend, ``VideoClips.get_clip`` (one reader per clip, as a Dataset does), and
   the same clips from a copy encoded with a keyframe every 2 s (``-g 60``), where
   a per-clip seek decodes far less and sharing one decode pass gains less.
   Our batches are ``[T, C, H, W]`` views of a ``[T, H, W, C]`` buffer (channels-last
   memory, as torchcodec's); the peer's ``torch.stack`` of permuted frames copies into
   contiguous ``[T, C, H, W]``, with torch's intra-op threads.
3. torchvision's ``VideoReader`` and torchcodec's ``VideoDecoder`` on both
   workloads where they import and decode video (rows say why when they do not):
   torchvision is imported through ``tests/peers.py``; recent releases (0.28 here)
   have no video decoding left (no ``io.VideoReader`` / ``io.read_video``).

Every side is warmed up once, then timed in ``--repeats`` repeats (default 5) of a
loop of at least ``--min-time`` seconds (default 0.2), the sides interleaved; the
median per-call time is reported. Ratio = peer time / our time (above 1: we are
faster).

Run from the repository root::

    .venv/bin/python benchmarks/video.py [--repeats N] [--min-time S] [--json PATH]
        [--only sequential,clips]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import torch
from harness import (
    Row,
    Side,
    benchmark_parser,
    cpu_busy_seconds,
    cpu_model,
    measure,
    parse_benchmark_args,
    print_header,
    report,
    row_from,
)

from trivium.vision.io import VideoClips, VideoReader
from trivium.vision.io.video_ffmpeg import ffmpeg_binaries

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from peers import import_torchvision

FPS = 30
SIZE = "1280x720"
CLIPS, CLIP_LENGTH = 20, 16


# --------------------------------------------------------------------------- peers


@dataclass
class Peers:
    """The optional peers and a line saying what became of each."""

    torchvision: Any | None
    torchvision_status: str
    torchcodec: Any | None
    torchcodec_status: str


def load_peers() -> Peers:
    """torchvision.io (through tests/peers.py) and torchcodec.decoders where they have video
    decoding; a line saying why not otherwise."""
    tv, tv_status = None, "not installed"
    try:
        torchvision = import_torchvision()
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
    try:
        import torchcodec
        import torchcodec.decoders

        tc, tc_status = torchcodec.decoders, f"torchcodec {torchcodec.__version__}"
    except Exception as e:
        tc, tc_status = None, f"not importable: {type(e).__name__}: {e}"
    return Peers(tv, tv_status, tc, tc_status)


def machine_info(peers: Peers) -> dict[str, str]:
    """Versions and CPU facts that the numbers depend on."""
    ffmpeg_exe, ffprobe_exe = ffmpeg_binaries()
    libavcodec = av.library_versions["libavcodec"]
    version = subprocess.run(
        [ffmpeg_exe, "-version"], capture_output=True, text=True, check=False
    ).stdout.split("\n", 1)[0]
    return {
        "cpu": f"{cpu_model()}; usable CPUs {len(os.sched_getaffinity(0))}",
        "python": f"{platform.python_version()} ({platform.platform()})",
        "torch": torch.__version__,
        "PyAV": f"{av.__version__} (libavcodec {'.'.join(map(str, libavcodec))})",
        "ffmpeg backend": f"{ffmpeg_exe}: {version}; ffprobe {ffprobe_exe}",
        "torchvision.io": peers.torchvision_status,
        "torchcodec": peers.torchcodec_status,
    }


# -------------------------------------------------------------------------- inputs


def make_clip(path: Path, seconds: int, gop: int | None = None) -> Path:
    """A testsrc2 H.264 clip, SIZE at FPS, made by the ffmpeg binary (``gop``: keyint)."""
    ffmpeg_exe, _ = ffmpeg_binaries()
    keyint = [] if gop is None else ["-g", str(gop)]
    subprocess.run(
        [
            ffmpeg_exe, "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size={SIZE}:rate={FPS}:duration={seconds}",
            "-c:v", "libx264", "-pix_fmt", "yuv420p", *keyint, str(path),
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


def pyav_sequential(path: Path) -> int:
    """The bare PyAV loop: every frame to an RGB array."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        frames = 0
        for frame in container.decode(stream):
            # Kept until the next frame, as a loop body using it would (and as ours is).
            tensor = torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1)
            frames += 1
        del tensor
    return frames


def ours_sequential(path: Path, backend: str) -> int:
    """VideoReader over every frame."""
    with VideoReader(path, backend=backend) as reader:
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


def ours_clips(path: Path, clips: list[list[int]], backend: str) -> list[torch.Tensor]:
    """One VideoReader, get_frames_at over every clip's frames, split back into clips."""
    with VideoReader(path, backend=backend) as reader:
        frames = reader.get_frames_at([i for clip in clips for i in clip]).data
    return list(frames.split(CLIP_LENGTH))


def video_clips_get(clips: VideoClips, indices: list[int]) -> list[torch.Tensor]:
    """VideoClips.get_clip per clip, as a Dataset in a DataLoader calls it."""
    out = []
    for idx in indices:
        clips.close()  # no reader kept between clips: each __getitem__ pays the open
        out.append(clips.get_clip(idx)[0])
    return out


def torchvision_sequential(peers: Peers, path: Path) -> int:
    reader = peers.torchvision.VideoReader(str(path), "video")
    return sum(1 for _ in reader)


def torchvision_clips(peers: Peers, path: Path, clips: list[list[int]]) -> list[torch.Tensor]:
    """torchvision's VideoReader: seek to each clip's start, take its frames."""
    reader = peers.torchvision.VideoReader(str(path), "video")
    out = []
    for clip in clips:
        reader.seek(clip[0] / FPS)
        out.append(torch.stack([next(reader)["data"] for _ in clip]))
    return out


def torchcodec_sequential(peers: Peers, path: Path) -> int:
    decoder = peers.torchcodec.VideoDecoder(str(path))
    return sum(1 for _ in decoder)


def torchcodec_clips(peers: Peers, path: Path, clips: list[list[int]]) -> torch.Tensor:
    decoder = peers.torchcodec.VideoDecoder(str(path))
    return decoder.get_frames_at([i for clip in clips for i in clip]).data


def peer_row(workload: str, timings: dict, name: str, status: str, target: float | None) -> Row:
    """A comparison row for an optional peer, or a row saying why it is absent."""
    if name in timings:
        return row_from(workload, timings, "ours", name, target=target)
    return Row(workload, timings["ours"].median, f"{name} {status}", None, target)


# ------------------------------------------------------------------------ workloads


def bench_sequential(
    root: Path, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 1: every frame of a 10 s 720p clip."""
    path = make_clip(root / "seq.mp4", 10)
    counts = {
        "ours": ours_sequential(path, "pyav"),
        "ffmpeg": ours_sequential(path, "ffmpeg"),
        "PyAV": pyav_sequential(path),
    }
    checks.append(f"sequential: frames decoded {counts} (must all be {10 * FPS})")
    with VideoReader(path) as a, VideoReader(path, backend="ffmpeg") as b:
        diff = max(
            (x["data"].int() - y["data"].int()).abs().max().item()
            for x, y in zip(a, b, strict=True)
        )
    checks.append(f"sequential: max |pyav - ffmpeg backend| pixel difference {diff}")
    sides = [
        Side("ours", lambda: ours_sequential(path, "pyav")),
        Side("PyAV", lambda: pyav_sequential(path)),
        Side("ffmpeg", lambda: ours_sequential(path, "ffmpeg")),
    ]
    if peers.torchvision is not None:
        sides.append(Side("torchvision", lambda: torchvision_sequential(peers, path)))
    if peers.torchcodec is not None:
        sides.append(Side("torchcodec", lambda: torchcodec_sequential(peers, path)))
    timings = measure(sides, repeats, min_time)
    workload = f"sequential decode {SIZE} H.264 10 s ({10 * FPS} frames)"
    return [
        row_from(workload, timings, "ours", "PyAV", "bare PyAV loop", target=0.95),
        row_from(workload, timings, "ffmpeg", "PyAV", "bare PyAV loop (ours: ffmpeg backend)"),
        peer_row(workload, timings, "torchvision", peers.torchvision_status, 1.0),
        peer_row(workload, timings, "torchcodec", peers.torchcodec_status, None),
    ]


def bench_clips(
    root: Path, peers: Peers, repeats: int, min_time: float, checks: list[str]
) -> list[Row]:
    """Workload 2: 20 random 16-frame clips from a 20 s 720p clip."""
    path = make_clip(root / "clips.mp4", 20)
    short_gop = make_clip(root / "clips_g60.mp4", 20, gop=2 * FPS)
    clips = random_clips(20 * FPS)
    ours, peer = ours_clips(path, clips, "pyav"), pyav_clips(path, clips)
    same = all(torch.equal(a, b) for a, b in zip(ours, peer, strict=True))
    checks.append(f"clips: ours == plain PyAV per clip, pixel for pixel: {same}")
    dataset = VideoClips([path], CLIP_LENGTH, 1, with_audio=False)
    indices = [clip[0] for clip in clips]  # stride 1: clip idx == its first frame
    via_dataset = video_clips_get(dataset, indices)
    same = all(torch.equal(a, b) for a, b in zip(ours, via_dataset, strict=True))
    checks.append(f"clips: VideoClips.get_clip == ours: {same}")
    sides = [
        Side("ours", lambda: ours_clips(path, clips, "pyav")),
        Side("PyAV", lambda: pyav_clips(path, clips)),
        Side("ffmpeg", lambda: ours_clips(path, clips, "ffmpeg")),
        Side("VideoClips", lambda: video_clips_get(dataset, indices)),
        Side("ours g60", lambda: ours_clips(short_gop, clips, "pyav")),
        Side("PyAV g60", lambda: pyav_clips(short_gop, clips)),
    ]
    if peers.torchvision is not None:
        sides.append(Side("torchvision", lambda: torchvision_clips(peers, path, clips)))
    if peers.torchcodec is not None:
        sides.append(Side("torchcodec", lambda: torchcodec_clips(peers, path, clips)))
    timings = measure(sides, repeats, min_time)
    workload = f"{CLIPS} random {CLIP_LENGTH}-frame clips, {SIZE} H.264 20 s"
    return [
        row_from(workload, timings, "ours", "PyAV", "PyAV container per clip", target=2.0),
        row_from(workload, timings, "ffmpeg", "PyAV", "PyAV container per clip (ours: ffmpeg)"),
        row_from(
            workload, timings, "VideoClips", "PyAV", "PyAV container per clip (ours: get_clip)"
        ),
        peer_row(workload, timings, "torchvision", peers.torchvision_status, None),
        peer_row(workload, timings, "torchcodec", peers.torchcodec_status, None),
        row_from(
            f"{workload}, keyframe every 2 s",
            timings,
            "ours g60",
            "PyAV g60",
            "PyAV container per clip",
        ),
    ]


# ----------------------------------------------------------------------------- main


Workload = Callable[[Path, Peers, int, float, list[str]], list[Row]]
WORKLOADS: dict[str, Workload] = {"sequential": bench_sequential, "clips": bench_clips}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = benchmark_parser(__doc__.splitlines()[0], list(WORKLOADS), repeats=5)
    return parse_benchmark_args(parser, list(WORKLOADS), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workloads, print machine info and the table, optionally write JSON."""
    args = parse_args(argv)
    started, cpu_start = time.perf_counter(), cpu_busy_seconds()
    peers = load_peers()
    info = machine_info(peers)
    print_header("trivium.vision.io video benchmark", info, args)
    checks: list[str] = []
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="trivium-video-bench") as tmp:
        for name, bench in WORKLOADS.items():
            if name in args.only:
                rows += bench(Path(tmp), peers, args.repeats, args.min_time, checks)
    report(rows, checks, info, args, started, cpu_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
