"""Image classification: train a ResNet on an ImageFolder tree or its Parquet shards.

:func:`train` follows torchvision's classification reference recipe (SGD or AdamW,
cosine schedule with warm-up, label smoothing, MixUp / CutMix, auto-augment, AMP,
channels-last, ``torch.compile``, DDP under ``torchrun``) with Trivium's input
pipeline: the fused decode-and-crop in ``trivium.data.DataLoader`` workers.
Checkpoints hold the loader's position, so ``resume=True`` continues mid-epoch
with no sample lost or repeated, and the augmentations of every sample are those
of an uninterrupted run. :func:`evaluate` reports top-1 / top-5 on a split and
:func:`from_checkpoint` gives a :class:`ClassificationPipeline` that predicts
labels for images.

A run folder holds ``checkpoint.pt``, ``metrics.{csv,json}``, ``metrics.png`` (the
curves), ``predictions.png`` (held-out images with their predicted labels) and
``summary.json``.

Example:
    >>> import torch
    >>> from trivium.vision.models import resnet18
    >>> pipeline = ClassificationPipeline(resnet18(num_classes=2), ["cat", "dog"], 32, 36)
    >>> pipeline.predict(torch.zeros(3, 40, 40, dtype=torch.uint8))["label"] in ("cat", "dog")
    True
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.core import load_checkpoint, progress, save_checkpoint, seed_everything
from trivium.core.devices import resolve_device
from trivium.core.seeding import derive_seed, sample_scope
from trivium.core.training import MetricLogger, get_rng_state, set_rng_state
from trivium.vision.io import ImageReadMode, decode_image
from trivium.vision.pipelines.classification_data import (
    TrainBatch,
    eval_transform,
    find_classes,
    make_loader,
    open_split,
)
from trivium.vision.pipelines.common import autocast, distributed, lr_factor, make_optimizer
from trivium.vision.transforms import CenterCrop, CutMix, MixUp, RandomChoice, Resize

__all__ = [
    "ClassificationConfig",
    "ClassificationPipeline",
    "evaluate",
    "from_checkpoint",
    "train",
]

CHECKPOINT = "checkpoint.pt"


@dataclass
class ClassificationConfig:
    """Settings of a run, named after the flags of torchvision's classification reference.

    ``data_path`` holds ``train/`` and ``val/`` (ImageFolder trees or Parquet shards);
    ``batch_size`` is per process; training crops cover ``train_crop_scale_min`` to
    all of an image's area; ``lr_scheduler`` is ``"cosine"``, ``"step"`` or
    ``"constant"``, applied per iteration after ``lr_warmup_epochs`` of linear
    warm-up from ``lr * lr_warmup_decay``; ``checkpoint_every`` saves every so many
    steps besides each epoch's end (0: only there).

    Example:
        >>> ClassificationConfig(data_path="data").model
        'resnet18'
    """

    data_path: str = "data/images"
    out_dir: str = "runs/classification"
    model: str = "resnet18"
    epochs: int = 10
    batch_size: int = 64
    opt: str = "sgd"
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    lr_scheduler: str = "cosine"
    lr_warmup_epochs: int = 0
    lr_warmup_decay: float = 0.01
    lr_step_size: int = 30
    lr_gamma: float = 0.1
    label_smoothing: float = 0.0
    mixup_alpha: float = 0.0
    cutmix_alpha: float = 0.0
    auto_augment: str | None = None
    train_crop_size: int = 224
    train_crop_scale_min: float = 0.08
    val_resize_size: int = 256
    val_crop_size: int = 224
    amp: bool = False
    channels_last: bool = False
    compile: bool = False
    workers: int = 2
    seed: int = 0
    checkpoint_every: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        if self.opt not in ("sgd", "adamw"):
            raise ValueError(f"opt must be 'sgd' or 'adamw', got {self.opt!r}")
        if self.lr_scheduler not in ("cosine", "step", "constant"):
            raise ValueError(
                f"lr_scheduler must be 'cosine', 'step' or 'constant', got {self.lr_scheduler!r}"
            )
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


# ---------------------------------------------------------------------------- pieces


def build_model(name: str, num_classes: int) -> nn.Module:
    """A model of :mod:`trivium.vision.models` by name (``"resnet18"``, ``"resnet50"``, ...).

    Example:
        >>> build_model("resnet18", 3).fc.out_features
        3
    """
    from trivium.vision import models

    builder = getattr(models, name, None)
    if name.startswith("_") or not callable(builder):
        raise ValueError(f"unknown model {name!r}; try one of {models.__all__}")
    return builder(num_classes=num_classes)


def _mixer(config: ClassificationConfig, num_classes: int) -> nn.Module | None:
    """torchvision's reference: MixUp and/or CutMix, one of them picked per batch."""
    mixes: list[nn.Module] = []
    if config.mixup_alpha > 0:
        mixes.append(MixUp(alpha=config.mixup_alpha, num_classes=num_classes))
    if config.cutmix_alpha > 0:
        mixes.append(CutMix(alpha=config.cutmix_alpha, num_classes=num_classes))
    return RandomChoice(mixes) if mixes else None


