"""What the training pipelines share: run settings, the trainer, loading, evaluation mode, the run.

A pipeline module defines its model, data and loss; :func:`train_pipeline` seeds,
builds, loads and fits them the same way for every pipeline, checkpointing and
logging through :func:`make_trainer`.

Example:
    >>> import torch
    >>> model = torch.nn.Dropout()
    >>> with eval_mode(model):
    ...     model.training
    False
    >>> model.training
    True
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Sized
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from trivium.core.errors import TriviumError, watch_decode_warnings
from trivium.core.progress import progress
from trivium.core.seeding import seed_everything
from trivium.core.skipping import (
    SkipReport,
    check_on_error,
    describe_error,
    item_origin,
    recovered_file,
)
from trivium.core.training import Trainer
from trivium.pipelines.audio.batches import batch_indices, step_generator
from trivium.pipelines.audio.schedules import warmup_cosine

__all__ = [
    "RunConfig",
    "eval_mode",
    "evaluation_items",
    "load_for_evaluation",
    "load_items",
    "loading",
    "make_trainer",
    "mean_metrics",
    "train_pipeline",
    "write_data_report",
]

T = TypeVar("T")
P = TypeVar("P", bound=nn.Module)


@dataclasses.dataclass(kw_only=True)
class RunConfig:
    """Settings every training run has, whatever it trains (keyword-only).

    ``device`` is ``"auto"``, ``"cpu"`` or ``"cuda"``; ``amp`` trains in mixed precision;
    ``checkpoint_every`` and ``eval_every`` count steps (``eval_every=0``: no evaluation
    during training); ``progress`` shows bars (``None``: when stderr is a terminal);
    ``on_error`` is ``"raise"`` (a file that cannot be read stops the run, naming it)
    or ``"skip"`` (it is left out and named in ``data_report.json``).

    Example:
        >>> RunConfig().checkpoint_every
        500
    """

    amp: bool = False
    device: str = "auto"
    checkpoint_every: int = 500
    eval_every: int = 0
    seed: int = 0
    progress: bool | None = None
    on_error: str = "raise"

    def __post_init__(self) -> None:
        check_on_error(self.on_error)


# What train_pipeline's loading does with unreadable files, and where it names them.
_loading: contextvars.ContextVar[tuple[str, SkipReport] | None] = contextvars.ContextVar(
    "trivium_audio_loading", default=None
)


@contextlib.contextmanager
def loading(on_error: str, report: SkipReport) -> Iterator[SkipReport]:
    """:func:`load_items` inside the block skips (or not) and names files in ``report``.

    Example:
        >>> from trivium.core import DecodeError
        >>> def convert(i):
        ...     if i == 1:
        ...         raise DecodeError("truncated", path="b.wav")
        ...     return i
        >>> report = SkipReport()
        >>> with loading("skip", report):
        ...     load_items(range(3), None, convert, "none")
        [0, 2]
        >>> report.skipped_files
        ['b.wav']
    """
    check_on_error(on_error)
    token = _loading.set((on_error, report))
    try:
        yield report
    finally:
        _loading.reset(token)


@contextlib.contextmanager
def eval_mode(module: nn.Module) -> Iterator[nn.Module]:
    """``module`` in eval mode inside the block, in its former mode after it.

    Example:
        >>> model = torch.nn.Dropout()
        >>> with eval_mode(model.eval()):
        ...     model.training
        False
        >>> model.training
        False
    """
    was_training = module.training
    module.eval()
    try:
        yield module
    finally:
        module.train(was_training)


def load_items(
    dataset: Sized,
    limit: int | None,
    convert: Callable[[int], T],
    empty_message: str,
    desc: str | None = None,
    show_progress: bool | None = False,
) -> list[T]:
    """``convert(i)`` for the first ``limit`` items of ``dataset`` (``None``: all of them).

    An empty result raises ``ValueError(empty_message)``; ``desc`` labels a progress bar
    shown when ``show_progress`` is true. A file that cannot be read raises a
    ``trivium.core`` error naming it; inside :func:`loading` with ``"skip"`` it is left
    out instead, and named in the block's report, as are the files whose decoders
    issued a ``DecodeWarning`` (damaged, decoded as far as readable).

    Example:
        >>> load_items([3, 4, 5], 2, lambda i: i * 10, "no items")
        [0, 10]
        >>> load_items([], None, str, "no items in data/x")
        Traceback (most recent call last):
        ...
        ValueError: no items in data/x
    """
    count = len(dataset) if limit is None else min(limit, len(dataset))
    on_error, report = _loading.get() or ("raise", SkipReport())
    items = []
    for i in progress(range(count), desc=desc, disable=not show_progress):
        origin = None

        def recovered(message: str, i: int = i) -> None:
            where = item_origin(dataset, i)
            report.recover(recovered_file(message, None if where is None else str(where)), message)

        try:
            with watch_decode_warnings(recovered):
                items.append(convert(i))
        except (TriviumError, OSError) as error:
            origin = item_origin(dataset, i)
            path, reason = describe_error(error)
            if on_error == "skip":
                report.skip(path or (str(origin) if origin else f"item {i}"), reason)
                continue
            named = error if origin is None else origin.attach(error)
            if named is error:
                raise
            raise named from error
    if not items:
        raise ValueError(empty_message)
    return items


def load_for_evaluation(config: Any, load: Callable[[], T]) -> T:
    """``load()`` with ``config.on_error``; what it skipped goes to ``eval_data_report.json``.

    Example:
        >>> import tempfile, types
        >>> config = types.SimpleNamespace(on_error="skip", out_dir=tempfile.mkdtemp())
        >>> load_for_evaluation(config, lambda: load_items([1, 2], None, str, "none"))
        ['0', '1']
    """
    with loading(getattr(config, "on_error", "raise"), SkipReport()) as report:
        items = load()
    write_data_report(report, config.out_dir, "eval_data_report.json")
    return items


def evaluation_items(pipeline: nn.Module, items: list | None, load: Callable[[], list]) -> list:
    """``items`` if given, else ``load()`` through :func:`load_for_evaluation` with the
    pipeline's ``config``: what every pipeline's ``evaluate`` reads.

    Example:
        >>> import tempfile, types
        >>> config = types.SimpleNamespace(out_dir=tempfile.mkdtemp())
        >>> pipeline = types.SimpleNamespace(config=config)
        >>> evaluation_items(pipeline, [7], list), evaluation_items(pipeline, None, lambda: [1, 2])
        ([7], [1, 2])
    """
    if items is not None:
        return items
    return load_for_evaluation(pipeline.config, load)


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    """Each metric's mean over ``rows`` (one dict of metrics per evaluated item).

    Example:
        >>> mean_metrics([{"loss": 1.0, "l1": 0.5}, {"loss": 2.0, "l1": 1.5}])
        {'loss': 1.5, 'l1': 1.0}
    """
    if not rows:
        raise ValueError("rows is empty: no items were evaluated")
    return {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}


def write_data_report(
    report: SkipReport, out_dir: str | Path, name: str = "data_report.json"
) -> None:
    """Print the files skipped and recovered, and write them to ``out_dir/name``.

    Example:
        >>> import tempfile
        >>> report = SkipReport()
        >>> report.skip("a.wav", "truncated")
        >>> with tempfile.TemporaryDirectory() as out:
        ...     write_data_report(report, out)
        ...     json.loads((Path(out) / "data_report.json").read_text())["skipped_files"]
        {'a.wav': 'truncated'}
    """
    if report:
        print(report.summary(), file=sys.stderr)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    text = json.dumps(report.as_dict(), indent=1) + "\n"
    (Path(out_dir) / name).write_text(text, encoding="utf-8")


def make_trainer(
    model: nn.Module,
    optimizer: Any,
    scheduler: Any,
    config: Any,
    pipeline: str,
    resume: bool,
) -> Trainer:
    """The :class:`Trainer` of a pipeline's ``config``, resumed from its run folder if asked.

    ``config`` is a pipeline configuration dataclass: a :class:`RunConfig` with
    ``grad_clip_norm``, ``out_dir`` and ``num_steps``; it is saved in every checkpoint.

    Example:
        >>> import tempfile
        >>> @dataclasses.dataclass
        ... class Config(RunConfig):
        ...     grad_clip_norm: float = 1.0; out_dir: str = tempfile.mkdtemp(); num_steps: int = 9
        >>> model = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> config = Config(device="cpu", progress=False)
        >>> make_trainer(model, opt, None, config, "demo", resume=True).checkpoint_path.name
        'checkpoint.pt'
    """
    trainer = Trainer(
        model,
        optimizer,
        scheduler,
        device=config.device,
        amp=config.amp,
        grad_clip_norm=config.grad_clip_norm,
        out_dir=config.out_dir,
        checkpoint_every=config.checkpoint_every,
        log_every=1,  # every step: curves and start/end means need them all
        extra={"config": dataclasses.asdict(config), "pipeline": pipeline},
        progress=config.progress,
    )
    if resume and trainer.checkpoint_path.is_file():
        trainer.resume()
    return trainer


def train_pipeline(
    config: Any,
    name: str,
    build: Callable[[], P],
    load_train: Callable[[P], list],
    load_test: Callable[[P], list],
    make_batch: Callable[[P, list, list[int], torch.Generator], Any],
    loss_fn: Callable[[Any, Any], Tensor],
    evaluate: Callable[[P, list], dict[str, float]],
    resume: bool,
    until: int | None,
    *,
    weight_decay: float = 0.0,
    warmup_fraction: float = 0.05,
) -> P:
    """Seed, ``build()`` a pipeline, load its data, fit its ``model``; the pipeline, in eval mode.

    Adam at ``config.lr`` (``weight_decay``) with a warm-up cosine schedule over
    ``config.num_steps`` (warm-up: ``warmup_fraction`` of them). Step ``s`` trains on
    ``make_batch(pipeline, train_items, indices, generator)`` for ``config.batch_size``
    item indices and a generator that both depend only on the seed and ``s``, so a
    resumed run (``resume``: from ``config.out_dir`` when a checkpoint is there) draws
    the same batches. ``until`` stops after that many steps (the schedule still spans
    ``config.num_steps``), e.g. to split a run into time-bounded jobs. ``load_test``
    and ``evaluate(pipeline, test_items)`` run only when ``config.eval_every`` asks
    for evaluations. Checkpoints and metrics are as :func:`make_trainer` sets them up.

    Example:
        >>> import tempfile
        >>> @dataclasses.dataclass
        ... class Config(RunConfig):
        ...     out_dir: str = tempfile.mkdtemp(); grad_clip_norm: float = 1.0
        ...     num_steps: int = 2; lr: float = 0.1; batch_size: int = 2
        >>> class Pipeline(torch.nn.Module):
        ...     def __init__(self, config):
        ...         super().__init__()
        ...         self.config, self.model = config, torch.nn.Linear(1, 1)
        >>> data = torch.arange(4.0).view(4, 1)
        >>> pipeline = train_pipeline(
        ...     Config(device="cpu", progress=False), "demo", lambda: Pipeline(Config()),
        ...     lambda p: data, lambda p: data, lambda p, items, idx, gen: items[idx],
        ...     lambda m, x: (m(x) - 2 * x).pow(2).mean(), lambda p, items: {},
        ...     resume=False, until=None)
        >>> pipeline.training
        False
    """
    seed_everything(config.seed)
    pipeline = build()
    with loading(getattr(config, "on_error", "raise"), SkipReport()) as report:
        train_items = load_train(pipeline)
        test_items = load_test(pipeline) if config.eval_every else None
    write_data_report(report, config.out_dir)
    optimizer = torch.optim.Adam(
        pipeline.model.parameters(), lr=config.lr, weight_decay=weight_decay
    )
    scheduler = warmup_cosine(optimizer, config.num_steps, int(warmup_fraction * config.num_steps))
    trainer = make_trainer(pipeline.model, optimizer, scheduler, config, name, resume)
    trainer.logger.log(
        trainer.step,
        data_skipped_files=len(report.skipped),
        data_recovered_files=len(report.recovered),
    )

    def batch_fn(step: int) -> Any:
        indices = batch_indices(step, len(train_items), config.batch_size, config.seed)
        return make_batch(pipeline, train_items, indices, step_generator(config.seed, step))

    def eval_fn(model: nn.Module) -> dict[str, float]:
        return evaluate(pipeline, test_items)

    steps = config.num_steps if until is None else min(until, config.num_steps)
    trainer.fit(
        batch_fn,
        steps,
        loss_fn,
        eval_fn=eval_fn if test_items is not None else None,
        eval_every=config.eval_every,
    )
    return pipeline.eval()
