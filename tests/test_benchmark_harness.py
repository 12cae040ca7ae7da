"""benchmarks/harness.py: rows against a missing peer, loader-epoch label counts, the header."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("harness", BENCHMARKS / "harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("harness", module)
    spec.loader.exec_module(module)
    return module


def timings(harness, **samples: list[float]) -> dict:
    return {name: harness.Timing(s, 1) for name, s in samples.items()}


def test_row_from_compares_the_medians(harness):
    t = timings(harness, ours=[1.0, 3.0, 2.0], tv=[4.0, 8.0, 6.0])
    row = harness.row_from("w", t, "ours", "tv", "torchvision v2", target=2.5)
    assert (row.ours_s, row.peer, row.peer_s) == (2.0, "torchvision v2", 6.0)
    assert row.ratio == pytest.approx(3.0)
    assert row.status == "PASS"
    assert row.samples == {"ours": [1.0, 3.0, 2.0], "peer": [4.0, 8.0, 6.0]}


def test_row_from_a_peer_not_timed_keeps_ours_and_says_why(harness):
    t = timings(harness, ours=[1.0, 2.0, 3.0])
    row = harness.row_from("w", t, "ours", "tv", "torchvision", 2.0, missing="does not import")
    assert (row.ours_s, row.peer_s, row.target) == (2.0, None, 2.0)
    assert row.peer == "torchvision: does not import"
    assert row.ratio is None and row.status == "n/a"
    assert (
        "| w | 2000.0 ms | torchvision: does not import | — | ≥2x n/a |"
        in harness.markdown_table([row])
    )


def test_epoch_labels_counts_the_labels_of_checked_batches(harness):
    labels = [torch.tensor([0, 1, 1]), torch.tensor([2, 1])]
    batches = [(torch.zeros(len(y), 3, 4, 4), y) for y in labels]
    seen = harness.epoch_labels(batches, torch.float32, 4)
    assert seen == Counter(int(v) for y in labels for v in y)
    uint8_batch = (torch.zeros(2, 3, 4, 4, dtype=torch.uint8), labels[1])
    with pytest.raises(AssertionError, match=r"bad batch torch\.uint8"):
        harness.epoch_labels([batches[0], uint8_batch], torch.float32, 4)
    with pytest.raises(AssertionError, match=r"\(3, 3, 5, 4\)"):
        harness.epoch_labels([(torch.zeros(3, 3, 5, 4), labels[0])], torch.float32, 4)


def test_session_header_says_how_sides_are_timed(harness, capsys):
    args = argparse.Namespace(repeats=3, min_time=0.2, json=None)
    harness.Session(args).header("t", {"cpu": "x"})
    assert "- repeats: 3 (median), each ≥ 0.2 s" in capsys.readouterr().out
    harness.Session(args, timing="3 (median), each 100 calls").header("t", {})
    assert "- repeats: 3 (median), each 100 calls" in capsys.readouterr().out


def test_thread_counts_args_take_a_peers_python_where_asked(harness):
    args = harness.parse_thread_counts_args("t", ["a", "b"], ["--threads", "1,2"], 3)
    assert args.threads == [1, 2] and not hasattr(args, "peers_python")
    args = harness.parse_thread_counts_args("t", ["a"], [], 3, peers_python="peers/python")
    assert args.peers_python == "peers/python" and args.only == ["a"]
    args = harness.parse_thread_counts_args("t", ["a"], ["--peers-python", ""], 3, peers_python="p")
    assert args.peers_python == ""
