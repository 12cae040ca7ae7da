"""Iterate a dataset in real DataLoader workers, in a subprocess that cannot hang the tests.

:func:`load_in_workers` starts a fresh Python that builds a dataset, reads it in the
(parent) process, iterates it in a ``torch.utils.data.DataLoader`` with workers started
by ``fork``, ``spawn`` or ``forkserver``, and reads it in the parent again. A hang turns
into a test failure twice over: the DataLoader's ``timeout`` raises in the subprocess,
and the subprocess (with its whole process group: stuck workers too) is killed when
``subprocess.run``'s timeout expires.

The dataset comes from ``build(**kwargs)`` and the parent's reads from ``read(dataset)``,
two top-level functions of an importable module (a test module, by its dotted name
under ``tests/``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

TESTS = Path(__file__).resolve().parent
LOADER_TIMEOUT = 60  # seconds the DataLoader waits for one item
WATCHDOG = 240  # seconds the whole subprocess may take


def load_in_workers(
    module: str,
    kwargs: dict[str, Any],
    context: str,
    out: Path,
    *,
    build: str = "build",
    read: str = "read",
    num_workers: int = 2,
) -> dict[str, Any]:
    """``{"before", "workers", "after"}``: parent reads, every item the workers gave, parent reads.

    ``out`` is a file the subprocess writes its results to.
    """
    spec = {
        "module": module,
        "build": build,
        "read": read,
        "kwargs": kwargs,
        "context": context,
        "num_workers": num_workers,
        "out": str(out),
    }
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", "import loader_watchdog; loader_watchdog.main()", json.dumps(spec)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: killed whole, workers included
    )
    try:
        output, _ = proc.communicate(timeout=WATCHDOG)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise AssertionError(
            f"DataLoader ({context}) hung for {WATCHDOG} s:\n{output.decode(errors='replace')}"
        ) from None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # workers the subprocess left behind
    text = output.decode(errors="replace")
    assert proc.returncode == 0, f"DataLoader ({context}) failed:\n{text}"
    return torch.load(out, weights_only=False)


def main() -> None:
    """The subprocess: build, read, iterate in workers, read again, save the results."""
    from torch.utils.data import DataLoader

    spec = json.loads(sys.argv[1])
    module = importlib.import_module(spec["module"])
    build, read = getattr(module, spec["build"]), getattr(module, spec["read"])
    dataset = build(**spec["kwargs"])
    before = read(dataset)
    loader = DataLoader(
        dataset,
        batch_size=None,
        num_workers=spec["num_workers"],
        multiprocessing_context=spec["context"],
        timeout=LOADER_TIMEOUT,
    )
    workers = list(loader)
    after = read(dataset)
    torch.save({"before": before, "workers": workers, "after": after}, spec["out"])
