"""Command-line options every pipeline's training example shares.

:func:`training_parser` starts an ``argparse`` parser with the dataset, corpus, run
folder and training options; an example adds its own and passes
:func:`training_options` to its config dataclass.

Example:
    >>> from trivium.audio.pipelines import SeparationConfig
    >>> parser = training_parser("demo", "Libri2Mix/", "runs/demo", steps=10, lr=1e-3)
    >>> args = parser.parse_args(["--steps", "3", "--amp"])
    >>> config = SeparationConfig(root="data", **training_options(args))
    >>> config.num_steps, config.amp, config.out_dir
    (3, True, 'runs/demo')
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["training_options", "training_parser"]


def training_parser(
    description: str,
    layout: str,
    out_dir: str,
    steps: int,
    lr: float,
    max_eval_items: int | None = None,
) -> argparse.ArgumentParser:
    """A parser with the options of every training example (``layout``: what ``--root`` holds).

    Example:
        >>> training_parser("demo", "LibriSpeech/<split>", "runs/x", 5, 0.1).parse_args([]).steps
        5
    """
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--root", help=f"dataset root with {layout} (default: embedded corpus)")
    p.add_argument("--corpus-dir", default="data/espeak_corpus", help="where the corpus is cached")
    p.add_argument("--corpus-size", type=int, nargs=2, default=(300, 60), metavar=("TRAIN", "TEST"))
    p.add_argument("--out-dir", default=out_dir)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=lr)
    p.add_argument("--device", default="auto")
    p.add_argument("--amp", action="store_true", help="mixed precision")
    p.add_argument("--checkpoint-every", type=int, default=250)
    p.add_argument("--eval-every", type=int, default=0, help="evaluate during training (0: at end)")
    p.add_argument("--max-eval-items", type=int, default=max_eval_items)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--no-resume", action="store_true", help="start over even if out-dir has a checkpoint"
    )
    return p


def training_options(args: argparse.Namespace) -> dict[str, Any]:
    """The config fields :func:`training_parser`'s options set, as keyword arguments.

    Example:
        >>> args = training_parser("demo", "x", "runs/x", 5, 0.1).parse_args(["--seed", "2"])
        >>> training_options(args)["seed"], training_options(args)["num_steps"]
        (2, 5)
    """
    return {
        "out_dir": args.out_dir,
        "batch_size": args.batch_size,
        "num_steps": args.steps,
        "lr": args.lr,
        "amp": args.amp,
        "device": args.device,
        "checkpoint_every": args.checkpoint_every,
        "eval_every": args.eval_every,
        "max_eval_items": args.max_eval_items,
        "seed": args.seed,
    }
