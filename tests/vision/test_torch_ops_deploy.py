"""Deployment without trivium's Python: the C++ operator library with libtorch.

A scripted ``decode_jpeg -> Resize -> CenterCrop -> ToDtype -> Normalize`` model is
saved, then run by a C++ program built here with CMake against the torch wheel's
libtorch, and by a fresh Python process that only loads the operator library; both
must give the eager Python result exactly. ``torch.export`` and AOTInductor are
tested as far as data-dependent shapes let them go.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from image_assets import CORRUPT_DIR, JPEG_DIR, WEBP_DIR
from torch import nn

from trivium.vision import transforms as T
from trivium.vision.io import read_file
from trivium.vision.io.image.ops import check_torch_version, library_path

REPO = Path(__file__).resolve().parents[2]
PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"
TRUNCATED = CORRUPT_DIR / "pil-truncated_jpeg.jpg"
WEBP = WEBP_DIR / "pil-transparent.webp"  # lossy with alpha
WEBP_ROTATED = WEBP_DIR / "pil-hopper_orientation_6.webp"
WEBP_ANIMATION = WEBP_DIR / "pil-iss634.webp"
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.s:DeprecationWarning")


class DecodePreprocess(nn.Module):
    """JPEG bytes in, a normalised 224 x 224 float image out (the deployed model)."""

    def __init__(self) -> None:
        super().__init__()
        self.resize = T.Resize(256, antialias=True)
        self.crop = T.CenterCrop(224)
        self.to_float = T.ToDtype(torch.float32, scale=True)
        self.normalize = T.Normalize(MEAN, STD)

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        image = torch.ops.trivium.decode_jpeg(data, 3)
        return self.normalize(self.to_float(self.crop(self.resize(image))))


def _cmake() -> str:
    found = Path(sys.executable).parent / "cmake"
    return str(found) if found.exists() else (shutil.which("cmake") or pytest.skip("no cmake"))


@pytest.fixture(scope="module")
def runner() -> Path:
    """The C++ program of tests/vision/cpp, built (incrementally) against the torch wheel."""
    build = REPO / "packages" / "vision" / "build" / "deploy-test"
    configure = [
        _cmake(),
        "-S",
        str(REPO / "tests" / "vision" / "cpp"),
        "-B",
        str(build),
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
        f"-DCMAKE_MAKE_PROGRAM={Path(sys.executable).parent / 'ninja'}",
    ]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for command in (configure, [_cmake(), "--build", str(build)]):
        subprocess.run(command, check=True, env=env, capture_output=True, timeout=900)
    return build / "run_scripted"


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "decode_preprocess.pt"
    torch.jit.script(DecodePreprocess()).save(str(path))
    return path


def _read_output(path: Path) -> torch.Tensor:
    raw = path.read_bytes()
    header, body = raw.split(b"\n", 1)
    dtype, *shape = header.decode().split()
    assert dtype == "Float"
    return torch.frombuffer(bytearray(body), dtype=torch.float32).reshape(*map(int, shape))


def test_cpp_program_gives_the_eager_result(runner: Path, saved_model: Path, tmp_path) -> None:
    out = tmp_path / "out.bin"
    args = [str(runner), str(library_path()), str(saved_model), str(PHOTO), str(out)]
    subprocess.run(args, check=True, timeout=120)
    want = DecodePreprocess()(read_file(PHOTO))
    got = _read_output(out)
    assert got.shape == want.shape == (3, 224, 224)
    assert torch.equal(got, want)


def test_cpp_errors_name_the_reason(runner: Path, saved_model: Path, tmp_path) -> None:
    args = [str(runner), str(library_path()), str(saved_model), str(TRUNCATED), str(tmp_path / "x")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3  # a c10::Error caught by the program: no crash
    assert "only part of the image decodes" in done.stderr  # a truncated file


_FRESH = """
import sys, torch
torch.ops.load_library(sys.argv[1])
model = torch.jit.load(sys.argv[2])
data = torch.frombuffer(bytearray(open(sys.argv[3], "rb").read()), dtype=torch.uint8)
torch.save(model(data), sys.argv[4])
assert not any(name.startswith("trivium") for name in sys.modules), "imported trivium"
"""


class DecodeWebp(nn.Module):
    """WebP bytes in (sniffed by decode_image), RGBA floats in [0, 1] out, upright."""

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        image = torch.ops.trivium.decode_image(data, 4, True)
        return image.float() / 255


@pytest.fixture(scope="module")
def webp_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "decode_webp.pt"
    torch.jit.script(DecodeWebp()).save(str(path))
    return path


@pytest.mark.parametrize("path", [WEBP, WEBP_ROTATED], ids=lambda p: p.name)
def test_cpp_program_decodes_webp_as_eager_python(
    runner: Path, webp_model: Path, path: Path, tmp_path
) -> None:
    out = tmp_path / "out.bin"
    subprocess.run(
        [str(runner), str(library_path()), str(webp_model), str(path), str(out)],
        check=True,
        timeout=120,
    )
    want = DecodeWebp()(read_file(path))
    assert want.shape[0] == 4 and torch.equal(_read_output(out), want)


def test_cpp_program_refuses_an_animation_cleanly(runner: Path, webp_model: Path, tmp_path) -> None:
    # The op's result is one [C, H, W] image, in C++ as under torch.compile.
    args = [str(runner), str(library_path()), str(webp_model), str(WEBP_ANIMATION), str(tmp_path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3  # a c10::Error caught by the program: no crash
    assert "animated WebP (42 frames) is not supported by the operator" in done.stderr


def test_fresh_process_needs_only_the_library(saved_model: Path, tmp_path) -> None:
    out = tmp_path / "out.pt"
    args = [sys.executable, "-c", _FRESH, str(library_path()), str(saved_model), str(PHOTO), out]
    subprocess.run([str(a) for a in args], check=True, timeout=300, cwd=tmp_path)
    assert torch.equal(torch.load(out), DecodePreprocess()(read_file(PHOTO)))


def test_scripted_model_in_python_gives_the_eager_result(saved_model: Path) -> None:
    data = read_file(PHOTO)
    assert torch.equal(torch.jit.load(str(saved_model))(data), DecodePreprocess()(data))


class DecodeNormalize(nn.Module):
    """What exports: decode and per-pixel arithmetic (nothing that branches on the size)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(MEAN).view(3, 1, 1))
        self.register_buffer("std", torch.tensor(STD).view(3, 1, 1))

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        image = torch.ops.trivium.decode_jpeg(data, 3).float() / 255
        return (image - self.mean) / self.std


