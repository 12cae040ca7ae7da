"""Color and photometric kernels, with the names and formulas of torchvision v2 functional.

Every kernel takes a tensor ``[..., C, H, W]`` (``uint8`` in [0, 255], ``uint16`` in
[0, 65535] or floating in [0, 1]) and returns one of the same dtype on the same
device. Blend factors (``brightness_factor``, ...) are a number or a tensor with one
entry per image of the flattened batch, so a batch can get a different factor per
image in one call. Integer results are truncated exactly as torchvision does, on
the dtype's whole range (``equalize`` works on 8 bits, as torchvision's does).

Example:
    >>> import torch
    >>> img = torch.full((2, 3, 4, 4), 100, dtype=torch.uint8)
    >>> adjust_brightness(img, torch.tensor([0.5, 2.0]))[:, 0, 0, 0].tolist()
    [50, 200]
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable

import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import bits_view, check_image, eager_cpu, image_where
from trivium.vision.transforms.functional.conversion import (
    _max_value,
    _to_dtype_image,
    _value_bits,
)

__all__ = [
    "adjust_brightness",
    "adjust_brightness_image",
    "adjust_brightness_video",
    "adjust_contrast",
    "adjust_contrast_image",
    "adjust_contrast_video",
    "adjust_gamma",
    "adjust_gamma_image",
    "adjust_gamma_video",
    "adjust_hue",
    "adjust_hue_image",
    "adjust_hue_video",
    "adjust_saturation",
    "adjust_saturation_image",
    "adjust_saturation_video",
    "autocontrast",
    "autocontrast_image",
    "autocontrast_video",
    "equalize",
    "equalize_image",
    "equalize_video",
    "grayscale_to_rgb",
    "grayscale_to_rgb_image",
    "invert",
    "invert_image",
    "invert_video",
    "permute_channels",
    "permute_channels_image",
    "permute_channels_video",
    "posterize",
    "posterize_image",
    "posterize_video",
    "rgb_to_grayscale",
    "rgb_to_grayscale_image",
    "rgb_to_grayscale_video",
    "solarize",
    "solarize_image",
    "solarize_video",
    "to_grayscale",
]

Factor = float | torch.Tensor

# torchvision's float -> uint8 conversion: scale by 256 - eps, then truncate.
_TO_UINT8_SCALE = 255.999


def _bound(img: torch.Tensor) -> float:
    """The largest value of ``img``'s scale: 1.0 for floats, 255 for uint8, 65535 for uint16."""
    return 1.0 if img.is_floating_point() else float(_max_value(img.dtype))


def _to_int_scale(dtype: torch.dtype) -> float:
    """What [0, 1] floats are multiplied by before truncating to ``dtype`` (max + 1 - eps)."""
    return _TO_UINT8_SCALE if dtype == torch.uint8 else _max_value(dtype) + 1.0 - 1e-3


def _compute_dtype(img: torch.Tensor) -> torch.dtype:
    return img.dtype if img.is_floating_point() else torch.float32


def _to_float(img: torch.Tensor) -> torch.Tensor:
    """The image in [0, 1] as floats (an integer image is divided by its max value)."""
    return img if img.is_floating_point() else img.to(torch.float32).div_(_bound(img))


