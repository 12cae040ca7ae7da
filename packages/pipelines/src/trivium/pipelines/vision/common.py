"""What the vision training pipelines share: the run and its epoch loop, optimizer, schedule.

:class:`TrainingRun` holds a run (its :class:`trivium.core.training.Trainer`, which
owns the model, optimizer, schedule, AMP, DDP and metric log, plus the resumable
loader, the epochs and the checkpoints) and :func:`fit` drives it; a pipeline
subclasses the run with what differs. The
functions take the pipeline's config object and read only the fields named in
their docstrings, so classification and detection configs both work.

Example:
    >>> from types import SimpleNamespace
    >>> c = SimpleNamespace(epochs=2, lr_warmup_epochs=0, lr_warmup_decay=0.01,
    ...                     lr_scheduler="constant", lr_gamma=0.1, lr_step_size=1)
    >>> lr_factor(c, 3, 2)
    1.0
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from trivium.core import load_checkpoint, progress, save_checkpoint, seed_everything
from trivium.core.devices import resolve_device
from trivium.core.skipping import SkipReport, check_on_error
from trivium.core.training import MetricLogger, Trainer

__all__ = [
    "TrainingRun",
    "as_images",
    "check_config",
    "config_from_state",
    "distributed",
    "eval_mode",
    "fit",
    "lr_factor",
    "make_loader",
    "make_optimizer",
    "model_builder",
    "output_file",
    "spread_indices",
]

T = TypeVar("T")


def check_config(config: Any, positive: tuple[str, ...] = ("epochs", "batch_size")) -> None:
    """``ValueError`` for an unknown ``opt``, ``lr_scheduler`` or ``on_error``, or a field < 1.

    Example:
        >>> from types import SimpleNamespace
        >>> check_config(SimpleNamespace(opt="lamb", lr_scheduler="cosine"))
        Traceback (most recent call last):
        ...
        ValueError: opt must be 'sgd' or 'adamw', got 'lamb'
    """
    if config.opt not in ("sgd", "adamw"):
        raise ValueError(f"opt must be 'sgd' or 'adamw', got {config.opt!r}")
    if config.lr_scheduler not in ("cosine", "step", "constant"):
        raise ValueError(
            f"lr_scheduler must be 'cosine', 'step' or 'constant', got {config.lr_scheduler!r}"
        )
    for name in positive:
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(config, name)}")
    check_on_error(getattr(config, "on_error", "raise"))


def make_optimizer(config: Any, model: nn.Module) -> torch.optim.Optimizer:
    """SGD (``momentum``) or AdamW from ``config.opt``, ``lr`` and ``weight_decay``.

    Only parameters that require gradients are optimised (a detection backbone
    freezes some).

    Example:
        >>> from types import SimpleNamespace
        >>> c = SimpleNamespace(opt="adamw", lr=1e-3, weight_decay=0.0, momentum=0.9)
        >>> type(make_optimizer(c, nn.Linear(2, 2))).__name__
        'AdamW'
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if config.opt == "adamw":
        return torch.optim.AdamW(params, config.lr, weight_decay=config.weight_decay)
    return torch.optim.SGD(
        params, config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )


def make_loader(
    dataset: Any,
    batch_size: int,
    *,
    train: bool,
    workers: int,
    seed: int,
    collate_fn: Callable[[list[Any]], Any] | None = None,
    on_error: str = "raise",
) -> Any:
    """``trivium.data.DataLoader`` over ``dataset``: shuffled and even across ranks to train.

    Training batches are full; evaluation reads everything in order on one process.
    ``on_error="skip"`` drops a sample whose file cannot be read or decoded (the
    loader's ``skip_report`` names it); ``"raise"`` stops naming the file.

    Example:
        >>> loader = make_loader(list(range(10)), 4, train=True, workers=0, seed=0)
        >>> len(loader)
        2
    """
    from trivium.data import DataLoader

    return DataLoader(
        dataset,
        batch_size,
        shuffle=train,
        num_workers=workers,
        drop_last=train,
        persistent_workers=workers > 0,
        collate_fn=collate_fn,
        seed=seed,
        on_error=on_error,
        **({} if train else {"rank": 0, "world_size": 1}),
    )


