"""DatasetFolder / ImageFolder, checked against torchvision's ImageFolder, Pillow and
`trivium-data convert image-folder` on a tree of real images."""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import shutil
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from image_assets import CORRUPT_DIR, IMAGES, JPEG_DIR, PNG_DIR, pillow_array
from peers import require_torchvision
from PIL import Image

from trivium.core import DatasetError, DecodeError, TriviumError
from trivium.vision import transforms as T
from trivium.vision.datasets import (
    IMG_EXTENSIONS,
    DatasetFolder,
    DatasetNotFoundError,
    ImageFolder,
    SkippedSamplesWarning,
    default_loader,
)
from trivium.vision.io import ImageReadMode, decode_image, image_info, read_file
from trivium.vision.io.image.codec import IMAGE_EXTENSIONS, cannot_decode

# (class folder/file name in the tree, asset): gray, palette, RGBA, 16-bit, progressive,
# upper-case extension, a nested folder, and a file that is not an image.
TREE = {
    "bird/a.jpg": JPEG_DIR / "ljt-testorig.jpg",
    "bird/b.PNG": PNG_DIR / "basn3p08.png",
    "bird/zz_more/c.jpeg": JPEG_DIR / "jd-moz-jpg-progressive.jpg",
    "cat/grace.jpg": JPEG_DIR / "tv-grace_hopper_517x606.jpg",
    "cat/gray.jpg": JPEG_DIR / "jd-moz-jpg-gray.jpg",
    "cat/rgba.png": PNG_DIR / "basn6a08.png",
    "cat/notes.txt": None,
    "dog/hopper.jpg": JPEG_DIR / "pil-hopper.jpg",
    "dog/deep16.png": PNG_DIR / "basn2c16.png",
}
# Damaged files: what the decoders refuse, and why (for the message).
CORRUPT = ["pil-truncated_jpeg.jpg", "jd-empty.jpg", "tv-heapbof.png", "pil-broken_data_stream.png"]


def make_tree(root: pathlib.Path, files: dict[str, pathlib.Path | None] = TREE) -> pathlib.Path:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if source is None:
            path.write_text("not an image")
        else:
            shutil.copyfile(source, path)
    return root


@pytest.fixture
def tree(tmp_path: pathlib.Path) -> pathlib.Path:
    return make_tree(tmp_path / "tree")


def test_classes_and_samples_match_torchvision(tree: pathlib.Path) -> None:
    tv = require_torchvision()
    for root in (str(tree), tree):
        ours, theirs = ImageFolder(root), tv.datasets.ImageFolder(root)
        assert ours.classes == theirs.classes == ["bird", "cat", "dog"]
        assert ours.class_to_idx == theirs.class_to_idx
        assert ours.samples == theirs.samples
        assert ours.imgs == theirs.imgs == ours.samples
        assert ours.targets == theirs.targets == [0, 0, 0, 1, 1, 1, 2, 2]
        assert len(ours) == len(theirs) == 8


def test_default_sample_is_pillows_rgb_decode(tree: pathlib.Path) -> None:
    tv = require_torchvision()
    ours, theirs = ImageFolder(tree), tv.datasets.ImageFolder(tree)
    assert ours.loader is default_loader
    for i, (path, label) in enumerate(ours.samples):
        image, target = ours[i]
        assert image.dtype == torch.uint8 and image.shape[0] == 3 and target == label
        if not path.endswith("deep16.png"):  # Pillow clips 16-bit to 8 bits; we scale
            np.testing.assert_array_equal(image.numpy(), pillow_array(pathlib.Path(path), "RGB"))
        pil, tv_target = theirs[i]
        assert tv_target == target and (pil.height, pil.width) == tuple(image.shape[1:])


