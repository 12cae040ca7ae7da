"""What the embedded corpora share: the background photos and the build manifest.

:mod:`~trivium.vision.corpora.classification` and :mod:`~trivium.vision.corpora.detection`
cut their backgrounds from the photos shipped in ``corpora/backgrounds/`` (see its
README) and record the settings a corpus was built with in ``corpus.json``, so that a
finished corpus is reused and an interrupted build is rebuilt.

Example:
    >>> import random
    >>> background(random.Random(0), 32, 48).shape
    torch.Size([3, 32, 48])
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import random
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from trivium.core.errors import DatasetError
from trivium.vision.io import ImageReadMode, decode_image

__all__ = [
    "background",
    "background_photos",
    "corpus_settings",
    "decoded_photos",
    "read_manifest",
    "write_manifest",
]

_FORMAT_VERSION = 1
_MANIFEST = "corpus.json"
_BACKGROUNDS = "backgrounds"


@lru_cache(maxsize=1)
def _photos() -> tuple[tuple[str, bytes], ...]:
    folder = importlib.resources.files("trivium.vision.corpora") / _BACKGROUNDS
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".jpg"))
    if not names:
        raise DatasetError("the background photos are missing from the package", path=str(folder))
    return tuple((name, (folder / name).read_bytes()) for name in names)


@lru_cache(maxsize=1)
def decoded_photos() -> tuple[Tensor, ...]:
    """The background photos decoded to float RGB in [0, 1] (decoded once per process).

    Example:
        >>> decoded_photos()[0].dtype
        torch.float32
    """
    return tuple(
        decode_image(data, ImageReadMode.RGB, path=name).float().div_(255)
        for name, data in _photos()
    )


def background_photos() -> list[str]:
    """The names of the photos the backgrounds are cut from (package data).

    Example:
        >>> len(background_photos()) >= 5
        True
    """
    return [name for name, _ in _photos()]


def background(rng: random.Random, height: int, width: int) -> Tensor:
    """A jittered crop of a random photo, resized to ``height`` x ``width``, in [0, 1].

    Example:
        >>> background(random.Random(1), 8, 8).amax() <= 1
        tensor(True)
    """
    photo = rng.choice(decoded_photos())
    ph, pw = photo.shape[-2:]
    box_w = min(pw, ph * width / height)  # the largest box of the image's aspect ratio
    scale = rng.uniform(0.35, 1.0)
    crop_h = max(8, round(scale * box_w * height / width))
    crop_w = max(8, round(scale * box_w))
    top, left = rng.randint(0, ph - crop_h), rng.randint(0, pw - crop_w)
    crop = photo[None, :, top : top + crop_h, left : left + crop_w]
    out = F.interpolate(crop, (height, width), mode="bilinear", antialias=True, align_corners=False)
    out = out[0]
    if rng.random() < 0.5:
        out = out.flip(-1)
    if rng.random() < 0.15:
        out = (out * torch.tensor([0.299, 0.587, 0.114])[:, None, None]).sum(0, keepdim=True)
    # Softer than the photo (the object is the subject), brightness and tint jittered.
    mean = out.mean((1, 2), keepdim=True)
    out = mean + rng.uniform(0.35, 0.75) * (out - mean)
    brightness = rng.uniform(0.7, 1.3)
    gains = torch.tensor([brightness * rng.uniform(0.85, 1.15) for _ in range(3)])
    return (out * gains[:, None, None]).clamp_(0, 1)


def corpus_settings(plan_args: dict) -> dict:
    """The settings recorded for a build: its arguments and a digest of the photos.

    Example:
        >>> sorted(corpus_settings({"seed": 0}))
        ['backgrounds_sha256', 'seed', 'version']
    """
    digest = hashlib.sha256()
    for name, data in _photos():
        digest.update(name.encode() + b"\0" + data)
    return {"version": _FORMAT_VERSION, **plan_args, "backgrounds_sha256": digest.hexdigest()}


def read_manifest(root: Path) -> dict | None:
    """The manifest of the corpus at ``root``; None when it is missing or damaged.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> write_manifest(root, {"seed": 0})
        >>> read_manifest(root), read_manifest(root / "missing")
        ({'settings': {'seed': 0}}, None)
    """
    try:
        record = json.loads((root / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # none or damaged: rebuild
    return record if isinstance(record, dict) else None


def write_manifest(root: Path, settings: dict | None) -> None:
    """Record ``settings`` in ``root``'s manifest, atomically (see :func:`read_manifest`).

    Written before (``settings=None``) and after a build, so that an interrupted
    build is never taken for a finished one.
    """
    tmp = root / f".{_MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps({"settings": settings}, indent=1), encoding="utf-8")
    os.replace(tmp, root / _MANIFEST)