class _Run:
    """What one training run holds; :func:`train` drives it."""

    def __init__(self, config: ClassificationConfig, show_progress: bool) -> None:
        self.config, self.show_progress = config, show_progress
        self.rank, self.world = distributed()
        self.device = resolve_device(config.device)
        if self.device.type == "cuda" and self.world > 1:
            self.device = torch.device("cuda", self.rank % torch.cuda.device_count())
        self.dir = Path(config.out_dir)
        self.classes = find_classes(config.data_path, "train")
        seed_everything(config.seed)  # the model's initial weights
        batches = TrainBatch(
            config.train_crop_size,
            config.auto_augment,
            generator=torch.Generator().manual_seed(config.seed),
            scale_min=config.train_crop_scale_min,
        )
        self.loader = make_loader(
            open_split(config.data_path, "train"),
            config.batch_size,
            train=True,
            workers=config.workers,
            seed=config.seed,
            collate_fn=batches,
        )
        self.model = build_model(config.model, len(self.classes)).to(self.device)
        if config.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.optimizer = make_optimizer(config, self.model)
        steps = len(self.loader)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lr_factor(config, s, steps)
        )
        amp16 = config.amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=amp16)
        self.mix = _mixer(config, len(self.classes))
        self.val_loader: Any = None
        self.epoch, self.step, self.train_seconds, self.images = 0, 0, 0.0, 0
        self.logger = MetricLogger(self.dir if self.rank == 0 else None)
        self.forward = self._wrap()

    def _wrap(self) -> nn.Module:
        model: nn.Module = self.model
        if self.world > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        return torch.compile(model) if self.config.compile else model

    # ---- checkpoints
    def state_dict(self, epoch_done: bool) -> dict[str, Any]:
        return {
            "config": asdict(self.config),
            "classes": self.classes,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "loader": self.loader.state_dict(),
            "epoch": self.epoch,
            "epoch_done": epoch_done,
            "step": self.step,
            "train_seconds": self.train_seconds,
            "images": self.images,
            "rng": get_rng_state(),
        }

    def save(self, epoch_done: bool = False) -> None:
        if self.rank == 0:  # the log first: a resume truncates it to the checkpoint's step
            self.logger.save()
            save_checkpoint(self.dir / CHECKPOINT, self.state_dict(epoch_done))

    def resume(self) -> None:
        path = self.dir / CHECKPOINT
        if not path.is_file():
            return
        state = load_checkpoint(path)
        if state["classes"] != self.classes:
            raise ValueError(f"{path}: the checkpoint's classes differ from the data's")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])
        self.loader.load_state_dict(state["loader"])
        self.epoch = state["epoch"] + int(state["epoch_done"])
        self.step, self.images = state["step"], state["images"]
        self.train_seconds = state["train_seconds"]
        set_rng_state(state["rng"])
        self.logger.truncate(self.step)

    # ---- steps
    def train_step(self, images: Tensor, labels: Tensor) -> float:
        config = self.config
        images = images.to(self.device, non_blocking=True)
        labels = labels.to(self.device, non_blocking=True)
        if config.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        if self.mix is not None:
            with sample_scope(derive_seed(config.seed, self.step)):  # resumable draws
                images, labels = self.mix(images, labels)
        with autocast(self.device, config.amp):
            logits = self.forward(images)
            loss = F.cross_entropy(logits.float(), labels, label_smoothing=config.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        return float(loss.detach())

    def epoch_batches(self) -> Any:
        """This epoch's (remaining) batches, behind a progress bar."""
        self.loader.set_epoch(self.epoch)  # keeps a resume point of this epoch
        total = len(self.loader)
        return progress(
            self.loader,
            total=total,
            initial=total - self._left(),
            desc=f"epoch {self.epoch + 1}/{self.config.epochs}",
            unit="batch",
            disable=None if self.show_progress and self.rank == 0 else True,
        )

    def _left(self) -> int:
        state = self.loader.state_dict()
        per_step = self.config.batch_size * self.world
        if state["epoch"] != self.epoch:
            return len(self.loader)
        return len(self.loader) - state["samples_consumed"] // per_step


def _progress_postfix(bar: Any, loss: float, images_per_s: float) -> None:
    if hasattr(bar, "set_postfix"):
        bar.set_postfix(loss=f"{loss:.3f}", img_s=f"{images_per_s:.0f}")


# ---------------------------------------------------------------------------- public API


def train(
    config: ClassificationConfig,
    *,
    resume: bool = False,
    show_progress: bool = True,
    stop_after_steps: int | None = None,
) -> dict[str, Any]:
    """Train, evaluate every epoch, write the run folder; returns the summary.

    ``resume=True`` continues from ``out_dir/checkpoint.pt`` where it stopped (mid-epoch
    too). ``stop_after_steps`` saves a checkpoint and returns after that many steps
    in total (an interrupted run, for tests and time-boxed jobs).

    Example:
        >>> ClassificationConfig(epochs=0)
        Traceback (most recent call last):
        ...
        ValueError: epochs must be >= 1, got 0
    """
    run = _Run(config, show_progress)
    if resume:
        run.resume()
    every = config.checkpoint_every
    while run.epoch < config.epochs:
        start = time.perf_counter()
        batches = run.epoch_batches()
        for images, labels in batches:
            loss = run.train_step(images, labels)
            run.step += 1
            run.images += len(labels) * run.world
            seconds = run.train_seconds + time.perf_counter() - start
            run.logger.log(run.step, loss=loss, lr=run.scheduler.get_last_lr()[0])
            _progress_postfix(batches, loss, run.images / max(seconds, 1e-9))
            if (every and run.step % every == 0) or run.step == stop_after_steps:
                run.train_seconds = seconds
                start = time.perf_counter()
                run.save()
            if run.step == stop_after_steps:
                return {"stopped_at_step": run.step}
        run.train_seconds += time.perf_counter() - start
        _end_of_epoch(run)
        run.epoch += 1
    return _finish(run)


def _end_of_epoch(run: _Run) -> None:
    if run.rank == 0:
        if run.val_loader is None:  # built once: its workers persist across epochs
            run.val_loader = _eval_loader(run.config, "val")
        metrics = _evaluate_model(run.model, run.val_loader, run.config, run.device, run.classes)
        run.logger.log(run.step, **{f"val_{k}": v for k, v in metrics.items() if k != "images"})
        run.logger.log(run.step, train_images_per_s=run.images / max(run.train_seconds, 1e-9))
    run.save(epoch_done=True)
    if run.world > 1:
        torch.distributed.barrier()


def _finish(run: _Run) -> dict[str, Any]:
    summary: dict[str, Any] = {"run_dir": str(run.dir), "steps": run.step}
    if run.rank != 0:
        return summary
    run.logger.save()
    run.logger.plot(run.dir / "metrics.png")
    pipeline = ClassificationPipeline(
        run.model, run.classes, run.config.val_crop_size, run.config.val_resize_size
    )
    write_prediction_grid(pipeline, run.config.data_path, run.dir / "predictions.png")
    summary.update(
        top1=run.logger.last("val_top1"),
        top5=run.logger.last("val_top5"),
        train_images_per_s=run.images / max(run.train_seconds, 1e-9),
        train_seconds=run.train_seconds,
        files={
            name: str(run.dir / name)
            for name in (CHECKPOINT, "metrics.csv", "metrics.png", "predictions.png")
        },
    )
    (run.dir / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def _eval_loader(config: ClassificationConfig, split: str) -> Any:
    dataset = open_split(
        config.data_path, split, eval_transform(config.val_crop_size, config.val_resize_size)
    )
    return make_loader(
        dataset, config.batch_size, train=False, workers=config.workers, seed=config.seed
    )


@torch.no_grad()
def _evaluate_model(
    model: nn.Module,
    loader: Any,
    config: ClassificationConfig,
    device: torch.device,
    classes: Sequence[str],
) -> dict[str, float]:
    was_training = model.training
    model.eval()
    correct1 = correct5 = total = 0
    loss_sum = 0.0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        if config.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        logits = model(images).float()
        loss_sum += float(F.cross_entropy(logits, labels, reduction="sum"))
        top = logits.topk(min(5, len(classes)), dim=1).indices
        correct1 += int((top[:, 0] == labels).sum())
        correct5 += int((top == labels[:, None]).any(dim=1).sum())
        total += len(labels)
    model.train(was_training)
    return {
        "top1": correct1 / max(total, 1),
        "top5": correct5 / max(total, 1),
        "loss": loss_sum / max(total, 1),
        "images": float(total),
    }


def evaluate(
    pipeline: ClassificationPipeline | str | os.PathLike[str],
    data_path: str | os.PathLike[str],
    split: str = "val",
    *,
    batch_size: int = 64,
    workers: int = 2,
) -> dict[str, float]:
    """Top-1, top-5, mean loss and the number of images of ``data_path/split``.

    ``pipeline`` is a :class:`ClassificationPipeline` or a checkpoint path.

    Example:
        >>> evaluate("no/such/checkpoint.pt", "data")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no/such/checkpoint.pt: no such checkpoint
    """
    if not isinstance(pipeline, ClassificationPipeline):
        pipeline = from_checkpoint(pipeline)
    config = ClassificationConfig(
        data_path=str(data_path),
        batch_size=batch_size,
        workers=workers,
        val_crop_size=pipeline.crop_size,
        val_resize_size=pipeline.resize_size,
    )
    device = next(pipeline.model.parameters()).device
    loader = _eval_loader(config, split)
    return _evaluate_model(pipeline.model, loader, config, device, pipeline.classes)


class ClassificationPipeline(nn.Module):
    """A trained classifier with its class names and evaluation transform.

    :meth:`predict` takes an image path, encoded bytes (JPEG/PNG), a decoded uint8
    ``[3, H, W]`` tensor, or a list of those.

    Example:
        >>> import torch
        >>> from trivium.vision.models import resnet18
        >>> p = ClassificationPipeline(resnet18(num_classes=3), ["a", "b", "c"], 32, 36)
        >>> [r["index"] in (0, 1, 2) for r in p.predict([torch.zeros(3, 8, 8, dtype=torch.uint8)])]
        [True]
    """

    def __init__(
        self, model: nn.Module, classes: Sequence[str], crop_size: int, resize_size: int
    ) -> None:
        super().__init__()
        self.model, self.classes = model, list(classes)
        self.crop_size, self.resize_size = crop_size, resize_size
        self.preprocess = eval_transform(crop_size, resize_size).transform

    def _image(self, item: Any) -> Tensor:
        if not (isinstance(item, Tensor) and item.dim() == 3):  # a path or encoded bytes
            item = decode_image(item, ImageReadMode.RGB)
        return self.preprocess(item)

    @torch.no_grad()
    def predict(self, images: Any) -> dict[str, Any] | list[dict[str, Any]]:
        """``{"label", "index", "score"}`` for one image, or a list of them for a list."""
        single = not isinstance(images, list | tuple)
        items = [images] if single else list(images)
        device = next(self.model.parameters()).device
        batch = torch.stack([self._image(x) for x in items]).to(device)
        was_training = self.model.training
        self.model.eval()
        probs = self.model(batch).float().softmax(dim=1).cpu()
        self.model.train(was_training)
        scores, indices = probs.max(dim=1)
        out = [
            {"label": self.classes[int(i)], "index": int(i), "score": float(s)}
            for s, i in zip(scores, indices, strict=True)
        ]
        return out[0] if single else out

    def forward(self, images: Tensor) -> Tensor:
        """Logits of a preprocessed batch ``[N, 3, crop, crop]``."""
        return self.model(images)


def from_checkpoint(
    path: str | os.PathLike[str], device: str | torch.device = "cpu"
) -> ClassificationPipeline:
    """The :class:`ClassificationPipeline` of a run's checkpoint (in eval mode).

    Example:
        >>> from_checkpoint("missing.pt")
        Traceback (most recent call last):
        ...
        FileNotFoundError: missing.pt: no such checkpoint
    """
    state = load_checkpoint(path)
    known = {f.name for f in fields(ClassificationConfig)}
    config = ClassificationConfig(**{k: v for k, v in state["config"].items() if k in known})
    model = build_model(config.model, len(state["classes"]))
    model.load_state_dict(state["model"])
    pipeline = ClassificationPipeline(
        model, state["classes"], config.val_crop_size, config.val_resize_size
    )
    return pipeline.to(resolve_device(device)).eval()


def write_prediction_grid(
    pipeline: ClassificationPipeline,
    data_path: str | os.PathLike[str],
    path: str | os.PathLike[str],
    split: str = "val",
    count: int = 16,
) -> Path:
    """A PNG grid of ``count`` held-out images titled with predicted (and true) labels.

    Titles are green where the prediction is right and red where it is wrong.

    Example:
        >>> write_prediction_grid  # doctest: +ELLIPSIS
        <function write_prediction_grid at ...>
    """
    from matplotlib.figure import Figure  # no pyplot: the user's backend stays as it is

    from trivium.core import Compose
    from trivium.vision.pipelines.classification_data import _DecodeThen

    show = _DecodeThen(Compose([Resize(pipeline.resize_size), CenterCrop(pipeline.crop_size)]))
    dataset = open_split(data_path, split, show)
    picks = torch.linspace(0, len(dataset) - 1, min(count, len(dataset))).round().long()
    samples = [dataset[int(i)] for i in picks]
    results = pipeline.predict([image for image, _ in samples])
    cols = 4
    rows = math.ceil(len(samples) / cols)
    fig = Figure(figsize=(2.2 * cols, 2.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, (image, label), result in zip(axes.flat, samples, results, strict=False):
        ax.imshow(image.permute(1, 2, 0).numpy())
        right = result["index"] == label
        title = f"{result['label']} {result['score']:.2f}"
        if not right:
            title += f"\n(true: {pipeline.classes[label]})"
        ax.set_title(title, fontsize=8, color="green" if right else "red")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    return path