def test_sixteen_bit_png_is_scaled_to_uint8(tree: pathlib.Path) -> None:
    path = str(tree / "dog" / "deep16.png")
    image = default_loader(path)
    reference = pillow_array(PNG_DIR / "basn2c16.png", "RGB")  # RGB 16-bit: Pillow takes MSBs
    assert image.dtype == torch.uint8
    np.testing.assert_array_equal(image.numpy(), reference)


@pytest.mark.parametrize(
    "transform",
    [
        T.DecodeResize((24, 20)),
        T.Compose([T.DecodeCenterCrop(16), T.RandomHorizontalFlip(p=0.0)]),
        T.Compose([T.Compose([T.DecodeRandomResizedCrop(12)]), T.ToDtype(torch.float32)]),
    ],
    ids=["fused", "compose", "nested"],
)
def test_fused_decode_transform_gets_the_bytes(tree: pathlib.Path, transform) -> None:
    ds = ImageFolder(tree, transform=transform)
    path = ds.samples[0][0]  # an 8-bit JPEG
    assert torch.equal(ds.loader(path), torch.from_numpy(np.fromfile(path, dtype=np.uint8)))
    image, _ = ds[0]
    assert image.shape[0] == 3 and image.shape[1:] in ((24, 20), (16, 16), (12, 12))


def test_fused_decode_sample_equals_decoding_the_file(tree: pathlib.Path) -> None:
    ds = ImageFolder(tree, transform=T.DecodeResize((24, 20)))
    for i, (path, _) in enumerate(ds.samples):
        data = read_file(path)
        if path.endswith("deep16.png"):  # decoded to 8 bits by the loader, then resized
            expected = T.Resize((24, 20))(decode_image(data, ImageReadMode.RGB, dtype=torch.uint8))
        else:
            expected = T.DecodeResize((24, 20))(data)
        assert ds[i][0].dtype == torch.uint8
        assert torch.equal(ds[i][0], expected)


def test_other_transforms_get_pixels_and_a_given_loader_wins(tree: pathlib.Path) -> None:
    ds = ImageFolder(tree, transform=T.Compose([T.Resize((8, 8)), T.DecodeResize(4)]))
    assert ds.loader is default_loader  # the fused decode is not first
    ds = ImageFolder(tree, transform=T.Resize((8, 8)))
    assert ds[0][0].shape == (3, 8, 8)

    seen = []

    def loader(path: str) -> torch.Tensor:
        seen.append(path)
        return read_file(path)

    ds = ImageFolder(tree, transform=T.DecodeResize((8, 8)), loader=loader)
    assert ds.loader is loader
    assert ds[0][0].shape == (3, 8, 8) and seen == [ds.samples[0][0]]
    ds = ImageFolder(tree, transform=T.DecodeResize(8), loader=default_loader)
    assert ds.loader is default_loader
    # The default follows the transform, also when it is set after construction.
    ds = ImageFolder(tree)
    ds.transform = T.DecodeCenterCrop(8)
    assert ds.loader(ds.samples[3][0]).ndim == 1 and ds[3][0].shape == (3, 8, 8)


def test_dataset_folder_with_a_loader_and_extensions(tree: pathlib.Path) -> None:
    tv = require_torchvision()
    ours = DatasetFolder(tree, read_file, extensions=(".txt", ".jpeg"), allow_empty=True)
    theirs = tv.datasets.DatasetFolder(tree, read_file, (".txt", ".jpeg"), allow_empty=True)
    assert ours.samples == theirs.samples and ours.classes == theirs.classes
    assert [os.path.basename(p) for p, _ in ours.samples] == ["c.jpeg", "notes.txt"]
    assert ours[1][0].numpy().tobytes() == b"not an image"


def test_is_valid_file_matches_torchvision(tree: pathlib.Path) -> None:
    tv = require_torchvision()

    def is_png(path: str) -> bool:
        return path.lower().endswith(".png")

    ours = ImageFolder(tree, is_valid_file=is_png)
    theirs = tv.datasets.ImageFolder(tree, is_valid_file=is_png)
    assert ours.samples == theirs.samples
    assert [os.path.basename(p) for p, _ in ours.samples] == ["b.PNG", "rgba.png", "deep16.png"]
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        DatasetFolder(tree, None, extensions=(".png",), is_valid_file=is_png)


