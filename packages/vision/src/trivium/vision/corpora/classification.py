"""An embedded image-classification corpus: shapes with textures on real photos, no download.

:func:`build_image_corpus` writes a deterministic ``ImageFolder`` tree,
``root/train/<class>/*.jpg`` and a held-out ``root/val/<class>/*.jpg``, that
:class:`trivium.vision.datasets.ImageFolder` (or torchvision's, or
``trivium-data convert image-folder``) reads. Each image is one object on a crop
of a real photo (shipped in ``corpora/backgrounds/``, see its README):

* Classes ``<shape>_<texture>``, by default the 10 of 2 shapes (circle, cross) x
  5 textures: ``plain`` (one colour, softly shaded), ``striped``, ``checkered``,
  ``dotted`` and ``speckled`` (two colours of different brightness, in a pattern
  of random scale and direction). Telling them apart needs the outline *and* the
  inside of the object. Other shapes (``square``, ``star``, ``triangle``) and
  subsets of the textures can be asked for (``shapes=``, ``textures=``): more
  shapes make a harder task, learned more slowly (the textures are learned first).
* Colours are drawn independently of the class (only contrast with the background
  and between the two colours of a pattern is enforced), so colour alone cannot
  tell the classes apart; size (the object spans 55-90 % of the shorter side),
  position and rotation vary too.
* Backgrounds: a random crop of one of the photos, flipped at random, its contrast
  softened (the object is the subject), brightness and colour balance jittered,
  sometimes gray; light noise on top.
* Images of mixed sizes (sides drawn from ``size``) and JPEG qualities (from
  ``quality``), encoded with :func:`trivium.vision.io.encode_jpeg`.

It is meant to be learned in minutes on a CPU: a 7-layer CNN trained for 15
epochs on the default 2000 images at 64x64 reached 95.6 % top-1 on the 500
held-out ones (about 1.5 min on 2 cores). Crops for augmentation should keep most
of the object (e.g. ``RandomResizedCrop(scale=(0.35, 1))``): the outline is half
of every class.

The split, class, size and quality of every image come from :func:`plan_image_corpus`
and its pixels from :func:`render_image`, both deterministic in ``seed``: the same
arguments give the same bytes on every run (on one machine and torch build). A
finished corpus is reused when ``corpus.json`` records the same settings and every
file is there.

Example:
    >>> import tempfile
    >>> from trivium.vision.datasets import ImageFolder
    >>> root = build_image_corpus(tempfile.mkdtemp(), num_train=20, num_val=10)
    >>> train = ImageFolder(root / "train")
    >>> len(train), len(train.classes), train[0][0].dtype
    (20, 10, torch.uint8)
"""

from __future__ import annotations

import colorsys
import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
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
    "DEFAULT_SHAPES",
    "IMAGE_CLASSES",
    "SHAPES",
    "TEXTURES",
    "ImageSpec",
    "build_image_corpus",
    "image_classes",
    "plan_image_corpus",
    "render_image",
]

SHAPES = ("circle", "cross", "square", "star", "triangle")
TEXTURES = ("checkered", "dotted", "plain", "speckled", "striped")
DEFAULT_SHAPES = ("circle", "cross")

# Size of each shape in units of the drawn radius r, so that all shapes cover
# roughly the same area (~2 r^2).
_CIRCLE, _SQUARE_HALF, _TRIANGLE, _STAR, _STAR_INNER = 0.8, 0.7, 1.05, 1.1, 0.5
_CROSS_ARM, _CROSS_HALF_WIDTH = 0.95, 0.3
# How far each shape reaches from its centre, in units of r.
_REACH = {"circle": 0.8, "cross": 1.0, "square": 0.99, "star": 1.1, "triangle": 1.05}


@dataclass(frozen=True)
class ImageSpec:
    """One image of the corpus: where it goes, its class, size, JPEG quality and seed.

    Example:
        >>> spec = plan_image_corpus(1, 0)[0]
        >>> spec.path, spec.label
        ('train/circle_checkered/00000.jpg', 'circle_checkered')
    """

    split: str
    index: int
    label: str
    height: int
    width: int
    quality: int
    seed: int

    @property
    def path(self) -> str:
        """``<split>/<class>/<index:05d>.jpg``, relative to the corpus root.

        Example:
            >>> plan_image_corpus(0, 12)[11].path
            'val/circle_dotted/00011.jpg'
        """
        return f"{self.split}/{self.label}/{self.index:05d}.jpg"


