"""An embedded object-detection corpus in COCO format: shapes on real photos, no download.

:func:`build_detection_corpus` writes a deterministic COCO-style tree that
:class:`trivium.vision.datasets.CocoDetection` (or torchvision's, or pycocotools)
reads::

    root/train/000001.jpg ...             root/val/000001.jpg ...
    root/annotations/instances_train.json root/annotations/instances_val.json
    root/corpus.json                      (the settings, to reuse a finished corpus)

Each image holds 1 to ``max_objects`` objects on a crop of one of the real photos
the classification corpus uses (``corpora/backgrounds/``, see its README):

* Six classes (:data:`DETECTION_SHAPES`, category ids 1-6 in that order): circle,
  square, triangle, star, cross and ring, each in one colour, softly shaded,
  rotated at random, with an antialiased edge.
* Sizes: the larger side of an object's box spans ``object_size`` (by default
  12-60 %) of the image's shorter side. Objects lie wholly inside the image.
* Colours are drawn until the object stands out from what lies under it (the
  background and the objects it covers), so every object is clearly visible.
* Occlusion: later objects are drawn over earlier ones. A placement that would
  leave an earlier object less than ``min_visible`` (default 70 %) visible is
  drawn again (up to 10 tries, then the object is left out), so no object is
  mostly hidden and every visible object is annotated.
* Annotations are *amodal*: ``bbox`` (XYWH floats, pixel-edge coordinates: a
  pixel ``i`` spans ``[i, i + 1]``) is the tight box of the whole shape, also
  where a later object covers part of it, ``segmentation`` is the shape's polygon
  (circles and rings as 48-gons; a ring is one polygon that runs round the outer
  edge and back round the inner one, so its mask has the hole), ``area`` the
  shape's exact area, ``iscrowd`` 0.

Every image's content comes from :func:`plan_detection_corpus` and
:func:`render_detection_image`, deterministic in ``seed``: the same arguments give
the same bytes on every run (on one machine and torch build).

Example:
    >>> import json, tempfile
    >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=4, num_val=2)
    >>> coco = json.loads((root / "annotations" / "instances_val.json").read_text())
    >>> len(coco["images"]), [c["name"] for c in coco["categories"]][:3]
    (2, ['circle', 'square', 'triangle'])
"""

from __future__ import annotations

import colorsys
import json
import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import Tensor

from trivium.vision.corpora import shapes as outline
from trivium.vision.corpora.assets import background, corpus_settings, write_manifest
from trivium.vision.corpora.build import (
    SPLITS,
    check_range,
    distinct_names,
    render_all,
    reuse_or_clear,
)
from trivium.vision.io import encode_jpeg, write_file

__all__ = [
    "DETECTION_SHAPES",
    "DetectionImageSpec",
    "build_detection_corpus",
    "plan_detection_corpus",
    "render_detection_image",
]

DETECTION_SHAPES = ("circle", "square", "triangle", "star", "cross", "ring")

_FORMAT_VERSION = 1
_ANNOTATIONS = "annotations"
_TRIES = 10  # placements tried per object
_ROUND_VERTICES = 48
_RING_INNER = 0.55  # inner radius of a ring, as a fraction of the outer one
_STAR_INNER = 0.45
_CROSS_HALF_WIDTH = 0.3
_SHADE = 0.2  # brightness varies by up to +-20 % across an object
_MIN_CONTRAST = 0.4  # RGB distance (in [0, 1] units) most pixels under an object must have


@dataclass(frozen=True)
class DetectionImageSpec:
    """One image of the corpus: its split, id, size, JPEG quality, seed and object settings.

    Example:
        >>> spec = plan_detection_corpus(1, 0)[0]
        >>> spec.path, spec.image_id, (spec.height, spec.width)
        ('train/000001.jpg', 1, (128, 128))
    """

    split: str
    image_id: int
    height: int
    width: int
    quality: int
    seed: int
    shapes: tuple[str, ...] = DETECTION_SHAPES
    max_objects: int = 8
    object_size: tuple[float, float] = (0.12, 0.6)
    min_visible: float = 0.7

    @property
    def file_name(self) -> str:
        """The file's name in its split's folder (COCO's ``file_name``).

        Example:
            >>> plan_detection_corpus(0, 12)[11].file_name
            '000012.jpg'
        """
        return f"{self.image_id:06d}.jpg"

    @property
    def path(self) -> str:
        """``<split>/<file_name>``, relative to the corpus root.

        Example:
            >>> plan_detection_corpus(0, 1)[0].path
            'val/000001.jpg'
        """
        return f"{self.split}/{self.file_name}"


