"""ImageTransform: PIL in/out, pass-through, per_sample draws, compile-safe sampling."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.vision.transforms import ImageTransform
from trivium.vision.transforms._image import (
    check_image,
    flatten_batch,
    to_pil_image,
    unflatten_batch,
)


class AddGain(ImageTransform):
    """Adds one random gain per draw (per image with per_sample)."""

    def make_params(self, inputs):
        n = self._num_draws(inputs[0])
        return {"gain": self._draw((n,), inputs[0].device)}

    def transform(self, inpt, params):
        flat, shape = flatten_batch(inpt)
        return unflatten_batch(flat + params["gain"].view(-1, 1, 1, 1), shape)


class Halve(ImageTransform):
    def transform(self, inpt, params):
        return inpt[..., ::2, ::2]


def test_one_draw_for_all_inputs_and_per_sample_draws() -> None:
    img = torch.zeros(4, 1, 2, 2)
    a, b = AddGain(generator=torch.Generator().manual_seed(0))(img, img[:1])
    assert len(torch.unique(a)) == 1 and torch.equal(a[0], b[0])  # one gain shared by both
    per = AddGain(per_sample=True, generator=torch.Generator().manual_seed(0))(img)
    assert len(torch.unique(per)) == 4
    again = AddGain(per_sample=True, generator=torch.Generator().manual_seed(0))(img)
    assert torch.equal(per, again)
    assert AddGain.num_samples(torch.zeros(2, 3, 1, 4, 4)) == 6


def test_pil_round_trip_and_pass_through() -> None:
    image = Image.fromarray(np.arange(48, dtype=np.uint8).reshape(4, 4, 3))
    out, label, name = Halve()(image, 3, "x")
    assert isinstance(out, Image.Image) and out.mode == "RGB" and out.size == (2, 2)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(image)[::2, ::2])
    assert (label, name) == (3, "x")
    gray = Image.fromarray(np.arange(16, dtype=np.uint8).reshape(4, 4))
    assert Halve()(gray).mode == "L"
    as_list = Halve()([torch.zeros(3, 4, 4), 1])
    assert isinstance(as_list, list) and as_list[0].shape == (3, 2, 2)


def test_errors_name_the_transform() -> None:
    with pytest.raises(TypeError, match="Halve: expected an image"):
        Halve()(5)
    with pytest.raises(TypeError, match="per_sample"):
        Halve(per_sample="yes")
    with pytest.raises(ValueError, match="Grayscale: expected an image with 1 or 3 channels"):
        check_image("Grayscale", torch.zeros(2, 4, 4), channels=(1, 3))
    with pytest.raises(TypeError, match="expected a uint8 or uint16 image"):
        check_image("X", torch.zeros(3, 4, 4), allow_float=False)
    with pytest.raises(TypeError, match="expected a uint8, uint16 or floating image, got dtype"):
        check_image("X", torch.zeros(3, 4, 4, dtype=torch.int32))
    with pytest.raises(ValueError, match="to_pil_image"):
        to_pil_image(torch.zeros(5, 2, 2, dtype=torch.uint8))


def test_draw_under_compile_uses_the_default_generator() -> None:
    t = AddGain(per_sample=True, generator=torch.Generator().manual_seed(0))
    compiled = torch.compile(t, fullgraph=True, backend="eager")
    torch.manual_seed(3)
    a = compiled(torch.zeros(3, 1, 2, 2))
    torch.manual_seed(3)
    assert torch.equal(a, compiled(torch.zeros(3, 1, 2, 2)))


def test_traced_forms_match_the_eager_ones_on_the_same_params() -> None:
    """``transform_traced`` (what torch.compile runs) against ``transform`` and NumPy."""
    from trivium.vision import transforms as T

    rng = np.random.default_rng(0)
    img = torch.from_numpy(rng.random((4, 3, 5, 6), dtype=np.float32))
    normalize = T.Normalize([0.2, 0.4, 0.6], [0.5, 0.25, 2.0])
    mean = np.array([0.2, 0.4, 0.6], np.float32).reshape(3, 1, 1)
    std = np.array([0.5, 0.25, 2.0], np.float32).reshape(3, 1, 1)
    expected = (img.numpy() - mean) / std
    for form in (normalize.transform, normalize.transform_traced):
        np.testing.assert_allclose(form(img, {}).numpy(), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="Normalize: mean has 3 values"):
        normalize.transform_traced(torch.zeros(2, 4, 4), {})

    invert = T.RandomInvert(per_sample=True)
    uint8 = torch.from_numpy(rng.integers(0, 256, (4, 3, 5, 6), dtype=np.uint8))
    apply = torch.tensor([True, False, False, True])
    inverted = np.where(apply.numpy()[:, None, None, None], 255 - uint8.numpy(), uint8.numpy())
    for form in (invert.transform, invert.transform_traced):
        assert np.array_equal(form(uint8, {"apply": apply}).numpy(), inverted)


def test_transforms_move_like_any_module() -> None:
    """``nn.Module.to`` and friends reach the transforms (nothing shadows ``Module._apply``)."""
    from trivium.vision import transforms as T

    pipeline = torch.nn.Sequential(T.ColorJitter(0.4, per_sample=True), T.Normalize([0.5], [0.5]))
    assert pipeline.to("cpu") is pipeline
    assert pipeline.to(torch.float64).float() is pipeline
    assert T.ImageClassificationEval(crop_size=8, resize_size=10).to("cpu")(
        torch.zeros(3, 12, 12, dtype=torch.uint8)
    ).shape == (3, 8, 8)


@pytest.mark.parametrize(
    "name",
    [
        "RandomHorizontalFlip",
        "RandomVerticalFlip",
        "RandomPerspective",
        "RandomZoomOut",
        "RandomInvert",
    ],
)
def test_every_probability_is_checked_alike(name: str) -> None:
    """One rule for ``p``: ``ValueError`` outside [0, 1], ``TypeError`` for a non-number."""
    from trivium.vision import transforms as T

    cls = getattr(T, name)
    assert cls(p=1).p == 1.0
    with pytest.raises(ValueError, match=rf"^{name}: p must be in \[0, 1\], got 1.5$"):
        cls(p=1.5)
    with pytest.raises(TypeError, match=rf"^{name}: p must be a number in \[0, 1\], got str$"):
        cls(p="0.5")