def test_an_empty_class_raises_unless_allow_empty(tree: pathlib.Path) -> None:
    tv = require_torchvision()
    (tree / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        tv.datasets.ImageFolder(tree)
    with pytest.raises(DatasetNotFoundError, match="classes empty") as caught:
        ImageFolder(tree)
    assert isinstance(caught.value, FileNotFoundError | TriviumError)
    assert caught.value.path == str(tree) and "allow_empty" in str(caught.value)

    ours = ImageFolder(tree, allow_empty=True)
    theirs = tv.datasets.ImageFolder(tree, allow_empty=True)
    assert ours.classes == theirs.classes == ["bird", "cat", "dog", "empty"]
    assert ours.samples == theirs.samples and 3 not in ours.targets


def test_a_missing_root_or_no_class_folder_names_the_folder(tmp_path: pathlib.Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no such file or directory") as caught:
        ImageFolder(tmp_path / "missing")
    assert caught.value.path == str(tmp_path / "missing")
    with pytest.raises(DatasetNotFoundError, match="no class folders"):
        ImageFolder(tmp_path)


@pytest.mark.parametrize("name", CORRUPT)
@pytest.mark.parametrize("fused", [False, True], ids=["pixels", "fused"])
def test_a_corrupt_file_raises_naming_it(tree: pathlib.Path, name: str, fused: bool) -> None:
    bad = tree / "cat" / ("bad" + pathlib.Path(name).suffix)
    shutil.copyfile(CORRUPT_DIR / name, bad)
    ds = ImageFolder(tree, transform=T.DecodeResize(16) if fused else None)
    index = [p for p, _ in ds.samples].index(str(bad))
    with pytest.raises(DecodeError) as caught:
        ds[index]
    assert caught.value.path == str(bad)
    assert str(caught.value).startswith(f"{bad}: ") and caught.value.reason
    ds[index + 1]  # the dataset still works


def test_an_unreadable_file_raises_naming_it(tree: pathlib.Path) -> None:
    gone = tree / "cat" / "gone.jpg"
    gone.symlink_to(tree / "nowhere.jpg")  # listed, but cannot be opened
    ds = ImageFolder(tree)
    index = [p for p, _ in ds.samples].index(str(gone))
    with pytest.raises(DatasetError, match="no such file") as caught:
        ds[index]
    assert caught.value.path == str(gone) and isinstance(caught.value, FileNotFoundError)


def bad_tree(root: pathlib.Path) -> tuple[ImageFolder, list[int]]:
    """The tree with a truncated JPEG in the middle and a broken PNG as the last sample."""
    make_tree(root, {k: v for k, v in TREE.items() if "deep16" not in k})  # fused: 8-bit only
    shutil.copyfile(CORRUPT_DIR / "pil-truncated_jpeg.jpg", root / "cat" / "h_bad.jpg")
    shutil.copyfile(CORRUPT_DIR / "pil-broken_data_stream.png", root / "dog" / "zz_bad.png")
    ds = ImageFolder(root, transform=T.DecodeResize((16, 16)), on_error="skip")
    bad = [i for i, (p, _) in enumerate(ds.samples) if "bad" in os.path.basename(p)]
    assert bad == [5, 8] and len(ds) == 9
    return ds, bad


def expected_items(ds: ImageFolder) -> list[tuple[torch.Tensor, int]]:
    """Every index's item: a bad one replaced by the next readable one, wrapping around."""
    clean = ImageFolder(ds.root, transform=ds.transform)
    good = {}
    for i in range(len(clean)):
        with contextlib.suppress(DecodeError):
            good[i] = clean[i]
    n = len(clean)
    return [good[next(j % n for j in range(i, i + n) if j % n in good)] for i in range(n)]


def test_on_error_skip_replaces_a_bad_sample_by_the_next(tmp_path: pathlib.Path) -> None:
    ds, bad = bad_tree(tmp_path / "tree")
    expected = expected_items(ds)
    with pytest.warns(SkippedSamplesWarning, match="h_bad.jpg: only part of the image decodes"):
        image, label = ds[5]
    assert torch.equal(image, ds[6][0]) and label == ds.targets[6] == 1
    with pytest.warns(SkippedSamplesWarning, match="zz_bad.png"):
        image, label = ds[-1]  # the last: wraps around to the first
    assert torch.equal(image, expected[0][0]) and label == 0
    assert ds.skipped == 2 and ds.skipped_files == [ds.samples[i][0] for i in bad]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # each file is reported once
        items = [ds[i] for i in range(len(ds))]
    for (image, label), (want_image, want_label) in zip(items, expected, strict=True):
        assert torch.equal(image, want_image) and label == want_label
    with pytest.raises(IndexError):
        ds[9]


def test_on_error_skip_with_every_file_bad_raises(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a").mkdir()
    for name in ("x.jpg", "y.jpg"):
        shutil.copyfile(CORRUPT_DIR / "tv-corrupt.jpg", tmp_path / "a" / name)
    ds = ImageFolder(tmp_path, on_error="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedSamplesWarning)
        with pytest.raises(DatasetError, match="none of the 2 samples could be read"):
            ds[0]
    assert ds.skipped == 2
    with pytest.raises(ValueError, match="on_error"):
        ImageFolder(tmp_path, on_error="ignore")


def test_on_error_skip_in_torch_dataloader_workers(tmp_path: pathlib.Path) -> None:
    ds, bad = bad_tree(tmp_path / "tree")
    expected = expected_items(ds)
    loader = torch.utils.data.DataLoader(ds, batch_size=3, num_workers=2)
    images, labels = zip(*loader, strict=True)
    assert torch.equal(torch.cat(images), torch.stack([image for image, _ in expected]))
    assert torch.cat(labels).tolist() == [label for _, label in expected]
    # Found by the workers, counted here: the flags live in shared memory.
    assert ds.skipped == 2 and ds.skipped_files == [ds.samples[i][0] for i in bad]


def test_on_error_skip_in_trivium_dataloader_workers(tmp_path: pathlib.Path) -> None:
    from trivium.data import DataLoader

    ds, bad = bad_tree(tmp_path / "tree")
    expected = expected_items(ds)
    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, seed=1)
    seen = 0
    for images, labels in loader:
        for image, label in zip(images, labels.tolist(), strict=True):
            assert any(torch.equal(image, e) and label == t for e, t in expected)
            seen += 1
    assert seen == len(ds) and ds.skipped == 2
    assert ds.skipped_files == [ds.samples[i][0] for i in bad]


def test_convert_image_folder_gives_imagefolders_samples(
    tree: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    from trivium.pipelines.cli import main

    (tree / "cat" / "notes.txt").unlink()  # convert and ImageFolder list the same files
    assert main(["convert", "image-folder", str(tree), str(tmp_path / "shards")]) == 0
    table = pq.read_table(tmp_path / "shards")
    ds = ImageFolder(tree)
    assert table.num_rows == len(ds)
    rows = list(zip(table["label"].to_pylist(), table["image"].to_pylist(), strict=True))
    assert rows == [(label, read_file(path).numpy().tobytes()) for path, label in ds.samples]
    assert table["class_name"].to_pylist() == [ds.classes[t] for t in ds.targets]
    assert table["path"].to_pylist() == [os.path.relpath(p, tree) for p, _ in ds.samples]
    # Decoded from the shards, the pixels are ImageFolder's.
    for data, (image, _) in zip(table["image"].to_pylist(), ds, strict=True):
        from_shard = decode_image(bytearray(data), ImageReadMode.RGB, dtype=torch.uint8)
        assert torch.equal(from_shard, image)


def test_repr_and_extensions() -> None:
    assert IMG_EXTENSIONS[:3] == (".jpg", ".jpeg", ".png")
    root = JPEG_DIR.parent
    ds = ImageFolder(root, transform=T.Resize(8), is_valid_file=lambda p: False, allow_empty=True)
    text = repr(ds)
    assert text.startswith("Dataset ImageFolder\n    Number of datapoints: 0\n    Root location:")


def test_image_folder_lists_every_format_that_decodes_and_names_the_others(tmp_path) -> None:
    # torchvision's extensions decode here (WebP natively; BMP, TIFF, PPM/PGM through
    # Pillow); files of an image format that does not decode here are named in one
    # warning at construction instead of failing mid-epoch.
    torchvision_extensions = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff")
    assert IMG_EXTENSIONS[:9] == (*torchvision_extensions, ".webp")
    assert ".gif" not in IMG_EXTENSIONS  # as torchvision: a GIF may hold several frames
    rgb = Image.fromarray(np.random.default_rng(3).integers(0, 256, (6, 5, 3), dtype=np.uint8))
    (tmp_path / "a").mkdir()
    written = {}
    formats = {".bmp": "BMP", ".tif": "TIFF", ".ppm": "PPM", ".pgm": "PPM", ".webp": "WEBP"}
    for ext, fmt in formats.items():
        image = rgb.convert("L") if ext == ".pgm" else rgb
        buffer = io.BytesIO()
        image.save(buffer, fmt, **({"lossless": True} if fmt == "WEBP" else {}))
        (tmp_path / "a" / f"x{ext}").write_bytes(buffer.getvalue())
        written[f"x{ext}"] = np.asarray(image.convert("RGB")).transpose(2, 0, 1)
    missing = [e for e, name in IMAGE_EXTENSIONS.items() if name != "gif" and cannot_decode(name)]
    for ext in missing:
        (tmp_path / "a" / f"y{ext}").write_bytes(b"not decodable here")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = ImageFolder(tmp_path)
    named = [str(w.message) for w in caught if "left out" in str(w.message)]
    if missing:
        assert len(named) == 1 and all(f"y{ext}" in named[0] for ext in missing[:3])
    else:
        assert not named
    assert sorted(os.path.basename(p) for p, _ in ds.samples) == sorted(written)
    for (path, _), (image, _) in zip(ds.samples, ds, strict=True):
        np.testing.assert_array_equal(image.numpy(), written[os.path.basename(path)])


# Files deeper than 8 bits: every default sample is uint8, by the high byte.

DEEP_TREE = {
    "a/photo.jpg": JPEG_DIR / "tv-grace_hopper_517x606.jpg",
    "a/rgb8.png": PNG_DIR / "basn2c08.png",
    "a/rgb16.png": PNG_DIR / "basn2c16.png",
    "b/photo16.png": PNG_DIR / "tv-rgb_pytorch16.png",
    "b/gray16.png": PNG_DIR / "basn0g16.png",
    "b/rgba16.png": PNG_DIR / "basn6a16.png",
    "b/lossless16.jpg": JPEG_DIR / "jd-lossless-jpeg_lossless_sel1.jpg",
}
_MEAN, _STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def _eight_bit_reference(path: str) -> np.ndarray:
    """What the default loader must give: Pillow's RGB, high bytes for 16-bit files.

    Pillow's RGB of a 16-bit RGB(A) PNG is its high bytes; its RGB of 16-bit gray
    saturates, so the high bytes of its 16-bit gray samples are repeated instead.
    The lossless JPEG, which Pillow cannot read, is checked against the PNG of its
    pixels in the reference folder.
    """
    name = pathlib.Path(path).name
    if name == "lossless16.jpg":
        path = str(IMAGES / "reference" / "jd-lossless-jpeg_lossless_sel1.png")
    pic = Image.open(path)
    if pic.mode in ("I;16", "I;16B", "I"):
        high = (np.asarray(pic).astype(np.uint32) >> 8).astype(np.uint8)
        return np.repeat(high[None], 3, axis=0)
    return pillow_array(pathlib.Path(path), "RGB")


def test_deep_files_give_8_bit_samples_by_the_high_byte(tmp_path: pathlib.Path) -> None:
    ds = ImageFolder(make_tree(tmp_path, DEEP_TREE))
    for i, (path, _) in enumerate(ds.samples):
        image = ds[i][0]
        assert image.dtype == torch.uint8 and image.shape[0] == 3
        np.testing.assert_array_equal(image.numpy(), _eight_bit_reference(path), err_msg=path)
    # 16-bit RGB: exactly Pillow's RGB (its high bytes).
    rgb16 = next(p for p, _ in ds.samples if p.endswith("rgb16.png"))
    np.testing.assert_array_equal(
        ds.loader(rgb16).numpy(), np.asarray(Image.open(rgb16).convert("RGB")).transpose(2, 0, 1)
    )


def test_fused_decodes_get_deep_files_decoded_to_8_bits(tmp_path: pathlib.Path) -> None:
    root = make_tree(tmp_path, DEEP_TREE)
    steps = [
        T.RandomHorizontalFlip(1.0),
        T.ToDtype(torch.float32, scale=True),
        T.Normalize(_MEAN, _STD),
    ]
    ds = ImageFolder(root, transform=T.Compose([T.DecodeCenterCrop(24), *steps]))
    after = T.Compose(steps)
    for i, (path, _) in enumerate(ds.samples):
        sample = ds.loader(path)
        deep = image_info(read_file(path)).bit_depth > 8
        assert sample.ndim == (3 if deep else 1), path
        expected = after(T.CenterCrop(24)(torch.from_numpy(_eight_bit_reference(path))))
        torch.testing.assert_close(ds[i][0], expected, rtol=0, atol=1e-5)
    # A fused decode given a dtype decodes every file itself, to that dtype.
    wide = ImageFolder(root, transform=T.DecodeCenterCrop(24, dtype=torch.uint16))
    assert {wide[i][0].dtype for i in range(len(wide))} == {torch.uint16}
    gray = ImageFolder(root, transform=T.DecodeResize(20, mode=ImageReadMode.GRAY))
    assert all(
        gray[i][0].shape[0] == 1 and gray[i][0].dtype == torch.uint8 for i in range(len(gray))
    )


@pytest.mark.parametrize("fused", [False, True], ids=["default-loader", "fused-decode"])
def test_a_folder_mixing_bit_depths_in_dataloader_workers(tmp_path: pathlib.Path, fused) -> None:
    root = make_tree(tmp_path, DEEP_TREE)
    if fused:
        transform = T.Compose(
            [
                T.DecodeRandomResizedCrop(32),
                T.RandomHorizontalFlip(),
                T.ToDtype(torch.float32, scale=True),
                T.Normalize(_MEAN, _STD),
            ]
        )
    else:
        transform = T.Compose([T.Resize((40, 40))])
    ds = ImageFolder(root, transform=transform)
    loader = torch.utils.data.DataLoader(ds, batch_size=3, num_workers=2)
    images, labels = zip(*loader, strict=True)
    batch = torch.cat(images)
    assert batch.shape == ((len(ds), 3, 32, 32) if fused else (len(ds), 3, 40, 40))
    assert batch.dtype == (torch.float32 if fused else torch.uint8)
    assert torch.cat(labels).tolist() == ds.targets
    if not fused:
        for image, (path, _) in zip(batch, ds.samples, strict=True):
            expected = T.Resize((40, 40))(torch.from_numpy(_eight_bit_reference(path)))
            assert torch.equal(image, expected), path