def _check_size(image_size: int | tuple[int, int]) -> tuple[int, int]:
    size = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
    if len(size) != 2 or not all(isinstance(s, int) and 32 <= s <= 4096 for s in size):
        raise ValueError(
            f"image_size must be a side or (height, width) in [32, 4096], got {image_size!r}"
        )
    return size


def plan_detection_corpus(
    num_train: int = 2000,
    num_val: int = 300,
    image_size: int | tuple[int, int] = 128,
    seed: int = 0,
    *,
    quality: int | tuple[int, int] = (75, 95),
    shapes: Sequence[str] = DETECTION_SHAPES,
    max_objects: int = 8,
    object_size: tuple[float, float] = (0.12, 0.6),
    min_visible: float = 0.7,
) -> list[DetectionImageSpec]:
    """The images of the corpus, train then val, with image ids from 1 in each split.

    Arguments are :func:`build_detection_corpus`'s; every image gets its own seed
    and JPEG quality (drawn from ``quality``).

    Example:
        >>> plan = plan_detection_corpus(3, 2, image_size=(96, 160))
        >>> [(s.split, s.image_id) for s in plan]
        [('train', 1), ('train', 2), ('train', 3), ('val', 1), ('val', 2)]
        >>> plan[0].height, plan[0].width
        (96, 160)
    """
    if num_train < 0 or num_val < 0:
        raise ValueError(f"image counts must be >= 0, got {num_train}, {num_val}")
    height, width = _check_size(image_size)
    qualities = check_range("quality", quality, 1, 100)
    if not isinstance(max_objects, int) or not 1 <= max_objects <= 64:
        raise ValueError(f"max_objects must be an int in [1, 64], got {max_objects!r}")
    sizes = tuple(float(s) for s in check_range("object_size", object_size, 0.02, 1.0))
    if not 0.0 <= min_visible <= 1.0:
        raise ValueError(f"min_visible must be in [0, 1], got {min_visible!r}")
    shapes = distinct_names("shape", shapes, DETECTION_SHAPES)
    plan = []
    for split, count in zip(SPLITS, (num_train, num_val), strict=True):
        rng = random.Random(f"trivium-detection-corpus/{seed}/{split}")
        for i in range(count):
            plan.append(
                DetectionImageSpec(
                    split,
                    i + 1,
                    height,
                    width,
                    rng.randint(*qualities),
                    rng.getrandbits(63),
                    shapes,
                    max_objects,
                    sizes,
                    float(min_visible),
                )
            )
    return plan


# --- shapes: a unit outline (reach 1 from the centre) and its signed distance ---


def _ring_points(radius: float, reverse: bool = False) -> list[tuple[float, float]]:
    steps = range(_ROUND_VERTICES, -1, -1) if reverse else range(_ROUND_VERTICES + 1)
    return [
        (radius * math.cos(2 * math.pi * k / _ROUND_VERTICES),
         radius * math.sin(2 * math.pi * k / _ROUND_VERTICES))
        for k in steps
    ]  # fmt: skip


def _unit_outline(shape: str) -> list[tuple[float, float]]:
    """The shape's polygon in its own frame, reaching 1 from the centre."""
    if shape == "circle":
        return _ring_points(1.0)[:-1]
    if shape == "ring":  # out round the outer edge, back round the inner one: one polygon
        return _ring_points(1.0) + _ring_points(_RING_INNER, reverse=True)
    if shape == "square":
        return [(math.cos(a), math.sin(a)) for a in (math.pi / 4 * k for k in (1, 3, 5, 7))]
    if shape == "triangle":
        return [(math.cos(a), math.sin(a)) for a in (math.pi / 6, 5 * math.pi / 6, 1.5 * math.pi)]
    if shape == "star":
        return [
            (r * math.cos(math.pi / 5 * k), r * math.sin(math.pi / 5 * k))
            for k, r in ((k, 1.0 if k % 2 == 0 else _STAR_INNER) for k in range(10))
        ]
    if shape == "cross":
        w = _CROSS_HALF_WIDTH
        quarter = [(1.0, w), (w, w), (w, 1.0)]
        # Turn the first quarter by 90 degrees three times: (x, y) -> (-y, x).
        points = list(quarter)
        for _ in range(3):
            quarter = [(-y, x) for x, y in quarter]
            points += quarter
        return points
    raise ValueError(f"unknown shape {shape!r}")


