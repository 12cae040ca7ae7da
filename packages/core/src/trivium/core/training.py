"""A small training helper: device, AMP, DDP, gradient clipping, checkpoints with exact resume.

:class:`Trainer` runs optimisation steps (:meth:`Trainer.train_step`), either
driven by the caller's loop (the epoch loops of the vision pipelines, over a
resumable loader) or by :meth:`Trainer.fit` over batches that a function of the
step number provides (so that a resumed run sees exactly the batches the
uninterrupted run would have). It saves checkpoints holding the model, optimizer,
scheduler, AMP scaler, step and every RNG state, and logs metrics through
:class:`MetricLogger` (CSV, JSON and a PNG plot). It is deliberately not a
framework: the loss function, data and evaluation stay in the caller's code.

Example:
    >>> import tempfile, torch
    >>> model = torch.nn.Linear(2, 1)
    >>> trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), device="cpu",
    ...                   out_dir=tempfile.mkdtemp(), progress=False)
    >>> x, y = torch.randn(8, 2), torch.randn(8, 1)
    >>> def loss_fn(model, batch):
    ...     return torch.nn.functional.mse_loss(model(batch[0]), batch[1])
    >>> _ = trainer.fit(lambda step: (x, y), num_steps=5, loss_fn=loss_fn)
    >>> trainer.step, trainer.logger.last("loss") < trainer.logger.history("loss")[0][1]
    (5, True)
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import json
import os
import random
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from trivium.core.devices import move_to, resolve_device
from trivium.core.errors import DecodeError
from trivium.core.progress import progress as progress_bar
from trivium.core.trees import map_tensors

__all__ = [
    "MetricLogger",
    "Trainer",
    "autocast",
    "get_rng_state",
    "load_checkpoint",
    "save_checkpoint",
    "set_rng_state",
]

LossOutput = Tensor | tuple[Tensor, Mapping[str, float]]
LossFn = Callable[[nn.Module, Any], LossOutput]

CHECKPOINT_NAME = "checkpoint.pt"


# ---------------------------------------------------------------------------- RNG state


def get_rng_state() -> dict[str, Any]:
    """Python, NumPy, torch CPU and CUDA generator states, as plain data ``torch.save`` keeps.

    Example:
        >>> import torch
        >>> state = get_rng_state()
        >>> a = torch.rand(1)
        >>> set_rng_state(state)
        >>> bool(torch.equal(a, torch.rand(1)))
        True
    """
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore states from :func:`get_rng_state` (CUDA ones only where CUDA is present).

    Example:
        >>> set_rng_state(get_rng_state())
    """
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------------------- checkpoints


