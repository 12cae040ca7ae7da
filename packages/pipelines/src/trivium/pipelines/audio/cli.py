"""Command-line options every pipeline's training example shares.

:func:`training_parser` starts an ``argparse`` parser with the dataset, corpus, run
folder and training options; an example adds its own, builds its config dataclass from
:func:`config_options` (on the corpus :func:`corpus_root` names) and saves its
final metrics with :func:`write_metrics`.

Example:
    >>> from trivium.pipelines.audio import SeparationConfig
    >>> parser = training_parser("demo", "Libri2Mix/", "runs/demo", steps=10, lr=1e-3)
    >>> args = parser.parse_args(["--steps", "3", "--amp"])
    >>> config = SeparationConfig(root="data", **training_options(args))
    >>> config.num_steps, config.amp, config.out_dir
    (3, True, 'runs/demo')
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

__all__ = [
    "HelpFormatter",
    "config_options",
    "corpus_root",
    "training_options",
    "training_parser",
    "write_metrics",
]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, except ``None`` and off flags.

    Example:
        >>> p = argparse.ArgumentParser(formatter_class=HelpFormatter)
        >>> _ = p.add_argument("--lr", type=float, default=0.1, help="learning rate")
        >>> "(default: 0.1)" in p.format_help()
        True
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        # "(default: None)" and "(default: False)" say nothing the help text does not.
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def training_parser(
    description: str,
    layout: str,
    out_dir: str,
    steps: int,
    lr: float,
    max_eval_items: int | None = None,
) -> argparse.ArgumentParser:
    """A parser with the options of every training example (``layout``: what ``--root`` holds).

    Its ``--help`` shows the defaults (:class:`HelpFormatter`): give every option a help.

    Example:
        >>> training_parser("demo", "LibriSpeech/<split>", "runs/x", 5, 0.1).parse_args([]).steps
        5
    """
    p = argparse.ArgumentParser(description=description, formatter_class=HelpFormatter)
    p.add_argument(
        "--root", help=f"dataset root with {layout}; without it, the embedded espeak-ng corpus"
    )
    p.add_argument(
        "--corpus-dir",
        default="data/espeak_corpus",
        help="where the embedded corpus is built and kept (the examples share it)",
    )
    p.add_argument(
        "--corpus-size",
        type=int,
        nargs=2,
        default=(300, 60),
        metavar=("TRAIN", "TEST"),
        help="embedded corpus utterances from training / held-out voices",
    )
    p.add_argument("--out-dir", default=out_dir, help="checkpoints, metrics and eval.json")
    p.add_argument("--steps", type=int, default=steps, help="training steps")
    p.add_argument("--batch-size", type=int, default=8, help="items per step")
    p.add_argument("--lr", type=float, default=lr, help="peak learning rate")
    p.add_argument("--device", default="auto", help="auto: cuda > mps > cpu")
    p.add_argument("--amp", action="store_true", help="mixed precision")
    p.add_argument("--checkpoint-every", type=int, default=250, help="steps between checkpoints")
    p.add_argument("--eval-every", type=int, default=0, help="evaluate during training (0: at end)")
    p.add_argument(
        "--max-eval-items",
        type=int,
        default=max_eval_items,
        help="cap on the test items evaluated (no cap when not given)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the training run")
    p.add_argument(
        "--on-error",
        default="raise",
        choices=["raise", "skip"],
        help="an unreadable file stops the run naming it, or is skipped and named in "
        "out-dir/data_report.json",
    )
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
        "on_error": args.on_error,
    }


def config_options(config_type: type, args: argparse.Namespace, **overrides: Any) -> dict[str, Any]:
    """Keyword arguments for ``config_type`` (a dataclass) from the parsed options.

    First every option named as one of the config's fields, then
    :func:`training_options` (``--steps`` sets ``num_steps``, ...), then ``overrides``:
    each later source wins over the earlier ones.

    Example:
        >>> from trivium.pipelines.audio import SeparationConfig
        >>> parser = training_parser("demo", "Libri2Mix/", "runs/demo", steps=10, lr=1e-3)
        >>> _ = parser.add_argument("--train-subset", default="train-100")
        >>> args = parser.parse_args(["--train-subset", "dev", "--steps", "3"])
        >>> options = config_options(SeparationConfig, args, root="data")
        >>> options["train_subset"], options["num_steps"], options["root"]
        ('dev', 3, 'data')
        >>> SeparationConfig(**options).train_subset
        'dev'
    """
    names = {field.name for field in dataclasses.fields(config_type)}
    options = {name: value for name, value in vars(args).items() if name in names}
    return {**options, **training_options(args), **overrides}


def corpus_root(args: argparse.Namespace, num_mixtures: tuple[int, int] | None = None) -> str:
    """``--root``, or the embedded corpus built (once) in ``--corpus-dir``.

    ``num_mixtures``: the (training, held-out) 2-speaker mixtures the corpus holds;
    ``None`` leaves the separation example's mixtures in a corpus the examples share.

    Example:
        >>> args = training_parser("demo", "x", "runs/x", 5, 0.1).parse_args(["--root", "data"])
        >>> corpus_root(args)
        'data'
    """
    if args.root is not None:
        return args.root
    from trivium.audio.corpora import build_corpus  # synthesis: only when it is needed

    return str(build_corpus(args.corpus_dir, *args.corpus_size, num_mixtures=num_mixtures))


def write_metrics(out_dir: str | Path, metrics: dict[str, float]) -> dict[str, float]:
    """Write ``metrics`` to ``out_dir/eval.json``, print them as JSON and return them.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as out:
        ...     metrics = write_metrics(out, {"wer": 0.5})
        ...     (Path(out) / "eval.json").read_text()
        {"wer": 0.5}
        '{\\n "wer": 0.5\\n}\\n'
    """
    (Path(out_dir) / "eval.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(json.dumps(metrics))
    return metrics
