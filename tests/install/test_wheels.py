"""The wheels of ``make wheels``, installed as a user installs them, each package alone.

Each check makes a fresh virtualenv outside the checkout, installs wheels from
``$TRIVIUM_WHEELS`` with pip (torch from ``constraints.txt``), and runs Python there
isolated (``-I``, from a temporary folder), so nothing of the source tree is importable.
``make test-wheels`` builds the wheels and runs these; without ``TRIVIUM_WHEELS`` they
skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"
WHEELS = Path(os.environ["TRIVIUM_WHEELS"]) if os.environ.get("TRIVIUM_WHEELS") else None

pytestmark = pytest.mark.skipif(WHEELS is None, reason="make test-wheels builds and checks wheels")


def _wheel(name: str) -> Path:
    assert WHEELS is not None
    found = sorted(WHEELS.glob(f"{name.replace('-', '_')}-*.whl"))
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


class Venv:
    """A fresh virtualenv at ``path`` that installs from the wheels folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        self.python = path / "bin" / "python"

    def install(self, *requirements: str) -> None:
        assert WHEELS is not None
        subprocess.run(
            [
                str(self.python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                "--find-links", str(WHEELS), "-c", str(ROOT / "constraints.txt"), *requirements,
            ],
            check=True,
        )  # fmt: skip

    def run(self, code: str, cwd: Path) -> dict:
        """Run ``code`` isolated from ``cwd``; the JSON it prints last."""
        done = subprocess.run(
            [str(self.python), "-I", "-c", _IMPORTABLE + textwrap.dedent(code)],
            cwd=cwd,
            capture_output=True,
            text=True,
            env={"PATH": os.environ["PATH"], "HOME": str(cwd)},
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])


