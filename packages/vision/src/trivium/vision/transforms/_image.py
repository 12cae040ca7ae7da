"""What counts as an image, input checks, and PIL <-> tensor conversion.

Transforms act on *images*: tensors ``[..., C, H, W]`` (``uint8`` in [0, 255] or
floating in [0, 1]) and PIL images. Any other input (labels, strings, boxes
given as 1-D/2-D tensors) passes through a transform unchanged.

Example:
    >>> import torch
    >>> is_image(torch.zeros(3, 4, 4)), is_image(torch.zeros(5))
    (True, False)
    >>> batch, shape = flatten_batch(torch.zeros(2, 3, 3, 8, 8))
    >>> batch.shape, shape
    (torch.Size([6, 3, 8, 8]), torch.Size([2, 3]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trivium.core.tracing import is_tracing

__all__ = [
    "check_image",
    "eager_cpu",
    "flatten_batch",
    "is_image",
    "is_pil",
    "pil_to_tensor",
    "to_pil_image",
    "unflatten_batch",
]

# Channel counts that round-trip through a PIL image (L, LA, RGB, RGBA).
_PIL_CHANNELS = (1, 2, 3, 4)


def is_pil(x: Any) -> bool:
    """Whether ``x`` is a PIL image (without importing PIL when it is not installed).

    Example:
        >>> is_pil(3)
        False
    """
    return type(x).__module__.startswith("PIL.") and hasattr(x, "getbands")


def is_image(x: Any) -> bool:
    """Whether a transform treats ``x`` as an image: a PIL image or a tensor with ndim >= 3.

    Example:
        >>> import torch
        >>> is_image(torch.zeros(1, 2, 2)), is_image("label")
        (True, False)
    """
    return is_pil(x) or (isinstance(x, torch.Tensor) and x.ndim >= 3)


def eager_cpu(*tensors: torch.Tensor) -> bool:
    """Whether the code runs eagerly (not traced by ``torch.compile``) on CPU ``tensors`` only.

    The condition of every CPU fast path of the kernels (slices instead of masks, a
    loop over runs of images, cached tables): compiled code and other devices take
    the branch-free tensor form instead.

    Example:
        >>> import torch
        >>> eager_cpu(torch.zeros(1)), eager_cpu(torch.zeros(1, device="meta"))
        (True, False)
    """
    return not is_tracing() and all(t.device.type == "cpu" for t in tensors)


def check_image(
    owner: str,
    img: Any,
    *,
    channels: tuple[int, ...] | None = None,
    allow_uint8: bool = True,
    allow_float: bool = True,
) -> None:
    """Raise a clear ``TypeError``/``ValueError`` naming ``owner`` if ``img`` is not a valid image.

    ``channels`` lists the channel counts the operation accepts (any when None).

    Example:
        >>> import torch
        >>> check_image("Grayscale", torch.zeros(3, 2, 2), channels=(1, 3))
        >>> check_image("Grayscale", torch.zeros(2, 2))
        Traceback (most recent call last):
        ...
        ValueError: Grayscale: expected an image tensor [..., C, H, W], got shape (2, 2)
    """
    if not isinstance(img, torch.Tensor):
        raise TypeError(
            f"{owner}: expected an image tensor [..., C, H, W], got {type(img).__name__}"
        )
    if img.ndim < 3:
        raise ValueError(
            f"{owner}: expected an image tensor [..., C, H, W], got shape {tuple(img.shape)}"
        )
    ok = allow_uint8 if img.dtype == torch.uint8 else allow_float and img.is_floating_point()
    if not ok:
        wanted = " or ".join(
            name for name, on in (("uint8", allow_uint8), ("floating", allow_float)) if on
        )
        raise TypeError(f"{owner}: expected a {wanted} image, got dtype {img.dtype}")
    if channels is not None and img.shape[-3] not in channels:
        raise ValueError(
            f"{owner}: expected an image with {' or '.join(map(str, channels))} channels, "
            f"got {img.shape[-3]} (shape {tuple(img.shape)})"
        )


def flatten_batch(img: torch.Tensor) -> tuple[torch.Tensor, torch.Size]:
    """View ``[..., C, H, W]`` as ``[N, C, H, W]`` and return it with the leading shape.

    Example:
        >>> import torch
        >>> flatten_batch(torch.zeros(3, 5, 5))[0].shape
        torch.Size([1, 3, 5, 5])
    """
    batch_shape = img.shape[:-3]
    return img.reshape((-1, *img.shape[-3:])), batch_shape


def unflatten_batch(img: torch.Tensor, batch_shape: torch.Size) -> torch.Tensor:
    """Undo :func:`flatten_batch` (the image size may have changed in between).

    Example:
        >>> import torch
        >>> x, shape = flatten_batch(torch.zeros(2, 3, 5, 5))
        >>> unflatten_batch(x[..., :2, :2], shape).shape
        torch.Size([2, 3, 2, 2])
    """
    return img.reshape((*batch_shape, *img.shape[-3:]))


def pil_to_tensor(pic: Any) -> torch.Tensor:
    """A PIL image as a ``uint8`` (or, for 16-bit/float modes, wider) ``[C, H, W]`` tensor.

    Palette and bilevel images are converted to RGB(A) / L first, so the tensor
    holds the colours the image shows.

    Example:
        >>> from PIL import Image
        >>> pil_to_tensor(Image.new("RGB", (4, 2), (255, 0, 0))).shape
        torch.Size([3, 2, 4])
    """
    if not is_pil(pic):
        raise TypeError(f"pil_to_tensor: expected a PIL image, got {type(pic).__name__}")
    if pic.mode == "P":
        pic = pic.convert("RGBA" if "transparency" in pic.info else "RGB")
    elif pic.mode == "1":
        pic = pic.convert("L")
    elif pic.mode in ("CMYK", "YCbCr", "LAB", "HSV"):
        pic = pic.convert("RGB")
    array = np.asarray(pic)
    if array.ndim == 2:
        array = array[:, :, None]
    return torch.from_numpy(array.copy()).permute(2, 0, 1).contiguous()


def to_pil_image(img: torch.Tensor, mode: str | None = None) -> Any:
    """A ``[C, H, W]`` tensor (uint8, or float in [0, 1]) as a PIL image.

    Example:
        >>> import torch
        >>> to_pil_image(torch.zeros(3, 2, 4, dtype=torch.uint8)).size
        (4, 2)
    """
    from PIL import Image

    if not isinstance(img, torch.Tensor) or img.ndim != 3:
        raise ValueError(f"to_pil_image: expected a [C, H, W] tensor, got {img!r:.80}")
    if img.is_floating_point():
        img = img.mul(255).round_().clamp_(0, 255).to(torch.uint8)
    channels = img.shape[0]
    if img.dtype != torch.uint8 or channels not in _PIL_CHANNELS:
        raise ValueError(
            f"to_pil_image: cannot make a PIL image from {channels} channels of {img.dtype}"
        )
    array = img.detach().cpu().permute(1, 2, 0).numpy()
    if channels == 1:
        array = array[:, :, 0]
    pic = Image.fromarray(np.ascontiguousarray(array))
    return pic if mode is None or pic.mode == mode else pic.convert(mode)
