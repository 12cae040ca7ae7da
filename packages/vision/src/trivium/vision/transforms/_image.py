"""What counts as an image, input checks, and PIL <-> tensor conversion.

Transforms act on *images*: tensors ``[..., C, H, W]`` (``uint8`` in [0, 255],
``uint16`` in [0, 65535] or floating in [0, 1]) and PIL images. Any other input
(labels, strings, boxes given as 1-D/2-D tensors) passes through a transform unchanged.

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
    "INT_DTYPES",
    "bits_view",
    "check_image",
    "eager_cpu",
    "flatten_batch",
    "image_where",
    "is_image",
    "is_pil",
    "pil_colors_to_tensor",
    "pil_to_tensor",
    "to_pil_image",
    "unflatten_batch",
]

# Channel counts that round-trip through a PIL image (L, LA, RGB, RGBA).
_PIL_CHANNELS = (1, 2, 3, 4)

#: The integer image dtypes transforms take: 8-bit and 16-bit samples (16-bit PNGs,
#: 12-bit and lossless JPEGs decode to uint16).
INT_DTYPES = (torch.uint8, torch.uint16)


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


def bits_view(img: torch.Tensor) -> torch.Tensor:
    """``img`` seen as a dtype of the same width that torch moves on every device.

    torch has no CPU kernels for ``flip``, ``gather``, ``index_copy_`` and others on
    uint16; moving values is moving bits, so a uint16 image goes through them as an
    int16 view (free, exact) and comes back with ``.view(torch.uint16)``. Other
    dtypes are returned as they are.

    Example:
        >>> import torch
        >>> x = torch.tensor([1, 65535], dtype=torch.uint16)
        >>> bits_view(x).flip(0).view(torch.uint16).tolist()
        [65535, 1]
    """
    return img.view(torch.int16) if img.dtype == torch.uint16 else img


def image_where(mask: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch.where(mask, a, b)`` for ``a`` and ``b`` of one image dtype; scriptable.

    Compiled code (inductor) and other devices than the CPU have no ``where`` on
    uint16: there it selects among the values widened to int32.

    Example:
        >>> import torch
        >>> a = torch.tensor([1, 2], dtype=torch.uint16)
        >>> b = torch.tensor([60000, 3], dtype=torch.uint16)
        >>> image_where(torch.tensor([False, True]), a, b).tolist()
        [60000, 2]
    """
    if a.dtype != torch.uint16 or (not is_tracing() and a.device.type == "cpu"):
        return torch.where(mask, a, b)
    return torch.where(mask, a.to(torch.int32), b.to(torch.int32)).to(torch.uint16)


def check_image(
    owner: str,
    img: Any,
    *,
    channels: tuple[int, ...] | None = None,
    allow_int: bool = True,
    allow_float: bool = True,
) -> None:
    """Raise a clear ``TypeError``/``ValueError`` naming ``owner`` if ``img`` is not a valid image.

    ``channels`` lists the channel counts the operation accepts (any when None);
    ``allow_int`` admits the :data:`INT_DTYPES` (uint8 and uint16).

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
    ok = allow_int if img.dtype in INT_DTYPES else allow_float and img.is_floating_point()
    if not ok:
        names = [
            *(("uint8", "uint16") if allow_int else ()),
            *(("floating",) if allow_float else ()),
        ]
        wanted = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
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

    A palette image gives its indices, one channel, as torchvision's ``pil_to_tensor``
    (a VOC or Cityscapes mask holds class numbers there); bilevel images are converted
    to L first.

    Example:
        >>> from PIL import Image
        >>> pil_to_tensor(Image.new("RGB", (4, 2), (255, 0, 0))).shape
        torch.Size([3, 2, 4])
        >>> pil_to_tensor(Image.new("P", (4, 2), 7)).unique().tolist()
        [7]
    """
    if not is_pil(pic):
        raise TypeError(f"pil_to_tensor: expected a PIL image, got {type(pic).__name__}")
    if pic.mode == "1":
        pic = pic.convert("L")
    elif pic.mode in ("CMYK", "YCbCr", "LAB", "HSV"):
        pic = pic.convert("RGB")
    array = np.asarray(pic)
    if array.ndim == 2:
        array = array[:, :, None]
    return torch.from_numpy(array.copy()).permute(2, 0, 1).contiguous()


def pil_colors_to_tensor(pic: Any) -> torch.Tensor:
    """:func:`pil_to_tensor` of the colours a PIL image shows: a palette image as RGB(A).

    For image kernels, which need colours where ``pil_to_tensor`` keeps a palette's indices.

    Example:
        >>> from PIL import Image
        >>> image = Image.new("P", (4, 2), 1)
        >>> image.putpalette([0, 0, 0, 10, 20, 30])
        >>> pil_colors_to_tensor(image)[:, 0, 0].tolist()
        [10, 20, 30]
    """
    if is_pil(pic) and pic.mode == "P":
        pic = pic.convert("RGBA" if "transparency" in pic.info else "RGB")
    return pil_to_tensor(pic)


def to_pil_image(img: torch.Tensor, mode: str | None = None) -> Any:
    """A ``[C, H, W]`` tensor (uint8, one channel of uint16, or float in [0, 1]) as a PIL image.

    One channel of uint16 gives Pillow's 16-bit gray mode ``"I;16"``.

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
    if img.dtype == torch.uint16 and channels == 1:
        pic = Image.fromarray(np.ascontiguousarray(img.detach().cpu()[0].numpy()))  # "I;16"
        return pic if mode is None or pic.mode == mode else pic.convert(mode)
    if img.dtype != torch.uint8 or channels not in _PIL_CHANNELS:
        raise ValueError(
            f"to_pil_image: cannot make a PIL image from {channels} channels of {img.dtype}"
        )
    array = img.detach().cpu().permute(1, 2, 0).numpy()
    if channels == 1:
        array = array[:, :, 0]
    pic = Image.fromarray(np.ascontiguousarray(array))
    return pic if mode is None or pic.mode == mode else pic.convert(mode)
