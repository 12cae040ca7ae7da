"""Conversion kernels: ``to_image``, ``to_dtype``, ``normalize`` (torchvision v2 functional).

Example:
    >>> import torch
    >>> img = torch.full((3, 2, 2), 255, dtype=torch.uint8)
    >>> x = to_dtype(img, torch.float32, scale=True)
    >>> normalize(x, [0.5] * 3, [0.5] * 3)[0, 0, 0].item()
    1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import is_pil, pil_to_tensor

__all__ = [
    "convert_image_dtype",
    "normalize",
    "normalize_image",
    "normalize_video",
    "to_dtype",
    "to_dtype_image",
    "to_dtype_video",
    "to_image",
    "to_tensor",
]


def to_image(inpt: Any) -> tv_tensors.Image:
    """A PIL image, a NumPy array ``[H, W]``/``[H, W, C]`` or a tensor as a ``[C, H, W]``
    ``tv_tensors.Image``.

    Arrays keep their dtype and share memory where possible (as torchvision's ``to_image``).

    Example:
        >>> import numpy as np
        >>> image = to_image(np.zeros((4, 5, 3), dtype=np.uint8))
        >>> type(image).__name__, tuple(image.shape)
        ('Image', (3, 4, 5))
    """
    return tv_tensors.Image(_image_tensor(inpt))


def _image_tensor(inpt: Any) -> torch.Tensor:
    """The plain ``[C, H, W]`` tensor :func:`to_image` wraps."""
    if is_pil(inpt):
        return pil_to_tensor(inpt)
    if isinstance(inpt, np.ndarray):
        if inpt.ndim not in (2, 3):
            raise ValueError(f"to_image: expected an array [H, W] or [H, W, C], got {inpt.shape}")
        array = inpt[:, :, None] if inpt.ndim == 2 else inpt
        if not array.flags.writeable:
            array = array.copy()
        return torch.from_numpy(array).permute(2, 0, 1)
    if isinstance(inpt, torch.Tensor):
        if inpt.ndim == 2:
            return inpt.unsqueeze(0)
        if inpt.ndim < 2:
            raise ValueError(
                f"to_image: expected an image tensor [..., C, H, W], got {tuple(inpt.shape)}"
            )
        return inpt
    raise TypeError(
        f"to_image: expected a PIL image, a NumPy array or a tensor, got {type(inpt).__name__}"
    )


def _max_value(dtype: torch.dtype) -> int:
    """Largest value of an integer image dtype (uint8 -> 255), 1 for others; scriptable."""
    if dtype == torch.int64:
        return 9223372036854775807
    bits = _value_bits(dtype)
    return (1 << bits) - 1 if bits < 63 else 1


def _value_bits(dtype: torch.dtype) -> int:
    """Bits that carry the value of an integer dtype (uint8: 8, int16: 15); scriptable."""
    if dtype == torch.uint8:
        return 8
    if dtype == torch.int8:
        return 7
    if dtype == torch.int16:
        return 15
    if dtype == torch.uint16:
        return 16
    if dtype == torch.int32:
        return 31
    return 63


def _to_dtype_image(img: torch.Tensor, dtype: torch.dtype, scale: bool) -> torch.Tensor:
    """``to_dtype`` for a tensor; scriptable."""
    if img.dtype == dtype:
        return img
    if not scale:
        return img.to(dtype)
    float_in = img.is_floating_point()
    float_out = torch.empty(0, dtype=dtype).is_floating_point()
    if float_in:
        if float_out:
            return img.to(dtype)
        if (img.dtype == torch.float32 and (dtype == torch.int32 or dtype == torch.int64)) or (
            img.dtype == torch.float64 and dtype == torch.int64
        ):
            raise RuntimeError(f"to_dtype: converting {img.dtype} to {dtype} cannot be done safely")
        # As torchvision: 1.0 maps to the max value, each integer level covers 1/(max+1).
        return img.mul(float(_max_value(dtype)) + 1.0 - 1e-3).to(dtype)
    if float_out:
        return img.to(dtype).mul_(1.0 / _max_value(img.dtype))
    bits_in, bits_out = _value_bits(img.dtype), _value_bits(dtype)
    # torch has no shifts on uint16: those go through int32 (exact for every uint16 value).
    if bits_in > bits_out:
        wide = img.to(torch.int32) if img.dtype == torch.uint16 else img
        return wide.bitwise_right_shift(bits_in - bits_out).to(dtype)
    if dtype == torch.uint16:
        return img.to(torch.int32).bitwise_left_shift_(bits_out - bits_in).to(dtype)
    return img.to(dtype).bitwise_left_shift_(bits_out - bits_in)


def to_dtype_image(
    img: torch.Tensor, dtype: torch.dtype = torch.float32, scale: bool = False
) -> torch.Tensor:
    """Convert to ``dtype``; ``scale`` also maps the value range (uint8 [0, 255] <-> float [0, 1]).

    Float to integer maps ``1.0`` to the max value and truncates; integer to float
    divides by the max value (255, 65535); between integer dtypes the value bits are
    shifted, so uint16 to uint8 keeps the high byte (torchvision's rules).

    Example:
        >>> import torch
        >>> to_dtype_image(torch.tensor([[[0, 255]]], dtype=torch.uint8), torch.float32, scale=True)
        tensor([[[0., 1.]]])
        >>> img16 = torch.tensor([[[258, 65535]]], dtype=torch.uint16)
        >>> to_dtype_image(img16, torch.uint8, scale=True)
        tensor([[[  1, 255]]], dtype=torch.uint8)
    """
    if not isinstance(img, torch.Tensor):
        raise TypeError(f"to_dtype: expected a tensor, got {type(img).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"to_dtype: dtype must be a torch.dtype, got {dtype!r}")
    return _to_dtype_image(img, dtype, bool(scale))


def _normalize_with(
    img: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, inplace: bool
) -> torch.Tensor:
    """``(img - mean) / std`` with [C, 1, 1] tensors; scriptable.

    Channels-innermost images (an HWC decode, a channels_last batch) keep their
    layout and are computed row by row (``_normalize_rows``). Other non-contiguous
    images give a contiguous result.
    """
    if _is_channels_innermost(img):
        return _normalize_rows(img, mean, std, inplace)
    if inplace:
        return img.sub_(mean).div_(std)
    if img.is_contiguous():
        return img.sub(mean).div_(std)
    out = torch.empty(img.shape, dtype=img.dtype, device=img.device)
    return torch.sub(img, mean, out=out).div_(std)


def _normalize_rows(
    img: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, inplace: bool
) -> torch.Tensor:
    """``_normalize_with`` on ``[..., H, W, C]`` memory, one row of W * C values at a time.

    Broadcasting [C, 1, 1] values over such an image runs inner loops of C (3)
    elements; repeating them along a whole row gives W * C-element loops that
    vectorize (2x faster), with the same arithmetic. The result keeps the layout,
    as torchvision's does.
    """
    rows = _rows(img)
    mean_row, std_row = _tile_row(mean, img), _tile_row(std, img)
    if inplace:
        rows.sub_(mean_row).div_(std_row)
        return img
    return _from_rows(rows.sub(mean_row).div_(std_row), img)


def _is_channels_innermost(img: torch.Tensor) -> bool:
    """Whether ``[..., C, H, W]`` is laid out as dense ``[..., H, W, C]`` memory (C > 1)."""
    if img.dim() < 3 or img.shape[-3] == 1:
        return False
    if img.shape[-1] > 1 and img.stride(-1) == 1:
        return False  # pixels of a row are adjacent (channels first): the common case, cheaply
    return img.movedim(-3, -1).is_contiguous()


def _rows(img: torch.Tensor) -> torch.Tensor:
    """A channels-innermost image as a view of rows of W * C values."""
    return img.movedim(-3, -1).reshape(-1, img.shape[-1] * img.shape[-3])


def _tile_row(per_channel: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """[C, 1, 1] (or [1, 1, 1]) values repeated along one row of ``like``: [W * C]."""
    width, channels = like.shape[-1], like.shape[-3]
    return per_channel.reshape(1, -1).expand(width, channels).reshape(-1)


def _from_rows(rows: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Rows from :func:`_rows` back to ``like``'s ``[..., C, H, W]`` shape (channels innermost)."""
    c, h, w = like.shape[-3], like.shape[-2], like.shape[-1]
    return rows.view(list(like.shape[:-3]) + [h, w, c]).movedim(-1, -3)  # noqa: RUF005


def _scale_normalize(img: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """``img * scale + shift`` per channel, in one pass from an integer image.

    ``to_dtype(img, dtype, scale=True)`` followed by ``normalize`` is this with
    ``scale = 1 / (max * std)`` and ``shift = -mean / std`` ([C, 1, 1] tensors of the
    float dtype): the same values up to float rounding, without the intermediate
    float image. Channels-innermost images keep their layout.
    """
    if _is_channels_innermost(img):
        rows = torch.addcmul(_tile_row(shift, img), _rows(img), _tile_row(scale, img))
        return _from_rows(rows, img)
    return img.to(scale.dtype).mul_(scale).add_(shift)  # exact cast, then in place


def _normalize_image(
    img: torch.Tensor, mean: list[float], std: list[float], inplace: bool
) -> torch.Tensor:
    """``normalize`` for a float tensor with parsed mean/std; scriptable."""
    mean_t = torch.tensor(mean, dtype=img.dtype, device=img.device).view(-1, 1, 1)
    std_t = torch.tensor(std, dtype=img.dtype, device=img.device).view(-1, 1, 1)
    return _normalize_with(img, mean_t, std_t, inplace)


def _parse_stats(owner: str, name: str, value: Any) -> list[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    if isinstance(value, torch.Tensor):
        value = value.reshape(-1).tolist()
    if (
        isinstance(value, Sequence)
        and len(value) > 0
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        return [float(v) for v in value]
    raise TypeError(f"{owner}: {name} must be a number or a sequence of numbers, got {value!r}")


def check_normalize_args(owner: str, mean: Any, std: Any) -> tuple[list[float], list[float]]:
    """Parse ``mean``/``std`` into float lists; a zero std is an error.

    Example:
        >>> check_normalize_args("Normalize", 0.5, (1, 2))
        ([0.5], [1.0, 2.0])
    """
    mean_f = _parse_stats(owner, "mean", mean)
    std_f = _parse_stats(owner, "std", std)
    if any(s == 0 for s in std_f):
        raise ValueError(f"{owner}: std must not contain zeros (division by zero), got {std_f}")
    return mean_f, std_f


def normalize_image(
    img: torch.Tensor, mean: Sequence[float], std: Sequence[float], inplace: bool = False
) -> torch.Tensor:
    """``(img - mean) / std`` per channel, on a floating image ``[..., C, H, W]``.

    Example:
        >>> import torch
        >>> normalize_image(torch.ones(2, 1, 1), [0.5, 0.0], [0.5, 2.0]).view(-1).tolist()
        [1.0, 0.5]
    """
    mean_f, std_f = check_normalize_args("normalize", mean, std)
    if not isinstance(img, torch.Tensor):
        raise TypeError(f"normalize: expected an image tensor, got {type(img).__name__}")
    if not img.is_floating_point():
        raise TypeError(
            f"normalize: expected a floating image, got {img.dtype} "
            "(use to_dtype(img, scale=True) first)"
        )
    if img.ndim < 3:
        raise ValueError(
            f"normalize: expected an image tensor [..., C, H, W], got {tuple(img.shape)}"
        )
    channels = img.shape[-3]
    for name, values in (("mean", mean_f), ("std", std_f)):
        if len(values) != 1 and len(values) != channels:
            raise ValueError(
                f"normalize: {name} has {len(values)} values but the image has {channels} channels"
            )
    return _normalize_image(img, mean_f, std_f, inplace)


# The functionals: one per operation, dispatching on the type of the input.


def to_dtype(
    inpt: torch.Tensor, dtype: torch.dtype = torch.float32, scale: bool = False
) -> torch.Tensor:
    """Convert to ``dtype``; ``scale`` also maps the value range (uint8 [0, 255] <-> float [0, 1]).

    Float to integer maps ``1.0`` to the max value and truncates; integer to float
    divides by the max value (255, 65535); between integer dtypes the value bits are
    shifted, so uint16 to uint8 keeps the high byte (torchvision's rules).

    Example:
        >>> import torch
        >>> to_dtype(torch.tensor([[[0, 255]]], dtype=torch.uint8), torch.float32, scale=True)
        tensor([[[0., 1.]]])
        >>> to_dtype(torch.tensor([[[258, 65535]]], dtype=torch.uint16), torch.uint8, scale=True)
        tensor([[[  1, 255]]], dtype=torch.uint8)
    """
    kernel = get_kernel(to_dtype, type(inpt))
    return kernel(inpt, dtype=dtype, scale=scale)


def normalize(
    inpt: torch.Tensor, mean: Sequence[float], std: Sequence[float], inplace: bool = False
) -> torch.Tensor:
    """``(img - mean) / std`` per channel, on a floating image ``[..., C, H, W]``.

    Example:
        >>> import torch
        >>> normalize(torch.ones(2, 1, 1), [0.5, 0.0], [0.5, 2.0]).view(-1).tolist()
        [1.0, 0.5]
    """
    kernel = get_kernel(normalize, type(inpt))
    return kernel(inpt, mean=mean, std=std, inplace=inplace)


# The video kernels are the image kernels: a video is a batch of images [..., T, C, H, W].
to_dtype_video = to_dtype_image
normalize_video = normalize_image


for _functional, _kernel in (
    (to_dtype, to_dtype_image),
    (normalize, normalize_image),
):
    for _type in (torch.Tensor, tv_tensors.Image, tv_tensors.Video):
        _register_kernel_internal(_functional, _type)(_kernel)


def _to_dtype_tensor(inpt: torch.Tensor, dtype: torch.dtype = torch.float32, **kwargs: Any) -> Any:
    """Masks and boxes change dtype without scaling (torchvision v2's rule)."""
    return inpt.to(dtype)


for _type in (tv_tensors.Mask, tv_tensors.BoundingBoxes):
    _register_kernel_internal(to_dtype, _type)(_to_dtype_tensor)


# torchvision v1's conversions, kept by v2 for old code.


def convert_image_dtype(image: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``to_dtype_image(image, dtype, scale=True)``: torchvision's older name for it.

    Example:
        >>> import torch
        >>> convert_image_dtype(torch.full((1, 1, 1), 255, dtype=torch.uint8)).item()
        1.0
    """
    return to_dtype_image(image, dtype, scale=True)


# PIL modes whose samples to_tensor reads as wider integers or floats (as torchvision v1).
_WIDE_PIL_MODES = {"I": np.int32, "I;16": np.int16, "F": np.float32}


def to_tensor(pic: Any) -> torch.Tensor:
    """A PIL image or an array ``[H, W(, C)]`` as a ``[C, H, W]`` tensor, 8-bit data in [0, 1].

    torchvision v1's ``to_tensor``: uint8 arrays and 8-bit PIL modes give floats
    (the default dtype) divided by 255; other arrays keep their dtype, PIL modes
    ``"I"``, ``"I;16"`` and ``"F"`` give int32, int16 and float32 unscaled, mode
    ``"1"`` gives 0.0 / 1.0. Prefer ``to_image`` then ``to_dtype(..., scale=True)``.

    Example:
        >>> import numpy as np
        >>> to_tensor(np.full((2, 3, 3), 255, dtype=np.uint8))[:, 0, 0].tolist()
        [1.0, 1.0, 1.0]
    """
    if is_pil(pic):
        dtype = _WIDE_PIL_MODES.get(pic.mode, np.uint8)
        array = np.array(pic, dtype, copy=True)
        if pic.mode == "1":
            array = 255 * array
        array = array.reshape(pic.height, pic.width, len(pic.getbands()))
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"to_tensor: expected an array [H, W] or [H, W, C], got {pic.shape}")
        array = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        raise TypeError(
            f"to_tensor: expected a PIL image or a NumPy array, got {type(pic).__name__}"
        )
    img = torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))
    if img.dtype == torch.uint8:
        return img.to(torch.get_default_dtype()).div_(255)
    return img


def to_pil_image_v1(pic: Any, mode: str | None = None) -> Any:
    """torchvision v1's ``to_pil_image``: a tensor ``[C, H, W]`` or array ``[H, W, C]`` as PIL.

    Floats are multiplied by 255 and truncated to uint8 (unless ``mode`` is
    ``"F"``); without ``mode``, one channel gives ``L`` (uint8), ``I;16`` (int16),
    ``I`` (int32) or ``F`` (float32), two ``LA``, three ``RGB``, four ``RGBA``;
    ``mode`` may also read three channels as ``YCbCr`` or ``HSV`` and four as
    ``CMYK`` or ``RGBX``.

    Example:
        >>> import torch
        >>> to_pil_image_v1(torch.full((3, 2, 4), 0.5)).getpixel((0, 0))
        (127, 127, 127)
    """
    if isinstance(pic, torch.Tensor):
        pic = (pic.permute(1, 2, 0) if pic.ndim == 3 else pic).numpy(force=True)
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"ToPILImage: expected a tensor or a NumPy array, got {type(pic).__name__}")
    array = pic[:, :, None] if pic.ndim == 2 else pic
    if array.ndim != 3:
        raise ValueError(f"ToPILImage: expected an image of 2 or 3 dimensions, got {pic.ndim}")
    if array.shape[-1] > 4:
        raise ValueError(f"ToPILImage: expected at most 4 channels, got {array.shape[-1]}")
    if np.issubdtype(array.dtype, np.floating) and mode != "F":
        array = (array * 255).astype(np.uint8)
    mode = _pil_mode(array, mode)
    if array.shape[-1] == 1:
        array = array[:, :, 0]
    return _pil_from_array(np.ascontiguousarray(array), mode)


# Channels -> (the modes that may read them, the mode of uint8 data when none is given).
_PIL_MODES = {
    2: (("LA",), "LA"),
    3: (("RGB", "YCbCr", "HSV"), "RGB"),
    4: (("RGBA", "CMYK", "RGBX"), "RGBA"),
}
_GRAY_MODES = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.int32): "I"}


def _pil_mode(array: np.ndarray, mode: str | None) -> str:
    """The PIL mode of the ``[H, W, C]`` ``array`` (checking a given ``mode``)."""
    channels = array.shape[-1]
    if channels == 1:
        expected = _GRAY_MODES.get(array.dtype, "F" if array.dtype == np.float32 else None)
        if mode is not None and mode != expected:
            raise ValueError(
                f"ToPILImage: mode {mode!r} does not fit one channel of {array.dtype}; "
                f"it reads as {expected!r}"
            )
        mode = expected
    else:
        permitted, default = _PIL_MODES[channels]
        if mode is not None and mode not in permitted:
            raise ValueError(
                f"ToPILImage: mode must be one of {list(permitted)} for {channels} channels, "
                f"got {mode!r}"
            )
        if mode is None and array.dtype == np.uint8:
            mode = default
    if mode is None:
        raise TypeError(
            f"ToPILImage: cannot make a PIL image from {channels} channels of {array.dtype}"
        )
    return mode


def _pil_from_array(array: np.ndarray, mode: str) -> Any:
    """``array``'s bytes read as a PIL image of ``mode`` (what ``fromarray(a, mode)`` did)."""
    from PIL import Image

    height, width = array.shape[:2]
    # frombuffer reads the bytes in the given mode; fromarray no longer takes a mode.
    raw = {"I;16": "I;16", "I": "I;32NS", "F": "F;32NF"}.get(mode, mode)
    pic = Image.frombuffer(mode, (width, height), array.tobytes(), "raw", raw, 0, 1)
    return pic.copy()
