"""Image classification: train a model on an ImageFolder tree or its Parquet shards.

The model is any classification builder of :mod:`trivium.vision.models` (ResNet,
MobileNet, EfficientNet, RegNet, ...: :func:`model_help` lists them).

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

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.core import load_checkpoint
from trivium.core.devices import resolve_device
from trivium.core.seeding import derive_seed, sample_scope
from trivium.pipelines.vision.classification_data import (
    TrainBatch,
    eval_transform,
    find_classes,
    make_loader,
    open_split,
)
from trivium.pipelines.vision.common import (
    TrainingRun,
    as_images,
    check_config,
    config_from_state,
    eval_mode,
    fit,
    model_builder,
    output_file,
    spread_indices,
)
from trivium.vision.transforms import CenterCrop, CutMix, MixUp, RandomChoice, Resize

__all__ = [
    "ClassificationConfig",
    "ClassificationPipeline",
    "evaluate",
    "from_checkpoint",
    "train",
]


@dataclass
class ClassificationConfig:
    """Settings of a run, named after the flags of torchvision's classification reference.

    ``data_path`` holds ``train/`` and ``val/`` (ImageFolder trees or Parquet shards);
    ``batch_size`` is per process; training crops cover ``train_crop_scale_min`` to
    all of an image's area; ``lr_scheduler`` is ``"cosine"``, ``"step"`` or
    ``"constant"``, applied per iteration after ``lr_warmup_epochs`` of linear
    warm-up from ``lr * lr_warmup_decay``; ``checkpoint_every`` saves every so many
    steps besides each epoch's end (0: only there); ``on_error`` is ``"raise"`` (an
    image that cannot be read stops the run, naming it) or ``"skip"`` (it is left out,
    and named at each epoch's end and in ``summary.json``).

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
    on_error: str = "raise"

    def __post_init__(self) -> None:
        check_config(self)


# ---------------------------------------------------------------------------- pieces


def model_help() -> str:
    """What ``--model`` takes: the classification builders of :mod:`trivium.vision.models`,
    by family.

    Example:
        >>> print(model_help())  # doctest: +ELLIPSIS
        a trivium.vision.models classification builder: ResNet (resnet18, ...), ...
    """
    from trivium.vision.models import CLASSIFICATION_FAMILIES

    families = ", ".join(f"{k} ({', '.join(v)})" for k, v in CLASSIFICATION_FAMILIES.items())
    return f"a trivium.vision.models classification builder: {families}"


def build_model(name: str, num_classes: int) -> nn.Module:
    """A classification model of :mod:`trivium.vision.models` by builder name.

    Any builder of ``trivium.vision.models.CLASSIFICATION_FAMILIES``: ``"resnet50"``,
    ``"mobilenet_v3_large"``, ``"efficientnet_b0"``, ``"regnet_y_400mf"``, ...
    GoogLeNet and Inception v3 are built without their auxiliary classifiers, so that
    in training they too give one output for the loss.

    Example:
        >>> import torch
        >>> build_model("resnet18", 3).fc.out_features
        3
        >>> build_model("googlenet", 3).train()(torch.zeros(2, 3, 64, 64)).shape
        torch.Size([2, 3])
        >>> build_model("retinanet_resnet50_fpn", 3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown classification model 'retinanet_resnet50_fpn'; try one of [...]
    """
    from trivium.vision.models import CLASSIFICATION_FAMILIES

    names = [n for family in CLASSIFICATION_FAMILIES.values() for n in family]
    if name not in names:
        raise ValueError(f"unknown classification model {name!r}; try one of {names}")
    kwargs = {"aux_logits": False} if name in _AUXILIARY_OUTPUTS else {}
    return model_builder(name)(num_classes=num_classes, **kwargs)


# Builders whose models return (logits, auxiliary logits...) in training by default.
_AUXILIARY_OUTPUTS = ("googlenet", "inception_v3")


def _mixer(config: ClassificationConfig, num_classes: int) -> nn.Module | None:
    """torchvision's reference: MixUp and/or CutMix, one of them picked per batch."""
    mixes: list[nn.Module] = []
    if config.mixup_alpha > 0:
        mixes.append(MixUp(alpha=config.mixup_alpha, num_classes=num_classes))
    if config.cutmix_alpha > 0:
        mixes.append(CutMix(alpha=config.cutmix_alpha, num_classes=num_classes))
    return RandomChoice(mixes) if mixes else None


class _Run(TrainingRun):
    """A classification run; :func:`train` drives it."""

    labels_key = "classes"

    def __init__(self, config: ClassificationConfig, show_progress: bool) -> None:
        super().__init__(config, show_progress)
        self.mix = _mixer(config, len(self.labels))

    def read_labels(self) -> list[str]:
        return find_classes(self.config.data_path, "train")

    def train_loader(self) -> Any:
        config = self.config
        batches = TrainBatch(
            config.train_crop_size,
            config.auto_augment,
            generator=torch.Generator().manual_seed(config.seed),
            scale_min=config.train_crop_scale_min,
        )
        dataset = open_split(config.data_path, "train", on_error=config.on_error)
        return _loader(config, dataset, train=True, collate_fn=batches)

    def new_model(self) -> nn.Module:
        return build_model(self.config.model, len(self.labels))

    def wrap(self, model: nn.Module) -> nn.Module:
        model = super().wrap(model)
        return torch.compile(model) if self.config.compile else model

    def loss(self, model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
        config = self.config
        images, labels = batch
        if config.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        if self.mix is not None:
            with sample_scope(derive_seed(config.seed, self.step)):  # resumable draws
                images, labels = self.mix(images, labels)
        logits = model(images)
        return F.cross_entropy(logits.float(), labels, label_smoothing=config.label_smoothing)

    def new_val_loader(self) -> Any:
        return _eval_loader(self.config, "val")

    def validate(self) -> dict[str, float]:
        loader = self.validation_loader()
        metrics = _evaluate_model(self.model, loader, self.config, self.device, self.labels)
        return {k: v for k, v in metrics.items() if k != "images"}

    def results(self) -> dict[str, Any]:
        config = self.config
        pipeline = ClassificationPipeline(
            self.model, self.labels, config.val_crop_size, config.val_resize_size
        )
        write_prediction_grid(
            pipeline, config.data_path, self.dir / "predictions.png", on_error=config.on_error
        )
        return {"top1": self.logger.last("val_top1"), "top5": self.logger.last("val_top5")}


# ---------------------------------------------------------------------------- public API


def train(
    config: ClassificationConfig,
    *,
    resume: bool = False,
    show_progress: bool = True,
    stop_after_steps: int | None = None,
) -> dict[str, Any]:
    """Train, evaluate every epoch, write the run folder; returns the summary.

    ``resume`` and ``stop_after_steps`` are those of
    :func:`~trivium.pipelines.vision.common.fit`: a run resumes exactly, mid-epoch too.

    Example:
        >>> ClassificationConfig(epochs=0)
        Traceback (most recent call last):
        ...
        ValueError: epochs must be >= 1, got 0
    """
    run = _Run(config, show_progress)
    return fit(run, resume=resume, stop_after_steps=stop_after_steps)


def _eval_loader(config: ClassificationConfig, split: str) -> Any:
    dataset = open_split(
        config.data_path,
        split,
        eval_transform(config.val_crop_size, config.val_resize_size),
        on_error=config.on_error,
    )
    return _loader(config, dataset, train=False)


def _loader(config: ClassificationConfig, dataset: Any, *, train: bool, **options: Any) -> Any:
    """``make_loader`` over ``dataset`` with the run's batch size, workers, seed and
    ``on_error``."""
    return make_loader(
        dataset,
        config.batch_size,
        train=train,
        workers=config.workers,
        seed=config.seed,
        on_error=config.on_error,
        **options,
    )


@torch.no_grad()
def _evaluate_model(
    model: nn.Module,
    loader: Any,
    config: ClassificationConfig,
    device: torch.device,
    classes: Sequence[str],
) -> dict[str, float]:
    correct1 = correct5 = total = 0
    loss_sum = 0.0
    with eval_mode(model):
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

    @torch.no_grad()
    def predict(self, images: Any) -> dict[str, Any] | list[dict[str, Any]]:
        """``{"label", "index", "score"}`` for one image, or a list of them for a list."""
        items, single = as_images(images)
        device = next(self.model.parameters()).device
        batch = torch.stack([self.preprocess(x) for x in items]).to(device)
        with eval_mode(self.model):
            probs = self.model(batch).float().softmax(dim=1).cpu()
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
    config = config_from_state(ClassificationConfig, state)
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
    on_error: str = "raise",
) -> Path:
    """A PNG grid of ``count`` held-out images titled with predicted (and true) labels.

    Titles are green where the prediction is right and red where it is wrong;
    ``on_error="skip"`` shows the next readable image in place of a damaged one.

    Example:
        >>> write_prediction_grid  # doctest: +ELLIPSIS
        <function write_prediction_grid at ...>
    """
    from matplotlib.figure import Figure  # no pyplot: the user's backend stays as it is

    from trivium.core import Compose
    from trivium.pipelines.vision.classification_data import _DecodeThen

    show = _DecodeThen(Compose([Resize(pipeline.resize_size), CenterCrop(pipeline.crop_size)]))
    dataset = open_split(data_path, split, show, on_error=on_error)
    samples = [dataset[i] for i in spread_indices(len(dataset), count)]
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
    path = output_file(path)
    fig.savefig(path, dpi=80)
    return path
