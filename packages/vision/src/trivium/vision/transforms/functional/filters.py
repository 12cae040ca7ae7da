"""Filter kernels: Gaussian blur and sharpness, as torchvision v2 functional.

Both accept a per-image parameter (a tensor with one entry per image of the
flattened batch) and then filter the whole batch in one grouped convolution.

Example:
    >>> import torch
    >>> img = torch.rand(4, 3, 16, 16)
    >>> gaussian_blur(img, [5, 5], torch.tensor([0.5, 1.0, 1.5, 2.0])).shape
    torch.Size([4, 3, 16, 16])
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
import torch.nn.functional as nnf

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import check_image
from trivium.vision.transforms.functional.color import _bound, per_image_factor

__all__ = [
    "adjust_sharpness",
    "adjust_sharpness_image",
    "adjust_sharpness_video",
    "gaussian_blur",
    "gaussian_blur_image",
    "gaussian_blur_video",
]


def _pair_kernel_size(kernel_size: int | Sequence[int]) -> tuple[int, int]:
    sizes = [kernel_size] * 2 if isinstance(kernel_size, int) else list(kernel_size)
    if len(sizes) == 1:
        sizes = sizes * 2
    if len(sizes) != 2 or any(
        isinstance(k, bool) or not isinstance(k, int) or k <= 0 or k % 2 == 0 for k in sizes
    ):
        raise ValueError(
            f"gaussian_blur: kernel_size must be one or two positive odd integers, "
            f"got {kernel_size!r}"
        )
    return sizes[0], sizes[1]


def _sigmas(
    sigma: float | Sequence[float] | torch.Tensor | None, kernel_size: tuple[int, int], n: int
) -> tuple[float, float] | torch.Tensor:
    """(sigma_x, sigma_y) as floats, or a ``[n, 2]`` tensor for per-image values."""
    if sigma is None:
        return (kernel_size[0] * 0.15 + 0.35, kernel_size[1] * 0.15 + 0.35)
    if isinstance(sigma, torch.Tensor):
        if sigma.numel() in (1, n):
            return sigma.reshape(-1, 1).expand(n, 2)
        if sigma.numel() == 2 * n:
            return sigma.reshape(n, 2)
        raise ValueError(
            f"gaussian_blur: a sigma tensor must hold 1, {n} or {n}x2 values, "
            f"got shape {tuple(sigma.shape)}"
        )
    values = [sigma] * 2 if isinstance(sigma, numbers.Real) else list(sigma)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or not all(isinstance(s, numbers.Real) and s > 0 for s in values):
        raise ValueError(f"gaussian_blur: sigma must be one or two positive numbers, got {sigma!r}")
    return float(values[0]), float(values[1])


def _kernel_1d(size: int, sigma: torch.Tensor) -> torch.Tensor:
    """Normalised Gaussian taps ``[..., size]`` for every sigma in ``sigma [...]``."""
    half = (size - 1) * 0.5
    x = torch.linspace(-half, half, size, dtype=sigma.dtype, device=sigma.device)
    pdf = torch.exp(-0.5 * (x / sigma.unsqueeze(-1)) ** 2)
    return pdf / pdf.sum(-1, keepdim=True)


def gaussian_blur_image(
    img: torch.Tensor,
    kernel_size: int | Sequence[int],
    sigma: float | Sequence[float] | torch.Tensor | None = None,
) -> torch.Tensor:
    """The image kernel of :func:`gaussian_blur`, which documents the arguments.

    Example:
        >>> img = torch.zeros(1, 5, 5)
        >>> img[0, 2, 2] = 1.0
        >>> out = gaussian_blur_image(img, [3, 3], [1.0, 1.0])
        >>> round(out.sum().item(), 4), bool(out[0, 2, 2] < 1)
        (1.0, True)
    """
    check_image("gaussian_blur", img)
    kx, ky = _pair_kernel_size(kernel_size)
    height, width = img.shape[-2:]
    if kx // 2 >= width or ky // 2 >= height:
        raise ValueError(
            f"gaussian_blur: kernel_size {[kx, ky]} is too large for an image of "
            f"{height}x{width} (reflect padding needs kernel_size // 2 < the side)"
        )
    batch_shape, channels = img.shape[:-3], img.shape[-3]
    x = img.reshape(-1, channels, height, width)
    n = x.shape[0]
    dtype = img.dtype if img.is_floating_point() else torch.float32
    sigmas = _sigmas(sigma, (kx, ky), n)
    if isinstance(sigmas, torch.Tensor):
        sigmas = sigmas.to(device=img.device, dtype=dtype)
        groups = n * channels
        # One kernel per image, repeated per channel: [n * C, 1, 1, k].
        wx = _kernel_1d(kx, sigmas[:, 0]).repeat_interleave(channels, dim=0)
        wy = _kernel_1d(ky, sigmas[:, 1]).repeat_interleave(channels, dim=0)
        # One "image" of n * C channels: channels-last makes the depthwise convolutions
        # vectorise across them (~2.5x faster than planar, ~20% for the whole blur).
        x = x.reshape(1, groups, height, width).to(dtype, memory_format=torch.channels_last)
    else:
        groups = channels
        s = torch.tensor(sigmas, dtype=dtype, device=img.device)
        wx = _kernel_1d(kx, s[0:1]).expand(channels, kx)
        wy = _kernel_1d(ky, s[1:2]).expand(channels, ky)
    x = nnf.pad(x.to(dtype), [kx // 2, kx // 2, ky // 2, ky // 2], mode="reflect")
    x = nnf.conv2d(x, wx.reshape(groups, 1, 1, kx), groups=groups)
    x = nnf.conv2d(x, wy.reshape(groups, 1, ky, 1), groups=groups)
    if not img.is_floating_point():
        x = x.round_().clamp_(0, _bound(img)).to(img.dtype, memory_format=torch.contiguous_format)
    return x.reshape((*batch_shape, channels, height, width))


def adjust_sharpness_image(
    img: torch.Tensor, sharpness_factor: float | torch.Tensor
) -> torch.Tensor:
    """The image kernel of :func:`adjust_sharpness`, which documents the arguments.

    Example:
        >>> img = torch.zeros(1, 5, 5)
        >>> img[0, 2, 2] = 1.0
        >>> round(adjust_sharpness_image(img, 0.0)[0, 2, 2].item(), 4)  # 5/13
        0.3846
    """
    check_image("adjust_sharpness", img, channels=(1, 3))
    f = per_image_factor("adjust_sharpness", img, sharpness_factor, "sharpness_factor")
    channels, height, width = img.shape[-3:]
    if img.numel() == 0 or height <= 2 or width <= 2:
        return img.clone()
    x = img.reshape(-1, channels, height, width)
    out = x.clone() if img.is_floating_point() else x.to(torch.float32)  # a fresh copy
    # The kernel as a 3x3 box sum plus 4x the centre, in separable shifted sums: ~20x
    # faster than the depthwise convolution on the CPU, and exact on uint8 and uint16 values.
    rows = out[..., :-2] + out[..., 1:-1] + out[..., 2:]
    box = rows[..., :-2, :] + rows[..., 1:-1, :] + rows[..., 2:, :]
    inner = out[..., 1:-1, 1:-1]
    smooth = box.add_(inner * 4.0).div_(13.0)
    if not img.is_floating_point():
        smooth = smooth.round_()
    if isinstance(f, torch.Tensor) and f.dim() > 0:
        f = f.reshape(-1, 1, 1, 1)
    # x + (1 - f) * (smooth - x) == f * x + (1 - f) * smooth (torchvision's blend order).
    blended = inner + (smooth - inner) * (1.0 - f)
    out[..., 1:-1, 1:-1] = blended
    out = out.clamp_(0.0, _bound(img))
    return out.to(img.dtype).reshape(img.shape)


# The functionals: one per operation, dispatching on the type of the input.


def gaussian_blur(
    inpt: torch.Tensor,
    kernel_size: int | Sequence[int],
    sigma: float | Sequence[float] | torch.Tensor | None = None,
) -> torch.Tensor:
    """Blur with a Gaussian kernel (torchvision's taps and reflect padding), separably.

    ``kernel_size`` is ``[kx, ky]`` (odd); ``sigma`` is ``[sx, sy]``, one number,
    ``None`` (``0.3 * ((k - 1) * 0.5 - 1) + 0.8`` per axis, as torchvision) or a
    tensor with one sigma (or one ``(sx, sy)`` row) per image of the flattened batch.

    Example:
        >>> import torch
        >>> img = torch.zeros(1, 5, 5)
        >>> img[0, 2, 2] = 1.0
        >>> out = gaussian_blur(img, [3, 3], [1.0, 1.0])
        >>> round(out.sum().item(), 4), bool(out[0, 2, 2] < 1)
        (1.0, True)
    """
    kernel = get_kernel(gaussian_blur, type(inpt))
    return kernel(inpt, kernel_size=kernel_size, sigma=sigma)


def adjust_sharpness(inpt: torch.Tensor, sharpness_factor: float | torch.Tensor) -> torch.Tensor:
    """Blend with a smoothed copy (0: smooth, 1: original, 2: sharper), as torchvision/Pillow.

    The smoothing kernel is ``[[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13``; the border
    pixels are kept. ``sharpness_factor`` may hold one value per image.

    Example:
        >>> import torch
        >>> img = torch.zeros(1, 5, 5)
        >>> img[0, 2, 2] = 1.0
        >>> round(adjust_sharpness(img, 0.0)[0, 2, 2].item(), 4)  # 5/13
        0.3846
    """
    kernel = get_kernel(adjust_sharpness, type(inpt))
    return kernel(inpt, sharpness_factor=sharpness_factor)


# The video kernels are the image kernels: a video is a batch of images [..., T, C, H, W].
gaussian_blur_video = gaussian_blur_image
adjust_sharpness_video = adjust_sharpness_image


for _functional, _kernel in (
    (gaussian_blur, gaussian_blur_image),
    (adjust_sharpness, adjust_sharpness_image),
):
    for _type in (torch.Tensor, tv_tensors.Image, tv_tensors.Video):
        _register_kernel_internal(_functional, _type)(_kernel)
