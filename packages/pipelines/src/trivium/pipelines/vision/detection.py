"""Object detection: train a detector on a COCO-format folder and evaluate it with COCO mAP.

:func:`train` follows torchvision's detection reference (SGD or AdamW, warm-up then
a cosine or step schedule, AMP, DDP under ``torchrun``) with Trivium's data side:
:class:`~trivium.vision.datasets.CocoDetection` samples through box-aware
transforms in ``trivium.data.DataLoader`` workers. Checkpoints hold the loader's
position, so ``resume=True`` continues mid-epoch with no sample lost or repeated
and the same augmentations as an uninterrupted run. :func:`evaluate` reports the
12 COCO AP/AR figures of a split and :func:`from_checkpoint` gives a
:class:`DetectionPipeline` that finds objects in images. Mask R-CNN
(``--model maskrcnn_resnet50_fpn``) learns the instance masks of the annotations and
is scored on boxes and masks (``segm_AP`` ...); Keypoint R-CNN
(``keypointrcnn_resnet50_fpn``) learns COCO's person keypoints
(``annotations/person_keypoints_<split>.json``) and is scored on boxes and keypoints
(``keypoints_AP`` ...), as torchvision's reference does.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from trivium.core import load_checkpoint
from trivium.core.devices import resolve_device
from trivium.core.training import autocast
from trivium.pipelines.vision import common
from trivium.pipelines.vision.detection_data import (
    AUGMENTATIONS,
    annotation_file,
    make_loader,
    open_split,
    train_transforms,
)

__all__ = [
    "DETECTION_MODELS",
    "DetectionConfig",
    "DetectionPipeline",
    "build_model",
    "evaluate",
    "from_checkpoint",
    "model_help",
    "model_targets",
    "train",
]


@dataclass
class DetectionConfig:
    """Settings of a run, named after the flags of torchvision's detection reference.

    ``data_path`` is a COCO-format folder (``<split>/`` images and
    ``annotations/instances_<split>.json``; ``person_keypoints_<split>.json`` for
    Keypoint R-CNN). ``model`` names a RetinaNet, FCOS, SSD, SSDlite, Faster R-CNN,
    Mask R-CNN or Keypoint R-CNN builder of :mod:`trivium.vision.models`
    (:func:`model_help`). Images
    are resized so that their shorter side is ``min_size`` (the longer at most
    ``max_size``), as torchvision's RetinaNet does (SSD models resize to their size).
    ``anchor_sizes`` gives the smallest anchor of the finest pyramid level (each
    coarser level doubles it; 0: torchvision's 32).
    ``fpn_channels`` is the width of the feature pyramid and of the heads (256 as
    torchvision; smaller makes a fast CPU model; RetinaNet only).
    ``weights_backbone`` is a local file of the backbone's weights (a state dict;
    nothing is downloaded).
    ``box_loss`` is the box regression loss: ``"l1"`` on the anchor deltas
    (torchvision's RetinaNet), ``"smooth_l1"``, or ``"giou"`` on the decoded boxes
    (torchvision's v2 recipe). ``eval_every`` evaluates every so many epochs (and
    always after the last).
    ``channels_last`` stores the weights channels-last, faster on a CPU.
    ``on_error``: ``"raise"`` (an image that cannot be read stops the run, naming
    it) or ``"skip"`` (it is left out, and named at each epoch's end and in
    ``summary.json``).

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
    on_error: str = "raise"

    def __post_init__(self) -> None:
        common.check_config(self, ("epochs", "batch_size", "eval_every"))
        if self.box_loss not in ("l1", "smooth_l1", "giou"):
            raise ValueError(f"box_loss must be 'l1', 'smooth_l1' or 'giou', got {self.box_loss!r}")
        if self.augmentation not in AUGMENTATIONS:
            raise ValueError(
                f"augmentation must be one of {AUGMENTATIONS}, got {self.augmentation!r}"
            )


# ---------------------------------------------------------------------------- pieces


def read_categories(data_path: str | Path, split: str, targets: str = "boxes") -> dict[int, str]:
    """``{category id: name}`` from a split's COCO annotations (``person_keypoints_<split>.json``
    for ``targets="keypoints"``).

    Example:
        >>> import json, tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "annotations").mkdir()
        >>> _ = (root / "annotations" / "instances_val.json").write_text(json.dumps(
        ...     {"categories": [{"id": 1, "name": "circle"}], "images": [], "annotations": []}))
        >>> read_categories(root, "val")
        {1: 'circle'}
    """
    path = annotation_file(data_path, split, targets)
    with open(path, encoding="utf-8") as f:
        categories = json.load(f).get("categories") or []
    if not categories:
        raise ValueError(f"{path}: no categories")
    return {int(c["id"]): str(c["name"]) for c in categories}


def read_num_keypoints(data_path: str | Path, split: str) -> int:
    """Keypoints per object in a split's ``person_keypoints`` annotations (COCO's: 17).

    The longest ``keypoints`` name list of its categories.

    Example:
        >>> import json, tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "annotations").mkdir()
        >>> _ = (root / "annotations" / "person_keypoints_val.json").write_text(json.dumps(
        ...     {"categories": [{"id": 1, "name": "person", "keypoints": ["nose", "eye"]}]}))
        >>> read_num_keypoints(root, "val")
        2
    """
    path = annotation_file(data_path, split, "keypoints")
    with open(path, encoding="utf-8") as f:
        categories = json.load(f).get("categories") or []
    count = max((len(c.get("keypoints") or ()) for c in categories), default=0)
    if not count:
        raise ValueError(f"{path}: no category names its 'keypoints'")
    return count


DETECTION_MODELS = ("retinanet_", "fcos_", "ssd", "fasterrcnn_", "maskrcnn_", "keypointrcnn_")
"""The name prefixes of the detection builders ``--model`` takes (``ssd`` also SSDlite)."""

_RCNN = ("fasterrcnn_", "maskrcnn_", "keypointrcnn_")


def model_targets(model: str) -> str:
    """What the builder ``model`` learns beside boxes: ``"masks"``
    (Mask R-CNN), ``"keypoints"`` (Keypoint R-CNN) or ``"boxes"`` (the others).

    Example:
        >>> model_targets("maskrcnn_resnet50_fpn_v2"), model_targets("ssd300_vgg16")
        ('masks', 'boxes')
    """
    if model.startswith("maskrcnn_"):
        return "masks"
    if model.startswith("keypointrcnn_"):
        return "keypoints"
    return "boxes"


def model_help() -> str:
    """What ``--model`` takes: the detection builders of the vision models.

    Example:
        >>> print(model_help())  # doctest: +ELLIPSIS
        a trivium.vision.models detection builder: fasterrcnn_mobilenet_v3_large_320_fpn, ...
    """
    from trivium.vision import models

    names = [n for n in models.__all__ if n.startswith(DETECTION_MODELS)]
    return f"a trivium.vision.models detection builder: {', '.join(names)}"


def build_model(
    config: DetectionConfig, num_classes: int, num_keypoints: int | None = None
) -> nn.Module:
    """The detection model of ``config`` (a :mod:`trivium.vision.models` builder by name).

    Any RetinaNet, FCOS, SSD, SSDlite, Faster R-CNN, Mask R-CNN or Keypoint R-CNN
    builder. ``num_classes`` counts the background, as in torchvision: COCO category
    ids 1..K need ``K + 1``; ``num_keypoints`` is Keypoint R-CNN's (17 if not given). SSD
    models resize to their fixed size (``min_size`` / ``max_size`` are not theirs);
    ``fpn_channels`` and ``box_loss`` are RetinaNet's (``anchor_sizes`` RetinaNet's and
    the R-CNNs'), and given for another model raise ``ValueError``.

    Example:
        >>> c = DetectionConfig(model="retinanet_resnet18_fpn", min_size=64, max_size=64)
        >>> build_model(c, 3).head.classification_head.num_classes
        3
    """
    if config.model.startswith(_RCNN):
        return _build_rcnn(config, num_classes, num_keypoints)
    builder = common.model_builder(config.model, DETECTION_MODELS, "detection model")
    kwargs: dict[str, Any] = {
        "num_classes": num_classes,
        "score_thresh": config.score_thresh,
        "nms_thresh": config.nms_thresh,
        "detections_per_img": config.detections_per_img,
        "trainable_backbone_layers": config.trainable_backbone_layers,
        "weights_backbone": config.weights_backbone,
    }
    if not config.model.startswith("ssd"):
        kwargs.update(min_size=config.min_size, max_size=config.max_size)
    retinanet = config.model.startswith("retinanet_")
    if not retinanet:
        _refuse_retinanet_options(config, ("fpn_channels", "anchor_sizes", "box_loss"))
    if config.fpn_channels != 256:
        kwargs["fpn_channels"] = config.fpn_channels
    if config.anchor_sizes:
        kwargs["anchor_generator"] = anchor_generator(config.anchor_sizes)
    model = builder(**kwargs)
    if retinanet:
        model.head.regression_head._loss_type = config.box_loss
    return model


def _refuse_retinanet_options(config: DetectionConfig, names: tuple[str, ...]) -> None:
    defaults = {"fpn_channels": 256, "anchor_sizes": 0, "box_loss": "l1"}
    given = [
        f"{name}={getattr(config, name)!r}"
        for name in names
        if getattr(config, name) != defaults[name]
    ]
    if given:
        raise ValueError(
            f"{', '.join(given)}: RetinaNet options, not taken by model={config.model!r}"
        )


def _build_rcnn(config: DetectionConfig, num_classes: int, num_keypoints: int | None) -> nn.Module:
    """Faster, Mask or Keypoint R-CNN: their builders take the same options."""
    builder = common.model_builder(config.model, _RCNN, "detection model")
    _refuse_retinanet_options(config, ("fpn_channels", "box_loss"))
    kwargs: dict[str, Any] = {
        "num_classes": num_classes,
        "min_size": config.min_size,
        "max_size": config.max_size,
        "box_score_thresh": config.score_thresh,
        "box_nms_thresh": config.nms_thresh,
        "box_detections_per_img": config.detections_per_img,
        "trainable_backbone_layers": config.trainable_backbone_layers,
        "weights_backbone": config.weights_backbone,
    }
    if model_targets(config.model) == "keypoints":
        kwargs["num_keypoints"] = num_keypoints or 17
    model = builder(**kwargs)
    if config.anchor_sizes:  # the same anchors per location as the builder's, resized
        model.rpn.anchor_generator = _rpn_anchor_generator(
            config.anchor_sizes, per_level="resnet" in config.model
        )
    return model


def _rpn_anchor_generator(smallest: int, per_level: bool) -> nn.Module:
    # Faster R-CNN's anchor layouts from a smallest size: one size per level of the
    # ResNet FPN (5 levels), or all five sizes on each of the MobileNet FPN's 3 levels.
    from trivium.vision.ops import AnchorGenerator

    sizes = tuple(smallest * 2**level for level in range(5))
    layout = tuple((s,) for s in sizes) if per_level else (sizes,) * 3
    return AnchorGenerator(layout, ((0.5, 1.0, 2.0),) * len(layout))


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


_MODEL_TARGETS = ("boxes", "labels", "masks", "keypoints")


def _to_model(images: list[Tensor], targets: list[dict[str, Any]] | None, device: torch.device):
    """uint8 images -> float in [0, 1] on ``device``; targets' boxes, labels (masks,
    keypoints) as plain tensors there."""
    floats = [image.as_subclass(Tensor).to(device).float().div_(255) for image in images]
    if targets is None:
        return floats, None
    moved = [
        {k: t[k].as_subclass(Tensor).to(device) for k in _MODEL_TARGETS if k in t} for t in targets
    ]
    return floats, moved


def _model_iou_types(model: nn.Module) -> tuple[str, ...]:
    """The COCO evaluations of a model's outputs: boxes, and masks or keypoints."""
    from trivium.vision.models import KeypointRCNN, MaskRCNN

    if isinstance(model, MaskRCNN):
        return ("bbox", "segm")
    if isinstance(model, KeypointRCNN):
        return ("bbox", "keypoints")
    return ("bbox",)


def _metric_name(iou_type: str, name: str) -> str:
    """Box figures keep COCO's names (``AP``); the others are prefixed (``segm_AP``)."""
    return name if iou_type == "bbox" else f"{iou_type}_{name}"


class _Run(common.TrainingRun):
    """A detection run; :func:`train` drives it."""

    labels_key = "categories"
    speed_digits = 1

    def read_labels(self) -> dict[int, str]:
        config = self.config
        return read_categories(config.data_path, config.train_split, model_targets(config.model))

    def train_loader(self) -> Any:
        config = self.config
        targets = model_targets(config.model)
        transforms = train_transforms(config.augmentation, config.min_size, targets=targets)
        transforms.generator = torch.Generator().manual_seed(config.seed)
        dataset = open_split(
            config.data_path, config.train_split, transforms, config.on_error, targets=targets
        )
        return _loader(config, dataset, train=True)

    def new_model(self) -> nn.Module:
        config = self.config
        num_keypoints = None
        if model_targets(config.model) == "keypoints":
            num_keypoints = read_num_keypoints(config.data_path, config.train_split)
        return build_model(config, max(self.labels) + 1, num_keypoints)

    def loss(
        self, model: nn.Module, batch: tuple[list[Tensor], list[dict[str, Any]]]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        images, targets = _to_model(*batch, self.device)
        losses = model(images, targets)
        return sum(value.float() for value in losses.values()), losses

    def new_val_loader(self) -> Any:
        return _eval_loader(self.config, self.config.val_split, model_targets(self.config.model))

    def validate(self) -> dict[str, float] | None:
        last = self.epoch + 1 == self.config.epochs
        if not (last or (self.epoch + 1) % self.config.eval_every == 0):
            return None
        return _evaluate_model(self.model, self.validation_loader(), self.config, self.device)

    def results(self) -> dict[str, Any]:
        pipeline = DetectionPipeline(self.model, self.labels)
        write_prediction_grid(pipeline, self.config, self.dir / "predictions.png")
        names = [_metric_name("bbox", name) for name in ("AP", "AP50", "AP75", "AR100")]
        for iou_type in _model_iou_types(self.model)[1:]:
            names += [_metric_name(iou_type, name) for name in ("AP", "AP50", "AP75")]
        return {name: self.logger.last(f"val_{name}") for name in names}


# ---------------------------------------------------------------------------- public API


def train(
    config: DetectionConfig,
    *,
    resume: bool = False,
    show_progress: bool = True,
    stop_after_steps: int | None = None,
) -> dict[str, Any]:
    """Train, evaluate every ``eval_every`` epochs, write the run folder; returns the summary.

    With ``resume=True`` it continues from the run folder's checkpoint, with
    ``stop_after_steps`` it stops there (:func:`~trivium.pipelines.vision.common.fit`).

    Example:
        >>> DetectionConfig(batch_size=0)
        Traceback (most recent call last):
        ...
        ValueError: batch_size must be >= 1, got 0
    """
    run = _Run(config, show_progress)
    return common.fit(run, resume=resume, stop_after_steps=stop_after_steps)


def _eval_loader(config: DetectionConfig, split: str, targets: str = "boxes") -> Any:
    """The split's images in order; ``targets="keypoints"`` reads its keypoint annotations
    (evaluation needs only ``image_id``: masks are not decoded)."""
    targets = "keypoints" if targets == "keypoints" else "boxes"
    dataset = open_split(config.data_path, split, on_error=config.on_error, targets=targets)
    return _loader(config, dataset, train=False)


def _loader(config: DetectionConfig, dataset: Any, *, train: bool) -> Any:
    """``make_loader`` over ``dataset`` with the run's batch size, workers, seed and
    ``on_error``."""
    return make_loader(
        dataset,
        config.batch_size,
        train=train,
        workers=config.workers,
        seed=config.seed,
        on_error=config.on_error,
    )


@torch.no_grad()
def _evaluate_model(
    model: nn.Module, loader: Any, config: DetectionConfig, device: torch.device
) -> dict[str, float]:
    from trivium.vision.detection_eval import CocoEvaluator

    iou_types = _model_iou_types(model)
    targets = "keypoints" if "keypoints" in iou_types else "boxes"
    ann_file = annotation_file(config.data_path, config.val_split, targets)
    evaluators = {iou_type: CocoEvaluator(ann_file, iou_type) for iou_type in iou_types}
    with common.eval_mode(model):
        for images, targets in loader:
            inputs, _ = _to_model(images, None, device)
            with autocast(device, config.amp):
                outputs = model(inputs)
            predictions = {
                int(t["image_id"]): {k: v.float().cpu() for k, v in out.items()}
                for t, out in zip(targets, outputs, strict=True)
            }
            for evaluator in evaluators.values():
                evaluator.update(predictions)
    return {
        _metric_name(iou_type, name): value
        for iou_type, evaluator in evaluators.items()
        for name, value in evaluator.summarize().items()
    }


def evaluate(
    pipeline: DetectionPipeline | str | os.PathLike[str],
    data_path: str | os.PathLike[str],
    split: str = "val",
    *,
    batch_size: int = 4,
    workers: int = 2,
) -> dict[str, float]:
    """The 12 COCO figures (``AP``, ``AP50``, ``AP75``, ``APs`` ... ``ARl``) of ``data_path/split``.

    ``pipeline`` is a :class:`DetectionPipeline` or a checkpoint path. A Mask R-CNN
    adds the 12 figures of its masks (``segm_AP`` ... ``segm_ARl``), a Keypoint
    R-CNN the 10 of its keypoints (``keypoints_AP`` ... ``keypoints_ARl``).

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
    targets = "keypoints" if "keypoints" in _model_iou_types(pipeline.model) else "boxes"
    loader = _eval_loader(config, split, targets)
    return _evaluate_model(pipeline.model, loader, config, device)


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

    @torch.no_grad()
    def predict(
        self, images: Any, score_thresh: float = 0.0
    ) -> dict[str, Any] | list[dict[str, Any]]:
        """``{"boxes", "scores", "labels", "names"}`` per image, scores above ``score_thresh``."""
        items, single = common.as_images(images)
        device = next(self.model.parameters()).device
        with common.eval_mode(self.model):
            outputs = self.model(_to_model(items, None, device)[0])
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
    config = common.config_from_state(DetectionConfig, state)
    categories = {int(k): v for k, v in state["categories"].items()}
    # Keypoint R-CNN's keypoint count is its predictor's output channels (torchvision's key).
    predictor = state["model"].get("roi_heads.keypoint_predictor.kps_score_lowres.weight")
    num_keypoints = None if predictor is None else int(predictor.shape[1])
    model = build_model(config, max(categories) + 1, num_keypoints)
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
    """A PNG grid of ``count`` held-out images with their predicted boxes and labels (and masks).

    Each image is scaled so that its longer side is ``tile`` pixels (small images
    get legible labels), drawn, and padded to a ``tile`` square.

    Example:
        >>> write_prediction_grid  # doctest: +ELLIPSIS
        <function write_prediction_grid at ...>
    """
    from trivium.vision.transforms import Resize
    from trivium.vision.utils import (
        draw_bounding_boxes,
        draw_segmentation_masks,
        make_grid,
        save_image,
    )

    targets = "keypoints" if model_targets(config.model) == "keypoints" else "boxes"
    dataset = open_split(
        config.data_path, config.val_split, on_error=config.on_error, targets=targets
    )
    images = [dataset[i][0].as_subclass(Tensor) for i in common.spread_indices(len(dataset), count)]
    results = pipeline.predict(images, score_thresh)
    drawn = []
    for image, result in zip(images, results, strict=True):
        height, width = image.shape[-2:]
        scale = tile / max(height, width)
        if "masks" in result and len(result["masks"]):  # Mask R-CNN's, at the image's size
            image = draw_segmentation_masks(image, result["masks"][:, 0] > 0.5, alpha=0.5)
        image = Resize((round(height * scale), round(width * scale)))(image)
        labels = [f"{n} {s:.2f}" for n, s in zip(result["names"], result["scores"], strict=True)]
        boxed = image  # nothing above score_thresh: draw_bounding_boxes would warn
        if labels:
            boxes = result["boxes"] * scale
            boxed = draw_bounding_boxes(image, boxes, labels, width=2)
        pad = (0, tile - boxed.shape[-1], 0, tile - boxed.shape[-2])
        drawn.append(torch.nn.functional.pad(boxed, pad))
    path = common.output_file(path)
    save_image(make_grid(drawn, nrow=4, padding=4).float() / 255, path)
    return path