_IMPORTABLE = """
import importlib.util, json
def importable(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wheels")
    assert ROOT not in path.parents
    return path


def test_every_package_has_a_wheel_and_an_sdist_of_one_version() -> None:
    assert WHEELS is not None
    names = ("trivium_core", "trivium_vision", "trivium_audio", "trivium_data", "trivium_pipelines")
    for name in names:
        assert len(list(WHEELS.glob(f"{name}-0.1.0-*.whl"))) == 1, name
        assert len(list(WHEELS.glob(f"{name}-0.1.0.tar.gz"))) == 1, name


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        metadata = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(metadata).decode()
    return [
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]


@pytest.mark.parametrize("name", ["trivium-vision", "trivium-audio"])
def test_the_native_wheels_are_manylinux_and_pin_their_torch(name: str) -> None:
    import torch

    wheel = _wheel(name)
    assert re.search(r"-manylinux_\d+_\d+_x86_64\.whl$", wheel.name), wheel.name
    release = torch.__version__.split("+")[0]
    requires = _requires(wheel)
    assert f"torch=={release}" in requires
    assert "trivium-core==0.1.0" in requires
    assert not any(r.startswith("trivium-pipelines") for r in requires)


def test_the_data_wheel_takes_any_recent_torch() -> None:
    requires = _requires(_wheel("trivium-data"))
    assert "trivium-core==0.1.0" in requires
    assert any(r.startswith("torch>=") for r in requires)
    assert not any(r.startswith("trivium-pipelines") for r in requires)


# What the vision wheel's native code may load from outside it: the manylinux policy's
# C and C++ runtime, and the libraries of the torch it pins (the operator library; the
# decoders' typed op calls also torch's Python bindings, never the operator library).
_POLICY = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0",
           "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2"}  # fmt: skip
_TORCH = {"libc10.so", "libtorch_cpu.so", "libtorch.so"}


def test_the_vision_wheel_needs_only_the_policy_and_its_torch(tmp_path: Path) -> None:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    with zipfile.ZipFile(_wheel("trivium-vision")) as z:
        native = [n for n in z.namelist() if n.endswith(".so")]
        z.extractall(tmp_path, native)
    names = sorted(Path(n).name.split(".")[0] for n in native)
    assert names == ["_C", "_op_calls", "libtrivium_ops"]
    allowed_for = {
        "_C": _POLICY,
        "_op_calls": _POLICY | _TORCH | {"libtorch_python.so"},
        "libtrivium_ops": _POLICY | _TORCH,
    }
    for name in native:
        with open(tmp_path / name, "rb") as f:
            section = ELFFile(f).get_section_by_name(".dynamic")
            assert isinstance(section, DynamicSection)
            needed = {t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"}
        allowed = allowed_for[Path(name).name.split(".")[0]]
        assert needed <= allowed, (name, needed - allowed)
    shown = subprocess.run(
        [str(Path(sys.executable).parent / "auditwheel"), "show", str(_wheel("trivium-vision"))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert not re.search(r"lib(spng|jpeg|turbojpeg|webp|sharpyuv|z|png)\b", shown), shown


def test_the_audio_wheel_needs_only_the_policy_and_its_torch(tmp_path: Path) -> None:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    with zipfile.ZipFile(_wheel("trivium-audio")) as z:
        native = [n for n in z.namelist() if n.endswith(".so")]
        z.extractall(tmp_path, native)
    assert [Path(n).name.split(".")[0] for n in native] == ["_C"]
    with open(tmp_path / native[0], "rb") as f:
        section = ELFFile(f).get_section_by_name(".dynamic")
        assert isinstance(section, DynamicSection)
        needed = {t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"}
    assert needed <= _POLICY | _TORCH, needed - _POLICY - _TORCH


def test_core_and_audio_alone(work: Path) -> None:
    venv = Venv(work / "audio")
    venv.install("trivium-audio")
    wav, flac = work / "tone.wav", work / "noise.flac"
    out = venv.run(
        f"""
        import numpy as np, soundfile, torch
        rate = 16000
        tone = np.sin(2 * np.pi * 440 * np.arange(rate) / rate).astype(np.float32)
        soundfile.write({str(wav)!r}, tone, rate)
        from trivium import audio
        from trivium.audio.transforms import Spectrogram
        waveform, got_rate = audio.load({str(wav)!r})
        spec = Spectrogram(n_fft=400)(waveform)
        from trivium.audio import _ops
        from trivium.audio.functional import lfilter
        impulse = lfilter(torch.tensor([1.0, 0, 0]), torch.tensor([1.0, -0.5]), torch.ones(2))
        # A long FLAC: the wheel's native frame decoder, against libsndfile's read.
        noise = np.random.default_rng(0).uniform(-0.5, 0.5, (200_000, 2))
        soundfile.write({str(flac)!r}, noise, rate, subtype="PCM_16")
        from trivium.audio.io import _flac
        native = _flac.decode({str(flac)!r}, 0, 200_000, 2, True)
        expected = soundfile.read({str(flac)!r}, dtype="float32")[0].T
        print(json.dumps({{
            "file": audio.__file__, "rate": got_rate, "shape": list(waveform.shape),
            "native": _ops.NATIVE, "impulse": impulse.tolist(),
            "close": bool(np.allclose(waveform[0].numpy(), tone, atol=1e-4)),
            "spec": list(spec.shape),
            "flac": native is not None and bool((native.numpy() == expected).all())
            and bool((audio.load({str(flac)!r})[0].numpy() == expected).all()),
            "vision": importable("trivium.vision"), "data": importable("trivium.data"),
        }}))
        """,
        work,
    )
    assert out["file"].startswith(str(venv.path))
    assert (out["rate"], out["shape"], out["close"]) == (16000, [1, 16000], True)
    assert out["spec"] == [1, 201, 81]
    assert out["native"] and out["impulse"] == [1.0, 1.0, 0.75]
    assert out["flac"]
    assert (out["vision"], out["data"]) == (False, False)


def test_core_and_data_alone(work: Path) -> None:
    venv = Venv(work / "data")
    venv.install("trivium-data")
    table = work / "rows.parquet"
    out = venv.run(
        f"""
        import pyarrow as pa, pyarrow.parquet as pq
        pq.write_table(pa.table({{"x": list(range(10))}}), {str(table)!r}, row_group_size=3)
        from trivium.data import DataLoader, ParquetSource
        import trivium.data
        batches = [b["x"].tolist() for b in DataLoader(ParquetSource({str(table)!r}), batch_size=4)]
        print(json.dumps({{
            "file": trivium.data.__file__, "batches": batches,
            "vision": importable("trivium.vision"), "audio": importable("trivium.audio"),
        }}))
        """,
        work,
    )
    assert out["file"].startswith(str(venv.path))
    assert out["batches"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert (out["vision"], out["audio"]) == (False, False)


def test_pipelines_brings_the_libraries_and_the_convert_command(work: Path) -> None:
    venv = Venv(work / "pipelines")
    venv.install("trivium-pipelines")
    tree = work / "tree"
    for label in ("cat", "dog"):
        (tree / label).mkdir(parents=True)
        shutil.copy(ROOT / "tests/assets/images/jpeg/tv-grace_hopper_517x606.jpg", tree / label)
    cli = venv.python.with_name("trivium-data")
    convert = [str(cli), "convert", "image-folder", str(tree), str(work / "shards")]
    subprocess.run(convert, check=True)
    out = venv.run(
        f"""
        import trivium.pipelines.vision, trivium.pipelines.audio
        from trivium.data import ParquetSource
        rows = [r for b in ParquetSource({str(work / "shards")!r}) for r in b.to_pylist()]
        print(json.dumps({{"labels": sorted(r["label"] for r in rows)}}))
        """,
        work,
    )
    assert out["labels"] == [0, 1]


_VISION = """
import torch
from PIL import Image
import numpy as np
import trivium.vision
from trivium.vision import transforms as T
from trivium.vision.io import decode_jpeg, decode_image, encode_png, read_file
jpeg = {jpeg!r}
image = decode_jpeg(read_file(jpeg))
pillow = torch.from_numpy(np.asarray(Image.open(jpeg).convert("RGB"))).permute(2, 0, 1)
op = torch.ops.trivium.decode_jpeg(read_file(jpeg))
png = decode_image(encode_png(image))
crop = T.RandomResizedCrop(64)(image)
result = {{
    "file": trivium.vision.__file__, "shape": list(image.shape),
    "max_diff_to_pillow": int((image.int() - pillow.int()).abs().max()),
    "op_equal": bool(torch.equal(op, image)), "png_equal": bool(torch.equal(png, image)),
    "crop": list(crop.shape), "av": importable("av"),
}}
try:
    from trivium.vision.io import VideoReader
    reader = VideoReader({video!r})
    result["frames"] = sum(1 for _ in reader)
    result["num_frames"] = reader.get_metadata()["video"]["num_frames"][0]
except ImportError as e:
    result["video_error"] = str(e)
print(json.dumps(result))
"""


def test_vision_with_and_without_its_video_extra(work: Path) -> None:
    venv = Venv(work / "vision")
    venv.install("trivium-vision")
    code = _VISION.format(
        jpeg=str(ASSETS / "images" / "jpeg" / "tv-grace_hopper_517x606.jpg"),
        video=str(ASSETS / "video" / "tv-TrumanShow_wave_f_nm_np1_fr_med_26.avi"),
    )
    out = venv.run(code, work)
    assert out["file"].startswith(str(venv.path))
    assert out["shape"] == [3, 606, 517]
    assert out["max_diff_to_pillow"] <= 1  # libjpeg-turbo's rounding, as Pillow's
    assert (out["op_equal"], out["png_equal"], out["crop"]) == (True, True, [3, 64, 64])
    assert out["av"] is False
    assert "pip install" in out["video_error"], out
    venv.install("trivium-vision[video]")
    out = venv.run(code, work)
    assert out["av"] is True
    assert out["frames"] == out["num_frames"] == 48
