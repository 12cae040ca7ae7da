"""Speed of ``trivium.audio.models`` against plain generation and torchaudio, in one process.

What it measures:

1. WaveRNN vocoding of ``--seconds`` of audio (16 kHz, hop 160, the vocoder
   pipeline's reduced WaveRNN: ``n_rnn=256, n_fc=256``, 256 mu-law classes, by
   default; ``--full`` uses torchaudio's default sizes) with
   ``WaveRNN.generate(batched=True)`` (fold-and-overlap: folds of ``--target``
   samples plus ``--overlap`` each side, generated as one batch) against
   * our plain sample-by-sample generation (``generate(batched=False)``), target ≥ 10x;
   * ``torchaudio.models.WaveRNN.infer`` with the same weights, when torchaudio
     imports, target ≥ 10x;
   * and, reported only, our plain sequential generation against torchaudio's ``infer``.
   Folded generation is timed twice: in float32 and with ``dtype=torch.bfloat16``
   (bfloat16 step products), both against float32 plain generation: bfloat16 helps
   only batched products, and made plain generation ~7x slower here.
   Samples per second are proportional to 1 / time, so the ratio of times is the
   ratio of samples per second.
2. Forward passes of Wav2Letter (MFCC input, 4 s) and ConvTasNet (base config, 1 s)
   against torchaudio with the same weights (reported: the same layers, so ~1x).

Every side is warmed up once, then timed in ``--repeats`` repeats (default 3) of a
loop of at least ``--min-time`` seconds (default 0.2); sides are interleaved repeat
by repeat and the median per-call time is kept. Ratio = peer time / our time.

Run from the repository root::

    .venv/bin/python benchmarks/audio_models.py [--seconds S] [--repeats N] [--min-time S]
        [--json PATH] [--full] [--target N] [--overlap N] [--threads N]

On a CPU shared with other jobs, ``--threads 1`` avoids thread oversubscription,
which slows the small batched matrix products of folded generation far more than
the vector products of plain generation.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import harness
import torch

from trivium.audio.models import Wav2Letter, WaveRNN, conv_tasnet_base

HOP = 160
SCALES = [4, 5, 8]
REDUCED = {
    "n_res_block": 5,
    "n_rnn": 256,
    "n_fc": 256,
    "n_freq": 80,
    "n_hidden": 64,
    "n_output": 64,
}
FULL = {"n_freq": 80}


WORKLOADS = ["wavernn", "forward"]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = harness.benchmark_parser(__doc__.split("\n\n")[0], WORKLOADS, repeats=3, min_time=0.2)
    parser.add_argument("--seconds", type=float, default=3.0, help="audio vocoded per call")
    parser.add_argument("--target", type=int, default=400, help="fold length in samples")
    parser.add_argument("--overlap", type=int, default=40, help="fold overlap in samples")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    parser.add_argument("--full", action="store_true", help="torchaudio's default WaveRNN sizes")
    return harness.parse_benchmark_args(parser, WORKLOADS, argv)


def wavernn_rows(args: argparse.Namespace, ta: Any, checks: list[str]) -> list[harness.Row]:
    """Folded vs plain generation, and against torchaudio's infer."""
    sizes = FULL if args.full else REDUCED
    torch.manual_seed(0)
    ours = WaveRNN(SCALES, 256, HOP, **sizes).eval()
    frames = max(1, round(args.seconds * 16000 / HOP))
    mel = torch.rand(1, sizes["n_freq"], frames)
    samples = frames * HOP
    bf16 = torch.bfloat16
    sides = [
        harness.Side(
            "folded", lambda: ours.generate(mel, target=args.target, overlap=args.overlap)
        ),
        harness.Side(
            "folded bf16",
            lambda: ours.generate(mel, target=args.target, overlap=args.overlap, dtype=bf16),
        ),
        harness.Side("plain", lambda: ours.generate(mel, batched=False)),
    ]
    theirs = None
    if ta is not None:
        theirs = ta.models.WaveRNN(SCALES, 256, HOP, **sizes).eval()
        theirs.load_state_dict(ours.state_dict())

        def ta_infer() -> Any:
            with torch.no_grad():
                return theirs.infer(mel)

        sides.append(harness.Side("torchaudio", ta_infer))
    timings = harness.measure(sides, args.repeats, args.min_time)
    label = f"WaveRNN {'full' if args.full else 'reduced'}, {samples} samples"
    fold = f"folded (target {args.target}, overlap {args.overlap})"
    rows = [
        harness.row_from(
            f"{label}: {fold} vs plain sequential", timings, "folded", "plain", "ours plain"
        ),
        harness.row_from(
            f"{label}: {fold}, bfloat16 steps, vs plain sequential",
            timings,
            "folded bf16",
            "plain",
            "ours plain",
            target=10.0,
        ),
    ]
    if theirs is not None:
        rows.append(
            harness.row_from(
                f"{label}: {fold} vs torchaudio infer", timings, "folded", "torchaudio", target=10.0
            )
        )
        rows.append(
            harness.row_from(
                f"{label}: our plain sequential vs torchaudio infer", timings, "plain", "torchaudio"
            )
        )
    for name in ("folded", "folded bf16", "plain"):
        rate = samples / timings[name].median
        checks.append(f"{name}: {rate:,.0f} samples/s")
    return rows


def forward(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], Any]:
    """A call of ``model`` on ``x`` without autograd."""

    def call() -> Any:
        with torch.no_grad():
            return model(x)

    return call


def forward_rows(args: argparse.Namespace, ta: Any, checks: list[str]) -> list[harness.Row]:
    """Wav2Letter and ConvTasNet forward passes against torchaudio with the same weights."""
    if ta is None:
        checks.append("torchaudio not importable: forward-pass rows skipped")
        return []
    rows = []
    cases = [
        (
            "Wav2Letter mfcc forward, 4 s",
            Wav2Letter(29, "mfcc", 13),
            ta.models.Wav2Letter(29, "mfcc", 13),
            torch.randn(1, 13, 401),
        ),
        (
            "ConvTasNet base forward, 1 s",
            conv_tasnet_base(),
            ta.models.conv_tasnet_base(),
            torch.randn(1, 1, 16000),
        ),
    ]
    for name, ours, theirs, x in cases:
        ours.load_state_dict(theirs.state_dict())
        ours.eval()
        theirs.eval()
        with torch.no_grad():
            diff = float((ours(x) - theirs(x)).abs().max())
        checks.append(f"{name}: max |ours - torchaudio| = {diff:.2e}")

        sides = [
            harness.Side("ours", forward(ours, x)),
            harness.Side("torchaudio", forward(theirs, x)),
        ]
        timings = harness.measure(sides, args.repeats, args.min_time)
        rows.append(harness.row_from(name, timings, "ours", "torchaudio"))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run every workload, print machine info and the table, optionally write JSON."""
    args = parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    run = harness.Session(args)
    ta = harness.peers.import_torchaudio()
    threads = torch.get_num_threads()
    run.header(
        "trivium.audio.models benchmark",
        harness.machine_info(threads, torchaudio=harness.version(ta)),
    )
    for workload, rows_of in (("wavernn", wavernn_rows), ("forward", forward_rows)):
        if workload in args.only:
            run.rows += rows_of(args, ta, run.checks)
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
