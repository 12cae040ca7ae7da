"""VideoClips, its cache and samplers, in and out of DataLoader workers."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from vision.video_testclips import frame_number, pyav_frames, write_numbered

from trivium.core.errors import DatasetError, DecodeWarning
from trivium.vision.io import RandomClipSampler, UniformClipSampler, VideoClips

LENGTHS = (20, 7, 33)  # frames per video; 7 < clip length 8: no clips
FPS = 10


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("clips")
    rate = 8000
    tone = 0.5 * torch.sin(torch.arange(4 * rate) / rate * 2 * torch.pi * 100).repeat(2, 1)
    paths = [write_numbered(root / "v0.mp4", LENGTHS[0], FPS)]
    paths.append(write_numbered(root / "v1.mp4", LENGTHS[1], FPS))
    paths.append(
        write_numbered(root / "v2.mkv", LENGTHS[2], FPS, audio=tone[:, : 33 * 800],
                       audio_fps=rate, audio_codec="pcm_s16le")
    )  # fmt: skip
    return paths


def expected_clips(length: int, size: int, step: int) -> list[list[int]]:
    return [list(range(s, s + size)) for s in range(0, length - size + 1, step)]


@pytest.mark.parametrize("backend", ["pyav", "ffmpeg"])
def test_clips_cover_every_video(videos: list[Path], backend: str) -> None:
    clips = VideoClips(videos, clip_length_in_frames=8, frames_between_clips=5, backend=backend)
    expected = [(v, frames) for v, n in enumerate(LENGTHS) for frames in expected_clips(n, 8, 5)]
    assert clips.num_clips() == len(clips) == len(expected) == 3 + 0 + 6
    assert clips.num_clips_per_video.tolist() == [3, 0, 6]
    for idx in (0, 2, 3, 8, -1):
        video, audio, info, video_idx = clips.get_clip(idx)
        want_video, want_frames = expected[idx]
        assert video_idx == want_video
        assert [frame_number(f) for f in video] == want_frames
        assert info["video_fps"] == 10.0
        if video_idx == 2:  # pcm audio spanning the clip: 8 frames = 0.8 s at 8 kHz
            assert info["audio_fps"] == 8000.0
            assert audio.shape[0] == 2 and abs(audio.shape[1] - 6400) <= 1
        else:
            assert audio.shape == (1, 0)
    with pytest.raises(IndexError):
        clips.get_clip(len(clips))


def test_frame_rate_resampling_and_thwc(videos: list[Path]) -> None:
    clips = VideoClips(videos[:1], 4, 4, frame_rate=5, output_format="THWC", with_audio=False)
    # 20 frames at 10 fps played at 5 fps: every other frame, 10 frames, clips of 4 every 4.
    assert clips.num_clips() == 2
    video, _, info, _ = clips[1]
    assert video.shape == (4, 16, 64, 3)
    assert [frame_number(f.permute(2, 0, 1)) for f in video] == [8, 10, 12, 14]
    assert info["video_fps"] == 5


def test_index_is_compact_and_matches_pyav(videos: list[Path]) -> None:
    clips = VideoClips(videos, 8)
    total_frames = sum(LENGTHS)
    # int32 ticks, and an int32 position per keyframe (every 10th frame here)
    assert clips.index_nbytes() <= 4 * total_frames + 4 * sum(-(-n // 10) for n in LENGTHS)
    for path, pts in zip(videos, clips.metadata["video_pts"], strict=True):
        reference = [t for _, t in pyav_frames(path)]
        tb = clips._entries[videos.index(path)].time_base
        assert (pts.numpy() * float(tb)).tolist() == pytest.approx(reference)


def test_cache_round_trip_and_invalidation(
    videos: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "index.npz"
    built = VideoClips(videos, 8, 3, cache_path=cache)
    assert cache.exists()
    loaded = VideoClips.from_cache(cache, clip_length_in_frames=8, frames_between_clips=3)
    assert loaded.video_paths == [str(p) for p in videos]
    assert loaded.num_clips_per_video.tolist() == built.num_clips_per_video.tolist()
    for a, b in zip(loaded.metadata["video_pts"], built.metadata["video_pts"], strict=True):
        assert torch.equal(a, b)
    assert torch.equal(loaded.get_clip(4)[0], built.get_clip(4)[0])
    # A valid cache is used without opening any video...
    from trivium.vision.io.video import clips as video_clips

    with monkeypatch.context() as patch:
        patch.setattr(video_clips, "_index_video", lambda *a: pytest.fail("re-indexed"))
        again = VideoClips(videos, 8, 3, cache_path=cache)
    assert again.num_clips() == built.num_clips()
    # ...and rebuilt when a video changed.
    changed = tmp_path / "changed.mp4"
    write_numbered(changed, 12, FPS)
    VideoClips([changed], 8, cache_path=tmp_path / "c2.npz")
    write_numbered(changed, 30, FPS)
    assert VideoClips([changed], 8, cache_path=tmp_path / "c2.npz").num_clips() == 23
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not an index")
    with pytest.raises(DatasetError, match=r"bad\.npz"):
        VideoClips.from_cache(bad)


def test_get_clip_decodes_from_the_saved_index(
    videos: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No clip demuxes its whole video again: the reader is handed the saved index."""
    from trivium.vision.io.video import pyav as video_pyav

    cache = tmp_path / "index.npz"
    VideoClips(videos, 8, 5, cache_path=cache)
    loaded = VideoClips.from_cache(cache, clip_length_in_frames=8, frames_between_clips=5)
    monkeypatch.setattr(video_pyav, "build_index", lambda *a: pytest.fail("demuxed again"))
    for idx, first in [(0, 0), (2, 10), (3, 0), (8, 25)]:
        loaded.close()  # a fresh reader per clip, as in a DataLoader worker
        video = loaded.get_clip(idx)[0]
        assert [frame_number(f) for f in video] == list(range(first, first + 8))