def _unit_area(shape: str) -> float:
    if shape == "circle":
        return math.pi
    if shape == "ring":
        return math.pi * (1 - _RING_INNER**2)
    return abs(_shoelace(_unit_outline(shape)))


def _shoelace(points: list[tuple[float, float]]) -> float:
    return 0.5 * sum(
        x0 * y1 - x1 * y0
        for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1], strict=True)
    )


def _signed_distance(shape: str, u: Tensor, v: Tensor, r: float) -> Tensor:
    """Signed distance in pixels to the outline of radius ``r`` (positive inside)."""
    if shape == "circle":
        return outline.circle(u, v, r)
    if shape == "ring":
        rho = torch.sqrt(u * u + v * v)
        return torch.minimum(r - rho, rho - _RING_INNER * r)
    if shape == "square":
        return outline.square(u, v, r / math.sqrt(2))
    if shape == "triangle":  # edges at r / 2 from the centre, facing away from the vertices
        return outline.triangle(u, v, r / 2)
    if shape == "star":
        return outline.star(u, v, r, _STAR_INNER * r)
    if shape == "cross":
        return outline.cross(u, v, r, _CROSS_HALF_WIDTH * r)
    raise ValueError(f"unknown shape {shape!r}")


@dataclass
class _Placement:
    shape: str
    cx: float
    cy: float
    r: float
    angle: float
    outline: list[tuple[float, float]]  # in image coordinates
    window: tuple[int, int, int, int]  # top, bottom, left, right pixel rows/columns
    alpha: Tensor  # coverage of the window's pixels, in [0, 1]
    u: Tensor
    v: Tensor


def _place(shape: str, rng: random.Random, spec: DetectionImageSpec) -> _Placement:
    """A random size, rotation and position of ``shape`` wholly inside the image."""
    height, width = spec.height, spec.width
    angle = rng.uniform(0, 2 * math.pi)
    cos, sin = math.cos(angle), math.sin(angle)
    # (u, v) is the shape's frame: x = u cos - v sin, y = u sin + v cos.
    unit = [(u * cos - v * sin, u * sin + v * cos) for u, v in _unit_outline(shape)]
    xs, ys = [p[0] for p in unit], [p[1] for p in unit]
    extent = max(max(xs) - min(xs), max(ys) - min(ys))
    side = rng.uniform(*spec.object_size) * min(height, width)
    r = side / extent
    cx = rng.uniform(-min(xs) * r, width - max(xs) * r)
    cy = rng.uniform(-min(ys) * r, height - max(ys) * r)
    outline = [(cx + x * r, cy + y * r) for x, y in unit]
    top, bottom = (
        max(0, math.floor(cy + min(ys) * r) - 1),
        min(height, math.ceil(cy + max(ys) * r) + 1),
    )
    left, right = (
        max(0, math.floor(cx + min(xs) * r) - 1),
        min(width, math.ceil(cx + max(xs) * r) + 1),
    )
    dy = torch.arange(top, bottom, dtype=torch.float32)[:, None] + 0.5 - cy
    dx = torch.arange(left, right, dtype=torch.float32)[None, :] + 0.5 - cx
    u, v = dx * cos + dy * sin, dy * cos - dx * sin
    alpha = (_signed_distance(shape, u, v, r) + 0.5).clamp_(0, 1)  # antialiased edge
    return _Placement(shape, cx, cy, r, angle, outline, (top, bottom, left, right), alpha, u, v)


def _fits(
    p: _Placement, owner: Tensor, visible: list[int], full: list[int], min_visible: float
) -> bool:
    """Whether drawing ``p`` leaves every earlier object at least ``min_visible`` visible."""
    top, bottom, left, right = p.window
    covered = owner[top:bottom, left:right][p.alpha >= 0.5]
    lost = torch.bincount(covered[covered >= 0], minlength=len(visible)).tolist()
    return all(
        vis - gone >= min_visible * f for vis, gone, f in zip(visible, lost, full, strict=True)
    )


def _colour(rng: random.Random, under: Tensor) -> Tensor:
    """A colour that most of the pixels ``under`` ([3, N]) differ from, else the best of 32."""
    best, best_score = None, -1.0
    for _ in range(32):
        rgb = colorsys.hsv_to_rgb(rng.random(), rng.uniform(0.3, 1.0), rng.uniform(0.2, 1.0))
        colour = torch.tensor(rgb)
        distance = (under - colour[:, None]).norm(dim=0)
        score = float(distance.quantile(0.1)) if distance.numel() else 1.0
        if score >= _MIN_CONTRAST:
            return colour
        if score > best_score:
            best, best_score = colour, score
    return best


