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
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from trivium.vision.pipelines import ClassificationConfig, evaluate, from_checkpoint, train

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
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--data-path", default=None, help="train/ and val/ (default: the corpus)")
    p.add_argument("--corpus-dir", default="data/image_corpus", help="embedded corpus folder")
    p.add_argument("--output-dir", default=d.out_dir, help="the run folder")
    p.add_argument("--model", default=d.model, help="a trivium.vision.models builder")
    p.add_argument("--epochs", type=int, default=d.epochs, help="passes over train/")
    p.add_argument("-b", "--batch-size", type=int, default=d.batch_size, help="per process")
    p.add_argument("--opt", default=d.opt, choices=["sgd", "adamw"], help="optimizer")
    p.add_argument("--lr", type=float, default=d.lr, help="peak learning rate")
    p.add_argument("--momentum", type=float, default=d.momentum, help="SGD momentum")
    p.add_argument(
        "--wd", "--weight-decay", dest="weight_decay", type=float, default=d.weight_decay,
        help="weight decay",
    )  # fmt: skip
    p.add_argument(
        "--lr-scheduler", default=d.lr_scheduler, choices=["cosine", "step", "constant"],
        help="schedule after the warm-up, per iteration",
    )  # fmt: skip
    p.add_argument("--lr-warmup-epochs", type=int, default=d.lr_warmup_epochs, help="warm-up")
    p.add_argument("--lr-warmup-decay", type=float, default=d.lr_warmup_decay, help="start lr")
    p.add_argument("--lr-step-size", type=int, default=d.lr_step_size, help="step schedule")
    p.add_argument("--lr-gamma", type=float, default=d.lr_gamma, help="step schedule factor")
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
    p.add_argument("--amp", action="store_true", help="mixed precision (bfloat16 on CPU)")
    p.add_argument("--channels-last", action="store_true", help="channels-last memory format")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("-j", "--workers", type=int, default=d.workers, help="loader workers")
    p.add_argument("--seed", type=int, default=d.seed, help="model, order and augmentations")
    p.add_argument("--device", default=d.device, help="auto, cpu, cuda, cuda:1, ...")
    p.add_argument(
        "--checkpoint-every", type=int, default=d.checkpoint_every, help="steps; 0: per epoch"
    )
    p.add_argument("--resume", action="store_true", help="continue from the run folder")
    p.add_argument("--test-only", action="store_true", help="evaluate the run's checkpoint")
    p.add_argument("--demo", action="store_true", help="the make demo recipe's defaults")
    if p.parse_known_args(argv)[0].demo:  # the recipe's values; flags given still win
        p.set_defaults(**DEMO)
    return p.parse_args(argv)


def prepare_corpus(corpus_dir: str | Path) -> Path:
    """The embedded image corpus as Parquet shards (``train/``, ``val/``); built once."""
    from trivium.data.convert import convert_image_folder
    from trivium.vision.corpus import build_image_corpus

    images = build_image_corpus(Path(corpus_dir) / "images")
    shards = Path(corpus_dir) / "shards"
    for split in ("train", "val"):
        done = shards / split / "_SUCCESS"
        if not done.is_file():
            convert_image_folder(images / split, shards / split)
            done.write_text("")
    return shards


def config_of(args: argparse.Namespace, data_path: str) -> ClassificationConfig:
    """The run's settings from the options."""
    names = set(ClassificationConfig.__dataclass_fields__)
    values = {k: v for k, v in vars(args).items() if k in names}
    values.update(data_path=data_path, out_dir=args.output_dir)
    return ClassificationConfig(**values)


def print_summary(summary: dict, config: ClassificationConfig, seconds: float) -> None:
    """The run in a few lines: model, throughput, accuracy, time and where the files are."""
    rows = [
        ("model", f"{config.model}, {config.epochs} epochs, {config.train_crop_size} px crops"),
        ("data", config.data_path),
        ("training throughput", f"{summary['train_images_per_s']:.0f} images/s"),
        ("top-1 on the held-out split", f"{100 * summary['top1']:.1f} %"),
        ("top-5", f"{100 * summary['top5']:.1f} %"),
        ("wall time", f"{seconds / 60:.1f} min"),
        ("run folder", summary["run_dir"]),
    ]
    rows += [(f"  {Path(path).name}", "") for path in summary["files"].values()]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main(argv: Sequence[str] | None = None) -> dict:
    """Train (or only evaluate) and print the summary; returns it."""
    start = time.perf_counter()
    args = parse_args(argv)
    data_path = args.data_path or str(prepare_corpus(args.corpus_dir))
    config = config_of(args, data_path)
    if args.test_only:
        summary = evaluate(from_checkpoint(Path(config.out_dir) / "checkpoint.pt"), data_path)
        print(json.dumps(summary, indent=1))
        return summary
    summary = train(config, resume=args.resume)
    if "top1" in summary:  # rank 0 of the run
        print_summary(summary, config, time.perf_counter() - start)
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