def _int_range(name: str, value: int | tuple[int, int], low: int, high: int) -> tuple[int, int]:
    lo, hi = check_range(name, value, low, high)
    return int(lo), int(hi)


def image_classes(
    shapes: Sequence[str] = DEFAULT_SHAPES, textures: Sequence[str] = TEXTURES
) -> tuple[str, ...]:
    """The class names ``<shape>_<texture>`` of ``shapes`` x ``textures``, sorted.

    Example:
        >>> image_classes(["cross", "circle"], ["striped", "plain"])
        ('circle_plain', 'circle_striped', 'cross_plain', 'cross_striped')
    """
    shapes = distinct_names("shape", shapes, SHAPES)
    textures = distinct_names("texture", textures, TEXTURES)
    return tuple(sorted(f"{shape}_{texture}" for shape in shapes for texture in textures))


IMAGE_CLASSES = image_classes()


def plan_image_corpus(
    num_train: int = 2000,
    num_val: int = 500,
    size: int | tuple[int, int] = (96, 160),
    quality: int | tuple[int, int] = (60, 95),
    seed: int = 0,
    *,
    shapes: Sequence[str] = DEFAULT_SHAPES,
    textures: Sequence[str] = TEXTURES,
) -> list[ImageSpec]:
    """The images of the corpus, train then val; image ``i`` of a split has class ``i % K``.

    Classes are :func:`image_classes` ``(shapes, textures)`` (``K`` of them).
    Heights and widths are drawn apart from ``size`` (a side, or a range of
    sides), qualities from ``quality``; every image gets its own seed.

    Example:
        >>> plan = plan_image_corpus(12, 3, size=(96, 160))
        >>> [s.label for s in plan[:2]], plan[-1].split, plan[10].label == plan[0].label
        (['circle_checkered', 'circle_dotted'], 'val', True)
        >>> all(96 <= s.height <= 160 and 96 <= s.width <= 160 for s in plan)
        True
    """
    if num_train < 0 or num_val < 0:
        raise ValueError(f"image counts must be >= 0, got {num_train}, {num_val}")
    sides = _int_range("size", size, 32, 4096)
    qualities = _int_range("quality", quality, 1, 100)
    classes = image_classes(shapes, textures)
    plan = []
    for split, count in zip(SPLITS, (num_train, num_val), strict=True):
        rng = random.Random(f"trivium-image-corpus/{seed}/{split}")
        for i in range(count):
            plan.append(
                ImageSpec(
                    split=split,
                    index=i,
                    label=classes[i % len(classes)],
                    height=rng.randint(*sides),
                    width=rng.randint(*sides),
                    quality=rng.randint(*qualities),
                    seed=rng.getrandbits(63),
                )
            )
    return plan


def _signed_distance(shape: str, u: Tensor, v: Tensor, r: float) -> Tensor:
    """Approximate signed distance in pixels to the shape's outline (positive inside)."""
    if shape == "circle":
        return outline.circle(u, v, _CIRCLE * r)
    if shape == "square":
        return outline.square(u, v, _SQUARE_HALF * r)
    if shape == "triangle":  # equilateral; edges at distance R/2 from the centre
        return outline.triangle(u, v, _TRIANGLE * r / 2)
    if shape == "star":
        return outline.star(u, v, _STAR * r, _STAR * _STAR_INNER * r)
    if shape == "cross":
        return outline.cross(u, v, _CROSS_ARM * r, _CROSS_HALF_WIDTH * r)
    raise ValueError(f"unknown shape {shape!r}")


def _luma(colour: Tensor) -> float:
    return float(0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2])


def _random_colour(rng: random.Random) -> Tensor:
    rgb = colorsys.hsv_to_rgb(rng.random(), rng.uniform(0.25, 1.0), rng.uniform(0.15, 1.0))
    return torch.tensor(rgb)