def _annotation(p: _Placement, category_id: int) -> dict:
    xs, ys = [x for x, _ in p.outline], [y for _, y in p.outline]
    if p.shape in ("circle", "ring"):  # the exact circle, not its 48-gon
        x0, y0, x1, y1 = p.cx - p.r, p.cy - p.r, p.cx + p.r, p.cy + p.r
    else:
        x0, y0, x1, y1 = min(xs), min(ys), max(xs), max(ys)
    return {
        "category_id": category_id,
        "bbox": [round(x0, 3), round(y0, 3), round(x1 - x0, 3), round(y1 - y0, 3)],
        "area": round(_unit_area(p.shape) * p.r * p.r, 3),
        "iscrowd": 0,
        "segmentation": [[round(c, 3) for point in p.outline for c in point]],
    }


def render_detection_image(spec: DetectionImageSpec) -> tuple[Tensor, list[dict]]:
    """The pixels (uint8 ``[3, H, W]``) and COCO annotations of ``spec``, the same on every run.

    Each annotation has ``category_id`` (1-based index into ``spec.shapes``'s order
    in :data:`DETECTION_SHAPES`), ``bbox``, ``area``, ``iscrowd`` and
    ``segmentation`` (no ``id`` or ``image_id``: the corpus numbers them).

    Example:
        >>> spec = plan_detection_corpus(1, 0, image_size=96)[0]
        >>> image, annotations = render_detection_image(spec)
        >>> image.shape, image.dtype, 1 <= len(annotations) <= spec.max_objects
        (torch.Size([3, 96, 96]), torch.uint8, True)
        >>> bool(torch.equal(image, render_detection_image(spec)[0]))
        True
    """
    rng = random.Random(spec.seed)
    canvas = background(rng, spec.height, spec.width)
    owner = torch.full((spec.height, spec.width), -1, dtype=torch.int64)
    placed: list[_Placement] = []
    visible: list[int] = []
    full: list[int] = []
    for _ in range(rng.randint(1, spec.max_objects)):
        shape = rng.choice(spec.shapes)
        for _ in range(_TRIES):
            p = _place(shape, rng, spec)
            if _fits(p, owner, visible, full, spec.min_visible):
                break
        else:
            continue  # no room: the image holds fewer objects
        _draw(p, rng, canvas, owner, visible, len(placed))
        full.append(int((p.alpha >= 0.5).sum()))
        placed.append(p)
    noise = torch.Generator().manual_seed(rng.getrandbits(63))
    canvas += torch.randn(canvas.shape, generator=noise) * rng.uniform(0.0, 0.02)
    image = canvas.mul_(255).round_().clamp_(0, 255).to(torch.uint8)
    annotations = [_annotation(p, DETECTION_SHAPES.index(p.shape) + 1) for p in placed]
    return image, annotations


def _draw(
    p: _Placement, rng: random.Random, canvas: Tensor, owner: Tensor, visible: list[int], index: int
) -> None:
    """Paint ``p`` over ``canvas`` in a colour that stands out, and record what it covers."""
    top, bottom, left, right = p.window
    region = canvas[:, top:bottom, left:right]
    inside = p.alpha >= 0.5
    colour = _colour(rng, region[:, inside])
    direction = rng.uniform(0, 2 * math.pi)
    along = p.u * math.cos(direction) + p.v * math.sin(direction)
    fill = colour[:, None, None] * (1 + rng.uniform(-_SHADE, _SHADE) * along / p.r)
    region.mul_(1 - p.alpha).add_(fill.clamp(0, 1) * p.alpha)
    window_owner = owner[top:bottom, left:right]
    covered = window_owner[inside]
    for k, gone in enumerate(torch.bincount(covered[covered >= 0], minlength=index).tolist()):
        visible[k] -= gone
    window_owner[inside] = index
    visible.append(int(inside.sum()))


# --- writing the corpus ---


def _write_image(root: Path, spec: DetectionImageSpec) -> list[dict]:
    image, annotations = render_detection_image(spec)
    write_file(root / spec.path, encode_jpeg(image, spec.quality))
    return annotations


