"""Deployed decode + preprocess: a scripted model in a C++ program against the same model in Python.

The model takes JPEG bytes and runs ``trivium::decode_jpeg -> Resize(256) ->
CenterCrop(224) -> ToDtype(float32) -> Normalize`` (the vision guide's deployment
example). Sides, all on 1 thread, on a 500 x 500 JPEG (quality 90, 4:2:0):

- ``cpp``: the saved TorchScript model run by ``tests/vision/cpp/run_scripted``
  (built here with CMake against the torch wheel's libtorch), no Python at all; its
  own loop times the calls after a warm-up call.
- ``python-eager``: the same ``nn.Module`` called eagerly in Python (the peer).
- ``python-scripted``: the scripted model called from Python (reported, no target).

Ratio = Python time / C++ time (above 1: the deployed model is faster). Target: 1.0.

Run from the repository root::

    .venv/bin/python benchmarks/deploy.py [--repeats N] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from harness import interleave, loop_time

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "vision")]

from test_torch_ops_deploy import DecodePreprocess  # noqa: E402  (the deployed model)

from trivium.vision.io import encode_jpeg, read_file  # noqa: E402
from trivium.vision.io.ops import library_path  # noqa: E402

PHOTO = REPO / "tests" / "assets" / "images" / "jpeg" / "tv-grace_hopper_517x606.jpg"


def build_runner() -> Path:
    """tests/vision/cpp built (incrementally) against the torch wheel's libtorch."""
    bin_dir = Path(sys.executable).parent
    build = REPO / "packages" / "vision" / "build" / "deploy-test"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    configure = [
        "cmake", "-S", str(REPO / "tests" / "vision" / "cpp"), "-B", str(build), "-G", "Ninja",
        "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
    ]  # fmt: skip
    for command in (configure, ["cmake", "--build", str(build)]):
        subprocess.run(command, check=True, env=env, capture_output=True)
    return build / "run_scripted"


def cpp_seconds(runner: Path, model: Path, image: Path, calls: int) -> float:
    """Per-call seconds the C++ program measures over `calls` calls."""
    out = image.with_suffix(".out")
    args = [runner, library_path(), model, image, out, str(calls)]
    done = subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        photo = read_file(PHOTO)
        from trivium.vision.io import decode_jpeg

        image_path = Path(tmp) / "photo500.jpg"
        square = decode_jpeg(photo)[:, :500, :500].contiguous()
        image_path.write_bytes(bytes(encode_jpeg(square, 90).numpy()))
        data = read_file(image_path)
        model = DecodePreprocess().eval()
        scripted = torch.jit.script(model)
        model_path = Path(tmp) / "decode_preprocess.pt"
        scripted.save(str(model_path))
        runner = build_runner()
        sides = {
            "cpp": lambda: cpp_seconds(runner, model_path, image_path, args.calls),
            "python-eager": lambda: loop_time(lambda: model(data), args.calls),
            "python-scripted": lambda: loop_time(lambda: scripted(data), args.calls),
        }
        with torch.inference_mode():
            for _ in range(5):  # warm up (and let the graph executor optimise)
                model(data), scripted(data)
            samples = interleave(sides, args.repeats)
    medians = {name: statistics.median(s) for name, s in samples.items()}
    print(f"deploy: 500x500 JPEG decode + preprocess, 1 thread, torch {torch.__version__}")
    print("| side | ms/call | ratio (Python / C++) |")
    print("|---|---|---|")
    for name, seconds in medians.items():
        ratio = seconds / medians["cpp"]
        print(f"| {name} | {seconds * 1e3:.3f} | {ratio:.2f}x |")
    status = "meets" if medians["python-eager"] / medians["cpp"] >= 1.0 else "misses"
    print(f"target C++ >= 1.0x eager Python: {status}")


if __name__ == "__main__":
    main()
