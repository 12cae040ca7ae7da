"""The image-classification training input pipeline against torchvision's, in one process.

One epoch of 1024 JPEGs (~500x400, 8 class folders) read as a training loop reads
them with the model step replaced by a no-op: an ImageFolder tree, RandomResizedCrop
224 + horizontal flip + float + Normalize, batches of 64, 2 loader workers kept
across epochs (``persistent_workers=True``) on both sides.

- ours: what ``trivium.pipelines.vision.classification`` trains on:
  ``ImageFolder`` giving the encoded bytes and ``TrainBatch`` as the collate function
  in ``trivium.data.DataLoader`` workers: the batch's crop boxes and flips drawn,
  then image by image ``DecodeRandomResizedCrop`` (only the crop's region, at a DCT
  scale), the flip and scale + Normalize into its slot of the float batch, a
  shared-memory buffer the worker reuses once the main process has dropped it;
- torchvision: ``torchvision.datasets.ImageFolder`` with the ``transforms.v2``
  pipeline ``RandomResizedCrop(224)``, ``RandomHorizontalFlip``, ``ToImage``,
  ``ToDtype(float32, scale=True)``, ``Normalize`` in torch's ``DataLoader`` (the
  reference scripts' pipeline; Pillow decodes).

Ratio = torchvision's epoch time / ours (above 1: we are faster). Run from the
repository root::

    .venv/bin/python benchmarks/classification.py [--repeats N] [--min-time S] [--json PATH]
"""

from __future__ import annotations

import functools
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import harness
import torch
from data import epochs_of, make_image_folder, torch_epoch

from trivium.pipelines.vision.classification_data import TrainBatch, make_loader, open_split
from trivium.vision.transforms.presets import IMAGENET_MEAN, IMAGENET_STD

BATCH = 64
WORKERS = 2
CROP = 224
# The labels of an epoch of float batches of CROP x CROP images.
labels_of = functools.partial(harness.epoch_labels, dtype=torch.float32, size=CROP)


def ours(folder: Path) -> Callable[[], Counter]:
    """One call: one epoch of the pipeline's own training loader."""
    dataset = open_split(folder.parent, folder.name)  # (JPEG bytes, label) samples
    loader = make_loader(
        dataset, BATCH, train=True, workers=WORKERS, seed=0, collate_fn=TrainBatch(CROP)
    )
    return epochs_of(loader, labels_of)


def torchvision_side(tv, folder: Path) -> Callable[[], Counter]:
    """One call: one epoch of torchvision's ImageFolder + v2 pipeline in torch's loader."""
    T = tv.transforms.v2
    transform = T.Compose(
        [
            T.RandomResizedCrop(CROP, antialias=True),
            T.RandomHorizontalFlip(),
            T.ToImage(),
            T.ToDtype(torch.float32, scale=True),
            T.Normalize(IMAGENET_MEAN, IMAGENET_STD),
        ]
    )
    dataset = tv.datasets.ImageFolder(str(folder), transform)
    return torch_epoch(dataset, True, BATCH, drop_last=True, read=labels_of)


def main(argv: Sequence[str] | None = None) -> int:
    """Time both pipelines, print the table (and write JSON with ``--json``)."""
    parser = harness.benchmark_parser(__doc__.splitlines()[0], ["epoch"], repeats=5, min_time=0.5)
    args = harness.parse_benchmark_args(parser, ["epoch"], argv)
    run = harness.Session(args)
    tv, tv_status = harness.load_peer(harness.peers.import_torchvision)
    torch.set_num_threads(1)  # the work is in the loader workers
    run.header(
        "image-classification input pipeline", harness.machine_info(1, torchvision=tv_status)
    )
    rows, checks = run.rows, run.checks
    with tempfile.TemporaryDirectory(prefix="trivium-cls-bench-") as tmp:
        folder = Path(tmp) / "images"
        files = make_image_folder(folder)
        sides = [harness.Side("ours", ours(folder))]
        if tv is not None:
            sides.append(harness.Side("torchvision", torchvision_side(tv, folder)))
        per_epoch = len(files) // BATCH * BATCH
        counts = {side.name: sum(side.fn().values()) for side in sides}
        checks.append(f"images per epoch (drop_last): {counts} of {per_epoch}")
        timings = harness.measure(sides, args.repeats, args.min_time)
        workload = (
            f"1 epoch, {len(files)} JPEGs ~500x400: ImageFolder, RandomResizedCrop {CROP} + "
            f"flip + float + Normalize, batch {BATCH}, {WORKERS} workers, model step no-op"
        )
        label = f"{tv_status} ImageFolder + v2" if tv is not None else "torchvision"
        rows.append(
            harness.row_from(
                workload, timings, "ours", "torchvision", label, 2.0, missing=tv_status
            )
        )
        for side in sides:
            rate = per_epoch / timings[side.name].median
            checks.append(f"{side.name}: {rate:.0f} images/s")
    return run.report()


if __name__ == "__main__":
    sys.exit(main())