def _coco_json(
    specs: list[DetectionImageSpec], annotations: list[list[dict]], shapes: tuple[str, ...]
) -> dict:
    images = [
        {"id": s.image_id, "file_name": s.file_name, "height": s.height, "width": s.width}
        for s in specs
    ]
    records = []
    for spec, objects in zip(specs, annotations, strict=True):
        for obj in objects:
            records.append({"id": len(records) + 1, "image_id": spec.image_id, **obj})
    categories = [
        {"id": DETECTION_SHAPES.index(name) + 1, "name": name, "supercategory": "shape"}
        for name in DETECTION_SHAPES
        if name in shapes
    ]
    info = {
        "description": "trivium-vision embedded detection corpus",
        "version": str(_FORMAT_VERSION),
    }
    return {
        "info": info,
        "licenses": [],
        "images": images,
        "annotations": records,
        "categories": categories,
    }


def build_detection_corpus(
    root: str | os.PathLike[str],
    *,
    num_train: int = 2000,
    num_val: int = 300,
    image_size: int | tuple[int, int] = 128,
    seed: int = 0,
    quality: int | tuple[int, int] = (75, 95),
    shapes: Sequence[str] = DETECTION_SHAPES,
    max_objects: int = 8,
    object_size: tuple[float, float] = (0.12, 0.6),
    min_visible: float = 0.7,
    num_threads: int | None = None,
    progress_bar: bool | None = None,
) -> Path:
    """Write the COCO-format corpus under ``root``, reusing a finished one; returns ``root``.

    Args:
        root: the corpus folder; it gets ``train/``, ``val/``, ``annotations/``
            (``instances_train.json``, ``instances_val.json``) and ``corpus.json``.
        num_train: images in the training split.
        num_val: images in the held-out split.
        image_size: the side of the (square) images, or ``(height, width)``.
        seed: everything random follows it; the same arguments give the same bytes.
        quality: a JPEG quality, or the range qualities are drawn from.
        shapes: the classes drawn (a subset of :data:`DETECTION_SHAPES`; category
            ids stay those of :data:`DETECTION_SHAPES`).
        max_objects: objects per image are drawn from ``1..max_objects`` (fewer
            when there is no room for one).
        object_size: the range of an object's larger box side, as a fraction of
            the image's shorter side.
        min_visible: the least fraction of each object left uncovered by the
            objects drawn over it.
        num_threads: threads drawing and encoding (default: ``trivium.core``'s).
        progress_bar: show a bar (default: ``trivium.core.progress``'s rule).

    A ``root`` holding ``train/``, ``val/`` or ``annotations/`` without a
    ``corpus.json`` is refused (:class:`trivium.core.DatasetError`) rather than
    overwritten.

    Example:
        >>> import tempfile
        >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=2, num_val=2)
        >>> sorted(p.name for p in root.iterdir())
        ['annotations', 'corpus.json', 'train', 'val']
        >>> sorted(p.name for p in (root / "train").iterdir())
        ['000001.jpg', '000002.jpg']
    """
    root = Path(root)
    args = {"num_train": num_train, "num_val": num_val, "image_size": image_size, "seed": seed}
    options = {
        "quality": quality, "shapes": shapes, "max_objects": max_objects,
        "object_size": object_size, "min_visible": min_visible,
    }  # fmt: skip
    plan = plan_detection_corpus(**args, **options)
    settings = corpus_settings(
        {"kind": "detection", "detection_version": _FORMAT_VERSION, **args, **options}
    )
    settings = json.loads(json.dumps(settings))  # tuples as lists, as read back
    files = [root / s.path for s in plan] + [
        root / _ANNOTATIONS / f"instances_{s}.json" for s in SPLITS
    ]
    if reuse_or_clear(root, settings, files, (*SPLITS, _ANNOTATIONS), "build_detection_corpus"):
        return root
    for folder in (*SPLITS, _ANNOTATIONS):
        (root / folder).mkdir(parents=True)
    annotations = render_all(
        partial(_write_image, root), plan, "detection corpus", num_threads, progress_bar
    )
    drawn = distinct_names("shape", shapes, DETECTION_SHAPES)
    for split in SPLITS:
        specs = [(s, a) for s, a in zip(plan, annotations, strict=True) if s.split == split]
        coco = _coco_json([s for s, _ in specs], [a for _, a in specs], drawn)
        text = json.dumps(coco, separators=(",", ":"))
        (root / _ANNOTATIONS / f"instances_{split}.json").write_text(text, encoding="utf-8")
    write_manifest(root, settings)
    return root
