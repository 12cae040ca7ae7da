"""VOCDetection / VOCSegmentation on a small VOCdevkit tree (JPEGs and palette masks written
with Pillow, annotation XML), against torchvision's classes; the archive downloaded from a
loopback server."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, DecodeError, PathNotFoundError
from trivium.vision.datasets import VOCDetection, VOCSegmentation, voc

RNG = np.random.default_rng(0)
IDS = ["2008_000008", "2008_000015", "2009_000001"]
XML = """<annotation>
  <folder>VOC2012</folder><filename>{id}.jpg</filename>
  <size><width>{w}</width><height>{h}</height><depth>3</depth></size>
  <segmented>1</segmented>
  {objects}
</annotation>"""
OBJECT = """<object><name>{name}</name><pose>Left</pose><truncated>0</truncated>
  <difficult>0</difficult><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>5</xmax><ymax>6</ymax></bndbox>
</object>"""


def build_voc(root: Path, base: str = "VOCdevkit/VOC2012") -> Path:
    voc_root = root / base
    for folder in (
        "JPEGImages",
        "SegmentationClass",
        "Annotations",
        "ImageSets/Main",
        "ImageSets/Segmentation",
    ):
        (voc_root / folder).mkdir(parents=True)
    for n, image_id in enumerate(IDS):
        w, h = (int(v) for v in RNG.integers(8, 20, 2))
        mode = "L" if n == 1 else "RGB"
        pixels = RNG.integers(0, 256, (h, w) if mode == "L" else (h, w, 3), np.uint8)
        Image.fromarray(pixels, mode).save(voc_root / "JPEGImages" / f"{image_id}.jpg", quality=90)
        mask = Image.fromarray(RNG.choice([0, 1, 15, 255], (h, w)).astype(np.uint8), "P")
        mask.putpalette(list(RNG.integers(0, 256, 768)))
        mask.save(voc_root / "SegmentationClass" / f"{image_id}.png")
        objects = "".join(OBJECT.format(name=name) for name in ["cat", "dog"][: n + 1])
        xml = XML.format(id=image_id, w=w, h=h, objects=objects)
        (voc_root / "Annotations" / f"{image_id}.xml").write_text(xml)
    for split in ("Main", "Segmentation"):
        (voc_root / "ImageSets" / split / "train.txt").write_text("\n".join(IDS[:2]) + "\n")
        (voc_root / "ImageSets" / split / "val.txt").write_text(IDS[2] + "\n")
    return voc_root


def assert_same(ours, theirs) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = ours[i], theirs[i]
        assert isinstance(image, Image.Image) and image.mode == expected.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        if isinstance(expected_target, Image.Image):
            assert target.mode == expected_target.mode == "P"
            assert target.getpalette() == expected_target.getpalette()
            np.testing.assert_array_equal(np.asarray(target), np.asarray(expected_target))
        else:
            assert target == expected_target


@pytest.mark.parametrize("name", ["VOCDetection", "VOCSegmentation"])
@pytest.mark.parametrize("image_set", ["train", "val"])
def test_samples_and_targets_are_torchvisions(
    tv: ModuleType, tmp_path: Path, name: str, image_set: str
) -> None:
    build_voc(tmp_path)
    ours = getattr(voc, name)(tmp_path, image_set=image_set)
    theirs = getattr(tv.datasets, name)(tmp_path, image_set=image_set)
    assert ours.images == theirs.images and ours.targets == theirs.targets
    assert_same(ours, theirs)
    if name == "VOCDetection":
        objects = ours[len(ours) - 1][1]["annotation"]["object"]
        assert isinstance(objects, list) and objects[0]["bndbox"]["xmax"] == "5"


def test_2011_layout_and_transforms(tv: ModuleType, tmp_path: Path) -> None:
    build_voc(tmp_path, "TrainVal/VOCdevkit/VOC2011")
    flip = lambda image, target: (image.transpose(0), target)  # noqa: E731
    ours = VOCDetection(tmp_path, "2011", transforms=flip)
    assert_same(ours, tv.datasets.VOCDetection(tmp_path, "2011", transforms=flip))
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        VOCDetection(tmp_path, "2011", transform=str, transforms=flip)
    with pytest.raises(
        ValueError, match="image_set must be one of 'train', 'trainval', 'val'; got 'test'"
    ):
        VOCDetection(tmp_path, "2011", "test")


def test_missing_and_damaged_files_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(PathNotFoundError, match="download=True") as missing:
        VOCSegmentation(tmp_path)
    assert missing.value.path == str(tmp_path / "VOCdevkit" / "VOC2012")
    voc_root = build_voc(tmp_path)
    with pytest.raises(PathNotFoundError) as split:
        VOCSegmentation(tmp_path, image_set="trainval")
    assert split.value.path == str(voc_root / "ImageSets" / "Segmentation" / "trainval.txt")
    (voc_root / "Annotations" / f"{IDS[0]}.xml").write_text("<annotation><size>")
    with pytest.raises(DatasetError, match="not a VOC annotation") as xml:
        VOCDetection(tmp_path)[0]
    assert xml.value.path == str(voc_root / "Annotations" / f"{IDS[0]}.xml")
    (voc_root / "SegmentationClass" / f"{IDS[1]}.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    with pytest.raises(DecodeError) as mask:
        VOCSegmentation(tmp_path)[1]
    assert mask.value.path == str(voc_root / "SegmentationClass" / f"{IDS[1]}.png")
    (voc_root / "JPEGImages" / f"{IDS[0]}.jpg").unlink()
    with pytest.raises(PathNotFoundError) as image:
        VOCSegmentation(tmp_path)[0]
    assert image.value.path == str(voc_root / "JPEGImages" / f"{IDS[0]}.jpg")


def test_download_extracts_the_years_archive(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_voc(tmp_path / "source")
    archive = file_server.root / "VOCtrainval_11-May-2012.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(tmp_path / "source" / "VOCdevkit", "VOCdevkit")
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    entry = dict(voc.DATASET_YEAR_DICT["2012"], url=f"{file_server.url}/{archive.name}", md5=md5)
    monkeypatch.setitem(voc.DATASET_YEAR_DICT, "2012", entry)
    root = tmp_path / "root"
    ours = VOCSegmentation(root, download=True)
    assert_same(ours, tv.datasets.VOCSegmentation(root))


def test_dataloader_with_two_workers(tmp_path: Path) -> None:
    build_voc(tmp_path)
    to_tensor = lambda image, mask: (  # noqa: E731
        torch.from_numpy(np.array(image)).sum(),
        torch.from_numpy(np.array(mask)).sum(),
    )
    ds = VOCSegmentation(tmp_path, transforms=to_tensor)
    images, masks = zip(*torch.utils.data.DataLoader(ds, batch_size=1, num_workers=2), strict=True)
    plain = VOCSegmentation(tmp_path)
    assert torch.cat(images).tolist() == [int(np.asarray(im).sum()) for im, _ in plain]
    assert torch.cat(masks).tolist() == [int(np.asarray(m).sum()) for _, m in plain]
