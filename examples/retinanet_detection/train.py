"""Train a RetinaNet object detector with torchvision's detection-reference flags.

``--data-path`` is a COCO-format folder: ``<split>/`` image folders and
``annotations/instances_<split>.json`` (for COCO 2017 add ``--train-split train2017
--val-split val2017``; ``--model maskrcnn_resnet50_fpn`` also learns and scores the
masks, ``--model keypointrcnn_resnet50_fpn`` the person keypoints of
``annotations/person_keypoints_<split>.json``). Without ``--data-path`` the embedded
detection corpus (shapes of several kinds, sizes, colours and rotations, 1-8 per image, on real
photo backgrounds) is generated into ``--corpus-dir`` first. The run folder
``--output-dir`` gets ``checkpoint.pt`` (exact mid-epoch resume with
``--resume``), ``metrics.csv``, ``metrics.json``, ``metrics.png`` (loss and mAP
curves), ``predictions.png`` (held-out images with the predicted boxes) and
``summary.json``.

Example::

    .venv/bin/python examples/retinanet_detection/train.py --demo --output-dir runs/det

torchvision's recipe for COCO (ResNet-50 FPN, 26 epochs)::

    .venv/bin/torchrun --nproc-per-node 8 examples/retinanet_detection/train.py \
        --data-path /data/coco --train-split train2017 --val-split val2017 \
        --model retinanet_resnet50_fpn --epochs 26 --lr 0.01 --lr-scheduler step \
        --lr-step-size 16 --amp

The ``--demo`` recipe (the embedded corpus on 2 CPU cores; see docs/guide/vision.md
for what it reaches and how long it takes) is :data:`DEMO`: a ResNet-18 FPN with a
narrow pyramid and heads, 128 px images, small anchors, AdamW with a cosine
schedule.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from trivium.pipelines.vision import detection
from trivium.pipelines.vision.cli import (
    config_from_args,
    parse_recipe_args,
    recipe_parser,
    run_recipe,
)
from trivium.pipelines.vision.detection import DetectionConfig

DEMO = {
    "model": "retinanet_resnet18_fpn",
    "fpn_channels": 64,
    "min_size": 128,
    "max_size": 128,
    "anchor_sizes": 16,
    "box_loss": "giou",
    "epochs": 15,
    "batch_size": 16,
    "opt": "adamw",
    "lr": 2e-3,
    "weight_decay": 0.05,
    "lr_scheduler": "cosine",
    "lr_warmup_epochs": 1,
    "clip_grad_norm": 10.0,
    "channels_last": True,
    "workers": 1,
    "eval_every": 3,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--help`` lists them, with their defaults)."""
    d = DetectionConfig()
    p = recipe_parser(
        __doc__,
        d,
        data_help="a COCO folder",
        corpus_dir="data/detection_corpus",
        model_help=detection.model_help(),
    )
    p.add_argument("--train-split", default=d.train_split, help="training image folder")
    p.add_argument("--val-split", default=d.val_split, help="held-out image folder")
    p.add_argument("--fpn-channels", type=int, default=d.fpn_channels, help="pyramid width")
    p.add_argument(
        "--weights-backbone", default=None, help="a local file of the ResNet's state dict"
    )
    p.add_argument(
        "--trainable-backbone-layers", type=int, default=d.trainable_backbone_layers,
        help="0-5 (default: 5 from scratch, 3 with backbone weights)",
    )  # fmt: skip
    p.add_argument("--min-size", type=int, default=d.min_size, help="shorter side, resized")
    p.add_argument("--max-size", type=int, default=d.max_size, help="longer side at most")
    p.add_argument("--anchor-sizes", type=int, default=d.anchor_sizes, help="0: torchvision's")
    p.add_argument(
        "--box-loss", default=d.box_loss, choices=["l1", "smooth_l1", "giou"],
        help="box regression loss",
    )  # fmt: skip
    p.add_argument("--clip-grad-norm", type=float, default=d.clip_grad_norm, help="0: off")
    p.add_argument(
        "--data-augmentation", dest="augmentation", default=d.augmentation,
        choices=["hflip", "multiscale", "ssd"], help="training augmentation preset",
    )  # fmt: skip
    p.add_argument("--score-thresh", type=float, default=d.score_thresh, help="detections")
    p.add_argument("--eval-every", type=int, default=d.eval_every, help="epochs")
    return parse_recipe_args(p, argv, DEMO, "the CPU demo recipe's defaults")


def prepare_corpus(corpus_dir: str | Path) -> Path:
    """The embedded detection corpus (COCO format), built once."""
    from trivium.vision.corpora import build_detection_corpus

    return Path(build_detection_corpus(corpus_dir))


def summary_rows(summary: dict, config: DetectionConfig, seconds: float) -> list[tuple[str, str]]:
    """The run in a few lines: model, throughput, mAP and time."""
    return [
        ("model", f"{config.model}, {config.epochs} epochs, {config.min_size} px images"),
        ("data", config.data_path),
        ("training throughput", f"{summary['train_images_per_s']:.1f} images/s"),
        ("held-out mAP@[.5:.95]", f"{summary['AP']:.3f}"),
        ("held-out mAP@0.5", f"{summary['AP50']:.3f}"),
        ("wall time", f"{seconds / 60:.1f} min"),
    ]


def main(argv: Sequence[str] | None = None) -> dict:
    """Train (or only evaluate) and print the summary; returns it."""
    start = time.perf_counter()
    args = parse_args(argv)
    data_path = args.data_path or str(prepare_corpus(args.corpus_dir))
    config = config_from_args(DetectionConfig, args, data_path)
    return run_recipe(detection, config, args, summary_rows, start, config.val_split)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
