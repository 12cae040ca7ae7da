"""The detection pipeline end to end, on a small embedded corpus the tests build.

Runs are tiny (64-pixel images, a narrow ResNet-18 FPN, a handful of steps) but go
through everything a user's run does: CocoDetection samples through box-aware
transforms in loader workers, checkpoints, resume mid-epoch and after a kill,
COCO evaluation, prediction and the run folder's files.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest
from pipelines.pipeline_runs import (
    assert_cut_run_matches,
    evaluated_by_example,
    run_killed_and_resumed,
    stopped_and_resumed,
)

from trivium.pipelines.vision.detection import (
    DetectionConfig,
    evaluate,
    from_checkpoint,
    train,
)

pytest.importorskip("pycocotools")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "retinanet_detection" / "train.py"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    from trivium.vision.corpora import build_detection_corpus

    root = tmp_path_factory.mktemp("shapes")
    return pathlib.Path(
        build_detection_corpus(root, num_train=24, num_val=6, image_size=64, progress_bar=False)
    )


def config(data: pathlib.Path, out: pathlib.Path, **kwargs) -> DetectionConfig:
    values = {
        "data_path": str(data),
        "out_dir": str(out),
        "model": "retinanet_resnet18_fpn",
        "fpn_channels": 32,
        "min_size": 64,
        "max_size": 64,
        "anchor_sizes": 8,
        "epochs": 2,
        "batch_size": 4,
        "opt": "adamw",
        "lr": 1e-3,
        "lr_scheduler": "cosine",
        "workers": 0,
        "device": "cpu",
    }
    values.update(kwargs)
    return DetectionConfig(**values)


def test_train_writes_the_run_folder(corpus: pathlib.Path, tmp_path: pathlib.Path) -> None:
    summary = train(config(corpus, tmp_path, workers=2, channels_last=True), show_progress=False)
    for name in ("checkpoint.pt", "metrics.csv", "metrics.json", "metrics.png", "predictions.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert summary["steps"] == 2 * 24 // 4
    assert 0.0 <= summary["AP"] <= summary["AP50"] <= 1.0
    names = {name for _, name, _ in json.loads((tmp_path / "metrics.json").read_text())["records"]}
    assert {"loss", "classification", "bbox_regression", "lr", "val_AP", "val_AP50"} <= names
    pipeline = from_checkpoint(tmp_path / "checkpoint.pt")
    assert evaluate(pipeline, corpus, workers=0)["AP"] == pytest.approx(summary["AP"])
    image = sorted((corpus / "val").glob("*.jpg"))[0]
    for given in (str(image), image.read_bytes()):
        result = pipeline.predict(given)
        assert result["boxes"].shape[1] == 4 and len(result["names"]) == len(result["labels"])


def test_resume_mid_epoch_equals_an_uninterrupted_run(
    corpus: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    full = train(config(corpus, tmp_path / "full"), show_progress=False)
    cut = config(corpus, tmp_path / "cut", workers=2)
    resumed = stopped_and_resumed(train, cut, full, tmp_path)
    assert resumed["AP"] == pytest.approx(full["AP"], abs=1e-6)


@pytest.mark.slow  # over 30 s; the quick tier keeps a smaller run of the same path
def test_killed_run_resumes_from_its_last_checkpoint(
    corpus: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """SIGKILL the example at a random moment after its first checkpoint, then --resume."""
    args = [
        sys.executable,
        str(EXAMPLE),
        "--data-path", str(corpus),
        "--model", "retinanet_resnet18_fpn",
        "--fpn-channels", "32",
        "--min-size", "64",
        "--max-size", "64",
        "--anchor-sizes", "8",
        "--epochs", "2",
        "--batch-size", "4",
        "--opt", "adamw",
        "--lr", "1e-3",
        "--workers", "1",
        "--device", "cpu",
        "--checkpoint-every", "1",
    ]  # fmt: skip
    run_killed_and_resumed(args, tmp_path)
    assert_cut_run_matches(tmp_path)
    metrics, summary = evaluated_by_example(args, tmp_path / "full")  # --test-only
    assert metrics["AP"] == pytest.approx(summary["AP"], abs=1e-6)
    assert len(metrics) == 12  # the COCO figures


@pytest.mark.parametrize("augmentation", ["multiscale", "ssd"])
def test_augmentation_presets_and_amp_run(
    corpus: pathlib.Path, tmp_path: pathlib.Path, augmentation: str
) -> None:
    run = config(corpus, tmp_path, augmentation=augmentation, amp=True, clip_grad_norm=1.0)
    assert train(run, show_progress=False, stop_after_steps=2) == {"stopped_at_step": 2}


def test_example_help_and_bad_data_path(tmp_path: pathlib.Path) -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--help"], check=True, capture_output=True, text=True
    ).stdout
    assert "--data-path" in out and "--resume" in out and "--amp" in out
    for name in (
        "retinanet_resnet50_fpn_v2",
        "fcos_resnet50_fpn",
        "ssd300_vgg16",
        "maskrcnn_resnet50_fpn_v2",
        "keypointrcnn_resnet50_fpn",
    ):
        assert name in out  # the builders --model takes
    with pytest.raises(FileNotFoundError, match=r"instances_train\.json"):
        train(config(tmp_path, tmp_path / "run"), show_progress=False)


def test_on_error_reaches_the_dataset_and_the_loader(corpus: pathlib.Path) -> None:
    from trivium.pipelines.vision.detection import _eval_loader

    run = config(corpus, corpus / "unused", on_error="skip")
    loader = _eval_loader(run, run.val_split)
    assert loader.on_error == "skip" and loader.dataset.on_error == "skip"
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip'"):
        config(corpus, corpus / "unused", on_error="ignore")


@pytest.mark.slow
@pytest.mark.parametrize("model", ["fcos_resnet50_fpn", "ssdlite320_mobilenet_v3_large"])
def test_other_detectors_train(corpus: pathlib.Path, tmp_path: pathlib.Path, model: str) -> None:
    run = config(corpus, tmp_path, model=model, fpn_channels=256, anchor_sizes=0, batch_size=2)
    assert train(run, show_progress=False, stop_after_steps=1) == {"stopped_at_step": 1}


def test_retinanet_options_are_refused_for_other_detectors() -> None:
    from trivium.pipelines.vision.detection import build_model

    bad = DetectionConfig(model="ssd300_vgg16", fpn_channels=32, box_loss="giou")
    with pytest.raises(ValueError, match=r"fpn_channels=32, box_loss='giou': RetinaNet options"):
        build_model(bad, 3)
    with pytest.raises(ValueError, match="unknown detection model 'resnet50'"):
        build_model(DetectionConfig(model="resnet50"), 3)


@pytest.mark.slow
def test_faster_rcnn_trains_and_predicts(corpus: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Faster R-CNN builders (``--model fasterrcnn_resnet50_fpn``): the run, its losses."""
    from trivium.pipelines.vision.detection import DetectionPipeline, build_model

    run = config(corpus, tmp_path, model="fasterrcnn_mobilenet_v3_large_320_fpn", fpn_channels=256)
    assert train(run, show_progress=False, stop_after_steps=1) == {"stopped_at_step": 1}
    names = {name for _, name, _ in json.loads((tmp_path / "metrics.json").read_text())["records"]}
    assert {"loss", "loss_classifier", "loss_box_reg", "loss_objectness"} <= names
    model = build_model(run, 5)
    assert model.rpn.anchor_generator.sizes == ((8, 16, 32, 64, 128),) * 3
    image = sorted((corpus / "val").glob("*.jpg"))[0]
    result = DetectionPipeline(model, {i: str(i) for i in range(1, 5)}).predict(str(image))
    assert result["boxes"].shape[1] == 4
    resnet = config(corpus, tmp_path, model="fasterrcnn_resnet50_fpn", fpn_channels=256)
    model = build_model(resnet, 5)
    assert model.rpn.anchor_generator.sizes == ((8,), (16,), (32,), (64,), (128,))
    assert model.roi_heads.box_predictor.cls_score.out_features == 5
    assert model.transform.min_size == (64,) and model.roi_heads.score_thresh == 0.05
    with pytest.raises(ValueError, match="fpn_channels=32: RetinaNet options"):
        build_model(config(corpus, tmp_path, model="fasterrcnn_resnet50_fpn"), 5)
    with pytest.raises(ValueError, match=r"unknown detection model 'resnet50'.*fasterrcnn"):
        build_model(config(corpus, tmp_path, model="resnet50"), 5)
