"""Embedded training corpora: shapes drawn on real photos, built on disk, no download.

Two corpora, both deterministic in ``seed`` and reused when already built:

* :func:`build_image_corpus` writes an ``ImageFolder`` tree for image
  classification (:mod:`~trivium.vision.corpora.classification`);
* :func:`build_detection_corpus` writes a COCO-format tree for object detection
  (:mod:`~trivium.vision.corpora.detection`).

Their backgrounds are cut from the photos in ``corpora/backgrounds/``
(:func:`background_photos`); :mod:`~trivium.vision.corpora.shapes`,
:mod:`~trivium.vision.corpora.assets` and :mod:`~trivium.vision.corpora.build` hold
what the two share.

Example:
    >>> import tempfile
    >>> from trivium.vision.corpora import build_image_corpus
    >>> root = build_image_corpus(tempfile.mkdtemp(), num_train=10, num_val=0, size=48)
    >>> sorted(p.name for p in (root / "train").iterdir())[:2]
    ['circle_checkered', 'circle_dotted']
"""

from trivium.vision.corpora.assets import background_photos
from trivium.vision.corpora.classification import (
    DEFAULT_SHAPES,
    IMAGE_CLASSES,
    SHAPES,
    TEXTURES,
    ImageSpec,
    build_image_corpus,
    image_classes,
    plan_image_corpus,
    render_image,
)
from trivium.vision.corpora.detection import (
    DETECTION_SHAPES,
    DetectionImageSpec,
    build_detection_corpus,
    plan_detection_corpus,
    render_detection_image,
)

__all__ = [
    "DEFAULT_SHAPES",
    "DETECTION_SHAPES",
    "IMAGE_CLASSES",
    "SHAPES",
    "TEXTURES",
    "DetectionImageSpec",
    "ImageSpec",
    "background_photos",
    "build_detection_corpus",
    "build_image_corpus",
    "image_classes",
    "plan_detection_corpus",
    "plan_image_corpus",
    "render_detection_image",
    "render_image",
]
