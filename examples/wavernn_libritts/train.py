"""Train a WaveRNN vocoder (mel to waveform) on LibriTTS or on the embedded espeak-ng corpus.

Real data: ``--root DIR`` holding ``LibriTTS/train-clean-100`` and
``LibriTTS/test-clean`` (resampled to ``--sample-rate`` on load). Without
``--root`` the embedded corpus is synthesised (once) into ``--corpus-dir``.
Checkpoints (exact resume) and metric files go to ``--out-dir``; the final
teacher-forced loss, mel L1 and spectral convergence of vocoded held-out
utterances are printed as JSON and written to ``out-dir/eval.json``, and one
vocoded utterance to ``out-dir/vocoded.wav``.

Example::

    .venv/bin/python examples/wavernn_libritts/train.py --out-dir runs/wavernn
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from trivium.audio.datasets import LIBRITTS
from trivium.audio.io import save
from trivium.core.training import MetricLogger
from trivium.pipelines.audio import VocoderConfig, vocoder
from trivium.pipelines.audio.cli import (
    config_options,
    corpus_root,
    training_parser,
    write_metrics,
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--help`` lists them)."""
    p = training_parser(
        __doc__.split("\n\n")[0], "LibriTTS/<split>", "runs/wavernn_libritts", 1000, 2e-3, 2
    )
    p.add_argument("--train-url", default="train-clean-100", help="training split")
    p.add_argument("--test-url", default="test-clean", help="evaluation split")
    p.add_argument("--sample-rate", type=int, default=16000, help="audio is resampled to it")
    p.add_argument("--segment-frames", type=int, default=2, help="mel frames per training segment")
    p.add_argument("--n-rnn", type=int, default=256, help="GRU width (torchaudio: 512)")
    p.add_argument("--n-fc", type=int, default=256, help="width of the output layers")
    p.add_argument("--eval-seconds", type=float, default=1.0, help="audio vocoded per utterance")
    p.add_argument(
        "--loss-window", type=int, default=20, help="steps averaged for the start/end loss"
    )
    return p.parse_args(argv)


def loss_fall(history: Sequence[tuple[int, float]], window: int) -> dict[str, float]:
    """Mean training loss over the first and the last ``window`` steps, and its relative fall.

    Single steps are noisy (each batch is a few random segments), hence the means.

    Example:
        >>> loss_fall([(1, 6.0), (2, 4.0), (3, 3.0), (4, 2.0)], window=2)
        {'first_train_loss': 5.0, 'last_train_loss': 2.5, 'train_loss_fall': 0.5}
    """
    losses = [value for _, value in history]
    if not losses:
        return {}
    n = max(1, min(window, len(losses) // 2))
    first, last = sum(losses[:n]) / n, sum(losses[-n:]) / n
    return {"first_train_loss": first, "last_train_loss": last, "train_loss_fall": 1 - last / first}


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """Train, evaluate on held-out utterances, save one vocoded example."""
    args = parse_args(argv)
    config = VocoderConfig(**config_options(VocoderConfig, args, root=corpus_root(args)))
    pipeline = vocoder.train(config, resume=not args.no_resume)
    metrics = vocoder.evaluate(pipeline, max_seconds=args.eval_seconds)
    metrics.update(loss_fall(MetricLogger(args.out_dir).history("loss"), args.loss_window))
    waveform = LIBRITTS(config.root, url=args.test_url)[0][0]
    frames_per_second = config.sample_rate / config.hop_length
    mel = pipeline.mel(waveform)[:, : int(args.eval_seconds * frames_per_second)]
    save(Path(args.out_dir) / "vocoded.wav", pipeline.vocode(mel).cpu(), config.sample_rate)
    return write_metrics(args.out_dir, metrics)


if __name__ == "__main__":
    main()
    sys.exit(0)
