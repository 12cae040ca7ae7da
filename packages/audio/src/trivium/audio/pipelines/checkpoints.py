"""A pipeline's trainer (checkpointing to its run folder) and reading its checkpoints back.

Example:
    >>> import dataclasses, tempfile
    >>> from trivium.core.training import save_checkpoint
    >>> @dataclasses.dataclass
    ... class Config:
    ...     steps: int = 1
    >>> path = save_checkpoint(tempfile.mkdtemp() + "/c.pt",
    ...                        {"model": {}, "extra": {"config": {"steps": 5}}})
    >>> read_checkpoint(path, Config)[0]
    Config(steps=5)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from trivium.audio.pipelines.batches import batch_indices, step_generator
from trivium.audio.pipelines.schedules import warmup_cosine
from trivium.core.errors import DecodeError
from trivium.core.training import CHECKPOINT_NAME, Trainer, load_checkpoint

__all__ = ["make_trainer", "pipeline_from_checkpoint", "read_checkpoint"]

C = TypeVar("C")
P = TypeVar("P", bound=nn.Module)


def read_checkpoint(path: str | os.PathLike[str], config_cls: type[C]) -> tuple[C, dict[str, Any]]:
    """``(config, state)`` of a checkpoint file, or of ``checkpoint.pt`` in a run folder.

    Unknown configuration keys are ignored (newer checkpoints), missing ones take
    their defaults; a checkpoint without a configuration or weights raises
    :class:`~trivium.core.errors.DecodeError`.
    """
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    state = load_checkpoint(path)
    try:
        names = {f.name for f in dataclasses.fields(config_cls)}  # type: ignore[arg-type]
        raw = state["extra"]["config"]
        config = config_cls(**{k: v for k, v in raw.items() if k in names})
    except (KeyError, TypeError) as e:
        raise DecodeError(
            f"checkpoint has no {config_cls.__name__} configuration ({e})", path=path
        ) from e
    if "model" not in state:
        raise DecodeError("checkpoint has no model weights", path=path)
    return config, state


def pipeline_from_checkpoint(
    path: str | os.PathLike[str],
    make: Callable[[C], P],
    config_cls: type[C],
    device: str | torch.device = "cpu",
) -> P:
    """``make(config)`` with the ``model`` weights of a checkpoint, on ``device``, in eval mode.

    ``path`` is a checkpoint file or a run folder (see :func:`read_checkpoint`);
    ``make`` builds the pipeline (an ``nn.Module`` with a ``model``) from its config.

    Example:
        >>> import dataclasses, tempfile, torch
        >>> from trivium.core.training import save_checkpoint
        >>> @dataclasses.dataclass
        ... class Config:
        ...     width: int = 1
        >>> class Pipeline(torch.nn.Module):
        ...     def __init__(self, config):
        ...         super().__init__()
        ...         self.config, self.model = config, torch.nn.Linear(config.width, 1)
        >>> state = {"model": Pipeline(Config(3)).model.state_dict(),
        ...          "extra": {"config": {"width": 3}}}
        >>> path = save_checkpoint(tempfile.mkdtemp() + "/c.pt", state)
        >>> pipeline = pipeline_from_checkpoint(path, Pipeline, Config)
        >>> pipeline.model.in_features, pipeline.training
        (3, False)
    """
    config, state = read_checkpoint(path, config_cls)
    pipeline = make(config)
    pipeline.model.load_state_dict(state["model"])
    return pipeline.to(device).eval()


def make_trainer(
    model: nn.Module,
    optimizer: Any,
    scheduler: Any,
    config: Any,
    pipeline: str,
    resume: bool,
) -> Trainer:
    """The :class:`Trainer` of a pipeline's ``config``, resumed from its run folder if asked.

    ``config`` is a pipeline configuration dataclass (device, amp, grad_clip_norm,
    out_dir, checkpoint_every, num_steps, progress); it is saved in every checkpoint.

    Example:
        >>> import tempfile, torch
        >>> @dataclasses.dataclass
        ... class Config:
        ...     device: str = "cpu"; amp: bool = False; grad_clip_norm: float = 1.0
        ...     out_dir: str = tempfile.mkdtemp(); checkpoint_every: int = 10
        ...     num_steps: int = 10; progress: bool = False
        >>> model = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> make_trainer(model, opt, None, Config(), "demo", resume=True).checkpoint_path.name
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


def fit_pipeline(
    model: nn.Module,
    config: Any,
    pipeline: str,
    resume: bool,
    until: int | None,
    num_items: int,
    make_batch: Callable[[list[int], torch.Generator], Any],
    loss_fn: Callable[[Any, Any], Tensor],
    eval_fn: Callable[[nn.Module], dict[str, float]] | None,
    *,
    weight_decay: float = 0.0,
    warmup_fraction: float = 0.05,
) -> None:
    """Train ``model`` as every pipeline does, resuming from its run folder if asked.

    Adam at ``config.lr`` with a warm-up cosine schedule over ``config.num_steps``;
    step ``s`` reads ``make_batch(indices, generator)`` for ``config.batch_size`` item
    indices (of ``num_items``) and a generator that both depend only on the seed and
    ``s``, so a resumed run draws the same batches. ``until`` stops after that many
    steps (the schedule still spans ``config.num_steps``). Checkpoints and metrics are
    as :func:`make_trainer` sets them up.

    Example:
        >>> import tempfile, torch
        >>> @dataclasses.dataclass
        ... class Config:
        ...     device: str = "cpu"; amp: bool = False; grad_clip_norm: float = 1.0
        ...     out_dir: str = tempfile.mkdtemp(); checkpoint_every: int = 10
        ...     num_steps: int = 3; progress: bool = False; lr: float = 0.1
        ...     batch_size: int = 2; seed: int = 0; eval_every: int = 0
        >>> model = torch.nn.Linear(1, 1)
        >>> data = torch.arange(4.0).view(4, 1)
        >>> fit_pipeline(model, Config(), "demo", False, None, 4,
        ...              lambda idx, gen: data[idx], lambda m, x: (m(x) - 2 * x).pow(2).mean(),
        ...              None)
        >>> sorted(p.name for p in Path(Config.out_dir).iterdir())[:1]
        ['checkpoint.pt']
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=weight_decay)
    warmup = int(warmup_fraction * config.num_steps)
    scheduler = warmup_cosine(optimizer, config.num_steps, warmup)
    trainer = make_trainer(model, optimizer, scheduler, config, pipeline, resume)

    def batch_fn(step: int) -> Any:
        indices = batch_indices(step, num_items, config.batch_size, config.seed)
        return make_batch(indices, step_generator(config.seed, step))

    steps = config.num_steps if until is None else min(until, config.num_steps)
    trainer.fit(batch_fn, steps, loss_fn, eval_fn=eval_fn, eval_every=config.eval_every)
