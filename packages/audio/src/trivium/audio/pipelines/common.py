"""What the training pipelines share: run settings, loading, evaluation mode and the run itself.

A pipeline module defines its model, data and loss; :func:`train_pipeline` seeds,
builds, loads and fits them the same way for every pipeline (see
:func:`~trivium.audio.pipelines.checkpoints.fit_pipeline`), and
:func:`save_pipeline` writes a pipeline as a checkpoint its ``from_checkpoint`` reads.

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
import dataclasses
import os
from collections.abc import Callable, Iterator, Sized
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from trivium.audio.pipelines.checkpoints import fit_pipeline
from trivium.core.progress import progress
from trivium.core.seeding import seed_everything
from trivium.core.training import save_checkpoint

__all__ = ["RunConfig", "eval_mode", "load_items", "save_pipeline", "train_pipeline"]

T = TypeVar("T")
P = TypeVar("P", bound=nn.Module)


@dataclasses.dataclass(kw_only=True)
class RunConfig:
    """Settings every training run has, whatever it trains (keyword-only).

    ``device`` is ``"auto"``, ``"cpu"`` or ``"cuda"``; ``amp`` trains in mixed precision;
    ``checkpoint_every`` and ``eval_every`` count steps (``eval_every=0``: no evaluation
    during training); ``progress`` shows bars (``None``: when stderr is a terminal).

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
    shown when ``show_progress`` is true.

    Example:
        >>> load_items([3, 4, 5], 2, lambda i: i * 10, "no items")
        [0, 10]
        >>> load_items([], None, str, "no items in data/x")
        Traceback (most recent call last):
        ...
        ValueError: no items in data/x
    """
    count = len(dataset) if limit is None else min(limit, len(dataset))
    items = [convert(i) for i in progress(range(count), desc=desc, disable=not show_progress)]
    if not items:
        raise ValueError(empty_message)
    return items


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
    **fit_options: Any,
) -> P:
    """Seed, ``build()`` a pipeline, load its data, fit its ``model``; the pipeline, in eval mode.

    ``make_batch(pipeline, train_items, indices, generator)`` makes a step's batch;
    ``load_test`` and ``evaluate(pipeline, test_items)`` run only when
    ``config.eval_every`` asks for evaluations. ``resume``, ``until`` and
    ``fit_options`` are :func:`~trivium.audio.pipelines.checkpoints.fit_pipeline`'s.

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
    train_items = load_train(pipeline)
    test_items = load_test(pipeline) if config.eval_every else None
    fit_pipeline(
        pipeline.model,
        config,
        name,
        resume,
        until,
        len(train_items),
        lambda indices, generator: make_batch(pipeline, train_items, indices, generator),
        loss_fn,
        (lambda model: evaluate(pipeline, test_items)) if test_items is not None else None,
        **fit_options,
    )
    return pipeline.eval()


def save_pipeline(pipeline: nn.Module, path: str | os.PathLike[str]) -> Path:
    """Write ``pipeline``'s model weights and config as a checkpoint ``from_checkpoint`` reads.

    Example:
        >>> import tempfile
        >>> @dataclasses.dataclass
        ... class Config:
        ...     width: int = 2
        >>> pipeline = torch.nn.Module()
        >>> pipeline.config, pipeline.model = Config(), torch.nn.Linear(2, 1)
        >>> save_pipeline(pipeline, tempfile.mkdtemp() + "/c.pt").name
        'c.pt'
    """
    state = {
        "model": pipeline.model.state_dict(),
        "extra": {"config": dataclasses.asdict(pipeline.config)},
    }
    return save_checkpoint(path, state)
