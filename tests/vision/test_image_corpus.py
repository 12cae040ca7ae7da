"""The embedded image corpus: deterministic, an ImageFolder tree, cached, varied, colour-blind."""

from __future__ import annotations

import hashlib
import io
import json
import pathlib

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core import DatasetError
from trivium.vision.corpora import (
    IMAGE_CLASSES,
    SHAPES,
    TEXTURES,
    background_photos,
    build_image_corpus,
    image_classes,
    plan_image_corpus,
    render_image,
)
from trivium.vision.datasets import ImageFolder
from trivium.vision.io import decode_image

TINY = {"num_train": 30, "num_val": 10, "size": (40, 72), "quality": (60, 95)}


def files(root: pathlib.Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jpg")) if p.is_file()
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return build_image_corpus(tmp_path_factory.mktemp("corpus"), **TINY, progress_bar=False)


def test_the_same_seed_gives_the_same_bytes(corpus: pathlib.Path, tmp_path: pathlib.Path) -> None:
    again = build_image_corpus(tmp_path / "again", **TINY, num_threads=1)
    assert files(again) == files(corpus) and len(files(corpus)) == 40
    other = files(build_image_corpus(tmp_path / "other", **TINY, seed=1))
    assert other.keys() == files(corpus).keys()
    assert all(other[name] != data for name, data in files(corpus).items())


def test_an_imagefolder_tree_with_a_held_out_split(corpus: pathlib.Path) -> None:
    assert sorted(p.name for p in corpus.iterdir()) == ["corpus.json", "train", "val"]
    assert len(IMAGE_CLASSES) == 10
    for split, per_class in (("train", 3), ("val", 1)):
        ds = ImageFolder(corpus / split)
        assert ds.classes == list(IMAGE_CLASSES)
        assert [ds.targets.count(c) for c in range(10)] == [per_class] * 10
    train = {hashlib.sha256(d).digest() for n, d in files(corpus).items() if n.startswith("train")}
    val = {hashlib.sha256(d).digest() for n, d in files(corpus).items() if n.startswith("val")}
    assert len(train) == 30 and len(val) == 10 and not train & val
    settings = json.loads((corpus / "corpus.json").read_text())["settings"]
    assert settings["num_train"] == 30 and settings["seed"] == 0


def test_other_shapes_and_textures(tmp_path: pathlib.Path) -> None:
    assert image_classes(("circle", "cross"), TEXTURES) == IMAGE_CLASSES
    assert len(SHAPES) == 5 and len(TEXTURES) == 5
    shapes, textures = ("triangle", "square", "star"), ("striped", "plain")
    root = build_image_corpus(tmp_path, 12, 6, 48, shapes=shapes, textures=textures)
    classes = ImageFolder(root / "train").classes
    assert classes == [
        f"{s}_{t}" for s in ("square", "star", "triangle") for t in ("plain", "striped")
    ]
    assert [len(list((root / "val" / c).iterdir())) for c in classes] == [1] * 6
    for bad in (("circle", "hexagon"), ("circle", "circle"), ()):
        with pytest.raises(ValueError, match="shapes must be distinct names"):
            image_classes(bad)


def test_a_finished_corpus_is_reused_untouched(tmp_path: pathlib.Path) -> None:
    root = build_image_corpus(tmp_path, **TINY)
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    assert build_image_corpus(tmp_path, **TINY) == root
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} == stamps

    (root / "val" / IMAGE_CLASSES[0]).rename(root / "gone")  # an incomplete corpus is rebuilt
    build_image_corpus(tmp_path, **TINY)
    assert len(files(root / "val")) == 10
    build_image_corpus(tmp_path, **{**TINY, "num_val": 20})  # new settings: rebuilt
    assert len(files(root / "val")) == 20 and len(files(root / "train")) == 30


def test_a_folder_it_did_not_make_is_refused(tmp_path: pathlib.Path) -> None:
    (tmp_path / "train" / "mine").mkdir(parents=True)
    with pytest.raises(DatasetError, match=r"no corpus\.json") as caught:
        build_image_corpus(tmp_path, **TINY)
    assert caught.value.path == str(tmp_path) and (tmp_path / "train" / "mine").is_dir()


def test_images_decode_with_varied_sizes_and_qualities(corpus: pathlib.Path) -> None:
    sizes, tables = set(), set()
    for name, data in files(corpus).items():
        image = decode_image(bytearray(data))
        height, width = image.shape[1:]
        assert image.shape[0] == 3 and 40 <= height <= 72 and 40 <= width <= 72, name
        pil = Image.open(io.BytesIO(data))
        assert pil.format == "JPEG" and pil.size == (width, height)
        sizes.add((height, width))
        tables.add(tuple(pil.quantization[0]))  # the luma table follows the quality
    assert len(sizes) > 20 and len(tables) > 10


def test_colour_alone_does_not_tell_the_classes_apart(tmp_path: pathlib.Path) -> None:
    root = build_image_corpus(tmp_path, num_train=200, num_val=0, size=(32, 40))
    ds = ImageFolder(root / "train")
    colours = torch.stack([image.float().mean((1, 2)) for image, _ in ds])  # [N, 3]
    targets = torch.tensor(ds.targets)
    low = torch.stack([colours[targets == c].amin(0) for c in range(10)])
    high = torch.stack([colours[targets == c].amax(0) for c in range(10)])
    # Every class's range of mean colours overlaps every other's, in every channel.
    assert bool(((low[:, None] <= high[None]) & (low[None] <= high[:, None])).all())
    # And the nearest other image by mean colour is rarely of the same class.
    distances = torch.cdist(colours, colours).fill_diagonal_(float("inf"))
    nearest = targets[distances.argmin(1)]
    assert (nearest == targets).float().mean() < 0.3


def test_plan_and_render_are_deterministic() -> None:
    plan = plan_image_corpus(20, 5, size=(48, 64), seed=3)
    assert plan == plan_image_corpus(20, 5, size=(48, 64), seed=3)
    assert [s.label for s in plan[:10]] == list(IMAGE_CLASSES)
    assert [s.split for s in plan].count("val") == 5
    image = render_image(plan[7])
    assert image.shape == (3, plan[7].height, plan[7].width) and image.dtype == torch.uint8
    assert torch.equal(image, render_image(plan[7]))
    assert not torch.equal(image[:, :40, :40], render_image(plan[17])[:, :40, :40])
    with pytest.raises(ValueError, match="size"):
        plan_image_corpus(1, 1, size=(64, 32))
    with pytest.raises(ValueError, match="quality"):
        plan_image_corpus(1, 1, quality=(50, 101))


def test_the_background_photos_ship_with_the_package() -> None:
    import importlib.resources

    names = background_photos()
    assert len(names) >= 5
    folder = importlib.resources.files("trivium.vision.corpora") / "backgrounds"
    assert (folder / "README.md").is_file()
    total = 0
    for name in names:
        data = (folder / name).read_bytes()
        total += len(data)
        image = np.asarray(Image.open(io.BytesIO(data)))
        assert image.ndim == 3 and min(image.shape[:2]) >= 128
        assert name in (folder / "README.md").read_text()
    assert total < 300_000
