"""CocoEvaluator against pycocotools' COCOeval run directly, on the detection corpus."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from trivium.vision.corpora import build_detection_corpus
from trivium.vision.detection_eval import COCO_METRICS, CocoEvaluator, coco_backend

pytest.importorskip("pycocotools", reason="pycocotools is not installed")
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

BACKENDS = ["pycocotools", "faster-coco-eval"]


def _backend(name: str) -> str:
    try:
        return coco_backend(name)
    except ImportError:
        pytest.skip(f"{name} is not installed")


@pytest.fixture(scope="module")
def ann_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_detection_corpus(
        tmp_path_factory.mktemp("eval"), num_train=0, num_val=16, progress_bar=False
    )
    return root / "annotations" / "instances_val.json"


def _by_image(ann_file: Path) -> tuple[dict, list[int]]:
    coco = json.loads(ann_file.read_text())
    by_image: dict[int, list[dict]] = {im["id"]: [] for im in coco["images"]}
    for ann in coco["annotations"]:
        by_image[ann["image_id"]].append(ann)
    return by_image, [c["id"] for c in coco["categories"]]


def _perfect(ann_file: Path) -> dict:
    by_image, _ = _by_image(ann_file)
    predictions = {}
    for image_id, anns in by_image.items():
        xywh = torch.tensor([a["bbox"] for a in anns], dtype=torch.float64).reshape(-1, 4)
        predictions[image_id] = {
            "boxes": torch.cat([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], dim=1),
            "scores": torch.ones(len(anns)),
            "labels": torch.tensor([a["category_id"] for a in anns]),
        }
    return predictions


def _jittered(ann_file: Path, seed: int = 0) -> tuple[dict, list[dict]]:
    """Ground truth moved at random, wrong labels and stray boxes; also as COCO results."""
    by_image, categories = _by_image(ann_file)
    rng = np.random.default_rng(seed)
    predictions, results = {}, []
    for image_id, anns in by_image.items():
        rows = []
        for ann in anns:
            x, y, w, h = ann["bbox"]
            for _ in range(3):
                dx0, dy0, dx1, dy1 = rng.normal(0, 0.1 * max(w, h), 4)
                label = ann["category_id"] if rng.random() < 0.8 else int(rng.choice(categories))
                rows.append([x + dx0, y + dy0, x + w + dx1, y + h + dy1, rng.random(), label])
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.uniform(0, 100, 2)
            w, h = rng.uniform(4, 60, 2)
            rows.append([x, y, x + w, y + h, rng.random() * 0.5, int(rng.choice(categories))])
        array = np.array(rows, dtype=np.float64).reshape(-1, 6)
        predictions[image_id] = {
            "boxes": torch.from_numpy(array[:, :4]).float(),
            "scores": torch.from_numpy(array[:, 4]).float(),
            "labels": torch.from_numpy(array[:, 5]).long(),
        }
        # What the evaluator hands COCOeval: the float32 values, as XYWH.
        boxes = predictions[image_id]["boxes"].double().numpy()
        scores = predictions[image_id]["scores"].double().numpy()
        for (x0, y0, x1, y1), score, label in zip(boxes, scores, array[:, 5], strict=True):
            results.append(
                {
                    "image_id": image_id,
                    "category_id": int(label),
                    "bbox": [x0, y0, x1 - x0, y1 - y0],
                    "score": score,
                }
            )
    return predictions, results


@pytest.mark.parametrize("backend", BACKENDS)
def test_perfect_predictions_score_one(ann_file: Path, backend: str) -> None:
    evaluator = CocoEvaluator(str(ann_file), backend=_backend(backend))
    evaluator.update(_perfect(ann_file))
    stats = evaluator.summarize()
    assert list(stats) == list(COCO_METRICS)
    for name in ("AP", "AP50", "AP75", "AR10", "AR100"):  # AR1: one box per image
        assert stats[name] == pytest.approx(1.0), name
    assert 0 < stats["AR1"] < 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_jittered_predictions_match_cocoeval_run_directly(ann_file: Path, backend: str) -> None:
    predictions, results = _jittered(ann_file)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(ann_file))
        reference = COCOeval(gt, gt.loadRes(results), "bbox")
        reference.evaluate()
        reference.accumulate()
        reference.summarize()
    evaluator = CocoEvaluator(gt, backend=_backend(backend))
    half = len(predictions) // 2
    evaluator.update(dict(list(predictions.items())[:half]))
    evaluator.update(dict(list(predictions.items())[half:]))
    stats = evaluator.summarize()
    assert 0.2 < stats["AP"] < 0.95  # a real evaluation, not a degenerate one
    np.testing.assert_allclose(list(stats.values()), reference.stats, rtol=0, atol=1e-12)


def test_backends_agree(ann_file: Path) -> None:
    for name in BACKENDS:
        _backend(name)
    predictions, _ = _jittered(ann_file, seed=1)
    figures = []
    for name in BACKENDS:
        evaluator = CocoEvaluator(ann_file, backend=name)
        evaluator.update(predictions)
        figures.append(list(evaluator.summarize().values()))
    np.testing.assert_allclose(figures[0], figures[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_predictions_score_zero(ann_file: Path, backend: str) -> None:
    by_image, _ = _by_image(ann_file)
    empty = {
        "boxes": torch.zeros(0, 4),
        "scores": torch.zeros(0),
        "labels": torch.zeros(0, dtype=torch.int64),
    }
    given = CocoEvaluator(ann_file, backend=_backend(backend))
    given.update(dict.fromkeys(by_image, empty))
    never = CocoEvaluator(ann_file, backend=backend)  # no update at all: every image
    for evaluator in (given, never):
        stats = evaluator.summarize()
        assert stats["AP"] == stats["AR100"] == 0.0
        assert all(v in (0.0, -1.0) for v in stats.values())


def test_quiet_unless_verbose(ann_file: Path, capsys: pytest.CaptureFixture) -> None:
    evaluator = CocoEvaluator(ann_file, backend=_backend("pycocotools"))
    evaluator.update(_perfect(ann_file))
    evaluator.summarize()
    assert capsys.readouterr().out == ""
    loud = CocoEvaluator(ann_file, backend="pycocotools", verbose=True)
    loud.summarize()
    assert "Average Precision" in capsys.readouterr().out


def test_bad_predictions_are_named(ann_file: Path) -> None:
    evaluator = CocoEvaluator(ann_file)
    one = {"boxes": [[0, 0, 5, 5]], "scores": [0.5], "labels": [1]}
    with pytest.raises(ValueError, match="image_id 12345 is not an image"):
        evaluator.update({12345: one})
    with pytest.raises(ValueError, match=r"labels \[0\] that are not category ids"):
        evaluator.update({1: {**one, "labels": [0]}})
    with pytest.raises(ValueError, match="1 boxes, 2 scores"):
        evaluator.update({1: {**one, "scores": [0.5, 0.1]}})
    with pytest.raises(ValueError, match="lacks"):
        evaluator.update({1: {"boxes": one["boxes"]}})
    evaluator.update({1: one})
    with pytest.raises(ValueError, match="already given"):
        evaluator.update({1: one})
    with pytest.raises(ValueError, match="backend"):
        CocoEvaluator(ann_file, backend="detectron")
    with pytest.raises(ValueError, match="iou_type"):
        CocoEvaluator(ann_file, iou_type="segm")
    with pytest.raises(TypeError, match="coco_gt_or_annFile"):
        CocoEvaluator(42)