def _colours(rng: random.Random, texture: str, behind: Tensor) -> list[Tensor]:
    """Object colours drawn at random (not from the class) until they stand out."""
    best, best_score = None, -1.0
    for _ in range(64):
        colours = [_random_colour(rng) for _ in range(1 if texture == "plain" else 2)]
        contrast = max(float(torch.dist(c, behind)) for c in colours)
        score = min(contrast / 0.5, 1.0)
        if texture != "plain":  # the pattern must show in brightness, not only in hue
            score = min(score, abs(_luma(colours[0]) - _luma(colours[1])) / 0.3)
        if score >= 1.0:
            return colours
        if score > best_score:
            best, best_score = colours, score
    return best


def _first_colour_weight(
    texture: str, rng: random.Random, u: Tensor, v: Tensor, r: float
) -> Tensor:
    """Where a pattern shows its first colour (1) or its second (0), antialiased.

    Each pattern is built from a signed distance in pixels to its nearest edge,
    in the object's frame turned by a random angle.
    """
    turn = rng.uniform(0, 2 * math.pi)
    a = u * math.cos(turn) + v * math.sin(turn)
    b = v * math.cos(turn) - u * math.sin(turn)

    def band(x: Tensor, period: float) -> Tensor:  # > 0 on half of each period
        phase = torch.remainder(x / period + rng.random(), 1.0)
        return (0.25 - (phase - 0.5).abs()) * period

    if texture == "striped":
        distance = band(a, rng.uniform(0.35, 0.6) * r)
    elif texture == "checkered":
        period = rng.uniform(0.5, 0.8) * r
        across, down = band(a, period), band(b, period)
        distance = torch.sign(across * down) * torch.minimum(across.abs(), down.abs())
    elif texture == "dotted":
        period = rng.uniform(0.4, 0.6) * r
        fa = torch.remainder(a / period + rng.random(), 1.0) - 0.5
        fb = torch.remainder(b / period + rng.random(), 1.0) - 0.5
        distance = (0.3 - torch.sqrt(fa * fa + fb * fb)) * period
    elif texture == "speckled":  # blobs: thresholded smooth noise on a coarse grid
        cell = rng.uniform(0.15, 0.22) * r
        height, width = u.shape
        grid = (math.ceil(height / cell) + 2, math.ceil(width / cell) + 2)
        noise = torch.rand(grid, generator=torch.Generator().manual_seed(rng.getrandbits(63)))
        noise = F.interpolate(noise[None, None], scale_factor=cell, mode="bicubic")[0, 0]
        distance = (noise[:height, :width] - 0.5) * 3 * cell  # ~ pixels to the edge
    else:
        raise ValueError(f"unknown texture {texture!r}")
    return (distance + 0.5).clamp_(0, 1)


def render_image(spec: ImageSpec) -> Tensor:
    """The pixels of ``spec``: a uint8 ``[3, height, width]`` tensor, the same on every run.

    Example:
        >>> spec = plan_image_corpus(1, 0, size=64)[0]
        >>> image = render_image(spec)
        >>> image.shape, image.dtype, bool(torch.equal(image, render_image(spec)))
        (torch.Size([3, 64, 64]), torch.uint8, True)
    """
    rng = random.Random(spec.seed)
    height, width = spec.height, spec.width
    shape, texture = spec.label.split("_")
    canvas = background(rng, height, width)

    # The object spans 55-90 % of the shorter side, whatever its shape.
    r = rng.uniform(0.55, 0.9) * min(height, width) / (2 * _REACH[shape])
    reach = 0.9 * _REACH[shape] * r  # a little of the object may leave the frame
    cx = rng.uniform(min(reach, width / 2), max(width - reach, width / 2))
    cy = rng.uniform(min(reach, height / 2), max(height - reach, height / 2))
    angle = rng.uniform(0, 2 * math.pi)
    ys = torch.arange(height, dtype=torch.float32)[:, None] + 0.5 - cy
    xs = torch.arange(width, dtype=torch.float32)[None, :] + 0.5 - cx
    u = xs * math.cos(angle) + ys * math.sin(angle)
    v = ys * math.cos(angle) - xs * math.sin(angle)
    alpha = (_signed_distance(shape, u, v, r) + 0.5).clamp_(0, 1)  # antialiased edge

    behind = (canvas * alpha).sum((1, 2)) / alpha.sum().clamp_min(1.0)
    colours = _colours(rng, texture, behind)
    if texture == "plain":
        direction = rng.uniform(0, 2 * math.pi)
        along = u * math.cos(direction) + v * math.sin(direction)
        fill = colours[0][:, None, None] * (1 + rng.uniform(-0.25, 0.25) * along / r)
    else:
        first = _first_colour_weight(texture, rng, u, v, r)
        fill = colours[0][:, None, None] * first + colours[1][:, None, None] * (1 - first)

    image = canvas * (1 - alpha) + fill * alpha
    noise = torch.Generator().manual_seed(rng.getrandbits(63))
    image += torch.randn(image.shape, generator=noise) * rng.uniform(0.0, 0.03)
    return image.mul_(255).round_().clamp_(0, 255).to(torch.uint8)