def _from_float(img: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Back from [0, 1] floats to ``dtype`` (torchvision's rounding for integers)."""
    if dtype.is_floating_point:
        return img.to(dtype)
    return _truncate(img.mul(_to_int_scale(dtype)), dtype)


def _truncate(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Floats on ``dtype``'s scale cast to it (truncated), kept below its max + 1.

    For uint16 the scale ``65535 + 1 - eps`` is 65536 in float32, so 1.0 would wrap
    to 0 (torchvision's result): the values are clamped to 65535 first.
    """
    if dtype == torch.uint8:
        return values.to(dtype)
    return values.clamp_(0, _max_value(dtype)).to(dtype)


def per_image_factor(
    owner: str,
    img: torch.Tensor,
    factor: Factor,
    name: str,
    low: float = 0.0,
    high: float = float("inf"),
) -> Factor:
    """Check a blend factor; a tensor is shaped to broadcast over ``[..., C, H, W]``.

    A number must lie in ``[low, high]``. A tensor must hold one value, or one per
    image of the flattened batch; it is returned as ``[..., 1, 1, 1]`` in the
    compute dtype on the image's device (its values are not range-checked, to
    avoid a device sync).

    Example:
        >>> import torch
        >>> f = per_image_factor("demo", torch.zeros(2, 3, 4, 4), torch.ones(2), "factor")
        >>> f.shape
        torch.Size([2, 1, 1, 1])
    """
    if isinstance(factor, torch.Tensor):
        batch_shape = img.shape[:-3]
        n = 1
        for d in batch_shape:
            n *= d
        if factor.numel() not in (1, n):
            raise ValueError(
                f"{owner}: {name} must be a number or a tensor with one value per image "
                f"({n}), got shape {tuple(factor.shape)}"
            )
        shape = (*batch_shape, 1, 1, 1) if factor.numel() == n else ()
        return factor.to(device=img.device, dtype=_compute_dtype(img)).reshape(shape)
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real):
        raise TypeError(
            f"{owner}: {name} must be a number or a tensor, got {type(factor).__name__}"
        )
    if not low <= float(factor) <= high:
        raise ValueError(f"{owner}: {name} must be in [{low}, {high}], got {factor}")
    return float(factor)


# Integer types of each width: the bit patterns _select moves.
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _select(
    mask: torch.Tensor, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``torch.where(mask, a, b)`` for ``a`` and ``b`` of one dtype: the same values, bit for bit.

    On the CPU it moves the bits through integer views (``b ^ ((a ^ b) & -mask)``):
    torch's CPU ``where`` and ``masked_fill`` run element by element, ~6x slower.
    With ``out`` (of ``a``'s shape and dtype, which may be ``a`` itself) the result
    is written there.
    """
    if (
        not eager_cpu(a)
        or a.dtype != b.dtype
        or a.element_size() not in _BITS
        or a.dtype == torch.bool
    ):
        if a.dtype == torch.uint16 and b.dtype == torch.uint16:
            done = image_where(mask, a, b)
            return done if out is None else out.copy_(done)
        return torch.where(mask, a, b) if out is None else torch.where(mask, a, b, out=out)
    bits = _BITS[a.element_size()]
    a_bits, b_bits = a.view(bits), b.view(bits)
    ones = mask.to(bits).neg_()  # every bit set where mask
    diff = a_bits ^ b_bits if out is None else torch.bitwise_xor(a_bits, b_bits, out=out.view(bits))
    return diff.bitwise_and_(ones).bitwise_xor_(b_bits).view(a.dtype)


def _blend(img1: torch.Tensor, img2: torch.Tensor, ratio: Factor) -> torch.Tensor:
    """``img1 * ratio + img2 * (1 - ratio)``, clamped and cast back to ``img1.dtype``.

    ``img2`` is a temporary of the caller's (a gray image or mean) and is overwritten.
    """
    out = (img1 * ratio).add_(img2.mul_(1.0 - ratio)).clamp_(0.0, _bound(img1))
    return out if img1.is_floating_point() else out.to(img1.dtype)


def _gray(img: torch.Tensor) -> torch.Tensor:
    """ITU-R 601-2 luma ``[..., 1, H, W]`` as floats (not rounded)."""
    r, g, b = img.unbind(-3)
    return r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).unsqueeze(-3)


def rgb_to_grayscale_image(img: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    """The image kernel of :func:`rgb_to_grayscale`, which documents the arguments.

    Example:
        >>> img = torch.tensor([255, 0, 0], dtype=torch.uint8).view(3, 1, 1)
        >>> rgb_to_grayscale_image(img).flatten().tolist()
        [76]
    """
    if img.dim() < 3:
        raise ValueError(
            f"rgb_to_grayscale: expected an image tensor [..., C, H, W], got {img.dim()} dims"
        )
    if img.dtype != torch.uint8 and img.dtype != torch.uint16 and not img.is_floating_point():
        raise TypeError(
            f"rgb_to_grayscale: expected a uint8, uint16 or floating image, got {img.dtype}"
        )
    if num_output_channels not in (1, 3):
        raise ValueError(
            f"rgb_to_grayscale: num_output_channels must be 1 or 3, got {num_output_channels}"
        )
    channels = img.shape[-3]
    if channels == 1:
        return img.clone() if num_output_channels == 1 else img.repeat_interleave(3, dim=-3)
    if channels != 3:
        raise ValueError(
            f"rgb_to_grayscale: expected an image with 1 or 3 channels, got {channels}"
        )
    gray = _gray(img).to(img.dtype)
    if num_output_channels == 3:
        gray = gray.expand(img.shape).contiguous()
    return gray


def _grayscale_into(img: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """:func:`rgb_to_grayscale` of ``[N, C, H, W]`` ``img``, keeping C, written into ``out``.

    The same values bit for bit: integers truncate :func:`_gray`'s floats through int32
    (torch's float -> uint8 cast runs element by element, ~5x slower); floats are
    written straight into the first channel. Intermediates are image-sized: give it a
    few images at a time (:func:`_by_chunks`).
    """
    if img.shape[-3] == 1:
        return out.copy_(img)
    if not img.is_floating_point():
        gray = _gray(img)
        truncated = gray.view(torch.int32).copy_(gray)  # in place: each value read, then written
        out[:, :1].copy_(truncated)
    else:
        r, g, b = img.unbind(-3)
        torch.mul(r, 0.2989, out=out[:, 0]).add_(g, alpha=0.587).add_(b, alpha=0.114)
    return out[:, 1:].copy_(out[:, :1].expand_as(out[:, 1:]))


def adjust_brightness_image(img: torch.Tensor, brightness_factor: Factor) -> torch.Tensor:
    """The image kernel of :func:`adjust_brightness`, which documents the arguments.

    Example:
        >>> adjust_brightness_image(torch.full((3, 1, 1), 0.4), 2.0).flatten().tolist()
        [0.800000011920929, 0.800000011920929, 0.800000011920929]
    """
    check_image("adjust_brightness", img, channels=(1, 3))
    f = per_image_factor("adjust_brightness", img, brightness_factor, "brightness_factor")
    out = (img * f).clamp_(0.0, _bound(img))
    return out if img.is_floating_point() else out.to(img.dtype)


def adjust_contrast_image(img: torch.Tensor, contrast_factor: Factor) -> torch.Tensor:
    """The image kernel of :func:`adjust_contrast`, which documents the arguments.

    Example:
        >>> img = torch.tensor([0.0, 1.0]).view(1, 1, 2)
        >>> adjust_contrast_image(img, 0.5).flatten().tolist()
        [0.25, 0.75]
    """
    check_image("adjust_contrast", img, channels=(1, 3))
    f = per_image_factor("adjust_contrast", img, contrast_factor, "contrast_factor")
    if img.shape[-3] == 3:
        gray = _gray(img)
        if not img.is_floating_point():
            gray = gray.floor_()
    else:
        gray = img.to(_compute_dtype(img))
    # Row means, then their mean: every image reduces in the same order whether it comes
    # alone or in a batch (one mean over a whole large image is split differently).
    mean = gray.mean(dim=-1, keepdim=True).mean(dim=-2, keepdim=True)
    return _blend(img, mean, f)


def adjust_saturation_image(img: torch.Tensor, saturation_factor: Factor) -> torch.Tensor:
    """The image kernel of :func:`adjust_saturation`, which documents the arguments.

    Example:
        >>> img = torch.tensor([200, 100, 0], dtype=torch.uint8).view(3, 1, 1)
        >>> adjust_saturation_image(img, 0.0).flatten().tolist()
        [118, 118, 118]
    """
    check_image("adjust_saturation", img, channels=(1, 3))
    f = per_image_factor("adjust_saturation", img, saturation_factor, "saturation_factor")
    if img.shape[-3] == 1:
        return img.clone()
    gray = _gray(img)
    if not img.is_floating_point():
        gray = gray.floor_()
    return _blend(img, gray, f)


def _rotate_hue(img: torch.Tensor, turns: Factor) -> torch.Tensor:
    """Rotate the hue of RGB floats (any scale) by ``turns``, keeping HSV value and saturation.

    With ``h6`` the hue in sixths of a turn (Pillow's/torchvision's RGB -> HSV), the
    HSV -> RGB step has the closed form ``max - (max - min) * clamp(min(k, 4 - k), 0, 1)``
    with ``k = (n + h6) mod 6`` and ``n = 5, 3, 1`` for R, G, B; S and V never need
    to be formed, which saves most of the passes over the image.
    """
    # In place where possible: on CPU every fresh batch-sized buffer is page-faulted in
    # (glibc maps buffers that big anew each time), which costs as much as the math.
    r, g, b = img.unbind(-3)
    maxc = torch.maximum(r, g).clamp_min_(b)
    delta = torch.minimum(r, g).clamp_max_(b).neg_().add_(maxc)
    # Where max == min the hue is 0 and so is num: any positive divisor keeps NaNs out.
    safe = delta.clamp_min(torch.finfo(delta.dtype).tiny)
    red_max, green_max = maxc == r, maxc == g
    num = _select(red_max, g - b, _select(green_max, b - r, r - g))
    # 0 where red is the max, else 2 where green is, else 4 (exact small integers).
    not_red = red_max.logical_not().to(img.dtype)
    offset = green_max.to(img.dtype).mul_(-2.0).add_(4.0).mul_(not_red)
    if isinstance(turns, torch.Tensor) and turns.dim() > 0:
        turns = turns[..., 0, :, :]
    h6 = num.div_(safe).add_(offset).add_(turns * 6.0).unsqueeze(-3)
    n = torch.tensor([5.0, 3.0, 1.0], dtype=img.dtype, device=img.device).view(3, 1, 1)
    k = h6 + n
    # k mod 6 (k in [-3, 14)), 5x faster than remainder_ on the CPU; where k / 6 rounds up
    # to a whole number k lands on 0 instead of 6, and the ramp is 0 at both.
    k = k.sub_(k.div(6.0).floor_().mul_(6.0))
    ramp = k.sub_(2.0).abs_().neg_().add_(2.0).clamp_(0.0, 1.0)  # min(k, 4 - k), clamped
    return ramp.mul_(delta.unsqueeze(-3)).neg_().add_(maxc.unsqueeze(-3))


def adjust_hue_image(img: torch.Tensor, hue_factor: Factor) -> torch.Tensor:
    """The image kernel of :func:`adjust_hue`, which documents the arguments.

    Example:
        >>> red = torch.tensor([1.0, 0.0, 0.0]).view(3, 1, 1)
        >>> adjust_hue_image(red, 1 / 3).flatten().round(decimals=4).tolist()  # red -> green
        [0.0, 1.0, 0.0]
    """
    check_image("adjust_hue", img, channels=(1, 3))
    f = per_image_factor("adjust_hue", img, hue_factor, "hue_factor", -0.5, 0.5)
    if img.shape[-3] == 1 or img.numel() == 0:
        return img.clone()
    if img.is_floating_point():
        return _rotate_hue(img, f)
    # On the integer scale directly; torchvision's x / 255 -> float -> * 255.999 becomes
    # one scale (65535.999 / 65535 for uint16).
    rotated = _rotate_hue(img.to(torch.float32), f)
    return _truncate(rotated.mul_(_to_int_scale(img.dtype) / _bound(img)), img.dtype)


def adjust_gamma_image(img: torch.Tensor, gamma: float, gain: float = 1.0) -> torch.Tensor:
    """The image kernel of :func:`adjust_gamma`, which documents the arguments.

    Example:
        >>> adjust_gamma_image(torch.full((1, 1, 1), 0.25), 0.5).item()
        0.5
    """
    check_image("adjust_gamma", img)
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or gamma < 0:
        raise ValueError(f"adjust_gamma: gamma must be a non-negative number, got {gamma!r}")
    out = _to_float(img).pow(gamma)
    if gain != 1.0:
        out = out.mul(gain).clamp_(0.0, 1.0)
    return _from_float(out, img.dtype)


def invert_image(img: torch.Tensor) -> torch.Tensor:
    """The image kernel of :func:`invert`, which documents the arguments.

    Example:
        >>> invert_image(torch.tensor([0, 200], dtype=torch.uint8).view(1, 1, 2)).flatten().tolist()
        [255, 55]
    """
    check_image("invert", img)
    if img.is_floating_point():
        return 1.0 - img
    # torch has no bitwise_not on uint16; xor with the max flips the same bits.
    return img.bitwise_not() if img.dtype == torch.uint8 else img.bitwise_xor(_max_value(img.dtype))


def _invert_into(img: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """:func:`invert` of ``img`` written into ``out`` (its shape and dtype; no check)."""
    if img.is_floating_point():
        return torch.ops.aten.rsub.Scalar_out(img, 1.0, out=out)  # torch.rsub takes no out=
    if img.dtype == torch.uint8:
        return torch.bitwise_not(img, out=out)
    return torch.bitwise_xor(img, _max_value(img.dtype), out=out)


def posterize_image(img: torch.Tensor, bits: int | torch.Tensor) -> torch.Tensor:
    """The image kernel of :func:`posterize`, which documents the arguments.

    Example:
        >>> posterize_image(torch.tensor([255, 100], dtype=torch.uint8).view(1, 1, 2), 2).flatten()
        tensor([192,  64], dtype=torch.uint8)
    """
    check_image("posterize", img)
    if isinstance(bits, torch.Tensor):
        b = per_image_factor("posterize", img, bits, "bits")
        # Values are kept in steps of 2 ** (value bits - bits) on the integer scale.
        value_bits = 8 if img.is_floating_point() else _value_bits(img.dtype)
        step = torch.exp2(value_bits - b.round())
        if img.is_floating_point():
            levels = 256.0 / step
            return img.mul(levels).floor_().clamp_(min=0).minimum(levels - 1).div_(levels)
        return (img.to(torch.float32).div_(step).floor_().mul_(step)).to(img.dtype)
    _check_posterize_bits("posterize", bits)
    return _posterize_into(img, torch.empty_like(img), bits)


def _check_posterize_bits(owner: str, bits: object) -> int:
    """``bits`` if it is an int in [0, 8], else a ``ValueError`` naming ``owner``.

    Example:
        >>> _check_posterize_bits("demo", 4)
        4
    """
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= 8:
        raise ValueError(f"{owner}: bits must be an integer in [0, 8], got {bits!r}")
    return bits


def _posterize_into(img: torch.Tensor, out: torch.Tensor, bits: int) -> torch.Tensor:
    """:func:`posterize` of ``img`` at ``bits`` (an int in [0, 8]) written into ``out``.

    Integers are one pass (a bitwise AND); floats take four passes over ``out``.
    """
    if img.is_floating_point():
        levels = 1 << bits
        return torch.mul(img, levels, out=out).floor_().clamp_(0, levels - 1).mul_(1.0 / levels)
    mask = ((1 << bits) - 1) << (_value_bits(img.dtype) - bits)
    return torch.bitwise_and(img, mask, out=out)


def solarize_image(img: torch.Tensor, threshold: float | torch.Tensor) -> torch.Tensor:
    """The image kernel of :func:`solarize`, which documents the arguments.

    Example:
        >>> solarize_image(torch.tensor([10, 200], dtype=torch.uint8).view(1, 1, 2), 128).flatten()
        tensor([10, 55], dtype=torch.uint8)
    """
    check_image("solarize", img)
    if isinstance(threshold, torch.Tensor):
        t = per_image_factor("solarize", img, threshold, "threshold")
    else:
        t = _check_solarize_threshold("solarize", img, threshold)
    return _select(_at_least(img, t), invert(img), img)


def _at_least(img: torch.Tensor, threshold: Factor) -> torch.Tensor:
    """``img >= threshold`` (torch has no comparisons on uint16: those compare as int32)."""
    return (img.to(torch.int32) if img.dtype == torch.uint16 else img) >= threshold


def _check_solarize_threshold(owner: str, img: torch.Tensor, threshold: float) -> float:
    """``threshold`` as a float if it is a number in [-inf, max] of ``img``'s scale.

    The maximum is 255 for uint8, 65535 for uint16 and 1.0 for floats; otherwise a ``ValueError``
    (``TypeError`` for a non-number) naming ``owner``.

    Example:
        >>> import torch
        >>> _check_solarize_threshold("demo", torch.zeros(1, 1, 1), 0.5)
        0.5
    """
    return per_image_factor(owner, img, threshold, "threshold", -float("inf"), _bound(img))


@functools.lru_cache(maxsize=64)
def _first_solarized_uint8(threshold: float) -> int:
    """The smallest uint8 value that ``img >= threshold`` holds for (256: none)."""
    values = torch.arange(256, dtype=torch.uint8)
    return int((values >= threshold).logical_not_().sum())


def _solarize_into(img: torch.Tensor, out: torch.Tensor, threshold: float) -> torch.Tensor:
    """:func:`solarize` of ``img`` at a checked number ``threshold``, written into ``out``.

    The same values bit for bit. For uint8, with ``k`` the first value inverted,
    ``clamp(img, k - 1, k)`` is ``k - 1`` below ``k`` and ``k`` from it, so
    ``(k - 1) - clamp(...)`` (mod 256) is 0 or 255 and ``img ^`` it is the result:
    three vectorised passes over ``out``, where a comparison to bool runs element by
    element. Floats and uint16 select the inverted values through :func:`_select`.
    Intermediates are image-sized: give it a few images at a time (:func:`_by_chunks`).
    """
    if img.dtype != torch.uint8:
        return _select(_at_least(img, threshold), _invert_into(img, out), img, out=out)
    k = _first_solarized_uint8(threshold)
    if k == 0:
        return torch.bitwise_not(img, out=out)
    if k == 256:
        return out.copy_(img)
    mask = torch.clamp(img, k - 1, k, out=out)
    mask = torch.ops.aten.rsub.Scalar_out(mask, k - 1, out=out)  # torch.rsub takes no out=
    return torch.bitwise_xor(img, mask, out=out)


# Values per call of the multi-pass kernels written into an output (solarize, grayscale):
# a few 224 x 224 images, whose intermediates stay in the caches between passes.
_CHUNK_VALUES = 4 * 3 * 224 * 224


def _by_chunks(
    write: Callable[..., object], img: torch.Tensor, out: torch.Tensor, *args: object
) -> torch.Tensor:
    """``write(part, out_part, *args)`` on a few images of ``[N, C, H, W]`` ``img`` at a time.

    Example:
        >>> import torch
        >>> img = torch.arange(3, dtype=torch.uint8).view(3, 1, 1, 1)
        >>> _by_chunks(_posterize_into, img, torch.empty_like(img), 7).flatten().tolist()
        [0, 0, 2]
    """
    per_chunk = max(1, _CHUNK_VALUES // max(1, math.prod(img.shape[1:])))
    for start in range(0, img.shape[0], per_chunk):
        rows = slice(start, start + per_chunk)
        write(img[rows], out[rows], *args)
    return out


def autocontrast_image(img: torch.Tensor) -> torch.Tensor:
    """The image kernel of :func:`autocontrast`, which documents the arguments.

    Example:
        >>> img = torch.tensor([50, 100, 150], dtype=torch.uint8).view(1, 1, 3)
        >>> autocontrast_image(img).flatten().tolist()
        [0, 127, 255]
    """
    check_image("autocontrast", img, channels=(1, 3))
    if img.numel() == 0:
        return img.clone()
    bound = _bound(img)
    x = img.to(_compute_dtype(img))
    low = x.amin(dim=(-2, -1), keepdim=True)
    high = x.amax(dim=(-2, -1), keepdim=True)
    flat = high == low
    # A flat channel keeps its values: offset 0, scale 1.
    low = torch.where(flat, torch.zeros_like(low), low)
    scale = torch.where(flat, torch.ones_like(high), (high - low) / bound)
    return ((x - low) / scale).clamp_(0.0, bound).to(img.dtype)


def equalize_image(img: torch.Tensor) -> torch.Tensor:
    """The image kernel of :func:`equalize`, which documents the arguments.

    Example:
        >>> img = torch.tensor([10, 20], dtype=torch.uint8).repeat_interleave(256).view(1, 16, 32)
        >>> equalize_image(img).unique().tolist()
        [0, 255]
    """
    check_image("equalize", img)
    if img.numel() == 0:
        return img.clone()
    if img.dtype == torch.uint8:
        u8 = img
    elif img.is_floating_point():
        u8 = _from_float(img.clamp(0.0, 1.0), torch.uint8)
    else:
        u8 = _to_dtype_image(img, torch.uint8, True)
    index = u8.flatten(-2).long()  # [..., C, HW]
    hist = torch.zeros((*index.shape[:-1], 256), dtype=torch.int64, device=img.device)
    hist.scatter_add_(-1, index, torch.ones_like(index))
    lut = _equalize_lut(hist, index.shape[-1])
    out = lut.gather(-1, index).view_as(u8)
    if img.is_floating_point():
        return out.to(img.dtype).div_(255.0)
    return _to_dtype_image(out, img.dtype, True)


def _equalize_lut(hist: torch.Tensor, num_pixels: int) -> torch.Tensor:
    """Pillow's equalize table: ``lut[k] = (cum[k-1] + step // 2) // step``.

    ``step`` is (pixels not of the largest value present) // 255; where it is 0,
    the identity table is used (Pillow leaves such a channel unchanged).
    """
    cum = hist.cumsum(-1)
    last = cum.argmax(-1, keepdim=True)  # first index reaching the total: the largest value
    step = (num_pixels - hist.gather(-1, last)).div(255, rounding_mode="floor")
    shifted = torch.nn.functional.pad(cum[..., :-1], (1, 0))
    lut = (shifted + step // 2).div(step.clamp(min=1), rounding_mode="floor").clamp_(0, 255)
    identity = torch.arange(256, device=hist.device).expand_as(lut)
    return torch.where(step == 0, identity, lut).to(torch.uint8)


# The functionals: one per operation, dispatching on the type of the input.


def rgb_to_grayscale(inpt: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    """Convert RGB to grayscale with ITU-R 601-2 weights (as torchvision and Pillow ``"L"``).

    ``L = 0.2989 R + 0.587 G + 0.114 B``; integer results are truncated like
    torchvision's. A 1-channel input is copied (or repeated to 3 channels).
    TorchScript-compatible.

    Example:
        >>> import torch
        >>> img = torch.tensor([255, 0, 0], dtype=torch.uint8).view(3, 1, 1)
        >>> rgb_to_grayscale(img).flatten().tolist()
        [76]
    """
    kernel = get_kernel(rgb_to_grayscale, type(inpt))
    return kernel(inpt, num_output_channels=num_output_channels)


def adjust_brightness(inpt: torch.Tensor, brightness_factor: Factor) -> torch.Tensor:
    """Multiply by ``brightness_factor`` (0 gives black, 1 the original), then clamp.

    Example:
        >>> import torch
        >>> adjust_brightness(torch.full((3, 1, 1), 0.4), 2.0).flatten().tolist()
        [0.800000011920929, 0.800000011920929, 0.800000011920929]
    """
    kernel = get_kernel(adjust_brightness, type(inpt))
    return kernel(inpt, brightness_factor=brightness_factor)


def adjust_contrast(inpt: torch.Tensor, contrast_factor: Factor) -> torch.Tensor:
    """Blend with the mean gray level of each image (0 gives a flat gray image).

    Example:
        >>> import torch
        >>> img = torch.tensor([0.0, 1.0]).view(1, 1, 2)
        >>> adjust_contrast(img, 0.5).flatten().tolist()
        [0.25, 0.75]
    """
    kernel = get_kernel(adjust_contrast, type(inpt))
    return kernel(inpt, contrast_factor=contrast_factor)


def adjust_saturation(inpt: torch.Tensor, saturation_factor: Factor) -> torch.Tensor:
    """Blend with the grayscale image (0 gives gray, 1 the original); 1 channel is unchanged.

    Example:
        >>> import torch
        >>> img = torch.tensor([200, 100, 0], dtype=torch.uint8).view(3, 1, 1)
        >>> adjust_saturation(img, 0.0).flatten().tolist()
        [118, 118, 118]
    """
    kernel = get_kernel(adjust_saturation, type(inpt))
    return kernel(inpt, saturation_factor=saturation_factor)


def adjust_hue(inpt: torch.Tensor, hue_factor: Factor) -> torch.Tensor:
    """Rotate the hue by ``hue_factor`` turns (in [-0.5, 0.5]) in HSV space.

    A 1-channel image is returned unchanged (as torchvision and Pillow do).

    Example:
        >>> import torch
        >>> red = torch.tensor([1.0, 0.0, 0.0]).view(3, 1, 1)
        >>> adjust_hue(red, 1 / 3).flatten().round(decimals=4).tolist()  # red -> green
        [0.0, 1.0, 0.0]
    """
    kernel = get_kernel(adjust_hue, type(inpt))
    return kernel(inpt, hue_factor=hue_factor)


def adjust_gamma(inpt: torch.Tensor, gamma: float, gain: float = 1.0) -> torch.Tensor:
    """Gamma correction ``gain * img ** gamma`` on the [0, 1] scale.

    Example:
        >>> import torch
        >>> adjust_gamma(torch.full((1, 1, 1), 0.25), 0.5).item()
        0.5
    """
    kernel = get_kernel(adjust_gamma, type(inpt))
    return kernel(inpt, gamma=gamma, gain=gain)


def invert(inpt: torch.Tensor) -> torch.Tensor:
    """Invert the colors: ``max - img`` (255 for uint8, 65535 for uint16), ``1 - img`` for floats.

    Example:
        >>> import torch
        >>> invert(torch.tensor([0, 200], dtype=torch.uint8).view(1, 1, 2)).flatten().tolist()
        [255, 55]
    """
    kernel = get_kernel(invert, type(inpt))
    return kernel(inpt)


def posterize(inpt: torch.Tensor, bits: int | torch.Tensor) -> torch.Tensor:
    """Keep the ``bits`` most significant bits of every channel (0 <= bits <= 8).

    ``bits`` may be a tensor (one value, or one per image of the flattened batch).
    The bits are the dtype's (uint16 keeps the top ``bits`` of 16), as torchvision.

    Example:
        >>> import torch
        >>> posterize(torch.tensor([255, 100], dtype=torch.uint8).view(1, 1, 2), 2).flatten()
        tensor([192,  64], dtype=torch.uint8)
    """
    kernel = get_kernel(posterize, type(inpt))
    return kernel(inpt, bits=bits)


def solarize(inpt: torch.Tensor, threshold: float | torch.Tensor) -> torch.Tensor:
    """Invert every value at or above ``threshold`` (on the image's scale: 255, 65535 or 1.0).

    ``threshold`` may be a tensor (one value, or one per image of the flattened batch).

    Example:
        >>> import torch
        >>> solarize(torch.tensor([10, 200], dtype=torch.uint8).view(1, 1, 2), 128).flatten()
        tensor([10, 55], dtype=torch.uint8)
    """
    kernel = get_kernel(solarize, type(inpt))
    return kernel(inpt, threshold=threshold)


def autocontrast(inpt: torch.Tensor) -> torch.Tensor:
    """Stretch every channel of every image to the full range [0, max].

    Example:
        >>> import torch
        >>> img = torch.tensor([50, 100, 150], dtype=torch.uint8).view(1, 1, 3)
        >>> autocontrast(img).flatten().tolist()
        [0, 127, 255]
    """
    kernel = get_kernel(autocontrast, type(inpt))
    return kernel(inpt)


def equalize(inpt: torch.Tensor) -> torch.Tensor:
    """Histogram equalization of every channel, with Pillow's lookup table (``ImageOps.equalize``).

    Floating and uint16 images are equalized on their uint8 quantization (uint16: the
    high byte, and the result is ``255 << 8`` at most), as torchvision does. The whole
    batch is done at once: one histogram per channel via ``scatter_add``, no Python loop.

    Example:
        >>> import torch
        >>> img = torch.tensor([10, 20], dtype=torch.uint8).repeat_interleave(256).view(1, 16, 32)
        >>> equalize(img).unique().tolist()
        [0, 255]
    """
    kernel = get_kernel(equalize, type(inpt))
    return kernel(inpt)


# The video kernels are the image kernels: a video is a batch of images [..., T, C, H, W].
rgb_to_grayscale_video = rgb_to_grayscale_image
adjust_brightness_video = adjust_brightness_image
adjust_contrast_video = adjust_contrast_image
adjust_saturation_video = adjust_saturation_image
adjust_hue_video = adjust_hue_image
adjust_gamma_video = adjust_gamma_image
invert_video = invert_image
posterize_video = posterize_image
solarize_video = solarize_image
autocontrast_video = autocontrast_image
equalize_video = equalize_image


for _functional, _kernel in (
    (rgb_to_grayscale, rgb_to_grayscale_image),
    (adjust_brightness, adjust_brightness_image),
    (adjust_contrast, adjust_contrast_image),
    (adjust_saturation, adjust_saturation_image),
    (adjust_hue, adjust_hue_image),
    (adjust_gamma, adjust_gamma_image),
    (invert, invert_image),
    (posterize, posterize_image),
    (solarize, solarize_image),
    (autocontrast, autocontrast_image),
    (equalize, equalize_image),
):
    for _type in (torch.Tensor, tv_tensors.Image, tv_tensors.Video):
        _register_kernel_internal(_functional, _type)(_kernel)

# torchvision v1 name for the same functional.
to_grayscale = rgb_to_grayscale


# Channel layout: gray to RGB, channel permutations.


def grayscale_to_rgb_image(image: torch.Tensor) -> torch.Tensor:
    """A one-channel image ``[..., 1, H, W]`` as RGB (the channel three times); RGB as it is.

    Images with 3 or more channels are returned unchanged (torchvision's ``RGB``).

    Example:
        >>> import torch
        >>> grayscale_to_rgb_image(torch.full((1, 2, 2), 0.5)).shape
        torch.Size([3, 2, 2])
    """
    check_image("grayscale_to_rgb", image)
    channels = image.shape[-3]
    if channels >= 3:
        return image
    if channels != 1:
        raise ValueError(
            f"grayscale_to_rgb: expected an image with 1 or at least 3 channels, got {channels} "
            f"(shape {tuple(image.shape)})"
        )
    repeats = [1] * image.ndim
    repeats[-3] = 3
    return image.repeat(repeats)


def grayscale_to_rgb(inpt: torch.Tensor) -> torch.Tensor:
    """A one-channel image or video as RGB (see :func:`grayscale_to_rgb_image`).

    Example:
        >>> import torch
        >>> grayscale_to_rgb(torch.zeros(2, 1, 4, 4)).shape
        torch.Size([2, 3, 4, 4])
    """
    return get_kernel(grayscale_to_rgb, type(inpt))(inpt)


def permute_channels_image(
    image: torch.Tensor, permutation: list[int] | torch.Tensor
) -> torch.Tensor:
    """Reorder the channels of ``[..., C, H, W]``: output channel ``i`` is input ``permutation[i]``.

    ``permutation`` is one permutation of ``range(C)`` for every image, or a tensor
    ``[N, C]`` with one per image of the flattened batch.

    Example:
        >>> import torch
        >>> img = torch.arange(3, dtype=torch.uint8).view(3, 1, 1)
        >>> permute_channels_image(img, [2, 0, 1]).flatten().tolist()
        [2, 0, 1]
    """
    check_image("permute_channels", image)
    channels = image.shape[-3]
    perm = torch.as_tensor(permutation, dtype=torch.long, device=image.device)
    if perm.shape[-1:] != (channels,) or perm.ndim > 2:
        raise ValueError(
            f"permute_channels: permutation must have {channels} entries (one per channel), "
            f"got shape {tuple(perm.shape)}"
        )
    if image.numel() == 0:
        return image
    flat = bits_view(image).reshape(-1, *image.shape[-3:])
    if perm.ndim == 1:
        out = flat[:, perm]
    else:
        if perm.shape[0] not in (1, flat.shape[0]):
            raise ValueError(
                f"permute_channels: {perm.shape[0]} permutations for {flat.shape[0]} images"
            )
        rows = torch.arange(flat.shape[0], device=image.device).unsqueeze(1)
        out = flat[rows, perm.expand(flat.shape[0], channels)]
    return out.view(image.dtype).reshape(image.shape)


def permute_channels_video(
    video: torch.Tensor, permutation: list[int] | torch.Tensor
) -> torch.Tensor:
    """:func:`permute_channels_image` on a video ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> permute_channels_video(torch.arange(2.0).view(1, 2, 1, 1), [1, 0]).flatten().tolist()
        [1.0, 0.0]
    """
    return permute_channels_image(video, permutation)


def permute_channels(inpt: torch.Tensor, permutation: list[int] | torch.Tensor) -> torch.Tensor:
    """Reorder the channels of an image or video (see :func:`permute_channels_image`).

    Example:
        >>> import torch
        >>> permute_channels(torch.arange(3.0).view(3, 1, 1), [1, 2, 0]).flatten().tolist()
        [1.0, 2.0, 0.0]
    """
    return get_kernel(permute_channels, type(inpt))(inpt, permutation=permutation)


for _type in (torch.Tensor, tv_tensors.Image, tv_tensors.Video):
    _register_kernel_internal(grayscale_to_rgb, _type)(grayscale_to_rgb_image)
_register_kernel_internal(permute_channels, torch.Tensor)(permute_channels_image)
_register_kernel_internal(permute_channels, tv_tensors.Image)(permute_channels_image)
_register_kernel_internal(permute_channels, tv_tensors.Video)(permute_channels_video)
