"""read_video / write_video: ranges, layouts, audio, round trips and bad arguments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch
from vision.video_testclips import ASSETS_VIDEO, frame_number, numbered_frames, write_numbered

from trivium.core.errors import EncodeError
from trivium.vision.io import VideoReader, read_video, write_video

FPS = 10


@pytest.fixture(scope="module")
def with_audio(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.Tensor]:
    """30 numbered frames at 10 fps and 3 s of stereo PCM at 8 kHz, in Matroska."""
    rate = 8000
    t = torch.arange(3 * rate) / rate
    audio = torch.stack([0.5 * torch.sin(2 * torch.pi * 200 * t), -0.25 * torch.ones_like(t)])
    path = tmp_path_factory.mktemp("video") / "av.mkv"
    write_numbered(path, 30, FPS, audio=audio, audio_fps=rate, audio_codec="pcm_s16le")
    return path, audio


@pytest.mark.parametrize("backend", ["pyav", "ffmpeg"])
def test_read_video_range_is_inclusive(with_audio: tuple[Path, torch.Tensor], backend: str) -> None:
    path, audio = with_audio
    video, sound, info = read_video(path, 0.5, 1.2, backend=backend)
    assert [frame_number(f) for f in video] == list(range(5, 13))  # pts 0.5 .. 1.2
    assert info == {"video_fps": 10.0, "audio_fps": 8000.0}
    assert sound.shape == (2, round(0.7 * 8000) + 1)
    np.testing.assert_allclose(sound.numpy(), audio[:, 4000:9601].numpy(), atol=1 / 32768 + 1e-6)


def test_read_video_whole_file_and_layouts(with_audio: tuple[Path, torch.Tensor]) -> None:
    path, audio = with_audio
    video, sound, _ = read_video(path)
    assert video.shape == (30, 3, 16, 64) and video.dtype == torch.uint8
    assert sound.shape == audio.shape
    thwc, _, _ = read_video(path, output_format="THWC")
    assert torch.equal(thwc, video.permute(0, 2, 3, 1))
    # pts_unit="pts": ticks of the video stream's time base.
    time_base = VideoReader(path).stream.time_base
    by_pts, _, _ = read_video(path, 1 / time_base, 2 / time_base, pts_unit="pts")
    assert [frame_number(f) for f in by_pts] == list(range(10, 21))
    empty, no_sound, _ = read_video(path, 100)
    assert empty.shape == (0, 3, 16, 64) and no_sound.shape == (2, 0)


def test_read_video_bad_arguments(with_audio: tuple[Path, torch.Tensor], tmp_path: Path) -> None:
    path, _ = with_audio
    with pytest.raises(ValueError, match="end_pts"):
        read_video(path, 2, 1)
    with pytest.raises(ValueError, match="pts_unit"):
        read_video(path, pts_unit="frames")
    with pytest.raises(ValueError, match="output_format"):
        read_video(path, output_format="CTHW")
    with pytest.raises(FileNotFoundError):
        read_video(tmp_path / "nope.mp4")


def test_read_video_without_audio_and_audio_only(tmp_path: Path) -> None:
    silent = write_numbered(tmp_path / "silent.mp4", 4, FPS)
    video, audio, info = read_video(silent)
    assert video.shape[0] == 4 and audio.shape == (1, 0) and info == {"video_fps": 10.0}
    wav = tmp_path / "tone.wav"
    samples = np.linspace(-0.5, 0.5, 800, dtype=np.float32)
    soundfile.write(wav, samples, 8000, subtype="PCM_16")  # audio only
    video, audio, info = read_video(wav)
    assert video.shape == (0, 3, 0, 0) and audio.shape == (1, 800)
    np.testing.assert_allclose(audio[0].numpy(), soundfile.read(wav, dtype="float32")[0])
    assert info == {"audio_fps": 8000.0}


@pytest.mark.parametrize(
    ("name", "codec", "tolerance"),
    [("rt.mp4", "libx264", 4.0), ("rt.mkv", "ffv1", 0.0), ("rt.avi", "mpeg4", 12.0)],
)
def test_write_video_round_trip(tmp_path: Path, name: str, codec: str, tolerance: float) -> None:
    """Smooth content survives encoding within the codec's tolerance (mean abs diff)."""
    y, x = torch.meshgrid(torch.arange(32), torch.arange(48), indexing="ij")
    frames = torch.stack([torch.stack([x * 5, y * 7, (x + y + 4 * t) % 256]) for t in range(6)]).to(
        torch.uint8
    )
    options = {"crf": "10"} if codec == "libx264" else None
    pix_fmt = "yuv444p" if codec == "libx264" else ("bgr0" if codec == "ffv1" else None)
    write_video(tmp_path / name, frames, 12, video_codec=codec, options=options, pix_fmt=pix_fmt)
    decoded, _, info = read_video(tmp_path / name)
    assert decoded.shape == frames.shape and info["video_fps"] == 12.0
    assert (decoded.float() - frames.float()).abs().mean() <= tolerance


def test_write_video_thwc_grey_and_fractional_fps(tmp_path: Path) -> None:
    frames = numbered_frames(8)
    write_video(tmp_path / "a.mp4", frames.permute(0, 2, 3, 1), 29.97, input_format="THWC")
    reader = VideoReader(tmp_path / "a.mp4")
    assert [frame_number(f["data"]) for f in reader] == list(range(8))
    assert reader.get_metadata()["video"]["fps"][0] == pytest.approx(29.97)
    write_video(tmp_path / "grey.mp4", frames[:, :1], 5)
    assert [frame_number(f) for f in read_video(tmp_path / "grey.mp4")[0]] == list(range(8))


def test_write_video_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "x.mp4"
    good = torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
    with pytest.raises(TypeError, match="uint8"):
        write_video(out, good.float(), 5)
    with pytest.raises(EncodeError, match="4-D"):
        write_video(out, good[0], 5)
    with pytest.raises(EncodeError, match="1 or 3 channels"):
        write_video(out, torch.zeros(2, 4, 8, 8, dtype=torch.uint8), 5)
    with pytest.raises(EncodeError, match="no frames"):
        write_video(out, good[:0], 5)
    with pytest.raises(ValueError, match="fps"):
        write_video(out, good, 0)
    with pytest.raises(ValueError, match="audio_fps"):
        write_video(out, good, 5, audio=torch.zeros(1, 10))
    with pytest.raises(EncodeError, match=r"x\.mp4"):
        write_video(out, good, 5, video_codec="no-such-codec")
    with pytest.raises(EncodeError, match=r"odd\.mp4"):
        write_video(tmp_path / "odd.mp4", torch.zeros(2, 3, 7, 9, dtype=torch.uint8), 5)


def test_missing_video_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "av", None)  # as if PyAV were not installed
    with pytest.raises(ImportError, match=r"trivium-vision\[video\]"):
        write_video(tmp_path / "x.mp4", torch.zeros(1, 3, 8, 8, dtype=torch.uint8), 5)
    with pytest.raises(ImportError, match=r"trivium-vision\[video\]"):
        VideoReader(ASSETS_VIDEO / "pg-blue.mpg")
