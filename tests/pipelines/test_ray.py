"""trivium.pipelines.ray on a local Ray (2 CPUs, loopback only).

References: the local conversion engine (the same rows), Trivium's own decode path
and ``trivium.data.ParquetSource`` reading what the Ray side writes.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

ray = pytest.importorskip(
    "ray", reason="Ray is not installed (pip install 'trivium-pipelines[ray]')"
)
pytest.importorskip("trivium.vision.io", reason="needs trivium-vision")

from trivium.data import ParquetSource  # noqa: E402
from trivium.pipelines.cli import main as cli  # noqa: E402
from trivium.pipelines.convert import convert_image_folder  # noqa: E402
from trivium.pipelines.ray import DecodeImages, read_shards, write_shards  # noqa: E402
from trivium.vision.io import decode_image  # noqa: E402
from trivium.vision.transforms import DecodeResize  # noqa: E402

PHOTOS = pathlib.Path(__file__).parents[1] / "assets" / "images" / "jpeg"


@pytest.fixture(scope="module")
def local_ray():
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("folder")
    # a lossless JPEG decodes only at full size, which DecodeResize refuses
    photos = [p for p in sorted(PHOTOS.glob("*.jp*g")) if "lossless" not in p.name][:10]
    for i, photo in enumerate(photos):
        (root / f"class{i % 3}").mkdir(exist_ok=True)
        shutil.copy(photo, root / f"class{i % 3}" / photo.name)
    (root / "class0" / "broken.jpg").write_bytes(b"not a jpeg")
    return root


def table_of(files: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(f) for f in files]).sort_by("path")


@pytest.mark.slow  # over 30 s; the quick tier keeps a smaller run of the same path
def test_ray_engine_writes_the_local_engines_rows(
    local_ray, folder: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    from trivium.pipelines.ray import convert_folder

    ours = convert_folder(folder, tmp_path / "ray", on_error="skip", row_group_size=4)
    local = convert_image_folder(
        folder, tmp_path / "local", on_error="skip", row_group_size=4, progress_bar=False
    )
    assert table_of(ours.files).equals(table_of(local.files))
    assert (ours.rows, ours.classes, ours.bytes_in) == (local.rows, local.classes, local.bytes_in)
    assert [p for p, _ in ours.skipped] == [p for p, _ in local.skipped]
    rows = sum(b.num_rows for b in ParquetSource(tmp_path / "ray"))
    assert rows == local.rows
    with pytest.raises(ValueError, match=r"broken\.jpg"):
        convert_folder(folder, tmp_path / "raise")


def test_unknown_on_error_is_refused_before_ray_is_imported(
    folder: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    code = (
        "import sys; from trivium.pipelines.ray import convert_folder\n"
        f"try: convert_folder({str(folder)!r}, {str(tmp_path / 'out')!r}, on_error='ignore')\n"
        "except ValueError as e: print(e)\n"
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "on_error must be 'raise' or 'skip', got 'ignore'",
        "False",
    ]
    assert not (tmp_path / "out").exists()


def test_cli_engine_ray(local_ray, folder: pathlib.Path, tmp_path: pathlib.Path) -> None:
    argv = ["convert", "image-folder", str(folder), str(tmp_path), "--on-error", "skip"]
    assert cli([*argv, "--engine", "ray"]) == 0
    assert sum(b.num_rows for b in ParquetSource(tmp_path)) == 10


def test_decode_udf_gives_the_local_pixels(
    local_ray, folder: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    convert_image_folder(folder, tmp_path / "in", on_error="skip", progress_bar=False)
    ds = read_shards(tmp_path / "in", columns=["image", "path"])
    resized = ds.map_batches(DecodeImages(size=(64, 80)), batch_format="numpy", batch_size=4)
    full = ds.map_batches(DecodeImages(output_column="pixels"), batch_format="numpy")
    got = {r["path"]: r["image"] for r in resized.take_all()}
    reference = pq.read_table(tmp_path / "in")
    images, paths = reference["image"].to_pylist(), reference["path"].to_pylist()
    for data, path in zip(images, paths, strict=True):
        encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        np.testing.assert_array_equal(got[path], DecodeResize((64, 80))(encoded).numpy())
    first = full.take(1)[0]
    index = reference["path"].to_pylist().index(first["path"])
    encoded = torch.frombuffer(bytearray(reference["image"][index].as_py()), dtype=torch.uint8)
    np.testing.assert_array_equal(first["pixels"], decode_image(encoded).numpy())
    files = write_shards(resized.drop_columns(["image"]), tmp_path / "out")
    assert files and sum(b.num_rows for b in ParquetSource(tmp_path / "out")) == len(got)


def test_local_conversion_does_not_import_ray(folder: pathlib.Path, tmp_path: pathlib.Path) -> None:
    code = (
        "import sys; from trivium.pipelines.cli import main; "
        f"main(['convert', 'image-folder', {str(folder)!r}, {str(tmp_path)!r}, "
        "'--on-error', 'skip']); print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
