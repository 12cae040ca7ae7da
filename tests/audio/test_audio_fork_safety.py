"""Audio streams and datasets used in the parent, then in DataLoader workers.

An open audio file inherited through ``fork`` shares its offset with the parent: a
worker reading it would move the parent's position (and the workers each other's).
Each test reads in the parent, iterates in workers under a watchdog
(:mod:`loader_watchdog`), and reads in the parent again.
"""

from __future__ import annotations

import io
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from loader_watchdog import load_in_workers
from torch.utils.data import IterableDataset

from trivium.audio.datasets import AudioFolder
from trivium.audio.io import AudioStream, load, stream
from trivium.core.threads import set_num_threads

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"
MODULE = "audio.test_audio_fork_safety"
WAV = AUDIO / "ds-new-home-in-the-stars-16k.wav"  # 57375 frames
LONG_FLAC = AUDIO / "sb-multi-mic-speech.flac"  # 160000 frames: decoded in parts on threads
CHUNK = 4000


# ------------------------------------------------------------------ AudioStream


class StreamChunks(IterableDataset):
    """The chunks of one stream, from where the parent left it."""

    def __init__(self, chunks: AudioStream) -> None:
        self.stream = chunks
        self.chunks: Any = None

    def __iter__(self):
        if self.chunks is None:
            self.chunks = iter(self.stream)
        yield from self.chunks

    def __getstate__(self) -> dict[str, Any]:
        return {"stream": self.stream, "chunks": None}  # a generator does not pickle


def build_stream(path: str, source: str) -> StreamChunks:
    src: Any = path
    if source == "file":
        src = open(path, "rb")  # noqa: SIM115 - the stream reads it until the process ends
    elif source == "bytes":
        src = Path(path).read_bytes()
    elif source == "bytesio":
        src = io.BytesIO(Path(path).read_bytes())
    return StreamChunks(stream(src, CHUNK))


def read_stream(chunks: StreamChunks) -> torch.Tensor:
    if chunks.chunks is None:
        chunks.chunks = iter(chunks.stream)
    return next(chunks.chunks)


@pytest.mark.parametrize(
    ("source", "context"),
    [
        ("path", "fork"),
        ("file", "fork"),
        ("bytesio", "fork"),
        ("path", "spawn"),
        ("file", "forkserver"),
        ("bytes", "forkserver"),
    ],
)
def test_audio_stream_goes_on_in_workers(source: str, context: str, tmp_path: Path) -> None:
    reference, _ = load(WAV)
    expected = list(torch.split(reference, CHUNK, dim=-1))
    got = load_in_workers(
        MODULE,
        {"path": str(WAV), "source": source},
        context,
        tmp_path / "out.pt",
        build="build_stream",
        read="read_stream",
    )
    assert torch.equal(got["before"], expected[0])
    # The parent's file (and its offset) was left alone: it goes on at chunk 1.
    assert torch.equal(got["after"], expected[1])
    # Every worker goes on from chunk 1, where the parent stood when it started them.
    positions = {bytes(chunk.numpy().tobytes()): k for k, chunk in enumerate(expected)}
    counts = Counter(positions.get(bytes(chunk.numpy().tobytes())) for chunk in got["workers"])
    assert counts == {k: 2 for k in range(1, len(expected))}


def test_audio_stream_pickles_as_its_source_and_position() -> None:
    import pickle

    data = (AUDIO / "sb-spk1_snt1.wav").read_bytes()
    reference, _ = load(data)
    embedded = io.BytesIO(b"junk" + data)
    embedded.seek(4)  # the audio starts here
    chunks = stream(embedded, 1000)
    iter_chunks = iter(chunks)
    first = next(iter_chunks)
    copy = pickle.loads(pickle.dumps(chunks))
    assert copy._file is None and isinstance(copy._source, bytes)
    assert torch.equal(first, reference[:, :1000])
    assert torch.equal(torch.cat(list(copy), -1), reference[:, 1000:])
    assert torch.equal(next(iter_chunks), reference[:, 1000:2000])  # the original goes on


# ------------------------------------------------------------------ AudioFolder


def build_folder(root: str) -> AudioFolder:
    set_num_threads(2)  # long FLACs decode in parts on the shared pool, in workers too
    return AudioFolder(root)


def read_folder(folder: AudioFolder) -> list[Any]:
    return [folder[i] for i in range(len(folder))]


def test_audio_folder_in_forked_workers(tmp_path: Path) -> None:
    root = tmp_path / "folder"
    for label, names in {"multi": [LONG_FLAC], "single": [WAV, AUDIO / "sb-example2.flac"]}.items():
        (root / label).mkdir(parents=True)
        for name in names:
            shutil.copy(name, root / label / name.name)
    got = load_in_workers(
        MODULE, {"root": str(root)}, "fork", tmp_path / "out.pt", build="build_folder",
        read="read_folder",
    )  # fmt: skip
    assert len(got["workers"]) == len(got["before"]) == 3
    for parent, worker, again in zip(got["before"], got["workers"], got["after"], strict=True):
        assert torch.equal(worker[0], parent[0]) and torch.equal(again[0], parent[0])
        assert list(worker[1:]) == list(parent[1:])
    assert got["before"][0][0].shape == (4, 160000)
    assert torch.equal(got["before"][0][0], load(LONG_FLAC)[0])
