"""A tiny COCO folder with instance masks and person keypoints, written by the tests.

:func:`write_tiny_coco` writes ``<root>/<split>/*.png`` and, per split,
``annotations/instances_<split>.json`` (persons and balls: polygon, compressed RLE
and, for a crowd, uncompressed RLE segmentations) and
``annotations/person_keypoints_<split>.json`` (the persons, with COCO's 17
keypoints, some not labelled). Shapes are drawn in the images in the colour of
their category, so the files are what a real COCO folder holds, at 64-96 pixels.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image
from pycocotools import mask as mask_util

__all__ = ["COCO_PERSON_KEYPOINTS", "write_tiny_coco"]

COCO_PERSON_KEYPOINTS = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle",
)  # fmt: skip
_SIZES = ((64, 80), (72, 64), (96, 72), (64, 64))  # (height, width) of images 1..4
_COLOURS = {1: (220, 60, 40), 2: (40, 90, 230)}


def _rle_str(mask: np.ndarray) -> dict:
    rle = mask_util.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": rle["size"], "counts": rle["counts"].decode("ascii")}


def _uncompressed_rle(mask: np.ndarray) -> dict:
    """COCO's uncompressed RLE: run lengths of 0s then 1s, column-major."""
    flat = mask.astype(np.uint8).flatten(order="F")
    counts, value, run = [], 0, 0
    for pixel in flat:
        if pixel != value:
            counts.append(run)
            value, run = pixel, 0
        run += 1
    counts.append(run)
    return {"size": list(mask.shape), "counts": counts}


def _is_uncompressed(segmentation: object) -> bool:
    return isinstance(segmentation, dict) and isinstance(segmentation["counts"], list)


def _keypoints(rng: np.random.Generator, box: tuple[int, int, int, int]) -> list[float]:
    x, y, w, h = box
    points = []
    for k in range(17):
        if k in (3, 4) or rng.random() < 0.1:  # unlabelled: COCO writes 0, 0, 0
            points += [0, 0, 0]
        else:
            px, py = rng.uniform(x + 1, x + w - 1), rng.uniform(y + 1, y + h - 1)
            points += [round(float(px), 1), round(float(py), 1), int(rng.choice([1, 2]))]
    return points


def _objects(image_id: int, height: int, width: int) -> list[tuple[int, dict, np.ndarray]]:
    """``(category, segmentation, mask)`` of each object: a person rectangle (polygon), a
    ball (compressed RLE) and, in image 3, a crowd of balls (uncompressed RLE)."""
    x0, y0 = 4 + 3 * image_id, 6 + 2 * image_id
    x1, y1 = x0 + width // 3, y0 + height // 2
    polygon = [[x0, y0, x1, y0, x1, y1, x0, y1]]
    person = mask_util.decode(mask_util.merge(mask_util.frPyObjects(polygon, height, width)))
    yy, xx = np.mgrid[:height, :width]
    cx, cy, r = width * 0.72, height * 0.7, min(height, width) / 6
    ball = ((xx - cx) ** 2 + (yy - cy) ** 2 <= r * r).astype(np.uint8)
    objects = [(1, polygon, person), (2, _rle_str(ball), ball)]
    if image_id == 3:
        crowd = np.zeros((height, width), np.uint8)
        crowd[height - 14 : height - 2, 2:20] = 1
        objects.append((2, _uncompressed_rle(crowd), crowd))
    return objects


def _split(root: Path, split: str, image_ids: list[int], rng: np.random.Generator) -> None:
    folder = root / split
    folder.mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for image_id in image_ids:
        height, width = _SIZES[image_id - 1]
        pixels = np.full((height, width, 3), 128, np.uint8)
        for category, segmentation, mask in _objects(image_id, height, width):
            pixels[mask.astype(bool)] = _COLOURS[category]
            rle = mask_util.encode(np.asfortranarray(mask))
            box = [float(v) for v in mask_util.toBbox(rle)]
            annotation = {
                "id": len(annotations) + 100 * image_id,
                "image_id": image_id,
                "category_id": category,
                "segmentation": segmentation,
                "area": float(mask_util.area(rle)),
                "bbox": box,
                "iscrowd": int(_is_uncompressed(segmentation)),
            }
            if category == 1:
                points = _keypoints(rng, tuple(int(v) for v in box))
                annotation["keypoints"] = points
                annotation["num_keypoints"] = sum(v > 0 for v in points[2::3])
            annotations.append(annotation)
        name = f"{image_id:06d}.png"
        Image.fromarray(pixels).save(folder / name)
        images.append({"id": image_id, "file_name": name, "height": height, "width": width})
    person = {
        "id": 1,
        "name": "person",
        "supercategory": "person",
        "keypoints": list(COCO_PERSON_KEYPOINTS),
        "skeleton": [[16, 14], [14, 12]],
    }
    ball = {"id": 2, "name": "ball", "supercategory": "thing"}
    instances = {"images": images, "annotations": annotations, "categories": [person, ball]}
    persons = [a for a in annotations if a["category_id"] == 1]
    keypoints = {"images": images, "annotations": persons, "categories": [person]}
    (root / "annotations").mkdir(exist_ok=True)
    (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(instances))
    (root / "annotations" / f"person_keypoints_{split}.json").write_text(json.dumps(keypoints))


def write_tiny_coco(root: str | Path, seed: int = 0) -> Path:
    """Write the folder under ``root`` (splits ``train``: images 1-4, ``val``: 3-4)."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    _split(root, "train", [1, 2, 3, 4], rng)
    _split(root, "val", [3, 4], rng)
    return root
