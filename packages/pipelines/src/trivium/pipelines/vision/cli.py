"""Command-line options the vision training examples share (torchvision's reference flags).

:func:`recipe_parser` starts an ``argparse`` parser with the data, run folder,
optimisation and run options both pipelines take; an example adds its own, then
:func:`parse_recipe_args` parses with its ``--demo`` recipe and
:func:`config_from_args` makes the pipeline's config. :func:`run_recipe` trains
(or evaluates) and prints the finished run with :func:`print_summary`.

Example:
    >>> from trivium.pipelines.vision import ClassificationConfig
    >>> parser = recipe_parser("demo", ClassificationConfig(), data_help="train/ and val/",
    ...                        corpus_dir="data/c", model_help="a builder")
    >>> args = parse_recipe_args(parser, ["--epochs", "3"], {"lr": 0.5})
    >>> config = config_from_args(ClassificationConfig, args, "data")
    >>> config.epochs, config.lr, config.out_dir
    (3, 0.1, 'runs/classification')
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["config_from_args", "parse_recipe_args", "print_summary", "recipe_parser", "run_recipe"]

T = TypeVar("T")


def recipe_parser(
    description: str, defaults: Any, *, data_help: str, corpus_dir: str, model_help: str
) -> argparse.ArgumentParser:
    """A parser with the options of both training examples, defaults from a config.

    ``defaults`` is the pipeline's default config; ``--help`` shows the defaults.

    Example:
        >>> from trivium.pipelines.vision import ClassificationConfig
        >>> p = recipe_parser("x", ClassificationConfig(), data_help="d", corpus_dir="c",
        ...                   model_help="m")
        >>> p.parse_args(["--wd", "0.5", "--amp"]).weight_decay
        0.5
    """
    d = defaults
    p = argparse.ArgumentParser(
        description=description.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--data-path", default=None, help=f"{data_help} (default: the corpus)")
    p.add_argument("--corpus-dir", default=corpus_dir, help="embedded corpus folder")
    p.add_argument("--output-dir", default=d.out_dir, help="the run folder")
    p.add_argument("--model", default=d.model, help=model_help)
    p.add_argument("--epochs", type=int, default=d.epochs, help="passes over the train split")
    p.add_argument("-b", "--batch-size", type=int, default=d.batch_size, help="per process")
    p.add_argument("--opt", default=d.opt, choices=["sgd", "adamw"], help="optimizer")
    p.add_argument("--lr", type=float, default=d.lr, help="peak learning rate")
    p.add_argument("--momentum", type=float, default=d.momentum, help="SGD momentum")
    p.add_argument(
        "--wd", "--weight-decay", dest="weight_decay", type=float, default=d.weight_decay,
        help="weight decay",
    )  # fmt: skip
    p.add_argument(
        "--lr-scheduler", default=d.lr_scheduler, choices=["cosine", "step", "constant"],
        help="schedule after the warm-up, per iteration",
    )  # fmt: skip
    p.add_argument("--lr-warmup-epochs", type=int, default=d.lr_warmup_epochs, help="warm-up")
    p.add_argument("--lr-warmup-decay", type=float, default=d.lr_warmup_decay, help="start lr")
    p.add_argument("--lr-step-size", type=int, default=d.lr_step_size, help="step schedule")
    p.add_argument("--lr-gamma", type=float, default=d.lr_gamma, help="step schedule factor")
    p.add_argument("--amp", action="store_true", help="mixed precision (bfloat16 on CPU)")
    p.add_argument("--channels-last", action="store_true", help="channels-last memory format")
    p.add_argument("-j", "--workers", type=int, default=d.workers, help="loader workers")
    p.add_argument("--seed", type=int, default=d.seed, help="model, order and augmentations")
    p.add_argument("--device", default=d.device, help="auto, cpu, cuda, cuda:1, ...")
    p.add_argument(
        "--checkpoint-every", type=int, default=d.checkpoint_every, help="steps; 0: per epoch"
    )
    p.add_argument(
        "--on-error", default=d.on_error, choices=["raise", "skip"],
        help="an image that cannot be read stops the run naming it, or is skipped (named at "
        "each epoch's end and in summary.json)",
    )  # fmt: skip
    p.add_argument("--resume", action="store_true", help="continue from the run folder")
    p.add_argument("--test-only", action="store_true", help="evaluate the run's checkpoint")
    return p


def parse_recipe_args(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    demo: dict[str, Any],
    demo_help: str = "the demo recipe's defaults",
) -> argparse.Namespace:
    """Parse ``argv``; with ``--demo``, ``demo``'s values are the defaults (flags given win).

    Example:
        >>> def parser():
        ...     p = argparse.ArgumentParser()
        ...     _ = p.add_argument("--lr", type=float, default=0.1)
        ...     return p
        >>> parse_recipe_args(parser(), ["--demo"], {"lr": 0.5}).lr
        0.5
        >>> parse_recipe_args(parser(), ["--demo", "--lr", "1"], {"lr": 0.5}).lr
        1.0
    """
    parser.add_argument("--demo", action="store_true", help=demo_help)
    if parser.parse_known_args(argv)[0].demo:
        parser.set_defaults(**demo)
    return parser.parse_args(argv)


def config_from_args(config_type: type[T], args: argparse.Namespace, data_path: str) -> T:
    """The run's config: the options named as its fields, ``data_path`` and ``--output-dir``.

    Example:
        >>> from trivium.pipelines.vision import ClassificationConfig
        >>> args = argparse.Namespace(lr=0.5, output_dir="runs/x", resume=True)
        >>> config_from_args(ClassificationConfig, args, "data").out_dir
        'runs/x'
    """
    names = {f.name for f in fields(config_type)}  # type: ignore[arg-type]
    values = {k: v for k, v in vars(args).items() if k in names}
    values.update(data_path=data_path, out_dir=args.output_dir)
    return config_type(**values)


def print_summary(rows: list[tuple[str, str]], summary: dict[str, Any]) -> None:
    """``rows`` (name, value) in two aligned columns, then the run folder and its files.

    Example:
        >>> print_summary([("model", "resnet18")], {"run_dir": "runs/a", "files": {}})
        <BLANKLINE>
        model       resnet18
        run folder  runs/a
    """
    rows = [*rows, ("run folder", summary["run_dir"])]
    rows += [(f"  {Path(path).name}", "") for path in summary["files"].values()]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}".rstrip())


def run_recipe(
    pipeline: ModuleType,
    config: Any,
    args: argparse.Namespace,
    summary_rows: Callable[[dict[str, Any], Any, float], list[tuple[str, str]]],
    started: float,
    split: str = "val",
) -> dict[str, Any]:
    """Train ``config`` with ``pipeline``, or with ``--test-only`` evaluate the run's checkpoint.

    ``pipeline`` is :mod:`trivium.pipelines.vision.classification` or
    :mod:`~trivium.pipelines.vision.detection` (``train``, ``evaluate``,
    ``from_checkpoint``); ``split`` is the one ``--test-only`` evaluates. Rank 0 of a
    finished run prints ``summary_rows(summary, config, seconds since started)``
    with :func:`print_summary`. Returns the summary (the metrics with ``--test-only``,
    printed as JSON).

    Example:
        >>> import types
        >>> fake = types.SimpleNamespace(train=lambda config, resume: {"steps": 1})
        >>> args = argparse.Namespace(test_only=False, resume=False)
        >>> run_recipe(fake, None, args, None, 0.0)  # not rank 0: nothing printed
        {'steps': 1}
    """
    if args.test_only:
        trained = pipeline.from_checkpoint(Path(config.out_dir) / "checkpoint.pt")
        summary = pipeline.evaluate(trained, config.data_path, split)
        print(json.dumps(summary, indent=1))
        return summary
    summary = pipeline.train(config, resume=args.resume)
    if "files" in summary:  # rank 0 of a finished run
        print_summary(summary_rows(summary, config, time.perf_counter() - started), summary)
    return summary