def save_checkpoint(path: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
    """Write ``state`` with ``torch.save`` atomically (a temporary file, then a rename).

    A crash while saving leaves the previous checkpoint intact.

    Example:
        >>> import pathlib, tempfile
        >>> path = save_checkpoint(pathlib.Path(tempfile.mkdtemp()) / "c.pt", {"step": 3})
        >>> load_checkpoint(path)["step"]
        3
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(dict(state), tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(
    path: str | os.PathLike[str], map_location: str | torch.device | None = "cpu"
) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (tensors and plain data only).

    Loads with ``weights_only=True``, so a checkpoint cannot run code. A missing
    file raises ``FileNotFoundError``; anything unreadable a
    :class:`~trivium.core.errors.DecodeError` naming the file.

    Example:
        >>> import pathlib, tempfile
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "bad.pt"
        >>> _ = bad.write_bytes(b"not a checkpoint")
        >>> try:
        ...     load_checkpoint(bad)
        ... except ValueError as e:
        ...     print(type(e).__name__)
        DecodeError
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises many types for damaged or foreign files
        raise DecodeError(f"not a readable checkpoint ({type(e).__name__}: {e})", path=path) from e
    if not isinstance(state, dict):
        raise DecodeError(f"checkpoint holds a {type(state).__name__}, not a dict", path=path)
    return state


# ---------------------------------------------------------------------------- metric logs


class MetricLogger:
    """Scalar metrics by step, kept in ``out_dir/metrics.{csv,json}`` with a PNG plot.

    The CSV is long-format (``step,name,value``), so training and evaluation
    metrics logged at different steps share one file. Opening a logger on a
    folder that has ``metrics.json`` continues it; :meth:`truncate` drops what was
    logged after a step (used when a run resumes from an earlier checkpoint).

    Example:
        >>> import tempfile
        >>> logger = MetricLogger(tempfile.mkdtemp())
        >>> logger.log(1, loss=2.0)
        >>> logger.log(2, loss=1.0, cer=0.5)
        >>> logger.history("loss"), logger.last("cer")
        ([(1, 2.0), (2, 1.0)], 0.5)
        >>> logger.save().name
        'metrics.json'
    """

    def __init__(self, out_dir: str | os.PathLike[str] | None = None) -> None:
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.records: list[tuple[int, str, float]] = []
        if self.out_dir is not None and self.json_path.is_file():
            with open(self.json_path, encoding="utf-8") as f:
                data = json.load(f)
            self.records = [(int(s), str(n), float(v)) for s, n, v in data["records"]]

    @property
    def json_path(self) -> Path:
        """``out_dir/metrics.json``."""
        return self._path("metrics.json")

    def _path(self, name: str) -> Path:
        if self.out_dir is None:
            raise ValueError("this MetricLogger has no out_dir to write to")
        return self.out_dir / name

    def log(self, step: int, **metrics: float) -> None:
        """Record ``metrics`` (name=value) at ``step``."""
        for name, value in metrics.items():
            self.records.append((int(step), name, float(value)))

    def truncate(self, step: int) -> None:
        """Forget every record after ``step``."""
        self.records = [r for r in self.records if r[0] <= step]

    def names(self) -> list[str]:
        """Metric names in the order first logged."""
        return list(dict.fromkeys(name for _, name, _ in self.records))

    def history(self, name: str) -> list[tuple[int, float]]:
        """``[(step, value), ...]`` of one metric."""
        return [(s, v) for s, n, v in self.records if n == name]

    def last(self, name: str) -> float:
        """The latest value of ``name`` (``KeyError`` if it was never logged)."""
        values = self.history(name)
        if not values:
            raise KeyError(f"metric {name!r} was never logged")
        return values[-1][1]

    def save(self) -> Path:
        """Write ``metrics.json`` and ``metrics.csv``; returns the JSON path."""
        self._path("").mkdir(parents=True, exist_ok=True)
        with open(self._path("metrics.csv"), "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["step", "name", "value"])
            writer.writerows(self.records)
        tmp = self._path("metrics.json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"records": self.records}, f)
        os.replace(tmp, self.json_path)
        return self.json_path

    def plot(self, path: str | os.PathLike[str] | None = None) -> Path:
        """A PNG with one panel per metric; returns its path.

        Needs matplotlib (``pip install trivium-core[plot]``). The figure is drawn on
        its own Agg canvas: pyplot and the process's matplotlib backend are not touched.

        Example:
            >>> import tempfile
            >>> logger = MetricLogger(tempfile.mkdtemp())
            >>> logger.log(0, loss=1.0); logger.log(1, loss=0.5)
            >>> logger.plot().name
            'metrics.png'
        """
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
        except ImportError as e:
            raise ImportError(
                "MetricLogger.plot needs matplotlib: pip install 'trivium-core[plot]'"
            ) from e

        path = Path(path) if path is not None else self._path("metrics.png")
        names = self.names() or ["(no metrics)"]
        fig = Figure(figsize=(6, 2.2 * len(names)))
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(names), 1, squeeze=False)
        for ax, name in zip(axes[:, 0], names, strict=True):
            points = self.history(name)
            if points:
                ax.plot(*zip(*points, strict=True), marker="." if len(points) < 50 else None)
            ax.set_ylabel(name)
            ax.grid(True, alpha=0.3)
        axes[-1, 0].set_xlabel("step")
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=80)
        return path


# ---------------------------------------------------------------------------- trainer


def autocast(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager:
    """Mixed precision when ``enabled``: float16 on CUDA, bfloat16 elsewhere; else a no-op.

    Example:
        >>> with autocast(torch.device("cpu"), True):
        ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
        torch.bfloat16
    """
    if not enabled:
        return contextlib.nullcontext()
    dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    return torch.autocast(device.type, dtype=dtype)


class Trainer:
    """Optimisation steps with AMP, gradient clipping, checkpoints and metric logs.

    Args:
        model: the module to train.
        optimizer: the optimizer of its parameters.
        scheduler: a learning-rate scheduler, or ``None``; its ``step()`` runs after
            every optimizer step.
        device: where the model and batches go (``"auto"``: cuda > mps > cpu).
        amp: mixed precision (float16 with a gradient scaler on CUDA, bfloat16 elsewhere).
        grad_clip_norm: clip the global gradient norm to this (``None``: no clipping).
        out_dir: where ``checkpoint.pt`` and the metric files go (``None``: nowhere).
        checkpoint_every: save every this many steps (0: only at the end of :meth:`fit`).
        log_every: log the training loss every this many steps.
        extra: plain data stored in each checkpoint (e.g. the run's configuration).
        progress: show a progress bar (``None``: when stderr is a terminal).
        distributed: the loss function gets the model wrapped in
            ``DistributedDataParallel`` (``torch.distributed`` must be initialised; on
            CUDA ``device`` is this process's GPU). Checkpoints hold the bare model's weights.

    ``trainer.forward`` is what ``loss_fn`` gets: the model, or its DDP wrapper; set it
    to a wrapper of your own (``torch.compile(trainer.forward)``) to train through that.

    Exact resume: if batches come from ``batch_fn(step)`` and the loss depends only
    on the batch, the model and the RNG states, then :meth:`resume` followed by
    :meth:`fit` ends with the same weights as an uninterrupted run.

    Example:
        >>> import torch
        >>> model = torch.nn.Linear(1, 1)
        >>> opt = torch.optim.Adam(model.parameters())
        >>> trainer = Trainer(model, opt, device="cpu", grad_clip_norm=1.0, progress=False)
        >>> trainer.train_step(lambda m, b: m(b).pow(2).mean(), torch.ones(4, 1))["loss"] >= 0
        True
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler: Any | None = None,
        *,
        device: str | torch.device = "auto",
        amp: bool = False,
        grad_clip_norm: float | None = None,
        out_dir: str | os.PathLike[str] | None = None,
        checkpoint_every: int = 0,
        log_every: int = 1,
        extra: Mapping[str, Any] | None = None,
        progress: bool | None = None,
        distributed: bool = False,
    ) -> None:
        if checkpoint_every < 0 or log_every < 1:
            raise ValueError(
                f"need checkpoint_every >= 0 and log_every >= 1, got {checkpoint_every}, "
                f"{log_every}"
            )
        if grad_clip_norm is not None and not grad_clip_norm > 0:
            raise ValueError(f"grad_clip_norm must be positive or None, got {grad_clip_norm}")
        self.device = resolve_device(device)
        self.model = model.to(self.device)
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.forward = self.model
        if distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.forward = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.amp = amp
        self.scaler = torch.amp.GradScaler(
            self.device.type, enabled=amp and self.device.type == "cuda"
        )
        self.grad_clip_norm = grad_clip_norm
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.checkpoint_every = checkpoint_every
        self.log_every = log_every
        self.extra = dict(extra or {})
        self.show_progress = progress
        self.logger = MetricLogger()  # a fresh run; resume() reads the run's earlier metrics
        self.logger.out_dir = self.out_dir
        self.step = 0

    @property
    def checkpoint_path(self) -> Path:
        """``out_dir/checkpoint.pt``."""
        if self.out_dir is None:
            raise ValueError("this Trainer has no out_dir for checkpoints")
        return self.out_dir / CHECKPOINT_NAME

    def autocast(self) -> contextlib.AbstractContextManager:
        """The autocast context of this trainer (a no-op without ``amp``).

        Example:
            >>> import torch
            >>> model = torch.nn.Linear(1, 1)
            >>> t = Trainer(model, torch.optim.SGD(model.parameters(), 0.1), device="cpu")
            >>> with t.autocast():
            ...     pass
        """
        return autocast(self.device, self.amp)

    def train_step(self, loss_fn: LossFn, batch: Any) -> dict[str, float]:
        """One optimisation step on ``batch``; returns the logged scalars (``loss``, ...).

        ``loss_fn(model, batch)`` returns the loss, or ``(loss, {name: value})``; the
        model it gets is the DDP wrapper when the trainer is ``distributed``, and
        ``batch`` is on the trainer's device. A non-finite loss raises
        ``FloatingPointError`` (naming the values) before the weights change.
        """
        self.model.train()
        batch = move_to(batch, self.device)
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            out = loss_fn(self.forward, batch)
        loss, scalars = out if isinstance(out, tuple) else (out, {})
        metrics = {"loss": float(loss.detach()), **{k: _scalar(v) for k, v in scalars.items()}}
        if not all(map(np.isfinite, metrics.values())):
            raise FloatingPointError(f"non-finite loss at step {self.step + 1}: {metrics}")
        self.scaler.scale(loss.float()).backward()
        if self.grad_clip_norm is not None:
            self.scaler.unscale_(self.optimizer)
            norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip_norm)
            metrics["grad_norm"] = float(norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        if self.scheduler is not None:
            self.scheduler.step()
        self.step += 1
        return metrics

    def fit(
        self,
        batch_fn: Callable[[int], Any],
        num_steps: int,
        loss_fn: LossFn,
        eval_fn: Callable[[nn.Module], Mapping[str, float]] | None = None,
        eval_every: int = 0,
    ) -> MetricLogger:
        """Train from the current step up to ``num_steps``; returns the metric logger.

        ``batch_fn(step)`` gives the batch for 0-based ``step``. ``eval_fn(model)``
        (model in eval mode, no grad) runs every ``eval_every`` steps and at the end;
        its metrics are logged. A checkpoint is saved every ``checkpoint_every`` steps
        and at the end when ``out_dir`` is set, with the metric files and plot.
        """
        total = num_steps - self.step
        with progress_bar(total=max(total, 0), desc="train", disable=self._bar_disabled()) as bar:
            for step in self._steps(num_steps):
                metrics = self.train_step(loss_fn, batch_fn(step))
                if self.step % self.log_every == 0 or self.step == num_steps:
                    self.logger.log(self.step, **metrics)
                bar.set_postfix(loss=f"{metrics['loss']:.4g}", refresh=False)
                bar.update(1)
                if eval_fn is not None and eval_every and self.step % eval_every == 0:
                    self.evaluate(eval_fn)
                if self.checkpoint_every and self.step % self.checkpoint_every == 0:
                    self.save()
        if eval_fn is not None and not (eval_every and self.step % eval_every == 0):
            self.evaluate(eval_fn)
        if self.out_dir is not None:
            self.save()
        return self.logger

    def _steps(self, num_steps: int) -> Iterator[int]:
        while self.step < num_steps:
            yield self.step

    def _bar_disabled(self) -> bool | None:
        return None if self.show_progress is None else not self.show_progress

    def evaluate(self, eval_fn: Callable[[nn.Module], Mapping[str, float]]) -> dict[str, float]:
        """Run ``eval_fn(model)`` in eval mode without gradients and log its metrics."""
        self.model.eval()
        with torch.no_grad(), self.autocast():
            metrics = {k: float(v) for k, v in eval_fn(self.model).items()}
        self.logger.log(self.step, **metrics)
        return metrics

    def state_dict(self) -> dict[str, Any]:
        """Everything a resume needs: weights, optimizer, scheduler, scaler, step, RNG states."""
        return {
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": get_rng_state(),
            "extra": self.extra,
        }

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Save a checkpoint (default ``out_dir/checkpoint.pt``) and the metric files and plot.

        The plot (``metrics.png``) is written when matplotlib is installed.
        """
        path = save_checkpoint(path or self.checkpoint_path, self.state_dict())
        if self.out_dir is not None:
            self.logger.save()
            if importlib.util.find_spec("matplotlib") is not None:
                self.logger.plot()
        return path

    def resume(self, path: str | os.PathLike[str] | None = None) -> int:
        """Load a checkpoint (default ``out_dir/checkpoint.pt``); returns the step reached.

        Restores the weights, optimizer, scheduler, scaler and RNG states, and drops
        metrics logged after that step.
        """
        path = Path(path or self.checkpoint_path)
        state = load_checkpoint(path, map_location=self.device)
        missing = {"step", "model", "optimizer", "rng"} - state.keys()
        if missing:
            raise DecodeError(f"checkpoint lacks {sorted(missing)}", path=path)
        self.load_state_dict(state)
        return self.step

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` gave (extra keys are ignored).

        Restores the weights, optimizer, scheduler, scaler, RNG states and step, reads
        the metrics ``out_dir`` holds and drops those logged after that step.

        Example:
            >>> import torch
            >>> model = torch.nn.Linear(1, 1)
            >>> t = Trainer(model, torch.optim.SGD(model.parameters(), 0.1), device="cpu")
            >>> _ = t.train_step(lambda m, b: m(b).pow(2).mean(), torch.ones(2, 1))
            >>> state = t.state_dict()
            >>> _ = t.train_step(lambda m, b: m(b).pow(2).mean(), torch.ones(2, 1))
            >>> t.load_state_dict(state)
            >>> t.step
            1
        """
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        # RNG states must be CPU byte tensors even when the checkpoint was mapped to CUDA.
        set_rng_state(map_tensors(Tensor.cpu, state["rng"]))
        self.step = int(state["step"])
        if self.out_dir is not None:
            self.logger = MetricLogger(self.out_dir)
        self.logger.truncate(self.step)


def _scalar(value: Any) -> float:
    """A logged value as a float (a tensor that requires grad is detached first)."""
    return float(value.detach() if isinstance(value, torch.Tensor) else value)
