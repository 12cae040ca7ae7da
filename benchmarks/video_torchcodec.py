"""torchcodec's side of ``benchmarks/video.py``, served from the peers' virtualenv.

torchcodec's compiled code loads only in the benchmark-only virtualenv that
``../shared/peers/setup_peers_venv.sh`` builds (``.venv-peers``), which the project's
own environment never imports. ``benchmarks/video.py`` starts this script with that
virtualenv's Python and sends it one JSON request per line on stdin; each answer is
one JSON line on stdout. A request runs one call of a workload, so the caller times
the round trip (a pipe write and read: microseconds against the decode's
milliseconds) interleaved with its own sides.

Requests (``threads`` is torchcodec's ``num_ffmpeg_threads``; 0: FFmpeg decides);
every answer also holds ``cpu_s``, the CPU seconds this process (all its threads)
spent on the request:

- ``{"op": "version"}`` → ``{"version": "0.17.0"}``
- ``{"op": "sequential", "path", "threads", "batch"}``: every frame, by iterating
  the decoder (``batch`` 0) or by ``get_frames_in_range`` in batches of ``batch``
  frames → ``{"frames": n}``
- ``{"op": "clips", "path", "threads", "clips", "per_clip", "seek_mode"}``: the
  frames of every clip (lists of positions) with one ``get_frames_at`` on one decoder,
  or a new decoder per clip (``per_clip``) → ``{"frames": n}``
- ``{"op": "dump", "path", "threads", "positions", "out"}``: the frames at
  ``positions`` saved to ``out`` (``.npy``, uint8 ``[T, H, W, C]``) and their pts
  to ``out + ".pts.npy"`` → ``{"frames": n}``

Run by ``benchmarks/video.py``; by hand::

    echo '{"op": "version"}' | .venv-peers/bin/python benchmarks/video_torchcodec.py
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

import numpy as np
import torchcodec
from torchcodec.decoders import VideoDecoder


def sequential(path: str, threads: int, batch: int) -> int:
    """Decode every frame; return how many."""
    decoder = VideoDecoder(path, num_ffmpeg_threads=threads)
    if batch <= 0:
        return sum(1 for _ in decoder)
    n, frames = len(decoder), 0
    for start in range(0, n, batch):
        frames += len(decoder.get_frames_in_range(start, min(start + batch, n)).data)
    return frames


def clips(
    path: str, threads: int, clip_list: list[list[int]], per_clip: bool, seek_mode: str
) -> int:
    """Decode every clip's frames, with one decoder or a new one per clip."""
    if not per_clip:
        decoder = VideoDecoder(path, num_ffmpeg_threads=threads, seek_mode=seek_mode)
        return len(decoder.get_frames_at([i for clip in clip_list for i in clip]).data)
    frames = 0
    for clip in clip_list:
        decoder = VideoDecoder(path, num_ffmpeg_threads=threads, seek_mode=seek_mode)
        frames += len(decoder.get_frames_at(clip).data)
    return frames


def dump(path: str, threads: int, positions: list[int], out: str) -> int:
    """Save the frames at ``positions`` (HWC) and their pts, for a pixel comparison."""
    decoder = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC")
    batch = decoder.get_frames_at(positions)
    np.save(out, batch.data.numpy())
    np.save(out + ".pts.npy", batch.pts_seconds.double().numpy())
    return len(batch.data)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request."""
    op = request["op"]
    if op == "version":
        return {"version": torchcodec.__version__}
    if op == "sequential":
        return {"frames": sequential(request["path"], request["threads"], request["batch"])}
    if op == "clips":
        n = clips(
            request["path"],
            request["threads"],
            request["clips"],
            request["per_clip"],
            request.get("seek_mode", "exact"),
        )
        return {"frames": n}
    if op == "dump":
        n = dump(request["path"], request["threads"], request["positions"], request["out"])
        return {"frames": n}
    raise ValueError(f"unknown op {op!r}")


def cpu_seconds() -> float:
    """CPU seconds this process has used, all threads, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    """Serve requests from stdin until it closes."""
    for line in sys.stdin:
        try:
            start = cpu_seconds()
            reply = answer(json.loads(line))
            reply["cpu_s"] = cpu_seconds() - start
        except Exception as e:  # reported to the caller, which decides
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
