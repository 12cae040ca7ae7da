"""The image-classification pipeline end to end, on a small tree of JPEGs the tests make.

Two classes that need a feature, not a colour: horizontal against vertical stripes,
each in random colours. Runs are tiny (32-pixel crops, a handful of steps) but go
through everything a user's run does: ImageFolder or Parquet shards, the fused decode
in loader workers, checkpoints, resume after a kill, DDP under torchrun, evaluation,
prediction and the run folder's files.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys

import pytest
import torch
from pipelines.pipeline_runs import (
    assert_cut_run_matches,
    assert_same_weights,
    evaluated_by_example,
    loss_records,
    run_killed_and_resumed,
    stopped_and_resumed,
)

from trivium.core import DatasetError, load_checkpoint
from trivium.pipelines.vision import ClassificationConfig, evaluate, from_checkpoint, train
from trivium.vision.io import encode_jpeg

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "image_classification" / "train.py"


def stripes(vertical: bool, rng: random.Random) -> torch.Tensor:
    size = rng.randint(40, 56)
    period = rng.randint(4, 8)
    a = torch.tensor([rng.randint(0, 255) for _ in range(3)], dtype=torch.uint8)
    b = 255 - a
    index = torch.arange(size)
    on = (index // (period // 2)) % 2 == 0
    mask = on[None, :].expand(size, size) if vertical else on[:, None].expand(size, size)
    return torch.where(mask[None], a[:, None, None], b[:, None, None]).contiguous()


def write_tree(root: pathlib.Path, counts: dict[str, int], seed: int) -> None:
    rng = random.Random(seed)
    for split, count in counts.items():
        for name in ("horizontal", "vertical"):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                image = stripes(name == "vertical", rng)
                data = encode_jpeg(image, quality=90).numpy().tobytes()
                (folder / f"{i:03d}.jpg").write_bytes(data)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("stripes")
    write_tree(root, {"train": 24, "val": 8}, seed=0)
    return root


@pytest.fixture(scope="module")
def shards(tree: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    from trivium.pipelines.convert import convert_image_folder

    out = tmp_path_factory.mktemp("shards")
    for split in ("train", "val"):
        convert_image_folder(tree / split, out / split, rows_per_file=20, progress_bar=False)
    return out


def config(data: pathlib.Path, out: pathlib.Path, **kwargs) -> ClassificationConfig:
    values = {
        "data_path": str(data),
        "out_dir": str(out),
        "epochs": 2,
        "batch_size": 8,
        "lr": 0.05,
        "train_crop_size": 32,
        "val_resize_size": 36,
        "val_crop_size": 32,
        "workers": 0,
        "device": "cpu",
    }
    values.update(kwargs)
    return ClassificationConfig(**values)


def test_train_writes_the_run_folder_and_learns(tree: pathlib.Path, tmp_path: pathlib.Path) -> None:
    run = config(tree, tmp_path, epochs=4, workers=2, opt="adamw", lr=1e-3)
    summary = train(run, show_progress=False)
    for name in ("checkpoint.pt", "metrics.csv", "metrics.json", "metrics.png", "predictions.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert summary["steps"] == 4 * 48 // 8
    assert summary["top1"] >= 0.75  # chance is 0.5: it learned orientation, not colour
    assert summary["train_images_per_s"] > 0
    pipeline = from_checkpoint(tmp_path / "checkpoint.pt")
    assert evaluate(pipeline, tree, workers=0)["top1"] == summary["top1"]
    image = tree / "val" / "vertical" / "000.jpg"
    assert pipeline.predict(str(image))["label"] == "vertical"
    assert pipeline.predict(image.read_bytes())["label"] == "vertical"
    batch = pipeline.predict([str(image), str(tree / "val" / "horizontal" / "000.jpg")])
    assert [r["label"] for r in batch] == ["vertical", "horizontal"]


def test_image_folder_and_its_parquet_shards_train_identically(
    tree: pathlib.Path, shards: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    train(config(tree, tmp_path / "folder", epochs=1), show_progress=False)
    train(config(shards, tmp_path / "parquet", epochs=1, workers=2), show_progress=False)
    assert loss_records(tmp_path / "folder") == loss_records(tmp_path / "parquet")
    assert_same_weights(tmp_path / "folder", tmp_path / "parquet")


def test_resume_mid_epoch_equals_an_uninterrupted_run(
    tree: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    extra = {"mixup_alpha": 0.2, "cutmix_alpha": 1.0, "label_smoothing": 0.1}
    full = train(config(tree, tmp_path / "full", **extra), show_progress=False)
    cut = config(tree, tmp_path / "cut", workers=2, **extra)
    resumed = stopped_and_resumed(train, cut, full, tmp_path)
    assert resumed["top1"] == full["top1"]


def test_killed_run_resumes_from_its_last_checkpoint(
    tree: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """SIGKILL the example at a random moment after its first checkpoint, then --resume."""
    args = [
        sys.executable,
        str(EXAMPLE),
        "--data-path", str(tree),
        "--epochs", "2",
        "--batch-size", "8",
        "--lr", "0.05",
        "--train-crop-size", "32",
        "--val-resize-size", "36",
        "--val-crop-size", "32",
        "--workers", "1",
        "--device", "cpu",
        "--checkpoint-every", "1",
    ]  # fmt: skip
    run_killed_and_resumed(args, tmp_path)
    assert_cut_run_matches(tmp_path)
    metrics, summary = evaluated_by_example(args, tmp_path / "full")  # --test-only
    assert metrics["top1"] == pytest.approx(summary["top1"])
    assert metrics["images"] == 16  # the val split of the tree: 2 classes x 8


def test_a_mobilenet_trains_and_its_checkpoint_predicts(
    tree: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """A non-ResNet family end to end: steps, the checkpoint, and the model rebuilt from it."""
    run = config(tree, tmp_path, model="mobilenet_v3_small", opt="adamw", lr=1e-3)
    assert train(run, show_progress=False, stop_after_steps=3) == {"stopped_at_step": 3}
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["step"] == 3 and state["config"]["model"] == "mobilenet_v3_small"
    assert state["model"]["classifier.3.weight"].shape[0] == 2
    pipeline = from_checkpoint(tmp_path / "checkpoint.pt")
    assert type(pipeline.model).__name__ == "MobileNetV3"
    image = tree / "val" / "vertical" / "000.jpg"
    assert pipeline.predict(str(image))["label"] in ("horizontal", "vertical")
    with pytest.raises(ValueError, match="unknown classification model 'retinanet_resnet50_fpn'"):
        train(config(tree, tmp_path / "bad", model="retinanet_resnet50_fpn"), show_progress=False)


@pytest.mark.slow  # over 30 s; the quick tier keeps a smaller run of the same path
def test_recipe_options_run(tree: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """AdamW, warm-up, step schedule, auto-augment, AMP, channels-last and compile together."""
    run = config(
        tree,
        tmp_path,
        opt="adamw",
        lr=1e-3,
        lr_scheduler="step",
        lr_step_size=1,
        lr_warmup_epochs=1,
        auto_augment="ta_wide",
        amp=True,
        channels_last=True,
        compile=True,
    )
    assert train(run, show_progress=False, stop_after_steps=2) == {"stopped_at_step": 2}
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["step"] == 2 and state["config"]["compile"]
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


def test_bad_settings_and_data_raise_clear_errors(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="opt must be"):
        ClassificationConfig(opt="lamb")
    with pytest.raises(DatasetError, match="no 'train' split"):
        train(config(tmp_path, tmp_path / "run"), show_progress=False)
    from trivium.pipelines.vision.classification import build_model

    with pytest.raises(ValueError, match="unknown classification model 'vit_z_99'"):
        build_model("vit_z_99", 2)
    with pytest.raises(ValueError, match="unknown classification model 'retinanet_resnet50_fpn'"):
        build_model("retinanet_resnet50_fpn", 2)


def test_torchrun_ddp_two_processes_share_the_epoch(
    tree: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "ddp"
    args = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        str(EXAMPLE),
        "--data-path", str(tree), "--output-dir", str(out), "--epochs", "1",
        "--batch-size", "4", "--train-crop-size", "32", "--val-resize-size", "36",
        "--val-crop-size", "32", "--workers", "0", "--device", "cpu",
    ]  # fmt: skip
    env = {**os.environ, "TRIVIUM_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    subprocess.run(args, check=True, env=env, timeout=300, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 48 // (2 * 4)  # each rank its half of every step's samples
    state = load_checkpoint(out / "checkpoint.pt")
    assert state["loader"]["samples_consumed"] == 48


CORRUPT = ROOT / "tests" / "assets" / "images" / "corrupt"


@pytest.fixture
def damaged_tree(tree: pathlib.Path, tmp_path: pathlib.Path) -> tuple[pathlib.Path, list[str]]:
    """The stripes tree with a corrupt and a truncated JPEG in train/ and one in val/."""
    import shutil

    root = tmp_path / "damaged"
    shutil.copytree(tree, root)
    bad = [
        root / "train" / "vertical" / "zz-corrupt.jpg",
        root / "train" / "horizontal" / "zz-truncated.jpg",
        root / "val" / "vertical" / "zz-corrupt.jpg",
    ]
    bad[0].write_bytes((CORRUPT / "tv-corrupt.jpg").read_bytes())
    bad[1].write_bytes((CORRUPT / "pil-truncated_jpeg.jpg").read_bytes())
    bad[2].write_bytes((CORRUPT / "tv-corrupt.jpg").read_bytes())
    return root, [str(p) for p in bad]


def test_a_damaged_file_stops_the_run_naming_it(
    damaged_tree: tuple[pathlib.Path, list[str]], tmp_path: pathlib.Path
) -> None:
    from trivium.core import DecodeError

    root, bad = damaged_tree
    with pytest.raises(DecodeError) as caught:
        train(config(root, tmp_path / "run", epochs=1, workers=2), show_progress=False)
    assert caught.value.path in bad[:2]  # decoded in a worker's collate_fn: named still
    assert str(caught.value).startswith(f"{caught.value.path}: ")


def test_on_error_skip_names_the_skipped_files_each_epoch_and_in_the_run(
    damaged_tree: tuple[pathlib.Path, list[str]], tmp_path: pathlib.Path
) -> None:
    root, bad = damaged_tree
    out = tmp_path / "run"
    args = [sys.executable, str(EXAMPLE), "--data-path", str(root), "--epochs", "2"]
    args += ["--batch-size", "8", "--train-crop-size", "32", "--val-resize-size", "36"]
    args += ["--val-crop-size", "32", "--workers", "2", "--device", "cpu", "--lr", "0.01"]
    args += ["--output-dir", str(out), "--on-error", "skip"]
    env = {**os.environ, "TRIVIUM_PROGRESS": "0"}
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    for epoch in (1, 2):  # printed at each epoch's end, every file named
        block = done.stdout.split(f"epoch {epoch}: ", 1)[1]
        assert all(path in block.split("epoch ", 1)[0] for path in bad), done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary["data"]["skipped_files"]) == sorted(bad)
    metrics = json.loads((out / "metrics.json").read_text())
    counts = [value for _, name, value in metrics["records"] if name == "data_skipped_files"]
    assert counts == [3.0, 3.0]


def test_a_damaged_row_of_a_parquet_shard_is_named_by_shard_and_row(
    tmp_path: pathlib.Path,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trivium.core import DecodeError

    rng = random.Random(1)
    for split in ("train", "val"):
        images, labels = [], []
        for i in range(16):
            images.append(encode_jpeg(stripes(i % 2 == 1, rng)).numpy().tobytes())
            labels.append(i % 2)
        if split == "train":
            images[5] = (CORRUPT / "tv-corrupt.jpg").read_bytes()
        names = ["horizontal" if label == 0 else "vertical" for label in labels]
        table = pa.table({"image": images, "label": labels, "class_name": names})
        (tmp_path / split).mkdir()
        pq.write_table(table, tmp_path / split / "part-0.parquet")
    shard = tmp_path / "train" / "part-0.parquet"
    with pytest.raises(DecodeError) as caught:
        train(config(tmp_path, tmp_path / "run", epochs=1, workers=1), show_progress=False)
    assert caught.value.path == str(shard)
    assert str(caught.value).startswith(f"{shard}: row 5: ")
    summary = train(
        config(tmp_path, tmp_path / "skip", epochs=1, workers=1, on_error="skip"),
        show_progress=False,
    )
    assert summary["data"]["skipped_files"].keys() == {f"{shard}, row 5"}
