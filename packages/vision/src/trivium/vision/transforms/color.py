"""Color and photometric transforms, with the names and arguments of ``torchvision.transforms.v2``.

``ColorJitter``, ``GaussianBlur`` and every ``Random*`` transform here take
``generator=`` and ``per_sample=True`` (independent parameters, or coin flips,
for every image of a batch, applied by the batched kernel: in one call on CUDA,
chunk by chunk on CPU, see :class:`~trivium.vision.transforms.ImageTransform`).

Example:
    >>> import torch
    >>> jitter = ColorJitter(brightness=0.4, hue=0.1, per_sample=True,
    ...                      generator=torch.Generator().manual_seed(0))
    >>> jitter(torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)).shape
    torch.Size([8, 3, 32, 32])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from trivium.core.tracing import is_tracing
from trivium.core.transform import check_probability
from trivium.vision.transforms import functional as F
from trivium.vision.transforms._base import ImageTransform
from trivium.vision.transforms._image import bits_view, check_image, eager_cpu, image_where
from trivium.vision.transforms._switch import switch
from trivium.vision.transforms.functional.color import (
    _by_chunks,
    _check_posterize_bits,
    _check_solarize_threshold,
    _grayscale_into,
    _invert_into,
    _posterize_into,
    _solarize_into,
)
from trivium.vision.transforms.geometry import _write_runs

__all__ = [
    "RGB",
    "ColorJitter",
    "GaussianBlur",
    "Grayscale",
    "RandomAdjustSharpness",
    "RandomAutocontrast",
    "RandomChannelPermutation",
    "RandomEqualize",
    "RandomGrayscale",
    "RandomInvert",
    "RandomPhotometricDistort",
    "RandomPosterize",
    "RandomSolarize",
]


def _batch_mask(mask: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
    """A ``[n]`` (n = images or 1) boolean tensor shaped to broadcast over ``img``."""
    shape = (*img.shape[:-3], 1, 1, 1) if mask.numel() > 1 else (1, 1, 1)
    return mask.to(img.device).reshape(shape)


class Grayscale(ImageTransform):
    """Convert RGB images to grayscale (ITU-R 601-2 luma), as torchvision's ``Grayscale``.

    Works under ``torch.jit.script`` (through ``__prepare_scriptable__``) and
    ``torch.export``.

    Example:
        >>> import torch
        >>> Grayscale(num_output_channels=3)(torch.rand(2, 3, 8, 8)).shape
        torch.Size([2, 3, 8, 8])
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    def __init__(self, num_output_channels: int = 1) -> None:
        super().__init__()
        if num_output_channels not in (1, 3):
            raise ValueError(
                f"Grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}"
            )
        self.num_output_channels = num_output_channels

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        check_image(type(self).__name__, inpt, channels=(1, 3))
        return F.rgb_to_grayscale_image(inpt, num_output_channels=self.num_output_channels)

    def __prepare_scriptable__(self) -> nn.Module:
        return _ScriptableGrayscale(self.num_output_channels)


class _ScriptableGrayscale(nn.Module):
    """What ``torch.jit.script(Grayscale(...))`` compiles: one tensor in, one out."""

    def __init__(self, num_output_channels: int) -> None:
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return F.rgb_to_grayscale_image(img, self.num_output_channels)


