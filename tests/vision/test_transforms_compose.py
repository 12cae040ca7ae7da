"""trivium.vision.transforms.Compose: core's Compose with fused neighbour steps for one input."""

from __future__ import annotations

import pytest
import torch

import trivium.core
from trivium.core import Transform
from trivium.vision import transforms as T
from trivium.vision import tv_tensors


class Scale(Transform):
    """x * factor; offers to fuse with a following Scale (one multiply by the product)."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor, self.fused_calls = factor, 0

    def transform(self, inpt: torch.Tensor, params: dict) -> torch.Tensor:
        return inpt * self.factor

    def _fuse_next(self, following):
        if not isinstance(following, Scale):
            return None

        def both(x):
            self.fused_calls += 1
            return x * (self.factor * following.factor)

        return both


def test_vision_compose_is_a_core_compose() -> None:
    assert issubclass(T.Compose, trivium.core.Compose)
    assert T.Compose([abs])(-1) == 1


def test_compose_runs_fused_pairs_for_one_input_only() -> None:
    first, second, third = Scale(2.0), Scale(3.0), Scale(5.0)
    t = T.Compose([first, second, third, lambda x: x + 1])
    assert t(torch.ones(2)).tolist() == [31.0, 31.0]
    assert first.fused_calls == 1 and second.fused_calls == 0  # pairs (first, second), then third
    a, b = T.Compose([first, second])(torch.ones(1), torch.ones(1))  # several inputs: unfused
    assert (a.item(), b.item(), first.fused_calls) == (6.0, 6.0, 1)


def test_core_compose_does_not_fuse() -> None:
    first, second = Scale(2.0), Scale(3.0)
    assert trivium.core.Compose([first, second])(torch.ones(())).item() == 6.0
    assert first.fused_calls == 0


def test_compose_does_not_fuse_around_hooks() -> None:
    first, second = Scale(2.0), Scale(3.0)
    seen = []
    handle = second.register_forward_hook(lambda module, args, out: seen.append(out.item()))
    assert T.Compose([first, second])(torch.ones(())).item() == 6.0
    assert seen == [6.0] and first.fused_calls == 0
    handle.remove()
    assert T.Compose([first, second])(torch.ones(())).item() == 6.0
    assert seen == [6.0] and first.fused_calls == 1


def test_compose_does_not_fuse_under_a_global_hook() -> None:
    first, second = Scale(2.0), Scale(3.0)
    calls = []
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda module, args, out: calls.append(type(module).__name__)
    )
    try:
        assert T.Compose([first, second])(torch.ones(())).item() == 6.0
    finally:
        handle.remove()
    assert first.fused_calls == 0 and calls.count("Scale") == 2


MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def pipeline(seed: int, *, normalize: bool = True) -> T.Compose:
    g = torch.Generator().manual_seed(seed)
    steps = [T.RandomResizedCrop(24, generator=g), T.RandomHorizontalFlip(generator=g)]
    if normalize:
        steps += [T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)]
    return T.Compose(steps)


def test_one_plain_image_takes_the_same_draws_and_values_as_a_sample() -> None:
    """The single-tensor path gives what the general path gives, from the same draws.

    The general path runs for an image inside a sample (with a label); the reference
    is torch ops on the box and flip drawn from a third generator seeded alike.
    """
    sizes = [(40 + 7 * i, 50 - 3 * i) for i in range(6)]
    images = [torch.randint(0, 256, (3, *hw), dtype=torch.uint8) for hw in sizes]
    single, sample = pipeline(3, normalize=False), pipeline(3, normalize=False)
    ref = torch.Generator().manual_seed(3)
    for img in images:
        got = single(img)
        via_sample, label = sample((img, 7))
        top, left, h, w = T.RandomResizedCrop(24, generator=ref).get_params(*img.shape[-2:])
        crop = img[:, top : top + h, left : left + w].unsqueeze(0)
        want = torch.nn.functional.interpolate(
            crop, size=(24, 24), mode="bilinear", antialias=True
        )[0]
        if float(torch.rand((), generator=ref)) < 0.5:
            want = want.flip(-1)
        assert label == 7 and torch.equal(got, via_sample) and torch.equal(got, want)


def test_the_normalized_pipeline_matches_float64_arithmetic() -> None:
    mean, std = torch.tensor(MEAN).view(3, 1, 1), torch.tensor(STD).view(3, 1, 1)
    img = torch.randint(0, 256, (3, 45, 37), dtype=torch.uint8)
    crops = pipeline(5, normalize=False)
    for got in (pipeline(5)(img), pipeline(5)((img, 1))[0]):
        want = (crops(img).double() / 255 - mean.double()) / std.double()
        torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=0)
        crops = pipeline(5, normalize=False)


def test_typed_and_batched_images_still_take_the_general_path() -> None:
    img = torch.randint(0, 256, (3, 30, 30), dtype=torch.uint8)
    typed = pipeline(0)(tv_tensors.Image(img))
    assert type(typed) is tv_tensors.Image
    # A typed image is not fused: the same values up to float rounding.
    torch.testing.assert_close(typed.as_subclass(torch.Tensor), pipeline(0)(img))
    batch = pipeline(0)(img.expand(2, 3, 30, 30))
    assert batch.shape == (2, 3, 24, 24) and torch.equal(batch[0], batch[1])
    with pytest.raises(TypeError, match="expected an image tensor"):
        T.RandomHorizontalFlip()(torch.zeros(4))
