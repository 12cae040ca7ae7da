"""write_parquet and `trivium-data convert`, checked against pyarrow, Pillow and soundfile."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from trivium.core import DatasetError, DecodeError
from trivium.data import ParquetSource, write_parquet
from trivium.pipelines.cli import main
from trivium.pipelines.convert import convert_audio_folder, convert_image_folder

ASSETS = pathlib.Path(__file__).resolve().parents[1] / "assets"
JPEGS = [
    "tv-grace_hopper_517x606.jpg",
    "jd-rgb.jpg",
    "ljt-testimgint.jpg",
    "jd-moz-jpg-size-33x33.jpg",
]
PNGS = ["basn2c08.png", "basi0g08.png"]
AUDIO = ["ds-LDC93S1.wav", "sb-example2.flac", "pg-house_lo.ogg"]


def test_write_parquet_shards_and_row_groups(tmp_path: pathlib.Path) -> None:
    rows = [{"id": i, "word": f"w{i}"} for i in range(25)]
    batch = pa.record_batch({"id": list(range(25, 40)), "word": ["b"] * 15})
    paths = write_parquet(
        [*rows[:10], batch, *rows[10:]], tmp_path, rows_per_file=12, row_group_size=5
    )
    assert [pathlib.Path(p).name for p in paths] == [f"part-0000{i}.parquet" for i in range(4)]
    metas = [pq.ParquetFile(p).metadata for p in paths]
    assert [m.num_rows for m in metas] == [12, 12, 12, 4]
    assert all(m.row_group(i).num_rows <= 5 for m in metas for i in range(m.num_row_groups))
    ids = pq.read_table(tmp_path)["id"].to_pylist()
    assert ids == list(range(10)) + list(range(25, 40)) + list(range(10, 25))
    with pytest.raises(DatasetError, match="schema"):
        write_parquet(
            [pa.record_batch({"id": [1]}), pa.record_batch({"id": ["x"]})], tmp_path / "o"
        )
    with pytest.raises(TypeError, match="dict rows"):
        write_parquet([1, 2], tmp_path / "o2")  # type: ignore[list-item]
    with pytest.raises(ValueError, match="rows_per_file"):
        write_parquet(rows, tmp_path, rows_per_file=0)


@pytest.mark.parametrize(
    ("use_dictionary", "expected"), [(True, True), (False, False), (["id"], True)]
)
def test_write_parquet_use_dictionary(
    tmp_path: pathlib.Path, use_dictionary: bool | list[str], expected: bool
) -> None:
    [path] = write_parquet(
        [{"id": i % 3, "word": f"w{i % 3}"} for i in range(9)],
        tmp_path,
        use_dictionary=use_dictionary,
    )
    columns = pq.ParquetFile(path).metadata.row_group(0)
    assert columns.column(0).has_dictionary_page is expected
    assert columns.column(1).has_dictionary_page is (use_dictionary is True)
    assert pq.read_table(path)["word"].to_pylist() == [f"w{i % 3}" for i in range(9)]


@pytest.fixture
def image_root(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "images"
    for i, name in enumerate(JPEGS):
        cls = root / ("cat" if i % 2 else "dog")
        cls.mkdir(parents=True, exist_ok=True)
        shutil.copy(ASSETS / "images" / "jpeg" / name, cls / name)
    (root / "ant").mkdir()
    for name in PNGS:
        shutil.copy(ASSETS / "images" / "png" / name, root / "ant" / name)
    (root / "ant" / "notes.txt").write_text("not an image")
    return root


def test_convert_image_folder_and_decode_back(
    image_root: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    from trivium.vision.io import ImageReadMode, decode_image

    out = tmp_path / "shards"
    summary = convert_image_folder(
        image_root, out, rows_per_file=4, row_group_size=2, progress_bar=False
    )
    assert summary.classes == ["ant", "cat", "dog"] and summary.rows == 6
    assert len(summary.files) == 2 and not summary.skipped
    table = pq.read_table(out)
    for row in table.to_pylist():
        original = image_root / row["path"]
        assert row["image"] == original.read_bytes()  # stored as is
        assert row["class_name"] == original.parent.name
        assert row["label"] == summary.classes.index(original.parent.name)
        with Image.open(original) as im:
            assert (row["width"], row["height"]) == im.size
    group = pq.ParquetFile(summary.files[0]).metadata.row_group(0)
    dictionary = {
        group.column(i).path_in_schema: group.column(i).has_dictionary_page
        for i in range(group.num_columns)
    }
    assert not dictionary.pop("image")  # unique encoded bytes: no dictionary page
    assert all(dictionary.values())
    # read back: decode in parallel_map, compare PNG pixels with Pillow
    pipe = (
        ParquetSource(out)
        .to_rows()
        .parallel_map(
            lambda data: decode_image(
                torch.frombuffer(bytearray(data), dtype=torch.uint8), ImageReadMode.RGB
            ),
            num_threads=2,
            input_col="image",
        )
    )
    for row in pipe:
        assert row["image"].shape == (3, row["height"], row["width"])
        if row["path"].endswith(".png"):
            with Image.open(image_root / row["path"]) as im:
                ref = torch.from_numpy(np.array(im.convert("RGB"))).permute(2, 0, 1)
            assert torch.equal(row["image"], ref)


def test_bad_image_raises_or_is_skipped(image_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    bad = image_root / "cat" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not really")
    with pytest.raises(DecodeError) as info:
        convert_image_folder(image_root, tmp_path / "a", progress_bar=False)
    assert info.value.path == str(bad)
    summary = convert_image_folder(image_root, tmp_path / "b", on_error="skip", progress_bar=False)
    assert summary.rows == 6 and [p for p, _ in summary.skipped] == [str(bad)]
    assert "skipped 1 files" in str(summary) and "broken.jpg" in str(summary)


def test_unknown_on_error_is_refused_before_writing(
    image_root: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    for convert in (convert_image_folder, convert_audio_folder):
        with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip', got 'ignore'"):
            convert(image_root, tmp_path / "out", on_error="ignore", progress_bar=False)
    assert not (tmp_path / "out").exists()


def test_cli_image_folder(
    image_root: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["convert", "image-folder", str(image_root), str(tmp_path / "o")]) == 0
    assert "6 rows, 3 classes -> 1 Parquet files" in capsys.readouterr().out
    assert pq.read_table(tmp_path / "o").num_rows == 6
    assert main(["convert", "image-folder", str(tmp_path / "missing"), str(tmp_path / "x")]) == 1
    assert "no such file or directory" in capsys.readouterr().err
    script = pathlib.Path(sys.executable).with_name("trivium-data")
    if script.exists():  # the console script from packages/data/pyproject.toml
        done = subprocess.run([str(script), "convert", "--help"], capture_output=True, text=True)
        assert done.returncode == 0 and "image-folder" in done.stdout


def test_convert_audio_folder_matches_soundfile(tmp_path: pathlib.Path) -> None:
    import soundfile as sf

    root = tmp_path / "audio"
    for i, name in enumerate(AUDIO):
        cls = root / f"speaker{i % 2}"
        cls.mkdir(parents=True, exist_ok=True)
        shutil.copy(ASSETS / "audio" / name, cls / name)
    summary = convert_audio_folder(root, tmp_path / "out", progress_bar=False)
    assert summary.rows == 3
    for row in pq.read_table(tmp_path / "out").to_pylist():
        info = sf.info(root / row["path"])
        assert (row["sample_rate"], row["num_frames"], row["num_channels"]) == (
            info.samplerate,
            info.frames,
            info.channels,
        )
        assert row["audio"] == (root / row["path"]).read_bytes()


def test_verify_refuses_a_truncated_jpeg_and_names_it_once(
    image_root: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    jpeg = (ASSETS / "images" / "jpeg" / "tv-grace_hopper_517x606.jpg").read_bytes()
    cut = image_root / "dog" / "cut.jpg"
    cut.write_bytes(jpeg[: len(jpeg) // 2])  # the header is whole: only a decode sees it
    with Image.open(cut) as im, pytest.raises(OSError):
        im.load()  # Pillow agrees that it is truncated
    # Without --verify it converts, as documented (headers only).
    assert convert_image_folder(image_root, tmp_path / "plain", progress_bar=False).rows == 7
    with pytest.raises(DecodeError) as info:
        convert_image_folder(image_root, tmp_path / "a", verify=True, progress_bar=False)
    assert info.value.path == str(cut)
    summary = convert_image_folder(
        image_root, tmp_path / "b", on_error="skip", verify=True, progress_bar=False
    )
    assert summary.rows == 6 and [p for p, _ in summary.skipped] == [str(cut)]
    assert pq.read_table(tmp_path / "b").num_rows == 6
    argv = ["convert", "image-folder", str(image_root), str(tmp_path / "c"), "--verify"]
    assert main([*argv, "--on-error", "skip"]) == 0
    out = capsys.readouterr().out
    assert "6 rows" in out and "refused 1 of 7 files" in out
    assert out.count("cut.jpg") == 1 and "Premature end of JPEG file" in out
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("cut.jpg") == 1 and "Premature end" in err


def test_verify_writes_damaged_but_readable_jpegs_and_reports_them(
    image_root: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    # A marker inside the entropy-coded data: libjpeg (and Pillow) decode the rest.
    jpeg = (ASSETS / "images" / "jpeg" / "tv-grace_hopper_517x606.jpg").read_bytes()
    sos = jpeg.index(b"\xff\xda")
    at = sos + 2 + int.from_bytes(jpeg[sos + 2 : sos + 4], "big") + 5000
    damaged = image_root / "dog" / "damaged.jpg"
    damaged.write_bytes(jpeg[:at] + b"\xff\xd7" + jpeg[at:])
    with Image.open(damaged) as im:
        im.load()  # Pillow reads it
    summary = convert_image_folder(image_root, tmp_path / "a", verify=True, progress_bar=False)
    assert summary.rows == 7 and not summary.skipped
    assert [path for path, _ in summary.recovered] == [str(damaged)]
    assert "premature end of data segment" in summary.recovered[0][1]
    written = pq.read_table(tmp_path / "a").to_pylist()
    assert [r["image"] for r in written if r["path"] == "dog/damaged.jpg"] == [damaged.read_bytes()]
    argv = ["convert", "image-folder", str(image_root), str(tmp_path / "b"), "--verify"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "warning: 1 damaged files decode as Pillow decodes them" in out
    assert out.count("damaged.jpg") == 1


def test_skipped_files_are_named_once(image_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    bad = image_root / "cat" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not really")
    summary = convert_image_folder(image_root, tmp_path / "o", on_error="skip", progress_bar=False)
    assert str(summary).count("broken.jpg") == 1


def test_audio_folder_errors_name_the_file(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "audio" / "speaker0"
    root.mkdir(parents=True)
    shutil.copy(ASSETS / "audio" / "ds-LDC93S1.wav", root / "ok.wav")
    (root / "a-empty.wav").write_bytes(b"")
    wav = (ASSETS / "audio" / "ds-LDC93S1.wav").read_bytes()
    (root / "cut.wav").write_bytes(wav[: len(wav) // 2])  # header fine, data cut short
    with pytest.raises(DecodeError) as info:
        convert_audio_folder(root.parent, tmp_path / "a", progress_bar=False)
    assert info.value.path == str(root / "a-empty.wav")
    summary = convert_audio_folder(
        root.parent, tmp_path / "b", on_error="skip", verify=True, progress_bar=False
    )
    assert [p for p, _ in summary.skipped] == [str(root / "a-empty.wav"), str(root / "cut.wav")]
    text = str(summary)
    assert "<bytes>" not in text and text.count("a-empty.wav") == 1 and "empty input" in text
    assert "truncated" in text and summary.rows == 1