class _RandomOp(ImageTransform):
    """Apply ``_op`` with probability ``p`` (per image when ``per_sample=True``)."""

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    _channels: tuple[int, ...] | None = None
    _per_image_params = ("apply",)

    def __init__(
        self, p: float = 0.5, *, per_sample: bool = False, generator: torch.Generator | None = None
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        self.p = check_probability(type(self).__name__, p)

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img, channels=self._channels)
        branch_free = self._tensor_params()
        coin = self._draw((self._num_draws(img),), img.device if branch_free else None)
        return {"apply": coin < self.p}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        apply = params["apply"]
        if self.per_sample:
            return self._apply_to_chosen(inpt, apply)
        return self._op(inpt) if bool(apply) else inpt

    def transform_traced(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """``_op`` on the images where ``params["apply"]``, without a branch (torch.compile).

        Example:
            >>> import torch
            >>> img, apply = torch.zeros(2, 1, 1, 1, dtype=torch.uint8), torch.tensor([True, False])
            >>> RandomInvert().transform_traced(img, {"apply": apply}).flatten().tolist()
            [255, 0]
        """
        return image_where(_batch_mask(params["apply"], inpt), self._op(inpt), inpt)

    def _apply_to_chosen(self, img: torch.Tensor, apply: torch.Tensor) -> torch.Tensor:
        """Run ``_op`` on the chosen images only (one batched call on the gathered subset)."""
        if apply.numel() == 1:  # one image (a CPU chunk of a per-sample batch)
            return self._op(img) if bool(apply) else img
        flat = img.reshape(-1, *img.shape[-3:])
        chosen = apply.nonzero().flatten()
        if chosen.numel() == 0:
            return img
        if chosen.numel() == flat.shape[0]:
            return self._op(img)
        done = self._op(flat.index_select(0, chosen))
        # Every op here keeps the image's shape and dtype (uint16 is copied as int16 bits).
        out = bits_view(flat.clone()).index_copy_(0, chosen, bits_view(done))
        return out.view(img.dtype).reshape(img.shape)


class _RandomOpInto(_RandomOp):
    """A :class:`_RandomOp` whose op can write into a given output (``_op_into``).

    On the CPU a per-sample batch comes whole to :meth:`_apply_to_chosen`, which writes
    each run of images drawn alike straight into one output, by ``_op_into`` or as a
    copy: every pixel is read and written once (as the image-by-image loop's result
    is), with a call per run instead of per image, and no gathered subset.
    """

    _cpu_chunk_values = None

    def _op_into(self, img: torch.Tensor, out: torch.Tensor) -> object:
        """Write ``_op`` of the ``[N, C, H, W]`` images ``img`` into ``out`` (same shape)."""
        raise NotImplementedError

    def _apply_to_chosen(self, img: torch.Tensor, apply: torch.Tensor) -> torch.Tensor:
        """On the CPU: each run of images drawn alike written once into the output.

        Example:
            >>> import torch
            >>> img = torch.tensor([0, 200, 10], dtype=torch.uint8).view(3, 1, 1, 1)
            >>> chosen = torch.tensor([True, False, True])
            >>> RandomInvert()._apply_to_chosen(img, chosen).flatten().tolist()
            [255, 200, 245]
        """
        if apply.numel() == 1 or not eager_cpu(img):
            return super()._apply_to_chosen(img, apply)
        flags = apply.reshape(-1).tolist()
        if not any(flags):
            return img
        flat = img.reshape(-1, *img.shape[-3:])
        return _write_runs(flat, flags, self._op_into).reshape(img.shape)


class RandomGrayscale(_RandomOpInto):
    """Convert to grayscale with probability ``p``, keeping the number of channels.

    Example:
        >>> import torch
        >>> out = RandomGrayscale(p=1.0)(torch.rand(3, 4, 4))
        >>> bool((out[0] == out[1]).all())
        True
    """

    _channels = (1, 3)

    def __init__(
        self, p: float = 0.1, *, per_sample: bool = False, generator: torch.Generator | None = None
    ) -> None:
        super().__init__(p, per_sample=per_sample, generator=generator)

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        return F.rgb_to_grayscale_image(img, num_output_channels=img.shape[-3])

    def _op_into(self, img: torch.Tensor, out: torch.Tensor) -> object:
        return _by_chunks(_grayscale_into, img, out)


class RandomInvert(_RandomOpInto):
    """Invert the colors with probability ``p``.

    Example:
        >>> import torch
        >>> RandomInvert(p=1.0)(torch.zeros(1, 1, 1, dtype=torch.uint8)).item()
        255
    """

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        return F.invert_image(img)

    def _op_into(self, img: torch.Tensor, out: torch.Tensor) -> object:
        return _invert_into(img, out)  # one pass: no chunks needed


class RandomPosterize(_RandomOpInto):
    """Keep ``bits`` bits per channel with probability ``p``.

    Example:
        >>> import torch
        >>> RandomPosterize(bits=1, p=1.0)(torch.full((1, 1, 1), 200, dtype=torch.uint8)).item()
        128
    """

    def __init__(
        self,
        bits: int,
        p: float = 0.5,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(p, per_sample=per_sample, generator=generator)
        self.bits = _check_posterize_bits("RandomPosterize", bits)

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        return F.posterize_image(img, self.bits)

    def _op_into(self, img: torch.Tensor, out: torch.Tensor) -> object:
        if img.is_floating_point():  # four passes: a few images at a time stay in cache
            return _by_chunks(_posterize_into, img, out, self.bits)
        return _posterize_into(img, out, self.bits)  # one pass


class RandomSolarize(_RandomOpInto):
    """Invert values at or above ``threshold`` with probability ``p``.

    ``threshold`` is on the image's scale (e.g. 128 for uint8, 32768 for uint16, 0.5 for
    floats).

    Example:
        >>> import torch
        >>> RandomSolarize(threshold=0.5, p=1.0)(torch.full((1, 1, 1), 0.75)).item()
        0.25
    """

    def __init__(
        self,
        threshold: float,
        p: float = 0.5,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(p, per_sample=per_sample, generator=generator)
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise TypeError(f"RandomSolarize: threshold must be a number, got {threshold!r}")
        if threshold < 0:
            raise ValueError(f"RandomSolarize: threshold must be >= 0, got {threshold}")
        self.threshold = float(threshold)

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        return F.solarize_image(img, self.threshold)

    def _op_into(self, img: torch.Tensor, out: torch.Tensor) -> object:
        threshold = _check_solarize_threshold("solarize", img, self.threshold)
        return _by_chunks(_solarize_into, img, out, threshold)


class RandomAdjustSharpness(_RandomOp):
    """Adjust the sharpness by ``sharpness_factor`` with probability ``p``.

    Example:
        >>> import torch
        >>> RandomAdjustSharpness(2.0, p=1.0)(torch.rand(3, 8, 8)).shape
        torch.Size([3, 8, 8])
    """

    _channels = (1, 3)

    def __init__(
        self,
        sharpness_factor: float,
        p: float = 0.5,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(p, per_sample=per_sample, generator=generator)
        if (
            isinstance(sharpness_factor, bool)
            or not isinstance(sharpness_factor, numbers.Real)
            or sharpness_factor < 0
        ):
            raise ValueError(
                f"RandomAdjustSharpness: sharpness_factor must be a number >= 0, "
                f"got {sharpness_factor!r}"
            )
        self.sharpness_factor = float(sharpness_factor)

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        return F.adjust_sharpness_image(img, self.sharpness_factor)


class RandomAutocontrast(_RandomOp):
    """Stretch each channel to the full range with probability ``p``.

    Example:
        >>> import torch
        >>> img = torch.tensor([0.25, 0.5]).view(1, 1, 2)
        >>> RandomAutocontrast(p=1.0)(img).flatten().tolist()
        [0.0, 1.0]
    """

    _channels = (1, 3)

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        return F.autocontrast_image(img)


class RandomEqualize(_RandomOp):
    """Equalize the histogram with probability ``p`` (batched, Pillow's table).

    Example:
        >>> import torch
        >>> RandomEqualize(p=1.0)(torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)).shape
        torch.Size([4, 3, 8, 8])
    """

    def _op(self, img: torch.Tensor) -> torch.Tensor:
        return F.equalize_image(img)


def _jitter_range(
    value: float | Sequence[float] | None,
    name: str,
    center: float = 1.0,
    bound: tuple[float, float] = (0.0, math.inf),
    clip_first_on_zero: bool = True,
) -> tuple[float, float] | None:
    """torchvision's ``ColorJitter`` argument rule: ``v`` -> ``[center - v, center + v]``."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"ColorJitter: {name} must be >= 0 when a number, got {value}")
        low, high = center - float(value), center + float(value)
        if clip_first_on_zero:
            low = max(low, 0.0)
    elif isinstance(value, Sequence) and len(value) == 2:
        low, high = (float(v) for v in value)
    else:
        raise TypeError(f"ColorJitter: {name} must be a number or a (min, max) pair, got {value!r}")
    if not bound[0] <= low <= high <= bound[1]:
        raise ValueError(
            f"ColorJitter: {name} values must be within {list(bound)}, got {[low, high]}"
        )
    return None if low == high == center else (low, high)


class ColorJitter(ImageTransform):
    """Randomly change brightness, contrast, saturation and hue, in a random order.

    Arguments as torchvision's: a number ``v`` means a factor drawn uniformly from
    ``[max(0, 1 - v), 1 + v]`` (hue: ``[-v, v]``, ``v <= 0.5``); a pair gives the
    range. With ``per_sample=True`` every image gets its own four factors; the
    order of the four operations is drawn once per call and shared by the batch.

    Example:
        >>> import torch
        >>> t = ColorJitter(0.4, 0.4, 0.4, 0.1, generator=torch.Generator().manual_seed(0))
        >>> t(torch.rand(3, 8, 8)).shape
        torch.Size([3, 8, 8])
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    _OPS = ("brightness", "contrast", "saturation", "hue")
    _per_image_params = _OPS
    _cpu_chunk_values = 2 * 3 * 224 * 224  # ~40 passes of small ops: 2 images per call

    def __init__(
        self,
        brightness: float | Sequence[float] | None = None,
        contrast: float | Sequence[float] | None = None,
        saturation: float | Sequence[float] | None = None,
        hue: float | Sequence[float] | None = None,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", 0.0, (-0.5, 0.5), clip_first_on_zero=False)

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img, channels=(1, 3))
        tensors = self._tensor_params()
        params: dict[str, Any] = {}
        for name in self._OPS:
            bounds = getattr(self, name)
            if bounds is None:
                continue
            u = self._draw((self._num_draws(img),), img.device if tensors else None)
            factor = bounds[0] + (bounds[1] - bounds[0]) * u
            params[name] = factor if tensors else float(factor)
        if is_tracing():  # a tensor: switch() picks each step with torch.cond
            params["order"] = torch.randperm(4, device=img.device)
        else:
            params["order"] = self._randperm(4)
        return params

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        ops = [_jitter_op(kernel, params.get(name)) for name, kernel in _JITTER_KERNELS.items()]
        out = inpt
        for index in params["order"]:
            if isinstance(index, int) and params.get(self._OPS[index]) is None:
                continue  # eager: skip the ops that were not asked for
            out = switch(index, ops, out)
        return out


_JITTER_KERNELS = {
    "brightness": F.adjust_brightness,
    "contrast": F.adjust_contrast,
    "saturation": F.adjust_saturation,
    "hue": F.adjust_hue,
}


def _jitter_op(
    kernel: Callable[[torch.Tensor, Any], torch.Tensor], factor: Any
) -> Callable[[torch.Tensor], torch.Tensor]:
    """``kernel`` at ``factor`` as a one-argument function (a copy when there is no factor)."""
    if factor is None:
        return lambda x: x.clone()
    return lambda x: kernel(x, factor)


class GaussianBlur(ImageTransform):
    """Gaussian blur with ``sigma`` drawn uniformly from ``sigma = (min, max)`` (or fixed).

    ``kernel_size`` is one odd int or ``(kx, ky)``. With ``per_sample=True`` every
    image gets its own sigma and the batch (on CPU: each chunk of four 224 x 224
    images) is blurred in one grouped convolution.

    Example:
        >>> import torch
        >>> GaussianBlur(5, per_sample=True)(torch.rand(4, 3, 16, 16)).shape
        torch.Size([4, 3, 16, 16])
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    _per_image_params = ("sigma",)
    # The depthwise convolutions vectorise across the chunk's N x C channels: 4 images.
    _cpu_chunk_values = 4 * 3 * 224 * 224

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        sigma: float | Sequence[float] = (0.1, 2.0),
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        sizes = [kernel_size] * 2 if isinstance(kernel_size, int) else list(kernel_size)
        if len(sizes) != 2 or any(
            isinstance(k, bool) or not isinstance(k, int) or k <= 0 or k % 2 == 0 for k in sizes
        ):
            raise ValueError(
                "GaussianBlur: kernel_size must be one or two positive odd ints, "
                f"got {kernel_size!r}"
            )
        if isinstance(sigma, numbers.Real) and not isinstance(sigma, bool):
            if sigma <= 0:
                raise ValueError(f"GaussianBlur: sigma must be > 0, got {sigma}")
            sigma = (float(sigma), float(sigma))
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0 < sigma[0] <= sigma[1]:
                raise ValueError(f"GaussianBlur: sigma must satisfy 0 < min <= max, got {sigma}")
        else:
            raise ValueError(
                f"GaussianBlur: sigma must be a number or a (min, max) pair, got {sigma!r}"
            )
        self.kernel_size = (sizes[0], sizes[1])
        self.sigma = (float(sigma[0]), float(sigma[1]))

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img)
        tensors = self._tensor_params()
        u = self._draw((self._num_draws(img),), img.device if tensors else None)
        sigma = self.sigma[0] + (self.sigma[1] - self.sigma[0]) * u
        return {"sigma": sigma if tensors else [float(sigma)] * 2}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        return F.gaussian_blur_image(inpt, list(self.kernel_size), params["sigma"])


class RGB(ImageTransform):
    """Make one-channel images RGB (the channel three times); others pass unchanged.

    Example:
        >>> import torch
        >>> RGB()(torch.zeros(1, 4, 4)).shape
        torch.Size([3, 4, 4])
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    def __init__(self) -> None:
        super().__init__()  # deterministic: no per_sample, no generator

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        return F.grayscale_to_rgb_image(inpt)


def _random_permutations(owner: ImageTransform, img: torch.Tensor) -> torch.Tensor:
    """One random permutation of the channels per draw of ``owner``: ``[n, C]``."""
    keys = owner._draw((owner._num_draws(img), img.shape[-3]), img.device)
    return keys.argsort(dim=-1)


class RandomChannelPermutation(ImageTransform):
    """Reorder the channels at random (one order per call, or per image with ``per_sample``).

    Example:
        >>> import torch
        >>> t = RandomChannelPermutation(generator=torch.Generator().manual_seed(0))
        >>> sorted(t(torch.arange(3.0).view(3, 1, 1)).flatten().tolist())
        [0.0, 1.0, 2.0]
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place
    _per_image_params = ("permutation",)

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img)
        if self._tensor_params():
            return {"permutation": _random_permutations(self, img)}
        return {"permutation": self._randperm(img.shape[-3])}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        return F.permute_channels_image(inpt, params["permutation"])


class RandomPhotometricDistort(ImageTransform):
    """SSD's photometric distortion: brightness, contrast, saturation, hue, channel order.

    Each of the five steps happens with probability ``p`` (factors drawn uniformly
    from the given ``(min, max)`` ranges); contrast comes before or after saturation
    and hue, at even odds; the channels are permuted last (torchvision's order and
    ranges). With ``per_sample=True`` every image draws its own steps, factors, order
    and permutation.

    Example:
        >>> import torch
        >>> t = RandomPhotometricDistort(p=1.0, generator=torch.Generator().manual_seed(0))
        >>> t(torch.rand(3, 8, 8)).shape
        torch.Size([3, 8, 8])
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    _FACTORS = ("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor")
    _per_image_params = (*_FACTORS, "apply", "contrast_before", "channel_permutation")

    def __init__(
        self,
        brightness: Sequence[float] = (0.875, 1.125),
        contrast: Sequence[float] = (0.5, 1.5),
        saturation: Sequence[float] = (0.5, 1.5),
        hue: Sequence[float] = (-0.05, 0.05),
        p: float = 0.5,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        self.brightness = _distort_range("brightness", brightness, (0.0, math.inf))
        self.contrast = _distort_range("contrast", contrast, (0.0, math.inf))
        self.saturation = _distort_range("saturation", saturation, (0.0, math.inf))
        self.hue = _distort_range("hue", hue, (-0.5, 0.5))
        self.p = check_probability(type(self).__name__, p)

    def _ranges(self) -> tuple[tuple[float, float], ...]:
        return (self.brightness, self.contrast, self.saturation, self.hue)

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img, channels=(1, 3))
        if self._tensor_params():
            return self._tensor_draws(img)
        params: dict[str, Any] = {}
        for name, (low, high) in zip(self._FACTORS, self._ranges(), strict=True):
            params[name] = self._uniform(low, high) if float(self._rand()) < self.p else None
        params["contrast_before"] = float(self._rand()) < 0.5
        permute = float(self._rand()) < self.p
        params["channel_permutation"] = self._randperm(img.shape[-3]) if permute else None
        return params

    def _tensor_draws(self, img: torch.Tensor) -> dict[str, Any]:
        """Per-image draws as tensors: coins ``apply`` [n, 5], factors [n], order [n]."""
        u = self._draw((self._num_draws(img), 10), img.device)
        params: dict[str, Any] = {"apply": u[:, :5] < self.p, "contrast_before": u[:, 5] < 0.5}
        for k, (name, (low, high)) in enumerate(zip(self._FACTORS, self._ranges(), strict=True)):
            params[name] = low + (high - low) * u[:, 6 + k]
        params["channel_permutation"] = _random_permutations(self, img)
        return params

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        if isinstance(params["contrast_before"], torch.Tensor):
            return self._transform_tensor_params(inpt, params)
        out = inpt
        contrast = params["contrast_factor"]
        if params["brightness_factor"] is not None:
            out = F.adjust_brightness_image(out, params["brightness_factor"])
        if contrast is not None and params["contrast_before"]:
            out = F.adjust_contrast_image(out, contrast)
        if params["saturation_factor"] is not None:
            out = F.adjust_saturation_image(out, params["saturation_factor"])
        if params["hue_factor"] is not None:
            out = F.adjust_hue_image(out, params["hue_factor"])
        if contrast is not None and not params["contrast_before"]:
            out = F.adjust_contrast_image(out, contrast)
        if params["channel_permutation"] is not None:
            out = F.permute_channels_image(out, params["channel_permutation"])
        return out

    def _transform_tensor_params(self, img: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Every step on the whole batch, kept where each image drew it (no Python branch)."""
        apply, before = params["apply"], params["contrast_before"]
        after = ~before
        steps = [
            (apply[:, 0], lambda x: F.adjust_brightness_image(x, params["brightness_factor"])),
            (apply[:, 1] & before, lambda x: F.adjust_contrast_image(x, params["contrast_factor"])),
            (apply[:, 2], lambda x: F.adjust_saturation_image(x, params["saturation_factor"])),
            (apply[:, 3], lambda x: F.adjust_hue_image(x, params["hue_factor"])),
            (
                apply[:, 1] & after,
                lambda x: F.adjust_contrast_image(x, params["contrast_factor"]),
            ),
            (apply[:, 4], lambda x: F.permute_channels_image(x, params["channel_permutation"])),
        ]
        out = img
        for mask, step in steps:
            out = image_where(_batch_mask(mask, out), step(out), out)
        return out


def _distort_range(name: str, value: Any, bound: tuple[float, float]) -> tuple[float, float]:
    """A ``(min, max)`` range of ``RandomPhotometricDistort`` within ``bound``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise TypeError(
            f"RandomPhotometricDistort: {name} must be a (min, max) pair, got {value!r}"
        )
    low, high = (float(v) for v in value)
    if not bound[0] <= low <= high <= bound[1]:
        raise ValueError(
            f"RandomPhotometricDistort: {name} must satisfy {bound[0]} <= min <= max <= "
            f"{bound[1]}, got {[low, high]}"
        )
    return (low, high)


# Colour changes leave boxes and masks where they are.