@pytest.mark.slow  # over 30 s; the quick tier keeps a smaller run of the same path
def test_export_and_aot_inductor_give_the_eager_result(tmp_path) -> None:
    data = read_file(PHOTO)
    want = DecodeNormalize()(data)
    exported = torch.export.export(DecodeNormalize(), (data,))
    assert torch.equal(exported.module()(data), want)
    package = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(tmp_path / "decode_normalize.pt2")
    )
    torch.testing.assert_close(torch._inductor.aoti_load_package(package)(data), want)


def test_export_stops_where_resize_branches_on_the_decoded_size() -> None:
    # Resize(256) compares the decoded height and width (unbacked sizes) to find the
    # shorter side: export cannot decide that without the data.
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    with pytest.raises(GuardOnDataDependentSymNode):
        torch.export.export(DecodePreprocess(), (read_file(PHOTO),))


def test_a_library_built_for_another_torch_is_refused() -> None:
    with pytest.raises(ImportError, match=r"built for torch 2\.0\.0, but torch 9\.9 is installed"):
        check_torch_version("2.0.0", "9.9")
    check_torch_version(torch.__version__, torch.__version__)


def test_ops_raise_c10_errors_without_python_translation() -> None:
    # The same op called below the Python kernel (as C++ calls it): a ValueError
    # (c10::ValueError) naming the reason and the path, instead of a DecodeError.
    op = torch.ops.trivium.decode_jpeg.default
    after = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.BackendSelect)
    keys = torch._C._dispatch_keys(read_file(PHOTO)) & after
    with pytest.raises(ValueError, match=r"^cut\.jpg: corrupt image data") as caught:
        op.redispatch(keys, read_file(TRUNCATED), 0, False, None, None, None, True, -1, "cut.jpg")
    assert type(caught.value) is ValueError
    # Without Python, the formats decoded through Pillow are refused, naming the format.
    with pytest.raises(NotImplementedError, match="GIF images are decoded in Python"):
        torch.ops.trivium.decode_image.default.redispatch(
            keys, torch.frombuffer(bytearray(b"GIF89a...."), dtype=torch.uint8)
        )
    cut = read_file(WEBP)[:4000]
    with pytest.raises(ValueError, match=r"^cut\.webp: corrupt image data") as caught:
        torch.ops.trivium.decode_webp.default.redispatch(
            keys, cut, 0, False, None, True, -1, "cut.webp"
        )
    assert type(caught.value) is ValueError