def test_cache_of_another_version_is_rebuilt(
    videos: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trivium.vision.io.video import clips as video_clips

    cache = tmp_path / "index.npz"
    VideoClips(videos, 8, cache_path=cache)
    with np.load(cache) as data:
        fields = dict(data)
    np.savez(cache, **{**fields, "version": np.array(1)})
    with pytest.raises(DatasetError, match="another version"):
        VideoClips.from_cache(cache)
    indexed = []
    original = video_clips._index_video
    monkeypatch.setattr(video_clips, "_index_video", lambda *a: indexed.append(a) or original(*a))
    assert VideoClips(videos, 8, cache_path=cache).num_clips_per_video.tolist() == [13, 0, 26]
    assert len(indexed) == len(videos)
    assert VideoClips.from_cache(cache, clip_length_in_frames=8).num_clips() == 39


def test_bad_videos(tmp_path: Path, videos: list[Path]) -> None:
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00" * 100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clips = VideoClips([broken, videos[0]], 8, 5)
    assert any(issubclass(w.category, DecodeWarning) and "broken.mp4" in str(w.message)
               for w in caught)  # fmt: skip
    assert clips.num_clips_per_video.tolist() == [0, 3]
    with pytest.raises(FileNotFoundError, match=r"missing\.mp4"):
        VideoClips([tmp_path / "missing.mp4"], 8)
    with pytest.raises(ValueError, match="clip_length_in_frames"):
        VideoClips(videos, 0)


def test_samplers(videos: list[Path]) -> None:
    clips = VideoClips(videos, 8, 1)  # 13 + 0 + 26 clips
    counts = clips.num_clips_per_video.tolist()
    assert counts == [13, 0, 26]

    def random_order(seed: int) -> list[int]:
        generator = torch.Generator().manual_seed(seed)
        return list(RandomClipSampler(clips, 5, generator=generator))

    order = random_order(0)
    assert order == random_order(0) and order != random_order(1)
    assert len(order) == len(RandomClipSampler(clips, 5)) == 10 == len(set(order))
    per_video = np.bincount([clips.get_clip_location(i)[0] for i in order], minlength=3)
    assert per_video.tolist() == [5, 0, 5]
    uniform = list(UniformClipSampler(clips, 3))
    assert uniform == [0, 6, 12, 13, 25, 38]
    assert len(UniformClipSampler(clips, 3)) == 6


def test_video_clips_in_dataloader_workers(videos: list[Path]) -> None:
    clips = VideoClips(videos, 4, 4, with_audio=False)
    sampler = RandomClipSampler(clips, 2, generator=torch.Generator().manual_seed(3))
    chosen = list(sampler)
    sampler.generator.manual_seed(3)
    loader = torch.utils.data.DataLoader(
        clips, batch_size=2, sampler=sampler, num_workers=2, collate_fn=list
    )
    seen = [item for batch in loader for item in batch]
    assert len(seen) == len(chosen)
    for (video, _, _, video_idx), idx in zip(seen, chosen, strict=True):
        assert video_idx == clips.get_clip_location(idx)[0]
        assert [frame_number(f) for f in video] == clips.clip_positions(idx).tolist()
