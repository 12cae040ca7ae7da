"""Synthetic test videos whose frame ``i`` shows ``i`` in binary, and helpers around them.

Each frame is 16 pixels high and 8 pixels wide per bit: bit ``b`` of the frame
number is a white (set) or black (clear) 8-pixel column band, so the number reads
back exactly through any lossy codec.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import av
import numpy as np
import torch

from trivium.vision.io import write_video

BITS = 8
ASSETS_VIDEO = Path(__file__).resolve().parents[1] / "assets" / "video"


def numbered_frames(n: int, bits: int = BITS) -> torch.Tensor:
    """``[n, 3, 16, 8 * bits]`` uint8 frames, frame ``i`` showing ``i`` in binary."""
    frames = torch.zeros(n, 3, 16, 8 * bits, dtype=torch.uint8)
    for i in range(n):
        for b in range(bits):
            if (i >> b) & 1:
                frames[i, :, :, 8 * b : 8 * b + 8] = 255
    return frames


def frame_number(frame: torch.Tensor, bits: int = BITS) -> int:
    """The number a :func:`numbered_frames` frame shows (read from the band centres)."""
    columns = frame.float().mean(dim=(0, 1))
    return sum(1 << b for b in range(bits) if columns[8 * b + 2 : 8 * b + 6].mean() > 128)


def write_numbered(path: Path, n: int, fps: float, gop: int = 10, **kwargs) -> Path:
    """Write a numbered clip with a keyframe every ``gop`` frames (no scene-cut keyframes)."""
    options = {"g": str(gop), "x264-params": "scenecut=0"} if path.suffix == ".mp4" else None
    write_video(path, numbered_frames(n), fps, options=kwargs.pop("options", options), **kwargs)
    return path


_VOP = b"\x00\x00\x01\xb6"  # MPEG-4 Part 2: a picture (VOP) starts here


def vop_types(packet: bytes) -> str:
    """The coding types ("I", "P", "B", "S") of the MPEG-4 Part 2 pictures in a packet."""
    types, at = "", packet.find(_VOP)
    while at >= 0 and at + 4 < len(packet):
        types += "IPBS"[packet[at + 4] >> 6]
        at = packet.find(_VOP, at + 4)
    return types


def _n_vop(fps: int) -> bytes:
    """A not-coded P-picture (N-VOP): the placeholder DivX and Xvid put after a packed pair.

    Its time increment takes as many bits as the encoder's ``fps - 1`` (a time base of
    ``1 / fps``), and it ends in the stuffing that aligns the next start code.
    """
    bits = "01" + "0" + "1" + "0" * max(1, (fps - 1).bit_length()) + "1" + "0"
    bits += "0" + "1" * (-(len(bits) + 1) % 8)
    return _VOP + int(bits, 2).to_bytes(len(bits) // 8, "big")


def write_packed_avi(path: Path, n: int, fps: int, gop: int = 12) -> Path:
    """A numbered clip in AVI as DivX / Xvid write MPEG-4 Part 2: packed B-frames.

    FFmpeg's encoder (through PyAV) writes one picture per packet, in decode order
    (``I0 P2 B1 P4 B3 ...``). "Packed bitstream" moves each B-picture into the packet
    before it, beside the picture decoded before it, and puts a placeholder N-VOP in
    its place (``[I0] [P2 B1] [N] [P4 B3] [N] ...``, and ``[I12 B11]`` where a GOP
    opens), with the user data ``DivX503b1393p`` (the ``p``: packed) by which decoders
    know it before each I-picture (a decoder that starts at a seek needs it there).
    The picture data are FFmpeg's, byte for byte.
    """
    plain = path.with_name(path.stem + "-plain.avi")
    options = {"bf": "1", "g": str(gop), "qscale": "3"}
    write_video(plain, numbered_frames(n), fps, video_codec="mpeg4", options=options)
    with av.open(str(plain)) as source:
        stream = source.streams.video[0]
        chunks: list[list] = []  # [data, keyframe] per AVI chunk
        for packet in source.demux(stream):
            if not packet.size:
                continue
            data = bytes(packet)
            if vop_types(data) == "B":
                chunks[-1][0] += data
                chunks.append([_n_vop(fps), False])
            elif packet.is_keyframe:  # the user data before each I-picture, as DivX writes it
                at = data.find(_VOP)
                chunks.append([data[:at] + b"\x00\x00\x01\xb2DivX503b1393p" + data[at:], True])
            else:
                chunks.append([data, False])
        with av.open(str(path), "w", format="avi") as out:
            target = out.add_stream_from_template(stream)
            for position, (data, keyframe) in enumerate(chunks):
                packet = av.Packet(data)
                packet.stream, packet.time_base = target, target.time_base
                packet.dts = packet.pts = position  # an AVI chunk's time is its place
                packet.is_keyframe = keyframe
                out.mux(packet)
    plain.unlink()
    return path


def pyav_frames(path: Path | str) -> list[tuple[np.ndarray, float | None]]:
    """Every video frame as PyAV decodes it (rgb24 HWC array, pts seconds)."""
    with av.open(str(path)) as container:
        return [
            (frame.to_ndarray(format="rgb24"), frame.time)
            for frame in container.decode(container.streams.video[0])
        ]


def pyav_keyframes(path: Path | str) -> list[float]:
    """The pts (seconds) of every keyframe packet, from PyAV's demuxer."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return sorted(
            float(p.pts * stream.time_base)
            for p in container.demux(stream)
            if p.size and p.is_keyframe
        )


def ffprobe_frame_count(path: Path | str) -> int:
    """Frames ffprobe decodes (``-count_frames``): a reference outside Python."""
    out = subprocess.run(
        [
            "ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
            "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", str(path),
        ],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return int(out.stdout.strip().split(",")[0])


def child_pids() -> list[int]:
    """Live (or zombie) child processes of this process, from /proc."""
    me, children = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            children.append(int(entry))
    return children


def open_fds() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))
