"""What the classification and detection pipeline tests share: run folders and a killed run."""

from __future__ import annotations

import json
import os
import pathlib
import random
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
import torch

from trivium.core import load_checkpoint


def loss_records(run_dir: pathlib.Path) -> list[tuple[int, float]]:
    """``(step, loss)`` of every training step a run logged."""
    records = json.loads((run_dir / "metrics.json").read_text())["records"]
    return [(step, value) for step, name, value in records if name == "loss"]


def losses(run_dir: pathlib.Path) -> list[float]:
    """The training losses a run logged, in step order."""
    return [value for _, value in loss_records(run_dir)]


def assert_same_weights(a: pathlib.Path, b: pathlib.Path) -> None:
    """The checkpoints of two run folders hold the same weights (to float rounding)."""
    wa = load_checkpoint(a / "checkpoint.pt")["model"]
    wb = load_checkpoint(b / "checkpoint.pt")["model"]
    assert wa.keys() == wb.keys()
    for name in wa:
        torch.testing.assert_close(wa[name], wb[name], rtol=1e-5, atol=1e-6, msg=name)


def run_killed_and_resumed(args: list[str], tmp_path: pathlib.Path) -> None:
    """The example ``args`` run whole into ``tmp_path/full``, and into ``tmp_path/cut``
    SIGKILLed at a random moment after its first checkpoint, then ``--resume``d."""
    env = {**os.environ, "TRIVIUM_PROGRESS": "0"}
    subprocess.run([*args, "--output-dir", str(tmp_path / "full")], check=True, env=env)
    cut = [*args, "--output-dir", str(tmp_path / "cut")]
    proc = subprocess.Popen(cut, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (tmp_path / "cut" / "checkpoint.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(random.uniform(0.0, 0.5))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    subprocess.run([*cut, "--resume"], check=True, env=env, stdout=subprocess.DEVNULL)


def assert_cut_run_matches(tmp_path: pathlib.Path) -> None:
    """The interrupted run ``tmp_path/cut`` ended as ``tmp_path/full``: same weights, losses."""
    assert_same_weights(tmp_path / "full", tmp_path / "cut")
    assert losses(tmp_path / "cut") == pytest.approx(losses(tmp_path / "full"), rel=1e-5)


def stopped_and_resumed(
    train: Callable[..., dict[str, Any]], cut: Any, full: dict[str, Any], tmp_path: pathlib.Path
) -> dict[str, Any]:
    """``cut`` (run folder ``tmp_path/cut``) stopped at a random step of its first two
    epochs of 6 steps, then resumed: it matches ``full`` (``tmp_path/full``); returns
    the resumed run's summary."""
    stop = random.Random().randint(1, 11)
    assert train(cut, show_progress=False, stop_after_steps=stop) == {"stopped_at_step": stop}
    resumed = train(cut, resume=True, show_progress=False)
    assert resumed["steps"] == full["steps"]
    assert_cut_run_matches(tmp_path)
    return resumed


def evaluated_by_example(args: list[str], run_dir: pathlib.Path) -> tuple[dict, dict]:
    """What the example ``args`` prints with ``--test-only`` for the run in ``run_dir``
    (the JSON it ends with), and that run's ``summary.json``."""
    env = {**os.environ, "TRIVIUM_PROGRESS": "0"}
    run = [*args, "--output-dir", str(run_dir), "--test-only"]
    out = subprocess.run(run, check=True, env=env, capture_output=True, text=True).stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    return json.loads(out[out.rfind("\n{\n") + 1 :]), summary
