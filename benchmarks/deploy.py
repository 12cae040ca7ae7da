"""Deployed decode + preprocess: a scripted model in a C++ program against the same model in Python.

The model takes JPEG bytes and runs ``trivium::decode_jpeg -> Resize(256) ->
CenterCrop(224) -> ToDtype(float32) -> Normalize`` (the vision guide's deployment
example). Sides, all on 1 thread, on a 500 x 500 JPEG (quality 90, 4:2:0):

- ``cpp``: the saved TorchScript model run by ``tests/vision/cpp/run_scripted``
  (built here with CMake against the torch wheel's libtorch), no Python at all; its
  own loop times the calls after a warm-up call.
- ``python-eager``: the same ``nn.Module`` called eagerly in Python (the peer).
- ``python-scripted``: the scripted model called from Python (reported, no target).

Each repeat times ``--calls`` calls of every side, the sides interleaved; the
median is kept. Ratio = Python time / C++ time (above 1: the deployed model is
faster). Target: 1.0 for eager Python.

Run from the repository root::

    .venv/bin/python benchmarks/deploy.py [--repeats N] [--calls N] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import harness
import torch
from harness import ROOT as REPO
from harness import Timing, interleave, loop_time
from image_assets import JPEG_DIR

sys.path.insert(0, str(REPO / "tests" / "vision"))

from test_torch_ops_deploy import DecodePreprocess  # the deployed model

from trivium.vision.io import decode_jpeg, encode_jpeg, read_file
from trivium.vision.io.image.ops import library_path

PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"
WORKLOAD = "500x500 JPEG decode + Resize(256) + CenterCrop(224) + Normalize, 1 thread"


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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per side")
    parser.add_argument("--calls", type=int, default=100, help="calls per timed repeat")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.calls < 1:
        parser.error("--repeats and --calls must be >= 1")
    return args


def save_photo(tmp: Path) -> Path:
    """The 500x500 JPEG (quality 90) cut from the photo, saved in `tmp`."""
    image_path = tmp / "photo500.jpg"
    square = decode_jpeg(read_file(PHOTO))[:, :500, :500].contiguous()
    image_path.write_bytes(bytes(encode_jpeg(square, 90).numpy()))
    return image_path


def time_sides(tmp: Path, calls: int, repeats: int) -> dict[str, Timing]:
    """The C++ program, the eager module and the scripted module on the same JPEG, interleaved."""
    image_path = save_photo(tmp)
    data = read_file(image_path)
    model = DecodePreprocess().eval()
    scripted = torch.jit.script(model)
    model_path = tmp / "decode_preprocess.pt"
    scripted.save(str(model_path))
    runner = build_runner()
    sides: dict[str, Callable[[], float]] = {
        "cpp": lambda: cpp_seconds(runner, model_path, image_path, calls),
        "python-eager": lambda: loop_time(lambda: model(data), calls),
        "python-scripted": lambda: loop_time(lambda: scripted(data), calls),
    }
    with torch.inference_mode():
        for _ in range(5):  # warm up (and let the graph executor optimise)
            model(data), scripted(data)
        samples = interleave(sides, repeats)
    return {name: Timing(s, calls) for name, s in samples.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Time the three sides and print the table (and JSON with --json)."""
    args = parse_args(argv)
    run = harness.Session(args, timing=f"{args.repeats} (median), each {args.calls} calls")
    torch.set_num_threads(1)
    run.header("deployed decode + preprocess", harness.machine_info(1, runner="libtorch C++"))
    with tempfile.TemporaryDirectory() as tmp:
        timings = time_sides(Path(tmp), args.calls, args.repeats)
    run.rows += [
        harness.row_from(WORKLOAD, timings, "cpp", "python-eager", "eager Python", target=1.0),
        harness.row_from(WORKLOAD, timings, "cpp", "python-scripted", "scripted, from Python"),
    ]
    run.checks.append("ours: the scripted model run by tests/vision/cpp/run_scripted, no Python")
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
