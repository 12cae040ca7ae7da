"""ImageClassificationTrain / Eval: against a Pillow + NumPy recipe, script, export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.io import decode_jpeg, read_file

PHOTO = Path(__file__).parents[1] / "assets" / "images" / "jpeg" / "tv-grace_hopper_517x606.jpg"
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    return decode_jpeg(read_file(PHOTO))


def pillow_eval(image: Image.Image, crop: int, resize: int) -> np.ndarray:
    """The classic recipe in Pillow + NumPy: resize short side, center crop, scale, normalize."""
    w, h = image.size
    new_w, new_h = (resize, int(resize * h / w)) if w <= h else (int(resize * w / h), resize)
    image = image.resize((new_w, new_h), Image.BILINEAR, reducing_gap=None)
    top, left = round((new_h - crop) / 2), round((new_w - crop) / 2)
    array = np.asarray(image)[top : top + crop, left : left + crop] / 255.0
    return ((array - MEAN) / STD).transpose(2, 0, 1)


def test_eval_matches_pillow_recipe(photo: torch.Tensor) -> None:
    out = T.ImageClassificationEval(crop_size=224)(photo)
    expected = pillow_eval(Image.open(PHOTO).convert("RGB"), 224, 256)
    assert out.shape == (3, 224, 224) and out.dtype == torch.float32
    # One uint8 level of resize difference is 1/255/std <= 0.0175 after normalizing.
    assert np.abs(out.numpy() - expected).max() <= 0.018
    pil_out = T.ImageClassificationEval(crop_size=224)(Image.open(PHOTO))
    assert isinstance(pil_out, torch.Tensor)
    torch.testing.assert_close(pil_out, out)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_eval_scripts_and_exports(photo: torch.Tensor) -> None:
    t = T.ImageClassificationEval(crop_size=64, resize_size=72)
    batch = torch.stack([photo, photo.flip(-1)])
    expected = t(batch)
    scripted = torch.jit.script(t)(batch)
    exported = torch.export.export(t, (batch,)).module()(batch)
    assert torch.equal(exported, scripted)
    # Eager runs ToDtype + Normalize as one fused pass: the same up to float rounding.
    torch.testing.assert_close(scripted, expected, rtol=0, atol=1e-6)


def test_train_output_and_reproducibility(photo: torch.Tensor) -> None:
    def run(seed: int) -> torch.Tensor:
        return T.ImageClassificationTrain(96, generator=torch.Generator().manual_seed(seed))(photo)

    out = run(0)
    assert out.shape == (3, 96, 96) and out.dtype == torch.float32
    assert torch.equal(out, run(0)) and not torch.equal(out, run(1))
    # Normalized values stay within the range of (0..1 - mean) / std.
    lo, hi = float(((0 - MEAN) / STD).min()), float(((1 - MEAN) / STD).max())
    assert lo - 1e-5 <= float(out.min()) and float(out.max()) <= hi + 1e-5
    # The first step is the crop the RandomResizedCrop generator picks, then the flip.
    g = torch.Generator().manual_seed(0)
    top, left, h, w = T.RandomResizedCrop(96, generator=g).get_params(606, 517)
    flip = float(torch.rand((), generator=g)) < 0.5
    crop = T.functional.resized_crop(photo, top, left, h, w, [96, 96])
    crop = crop.flip(-1) if flip else crop
    expected = T.functional.normalize(crop.float() / 255, MEAN.tolist(), STD.tolist())
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("policy", [None, "ra", "ta_wide", "augmix", "imagenet"])
def test_train_with_policies_and_erasing(photo: torch.Tensor, policy) -> None:
    t = T.ImageClassificationTrain(
        32,
        auto_augment_policy=policy,
        random_erase_prob=1.0,
        generator=torch.Generator().manual_seed(0),
    )
    out = t(photo[:, :100, :100])
    assert out.shape == (3, 32, 32) and out.dtype == torch.float32
    with pytest.raises(ValueError, match="auto_augment_policy"):
        T.ImageClassificationTrain(32, auto_augment_policy="bogus")


def test_train_compiles_fullgraph(photo: torch.Tensor) -> None:
    torch._dynamo.reset()
    t = torch.compile(T.ImageClassificationTrain(32), fullgraph=True)
    out = t(photo[:, :64, :80])
    assert out.shape == (3, 32, 32) and torch.isfinite(out).all()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_eval_on_cuda_matches_cpu(photo: torch.Tensor) -> None:
    t = T.ImageClassificationEval(crop_size=224)
    out = t(photo.cuda())
    assert out.device.type == "cuda"
    assert (out.cpu() - t(photo)).abs().max() <= 0.018
