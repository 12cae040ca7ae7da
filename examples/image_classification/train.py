"""Train an image classifier (ResNet) with torchvision's reference-recipe flags.

``--data-path`` holds ``train/`` and ``val/``, each an ImageFolder tree
(``<class>/<image>``) or the Parquet shards ``trivium-data convert image-folder``
writes from one. Without ``--data-path`` the embedded image corpus (10 shape ×
texture classes on real photo backgrounds) is generated into ``--corpus-dir``
and converted to Parquet shards first. The run folder ``--output-dir`` gets
``checkpoint.pt`` (exact mid-epoch resume with ``--resume``), ``metrics.csv``,
``metrics.json``, ``metrics.png``, ``predictions.png`` and ``summary.json``.

Example::

    .venv/bin/python examples/image_classification/train.py --output-dir runs/cls

Several processes (DDP, one data shard each)::

    .venv/bin/torchrun --nproc-per-node 2 examples/image_classification/train.py --workers 1

The recipe of ``make demo`` (the embedded corpus: ~95 % held-out top-1 in about 3 minutes on
2 CPU cores)::

    .venv/bin/python examples/image_classification/train.py --model resnet18 --epochs 20 \
        --batch-size 64 --opt adamw --lr 3e-3 --weight-decay 0.05 --lr-warmup-epochs 1 \
        --label-smoothing 0.1 --channels-last --train-crop-size 64 \
        --train-crop-scale-min 0.35 --val-resize-size 72 --val-crop-size 64
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from trivium.pipelines.vision import classification
from trivium.pipelines.vision.classification import ClassificationConfig
from trivium.pipelines.vision.cli import (
    config_from_args,
    parse_recipe_args,
    recipe_parser,
    run_recipe,
)

DEMO = {
    "model": "resnet18",
    "epochs": 20,
    "batch_size": 64,
    "opt": "adamw",
    "lr": 3e-3,
    "weight_decay": 0.05,
    "lr_warmup_epochs": 1,
    "label_smoothing": 0.1,
    "channels_last": True,
    "train_crop_size": 64,
    "train_crop_scale_min": 0.35,
    "val_resize_size": 72,
    "val_crop_size": 64,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--help`` lists them, with their defaults)."""
    d = ClassificationConfig()
    p = recipe_parser(
        __doc__,
        d,
        data_help="train/ and val/",
        corpus_dir="data/image_corpus",
        model_help=classification.model_help(),
    )
    p.add_argument("--label-smoothing", type=float, default=d.label_smoothing, help="0: off")
    p.add_argument("--mixup-alpha", type=float, default=d.mixup_alpha, help="0: no MixUp")
    p.add_argument("--cutmix-alpha", type=float, default=d.cutmix_alpha, help="0: no CutMix")
    p.add_argument(
        "--auto-augment", default=None, help="ra, ta_wide, augmix, imagenet, cifar10 or svhn"
    )
    p.add_argument("--train-crop-size", type=int, default=d.train_crop_size, help="train crop")
    p.add_argument(
        "--train-crop-scale-min", type=float, default=d.train_crop_scale_min,
        help="smallest crop area (RandomResizedCrop's scale)",
    )  # fmt: skip
    p.add_argument("--val-resize-size", type=int, default=d.val_resize_size, help="val resize")
    p.add_argument("--val-crop-size", type=int, default=d.val_crop_size, help="val crop")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    return parse_recipe_args(p, argv, DEMO, "the make demo recipe's defaults")


def prepare_corpus(corpus_dir: str | Path) -> Path:
    """The embedded image corpus as Parquet shards (``train/``, ``val/``); built once."""
    from trivium.pipelines.convert import convert_image_folder
    from trivium.vision.corpora import build_image_corpus

    images = build_image_corpus(Path(corpus_dir) / "images")
    shards = Path(corpus_dir) / "shards"
    for split in ("train", "val"):
        done = shards / split / "_SUCCESS"
        if not done.is_file():
            convert_image_folder(images / split, shards / split)
            done.write_text("")
    return shards


def summary_rows(
    summary: dict, config: ClassificationConfig, seconds: float
) -> list[tuple[str, str]]:
    """The run in a few lines: model, throughput, accuracy and time."""
    return [
        ("model", f"{config.model}, {config.epochs} epochs, {config.train_crop_size} px crops"),
        ("data", config.data_path),
        ("training throughput", f"{summary['train_images_per_s']:.0f} images/s"),
        ("top-1 on the held-out split", f"{100 * summary['top1']:.1f} %"),
        ("top-5", f"{100 * summary['top5']:.1f} %"),
        ("wall time", f"{seconds / 60:.1f} min"),
    ]


def main(argv: Sequence[str] | None = None) -> dict:
    """Train (or only evaluate) and print the summary; returns it."""
    start = time.perf_counter()
    args = parse_args(argv)
    data_path = args.data_path or str(prepare_corpus(args.corpus_dir))
    config = config_from_args(ClassificationConfig, args, data_path)
    return run_recipe(classification, config, args, summary_rows, start)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