def _write_image(root: Path, spec: ImageSpec) -> None:
    write_file(root / spec.path, encode_jpeg(render_image(spec), spec.quality))


def build_image_corpus(
    root: str | os.PathLike[str],
    num_train: int = 2000,
    num_val: int = 500,
    size: int | tuple[int, int] = (96, 160),
    quality: int | tuple[int, int] = (60, 95),
    seed: int = 0,
    *,
    shapes: Sequence[str] = DEFAULT_SHAPES,
    textures: Sequence[str] = TEXTURES,
    num_threads: int | None = None,
    progress_bar: bool | None = None,
) -> Path:
    """Write the corpus under ``root`` (``train/`` and ``val/``), reusing a finished one.

    Args:
        root: the corpus folder; it gets ``train/<class>/``, ``val/<class>/`` and
            ``corpus.json``.
        num_train: images in the training split, spread evenly over the classes
            (by default the 10 of :data:`IMAGE_CLASSES`).
        num_val: images in the held-out split, spread alike.
        size: a side, or the range ``(min, max)`` heights and widths are drawn from.
        quality: a JPEG quality, or the range qualities are drawn from.
        seed: everything random follows it; the same arguments give the same bytes.
        shapes: the shapes of the classes (see :data:`SHAPES`); the classes are
            every ``<shape>_<texture>`` of ``shapes`` and ``textures``.
        textures: the textures of the classes (see :data:`TEXTURES`).
        num_threads: threads drawing and encoding (default: ``trivium.core``'s).
        progress_bar: show a bar (default: ``trivium.core.progress``'s rule).

    A corpus built before with the same settings (``corpus.json``) and all of
    whose files are there is returned as it is; otherwise ``train/`` and ``val/``
    are rebuilt. A ``root`` holding ``train/`` or ``val/`` without a
    ``corpus.json`` is refused (:class:`trivium.core.DatasetError`) rather than
    overwritten. Returns ``root`` as a ``Path``.

    Example:
        >>> import tempfile
        >>> root = build_image_corpus(tempfile.mkdtemp(), num_train=10, num_val=10, size=64)
        >>> sorted(p.name for p in root.iterdir())
        ['corpus.json', 'train', 'val']
        >>> len(list((root / "val").glob("*/*.jpg")))
        10
    """
    root = Path(root)
    plan = plan_image_corpus(
        num_train, num_val, size, quality, seed, shapes=shapes, textures=textures
    )
    settings = corpus_settings(
        {
            "num_train": num_train,
            "num_val": num_val,
            "size": list(_int_range("size", size, 32, 4096)),
            "quality": list(_int_range("quality", quality, 1, 100)),
            "seed": seed,
            "classes": list(image_classes(shapes, textures)),
        }
    )
    files = [root / spec.path for spec in plan]
    if reuse_or_clear(root, settings, files, SPLITS, "build_image_corpus"):
        return root
    for split in SPLITS:
        for label in settings["classes"]:
            (root / split / label).mkdir(parents=True)
    render_all(partial(_write_image, root), plan, "image corpus", num_threads, progress_bar)
    write_manifest(root, settings)
    return root
