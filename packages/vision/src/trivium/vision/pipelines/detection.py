"""Object detection: train a RetinaNet on a COCO-format folder and evaluate it with COCO mAP.

:func:`train` follows torchvision's detection reference (SGD or AdamW, warm-up then
a cosine or step schedule, AMP, DDP under ``torchrun``) with Trivium's data side:
:class:`~trivium.vision.datasets.CocoDetection` samples through box-aware
transforms in ``trivium.data.DataLoader`` workers. Checkpoints hold the loader's
position, so ``resume=True`` continues mid-epoch with no sample lost or repeated
and the same augmentations as an uninterrupted run. :func:`evaluate` reports the
12 COCO AP/AR figures of a split and :func:`from_checkpoint` gives a
:class:`DetectionPipeline` that finds objects in images.

A run folder holds ``checkpoint.pt``, ``metrics.{csv,json}``, ``metrics.png``
(loss and mAP curves), ``predictions.png`` (held-out images with the predicted
boxes drawn) and ``summary.json``.

Example:
    >>> import torch
    >>> from trivium.vision.models import retinanet_resnet18_fpn
    >>> model = retinanet_resnet18_fpn(num_classes=3, min_size=64, max_size=64)
    >>> pipeline = DetectionPipeline(model, {1: "circle", 2: "square"})
    >>> sorted(pipeline.predict(torch.zeros(3, 64, 64, dtype=torch.uint8)))
    ['boxes', 'labels', 'names', 'scores']
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from trivium.core import load_checkpoint, progress, save_checkpoint, seed_everything
from trivium.core.devices import resolve_device
from trivium.core.training import MetricLogger, get_rng_state, set_rng_state
from trivium.vision.io import ImageReadMode, decode_image
from trivium.vision.pipelines.common import autocast, distributed, lr_factor, make_optimizer
from trivium.vision.pipelines.detection_data import (
    AUGMENTATIONS,
    annotation_file,
    make_loader,
    open_split,
    train_transforms,
)

__all__ = [
    "DetectionConfig",
    "DetectionPipeline",
    "build_model",
    "evaluate",
    "from_checkpoint",
    "train",
]

CHECKPOINT = "checkpoint.pt"


@dataclass
class DetectionConfig:
    """Settings of a run, named after the flags of torchvision's detection reference.

    ``data_path`` is a COCO-format folder (``<split>/`` images and
    ``annotations/instances_<split>.json``). Images are resized so that their
    shorter side is ``min_size`` (the longer at most ``max_size``), as
    torchvision's RetinaNet does. ``anchor_sizes`` gives the smallest anchor of
    the finest pyramid level (each coarser level doubles it; 0: torchvision's 32).
    ``fpn_channels`` is the width of the feature pyramid and of the heads (256 as
    torchvision; smaller makes a fast CPU model). ``weights_backbone`` is a local
    file of the ResNet's weights (a state dict; nothing is downloaded).
    ``box_loss`` is the box regression loss: ``"l1"`` on the anchor deltas
    (torchvision's RetinaNet), ``"smooth_l1"``, or ``"giou"`` on the decoded boxes
    (torchvision's v2 recipe). ``eval_every`` evaluates every so many epochs (and
    always after the last).
    ``channels_last`` stores the weights channels-last, faster on a CPU.

    Example:
        >>> DetectionConfig(data_path="coco").model
        'retinanet_resnet50_fpn'
    """

    data_path: str = "data/detection_corpus"
    out_dir: str = "runs/detection"
    train_split: str = "train"
    val_split: str = "val"
    model: str = "retinanet_resnet50_fpn"
    fpn_channels: int = 256
    weights_backbone: str | None = None
    trainable_backbone_layers: int | None = None
    min_size: int = 800
    max_size: int = 1333
    anchor_sizes: int = 0
    box_loss: str = "l1"
    epochs: int = 26
    batch_size: int = 2
    opt: str = "sgd"
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 1e-4
    lr_scheduler: str = "step"
    lr_warmup_epochs: int = 0
    lr_warmup_decay: float = 0.001
    lr_step_size: int = 16
    lr_gamma: float = 0.1
    clip_grad_norm: float = 0.0
    augmentation: str = "hflip"
    score_thresh: float = 0.05
    nms_thresh: float = 0.5
    detections_per_img: int = 100
    amp: bool = False
    channels_last: bool = False
    workers: int = 2
    seed: int = 0
    checkpoint_every: int = 0
    eval_every: int = 1
    device: str = "auto"

    def __post_init__(self) -> None:
        if self.opt not in ("sgd", "adamw"):
            raise ValueError(f"opt must be 'sgd' or 'adamw', got {self.opt!r}")
        if self.lr_scheduler not in ("cosine", "step", "constant"):
            raise ValueError(
                f"lr_scheduler must be 'cosine', 'step' or 'constant', got {self.lr_scheduler!r}"
            )
        if self.box_loss not in ("l1", "smooth_l1", "giou"):
            raise ValueError(f"box_loss must be 'l1', 'smooth_l1' or 'giou', got {self.box_loss!r}")
        if self.augmentation not in AUGMENTATIONS:
            raise ValueError(
                f"augmentation must be one of {AUGMENTATIONS}, got {self.augmentation!r}"
            )
        for name in ("epochs", "batch_size", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


# ---------------------------------------------------------------------------- pieces


def read_categories(data_path: str | Path, split: str) -> dict[int, str]:
    """``{category id: name}`` from a split's COCO annotations.

    Example:
        >>> import json, tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "annotations").mkdir()
        >>> _ = (root / "annotations" / "instances_val.json").write_text(json.dumps(
        ...     {"categories": [{"id": 1, "name": "circle"}], "images": [], "annotations": []}))
        >>> read_categories(root, "val")
        {1: 'circle'}
    """
    path = annotation_file(data_path, split)
    with open(path, encoding="utf-8") as f:
        categories = json.load(f).get("categories") or []
    if not categories:
        raise ValueError(f"{path}: no categories")
    return {int(c["id"]): str(c["name"]) for c in categories}


def build_model(config: DetectionConfig, num_classes: int) -> nn.Module:
    """The detection model of ``config`` (a :mod:`trivium.vision.models` builder by name).

    ``num_classes`` counts the background, as in torchvision: COCO category ids
    1..K need ``K + 1``.

    Example:
        >>> c = DetectionConfig(model="retinanet_resnet18_fpn", min_size=64, max_size=64)
        >>> build_model(c, 3).head.classification_head.num_classes
        3
    """
    from trivium.vision import models

    builder = getattr(models, config.model, None)
    if not (config.model.startswith("retinanet_") and callable(builder)):
        names = [n for n in models.__all__ if n.startswith("retinanet_")]
        raise ValueError(f"unknown detection model {config.model!r}; try one of {names}")
    kwargs: dict[str, Any] = {
        "num_classes": num_classes,
        "min_size": config.min_size,
        "max_size": config.max_size,
        "score_thresh": config.score_thresh,
        "nms_thresh": config.nms_thresh,
        "detections_per_img": config.detections_per_img,
        "trainable_backbone_layers": config.trainable_backbone_layers,
        "weights_backbone": config.weights_backbone,
    }
    if config.fpn_channels != 256:
        kwargs["fpn_channels"] = config.fpn_channels
    if config.anchor_sizes:
        kwargs["anchor_generator"] = anchor_generator(config.anchor_sizes)
    model = builder(**kwargs)
    model.head.regression_head._loss_type = config.box_loss
    return model


def anchor_generator(smallest: int) -> nn.Module:
    """RetinaNet's anchors (3 scales x 3 aspect ratios on 5 levels) from a smallest size.

    torchvision's are ``anchor_generator(32)``; small images want smaller ones.

    Example:
        >>> anchor_generator(16).sizes[0]
        (16, 20, 25)
    """
    from trivium.vision.ops import AnchorGenerator

    sizes = tuple(
        (x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3)))
        for x in (smallest * 2**level for level in range(5))
    )
    return AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))


def _to_model(images: list[Tensor], targets: list[dict[str, Any]] | None, device: torch.device):
    """uint8 images -> float in [0, 1] on ``device``; targets' boxes and labels as tensors."""
    floats = [image.as_subclass(Tensor).to(device).float().div_(255) for image in images]
    if targets is None:
        return floats, None
    moved = [
        {
            "boxes": t["boxes"].as_subclass(Tensor).to(device),
            "labels": t["labels"].to(device),
        }
        for t in targets
    ]
    return floats, moved


class _Run:
    """What one training run holds; :func:`train` drives it."""

    def __init__(self, config: DetectionConfig, show_progress: bool) -> None:
        self.config, self.show_progress = config, show_progress
        self.rank, self.world = distributed()
        self.device = resolve_device(config.device)
        if self.device.type == "cuda" and self.world > 1:
            self.device = torch.device("cuda", self.rank % torch.cuda.device_count())
        self.dir = Path(config.out_dir)
        self.categories = read_categories(config.data_path, config.train_split)
        seed_everything(config.seed)  # the model's initial weights
        transforms = train_transforms(config.augmentation, config.min_size)
        transforms.generator = torch.Generator().manual_seed(config.seed)
        dataset = open_split(config.data_path, config.train_split, transforms)
        self.loader = make_loader(
            dataset, config.batch_size, train=True, workers=config.workers, seed=config.seed
        )
        self.model = build_model(config, max(self.categories) + 1).to(self.device)
        if config.channels_last:  # the batched images follow the weights' layout
            self.model = self.model.to(memory_format=torch.channels_last)
        self.optimizer = make_optimizer(config, self.model)
        steps = len(self.loader)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lr_factor(config, s, steps)
        )
        amp16 = config.amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=amp16)
        self.val_loader: Any = None
        self.epoch, self.step, self.train_seconds, self.images = 0, 0, 0.0, 0
        self.logger = MetricLogger(self.dir if self.rank == 0 else None)
        self.forward = self._wrap()

    def _wrap(self) -> nn.Module:
        if self.world == 1:
            return self.model
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(self.model, device_ids=ids)

    # ---- checkpoints
    def state_dict(self, epoch_done: bool) -> dict[str, Any]:
        return {
            "config": asdict(self.config),
            "categories": self.categories,
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
        if state["categories"] != self.categories:
            raise ValueError(f"{path}: the checkpoint's categories differ from the data's")
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
    def train_step(self, images: list[Tensor], targets: list[dict[str, Any]]) -> dict[str, float]:
        config = self.config
        images, targets = _to_model(images, targets, self.device)
        with autocast(self.device, config.amp):
            losses = self.forward(images, targets)
        loss = sum(value.float() for value in losses.values())
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        if config.clip_grad_norm > 0:
            self.scaler.unscale_(self.optimizer)
            nn.utils.clip_grad_norm_(self.model.parameters(), config.clip_grad_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        values = {name: float(value.detach()) for name, value in losses.items()}
        values["loss"] = float(loss.detach())
        if not all(map(torch.isfinite, map(torch.tensor, values.values()))):
            raise FloatingPointError(f"step {self.step}: the loss is not finite: {values}")
        return values

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


# ---------------------------------------------------------------------------- public API


def train(
    config: DetectionConfig,
    *,
    resume: bool = False,
    show_progress: bool = True,
    stop_after_steps: int | None = None,
) -> dict[str, Any]:
    """Train, evaluate every ``eval_every`` epochs, write the run folder; returns the summary.

    ``resume=True`` continues from ``out_dir/checkpoint.pt`` where it stopped (mid-epoch
    too). ``stop_after_steps`` saves a checkpoint and returns after that many steps
    in total (an interrupted run, for tests and time-boxed jobs).

    Example:
        >>> DetectionConfig(batch_size=0)
        Traceback (most recent call last):
        ...
        ValueError: batch_size must be >= 1, got 0
    """
    run = _Run(config, show_progress)
    if resume:
        run.resume()
    every = config.checkpoint_every
    while run.epoch < config.epochs:
        start = time.perf_counter()
        batches = run.epoch_batches()
        for images, targets in batches:
            losses = run.train_step(images, targets)
            run.step += 1
            run.images += len(images) * run.world
            seconds = run.train_seconds + time.perf_counter() - start
            run.logger.log(run.step, **losses, lr=run.scheduler.get_last_lr()[0])
            if hasattr(batches, "set_postfix"):
                speed = run.images / max(seconds, 1e-9)
                batches.set_postfix(loss=f"{losses['loss']:.3f}", img_s=f"{speed:.1f}")
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
    last = run.epoch + 1 == run.config.epochs
    if run.rank == 0 and (last or (run.epoch + 1) % run.config.eval_every == 0):
        if run.val_loader is None:  # built once: its workers persist across epochs
            run.val_loader = _eval_loader(run.config, run.config.val_split)
        metrics = _evaluate_model(run.model, run.val_loader, run.config, run.device)
        run.logger.log(run.step, **{f"val_{k}": v for k, v in metrics.items()})
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
    pipeline = DetectionPipeline(run.model, run.categories)
    write_prediction_grid(pipeline, run.config, run.dir / "predictions.png")
    summary.update(
        {name: run.logger.last(f"val_{name}") for name in ("AP", "AP50", "AP75", "AR100")},
        train_images_per_s=run.images / max(run.train_seconds, 1e-9),
        train_seconds=run.train_seconds,
        files={
            name: str(run.dir / name)
            for name in (CHECKPOINT, "metrics.csv", "metrics.png", "predictions.png")
        },
    )
    (run.dir / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def _eval_loader(config: DetectionConfig, split: str) -> Any:
    dataset = open_split(config.data_path, split)
    return make_loader(
        dataset, config.batch_size, train=False, workers=config.workers, seed=config.seed
    )


@torch.no_grad()
def _evaluate_model(
    model: nn.Module, loader: Any, config: DetectionConfig, device: torch.device
) -> dict[str, float]:
    from trivium.vision.detection_eval import CocoEvaluator

    evaluator = CocoEvaluator(annotation_file(config.data_path, config.val_split))
    was_training = model.training
    model.eval()
    for images, targets in loader:
        inputs, _ = _to_model(images, None, device)
        with autocast(device, config.amp):
            outputs = model(inputs)
        evaluator.update(
            {
                int(t["image_id"]): {k: v.float().cpu() for k, v in out.items()}
                for t, out in zip(targets, outputs, strict=True)
            }
        )
    model.train(was_training)
    return evaluator.summarize()


def evaluate(
    pipeline: DetectionPipeline | str | os.PathLike[str],
    data_path: str | os.PathLike[str],
    split: str = "val",
    *,
    batch_size: int = 4,
    workers: int = 2,
) -> dict[str, float]:
    """The 12 COCO figures (``AP``, ``AP50``, ``AP75``, ``APs`` ... ``ARl``) of ``data_path/split``.

    ``pipeline`` is a :class:`DetectionPipeline` or a checkpoint path.

    Example:
        >>> evaluate("no/such/checkpoint.pt", "data")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no/such/checkpoint.pt: no such checkpoint
    """
    if not isinstance(pipeline, DetectionPipeline):
        pipeline = from_checkpoint(pipeline)
    config = DetectionConfig(
        data_path=str(data_path), val_split=split, batch_size=batch_size, workers=workers
    )
    device = next(pipeline.model.parameters()).device
    return _evaluate_model(pipeline.model, _eval_loader(config, split), config, device)


class DetectionPipeline(nn.Module):
    """A trained detector with its category names.

    :meth:`predict` takes an image path, encoded bytes (JPEG/PNG), a decoded uint8
    ``[3, H, W]`` tensor, or a list of those, and returns boxes (XYXY, in the
    image's pixels), scores, labels (category ids) and their names.

    Example:
        >>> import torch
        >>> from trivium.vision.models import retinanet_resnet18_fpn
        >>> p = DetectionPipeline(retinanet_resnet18_fpn(num_classes=2, min_size=32, max_size=32),
        ...                       {1: "disc"})
        >>> p.predict([torch.zeros(3, 32, 32, dtype=torch.uint8)])[0]["boxes"].shape[1]
        4
    """

    def __init__(self, model: nn.Module, categories: dict[int, str]) -> None:
        super().__init__()
        self.model, self.categories = model, dict(categories)

    @staticmethod
    def _image(item: Any) -> Tensor:
        if isinstance(item, Tensor) and item.dim() == 3:
            return item
        return decode_image(item, ImageReadMode.RGB)

    @torch.no_grad()
    def predict(
        self, images: Any, score_thresh: float = 0.0
    ) -> dict[str, Any] | list[dict[str, Any]]:
        """``{"boxes", "scores", "labels", "names"}`` per image, scores above ``score_thresh``."""
        single = not isinstance(images, list | tuple)
        items = [self._image(x) for x in ([images] if single else images)]
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.eval()
        outputs = self.model(_to_model(items, None, device)[0])
        self.model.train(was_training)
        results = []
        for out in outputs:
            keep = out["scores"] > score_thresh
            result = {k: v[keep].cpu() for k, v in out.items()}
            result["names"] = [self.categories.get(int(i), str(int(i))) for i in result["labels"]]
            results.append(result)
        return results[0] if single else results

    def forward(self, images: list[Tensor]) -> list[dict[str, Tensor]]:
        """The model's detections for float images in [0, 1]."""
        return self.model(images)


def from_checkpoint(
    path: str | os.PathLike[str], device: str | torch.device = "cpu"
) -> DetectionPipeline:
    """The :class:`DetectionPipeline` of a run's checkpoint (in eval mode).

    Example:
        >>> from_checkpoint("missing.pt")
        Traceback (most recent call last):
        ...
        FileNotFoundError: missing.pt: no such checkpoint
    """
    state = load_checkpoint(path)
    known = {f.name for f in fields(DetectionConfig)}
    config = DetectionConfig(**{k: v for k, v in state["config"].items() if k in known})
    categories = {int(k): v for k, v in state["categories"].items()}
    model = build_model(config, max(categories) + 1)
    model.load_state_dict(state["model"])
    return DetectionPipeline(model, categories).to(resolve_device(device)).eval()


def write_prediction_grid(
    pipeline: DetectionPipeline,
    config: DetectionConfig,
    path: str | os.PathLike[str],
    count: int = 8,
    score_thresh: float = 0.4,
    tile: int = 320,
) -> Path:
    """A PNG grid of ``count`` held-out images with their predicted boxes and labels.

    Each image is scaled so that its longer side is ``tile`` pixels (small images
    get legible labels), drawn, and padded to a ``tile`` square.

    Example:
        >>> write_prediction_grid  # doctest: +ELLIPSIS
        <function write_prediction_grid at ...>
    """
    from trivium.vision.transforms import Resize
    from trivium.vision.utils import draw_bounding_boxes, make_grid, save_image

    dataset = open_split(config.data_path, config.val_split)
    picks = torch.linspace(0, len(dataset) - 1, min(count, len(dataset))).round().long()
    images = [dataset[int(i)][0].as_subclass(Tensor) for i in picks]
    results = pipeline.predict(images, score_thresh)
    drawn = []
    for image, result in zip(images, results, strict=True):
        height, width = image.shape[-2:]
        scale = tile / max(height, width)
        image = Resize((round(height * scale), round(width * scale)))(image)
        labels = [f"{n} {s:.2f}" for n, s in zip(result["names"], result["scores"], strict=True)]
        boxed = image  # nothing above score_thresh: draw_bounding_boxes would warn
        if labels:
            boxes = result["boxes"] * scale
            boxed = draw_bounding_boxes(image, boxes, labels, width=2)
        pad = (0, tile - boxed.shape[-1], 0, tile - boxed.shape[-2])
        drawn.append(torch.nn.functional.pad(boxed, pad))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_image(make_grid(drawn, nrow=4, padding=4).float() / 255, path)
    return path