def lr_factor(config: Any, step: int, steps_per_epoch: int) -> float:
    """The learning rate at iteration ``step`` as a fraction of ``config.lr``.

    Linear warm-up over ``lr_warmup_epochs`` from ``lr_warmup_decay``, then
    ``lr_scheduler``: ``"cosine"`` to zero at ``epochs``, ``"step"`` (times
    ``lr_gamma`` every ``lr_step_size`` epochs) or ``"constant"``.

    Example:
        >>> from types import SimpleNamespace
        >>> c = SimpleNamespace(epochs=2, lr_warmup_epochs=1, lr_warmup_decay=0.1,
        ...                     lr_scheduler="cosine", lr_gamma=0.1, lr_step_size=1)
        >>> [round(lr_factor(c, s, 2), 3) for s in range(4)]
        [0.1, 0.55, 1.0, 0.5]
    """
    warm = config.lr_warmup_epochs * steps_per_epoch
    if step < warm:
        return config.lr_warmup_decay + (1 - config.lr_warmup_decay) * step / warm
    if config.lr_scheduler == "constant":
        return 1.0
    if config.lr_scheduler == "step":
        return config.lr_gamma ** (step // (config.lr_step_size * steps_per_epoch))
    total = max(1, config.epochs * steps_per_epoch - warm)
    return 0.5 * (1 + math.cos(math.pi * (step - warm) / total))


def distributed() -> tuple[int, int]:
    """``(rank, world_size)``, joining the process group ``torchrun`` describes.

    gloo on CPU, NCCL on CUDA; ``(0, 1)`` outside ``torchrun``.

    Example:
        >>> distributed()
        (0, 1)
    """
    dist = torch.distributed
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def config_from_state(config_type: type[T], state: dict[str, Any]) -> T:
    """The config a checkpoint was written with; fields this version lacks are dropped.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Config:
        ...     lr: float = 0.1
        >>> config_from_state(Config, {"config": {"lr": 0.5, "gone": 1}})
        Config(lr=0.5)
    """
    known = {f.name for f in fields(config_type)}  # type: ignore[arg-type]
    return config_type(**{k: v for k, v in state["config"].items() if k in known})


def model_builder(
    name: str, prefix: str | tuple[str, ...] = "", kind: str = "model"
) -> Callable[..., nn.Module]:
    """The :mod:`trivium.vision.models` builder called ``name``, which starts with ``prefix``
    (or one of the prefixes of a tuple).

    Example:
        >>> model_builder("resnet18").__name__
        'resnet18'
        >>> model_builder("resnet18", "retinanet_", "detection model")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown detection model 'resnet18'; try one of ['retinanet_resnet18_fpn', ...]
    """
    from trivium.vision import models

    builder = getattr(models, name, None)
    if name.startswith("_") or not name.startswith(prefix) or not callable(builder):
        names = [n for n in models.__all__ if n.startswith(prefix)]
        raise ValueError(f"unknown {kind} {name!r}; try one of {names}")
    return builder


def as_images(images: Any) -> tuple[list[Tensor], bool]:
    """``images`` (one or a list) as decoded RGB uint8 tensors, and whether it was one.

    An item is a path, encoded bytes (JPEG/PNG) or a decoded ``[3, H, W]`` tensor.

    Example:
        >>> decoded, single = as_images(torch.zeros(3, 4, 5, dtype=torch.uint8))
        >>> decoded[0].shape, single
        (torch.Size([3, 4, 5]), True)
    """
    from trivium.vision.io import ImageReadMode, decode_image

    single = not isinstance(images, list | tuple)
    items = [images] if single else list(images)
    decoded = [
        x if isinstance(x, Tensor) and x.dim() == 3 else decode_image(x, ImageReadMode.RGB)
        for x in items
    ]
    return decoded, single


def spread_indices(length: int, count: int) -> list[int]:
    """``count`` indices (at most ``length``) spread evenly over ``range(length)``, ends included.

    Example:
        >>> spread_indices(10, 4), spread_indices(2, 5)
        ([0, 3, 6, 9], [0, 1])
    """
    picks = torch.linspace(0, length - 1, min(count, length)).round().long()
    return picks.tolist()


def output_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path``, its folder created.

    Example:
        >>> import tempfile
        >>> output_file(Path(tempfile.mkdtemp()) / "a" / "b.png").parent.is_dir()
        True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode inside the block, in its former mode after it.

    Example:
        >>> model = nn.Dropout()
        >>> with eval_mode(model):
        ...     model.training
        False
        >>> model.training
        True
    """
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


class TrainingRun:
    """One training run: its trainer, loader, epochs and checkpoints.

    A pipeline subclasses it with what differs: the labels of its data
    (:meth:`read_labels`, checkpointed under :attr:`labels_key`), the training
    loader, the model, the loss of a batch, the validation metrics and the final
    summary. :func:`fit` drives it; each step is the :class:`Trainer`'s. Checkpoints
    hold the trainer's state (weights, optimizer, schedule, scaler, RNG states),
    the loader's position and the epoch, so a resumed run is an uninterrupted one.

    Example:
        >>> TrainingRun.labels_key
        'labels'
    """

    labels_key = "labels"
    checkpoint = "checkpoint.pt"
    speed_digits = 0  # images/s in the progress bar

    def __init__(self, config: Any, show_progress: bool) -> None:
        self.config, self.show_progress = config, show_progress
        self.rank, self.world = distributed()
        self.device = resolve_device(config.device)
        if self.device.type == "cuda" and self.world > 1:
            self.device = torch.device("cuda", self.rank % torch.cuda.device_count())
        self.dir = Path(config.out_dir)
        self.labels = self.read_labels()
        seed_everything(config.seed)  # the model's initial weights
        self.loader = self.train_loader()
        model = self.new_model().to(self.device)
        if config.channels_last:  # detection: the batched images follow the weights' layout
            model = model.to(memory_format=torch.channels_last)
        optimizer = make_optimizer(config, model)
        steps = len(self.loader)
        self.trainer = Trainer(
            model,
            optimizer,
            torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(config, s, steps)),
            device=self.device,
            amp=config.amp,
            grad_clip_norm=getattr(config, "clip_grad_norm", 0.0) or None,
            out_dir=self.dir if self.rank == 0 else None,
            progress=False,
            distributed=self.world > 1,
        )
        self.trainer.forward = self.wrap(self.trainer.forward)
        self.model = self.trainer.model
        self.val_loader: Any = None
        self.epoch, self.train_seconds, self.images = 0, 0.0, 0

    @property
    def step(self) -> int:
        """Optimisation steps done."""
        return self.trainer.step

    @property
    def logger(self) -> MetricLogger:
        """The run's metric log (``metrics.csv`` / ``.json`` / ``.png`` in the run folder)."""
        return self.trainer.logger

    # ---- what a pipeline defines
    def read_labels(self) -> Any:
        """The names of the data's classes, checkpointed and checked on resume."""
        raise NotImplementedError

    def train_loader(self) -> Any:
        """The training loader (built after seeding, before the model)."""
        raise NotImplementedError

    def new_model(self) -> nn.Module:
        """The model, with freshly seeded weights."""
        raise NotImplementedError

    def new_val_loader(self) -> Any:
        """The validation loader."""
        raise NotImplementedError

    def loss(self, model: nn.Module, batch: tuple[Any, Any]) -> Any:
        """The loss of ``batch`` = (inputs, targets), on the device: a tensor, or
        ``(loss, {name: value})`` with more values to log (the trainer's ``loss_fn``)."""
        raise NotImplementedError

    def validate(self) -> dict[str, float] | None:
        """The validation metrics of this epoch's end, or None to skip it."""
        raise NotImplementedError

    def results(self) -> dict[str, Any]:
        """The summary's figures, after writing ``predictions.png`` into the run folder."""
        raise NotImplementedError

    def wrap(self, model: nn.Module) -> nn.Module:
        """What :meth:`loss` gets: the model (in DDP with more than one process), as is."""
        return model

    # ---- checkpoints
    def state_dict(self, epoch_done: bool) -> dict[str, Any]:
        """Everything a resume needs, as one picklable dict."""
        return {
            **self.trainer.state_dict(),
            "config": asdict(self.config),
            self.labels_key: self.labels,
            "loader": self.loader.state_dict(),
            "epoch": self.epoch,
            "epoch_done": epoch_done,
            "train_seconds": self.train_seconds,
            "images": self.images,
        }

    def save(self, epoch_done: bool = False) -> None:
        """Write the checkpoint (rank 0)."""
        if self.rank == 0:  # the log first: a resume truncates it to the checkpoint's step
            self.logger.save()
            save_checkpoint(self.dir / self.checkpoint, self.state_dict(epoch_done))

    def resume(self) -> None:
        """Continue from the run folder's checkpoint, if there is one."""
        path = self.dir / self.checkpoint
        if not path.is_file():
            return
        state = load_checkpoint(path)
        if state[self.labels_key] != self.labels:
            raise ValueError(f"{path}: the checkpoint's {self.labels_key} differ from the data's")
        self.loader.load_state_dict(state["loader"])
        self.epoch = state["epoch"] + int(state["epoch_done"])
        self.images, self.train_seconds = state["images"], state["train_seconds"]
        self.trainer.load_state_dict(state)

    # ---- the loop's parts
    def epoch_batches(self) -> Any:
        """This epoch's (remaining) batches, behind a progress bar."""
        self.loader.set_epoch(self.epoch)  # keeps a resume point of this epoch
        total = len(self.loader)
        state = self.loader.state_dict()
        done = state["samples_consumed"] // (self.config.batch_size * self.world)
        return progress(
            self.loader,
            total=total,
            initial=done if state["epoch"] == self.epoch else 0,
            desc=f"epoch {self.epoch + 1}/{self.config.epochs}",
            unit="batch",
            disable=None if self.show_progress and self.rank == 0 else True,
        )

    def validation_loader(self) -> Any:
        """The validation loader, built once: its workers persist across epochs."""
        if self.val_loader is None:
            self.val_loader = self.new_val_loader()
        return self.val_loader

    def images_per_s(self) -> float:
        """Training images per second so far."""
        return self.images / max(self.train_seconds, 1e-9)

    def data_report(self) -> SkipReport:
        """The files the training and validation loaders skipped and recovered so far."""
        report = SkipReport()
        for loader in (self.loader, self.val_loader):
            found = getattr(loader, "skip_report", None)
            if isinstance(found, SkipReport):
                report.update(found)
        return report

    def end_of_epoch(self) -> None:
        """Validate (rank 0) when :meth:`validate` does, then checkpoint the finished epoch.

        The files skipped or recovered so far (``on_error``) are printed by name and
        their counts logged as ``data_skipped_files`` / ``data_recovered_files``.
        """
        if self.rank == 0:
            metrics = self.validate()
            if metrics is not None:
                self.logger.log(self.step, **{f"val_{k}": v for k, v in metrics.items()})
                self.logger.log(self.step, train_images_per_s=self.images_per_s())
            report = self.data_report()
            if report:
                print(f"epoch {self.epoch + 1}: {report.summary()}", flush=True)
            self.logger.log(
                self.step,
                data_skipped_files=len(report.skipped),
                data_recovered_files=len(report.recovered),
            )
        self.save(epoch_done=True)
        if self.world > 1:
            torch.distributed.barrier()

    def finish(self) -> dict[str, Any]:
        """Write the curves, the predictions and ``summary.json``; returns the summary."""
        summary: dict[str, Any] = {"run_dir": str(self.dir), "steps": self.step}
        if self.rank != 0:
            return summary
        self.logger.save()
        self.logger.plot(self.dir / "metrics.png")
        summary.update(
            self.results(),
            train_images_per_s=self.images_per_s(),
            train_seconds=self.train_seconds,
            data=self.data_report().as_dict(),
            files={
                name: str(self.dir / name)
                for name in (self.checkpoint, "metrics.csv", "metrics.png", "predictions.png")
            },
        )
        (self.dir / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
        return summary


def fit(
    run: TrainingRun, *, resume: bool = False, stop_after_steps: int | None = None
) -> dict[str, Any]:
    """Train ``run`` to its last epoch (or to ``stop_after_steps``); returns the summary.

    ``resume=True`` continues from ``out_dir/checkpoint.pt`` where it stopped (mid-epoch
    too). Checkpoints every ``config.checkpoint_every`` steps, at each epoch's end,
    and at ``stop_after_steps``, where it returns ``{"stopped_at_step": step}`` (an
    interrupted run, for tests and time-boxed jobs).

    Example:
        >>> fit  # doctest: +ELLIPSIS
        <function fit at ...>
    """
    if resume:
        run.resume()
    every = run.config.checkpoint_every
    while run.epoch < run.config.epochs:
        start = time.perf_counter()
        batches = run.epoch_batches()
        for inputs, targets in batches:
            values = run.trainer.train_step(run.loss, (inputs, targets))
            run.images += len(inputs) * run.world
            seconds = run.train_seconds + time.perf_counter() - start
            run.logger.log(run.step, **values, lr=run.trainer.scheduler.get_last_lr()[0])
            if hasattr(batches, "set_postfix"):
                speed = run.images / max(seconds, 1e-9)
                batches.set_postfix(
                    loss=f"{values['loss']:.3f}", img_s=f"{speed:.{run.speed_digits}f}"
                )
            if (every and run.step % every == 0) or run.step == stop_after_steps:
                run.train_seconds = seconds
                start = time.perf_counter()
                run.save()
            if run.step == stop_after_steps:
                return {"stopped_at_step": run.step}
        run.train_seconds += time.perf_counter() - start
        run.end_of_epoch()
        run.epoch += 1
    return run.finish()
