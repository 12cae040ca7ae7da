"""Deformable convolution (v1, and v2 with a mask), as ``torchvision.ops.deform_conv2d``.

Each kernel tap ``k`` of each output position samples the input bilinearly at its
regular place plus a learnt offset (``offset[:, 2 * (g * K + k)]`` is the y shift,
``+ 1`` the x shift, for offset group ``g``), optionally times a mask; the samples
are then convolved with ``weight``. Cells outside the input read zero, as in
torchvision's kernel. Written with tensor ops (gather, then a matrix product per
group), so autograd gives every gradient and it runs on any device and under
``torch.compile``.

Example:
    >>> import torch
    >>> x = torch.rand(1, 3, 6, 6)
    >>> w = torch.rand(4, 3, 3, 3)
    >>> offset = torch.zeros(1, 18, 4, 4)
    >>> torch.allclose(deform_conv2d(x, offset, w), torch.nn.functional.conv2d(x, w), atol=1e-5)
    True
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import init

__all__ = ["DeformConv2d", "deform_conv2d"]


def _pair(v: int | tuple[int, int], name: str) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        return v, v
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(i, int) for i in v):
        return v[0], v[1]
    raise TypeError(f"{name} must be an int or a pair of ints, got {v!r}")


def _check(input: Tensor, offset: Tensor, weight: Tensor, mask: Tensor | None, out_hw) -> None:
    for name, t in (("input", input), ("offset", offset), ("weight", weight), ("mask", mask)):
        if t is not None and (not isinstance(t, Tensor) or t.dim() != 4):
            got = list(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"deform_conv2d: {name} must be a 4D tensor, got {got}")
    n, c, _, _ = input.shape
    kh, kw = weight.shape[-2:]
    taps = kh * kw
    if offset.shape[1] == 0 or offset.shape[1] % (2 * taps):
        raise RuntimeError(
            "the shape of the offset tensor at dimension 1 is not valid. It should be a "
            f"multiple of 2 * weight.size[2] * weight.size[3].\nGot offset.shape[1]="
            f"{offset.shape[1]}, while 2 * weight.size[2] * weight.size[3]={2 * taps}"
        )
    groups = offset.shape[1] // (2 * taps)
    if c % weight.shape[1] or weight.shape[0] % (c // weight.shape[1]):
        raise ValueError(
            f"deform_conv2d: input channels ({c}) and weight {list(weight.shape)} give no "
            "whole number of groups"
        )
    if c % groups:
        raise ValueError(
            f"deform_conv2d: input channels ({c}) not divisible by {groups} offset groups"
        )
    if out_hw[0] <= 0 or out_hw[1] <= 0:
        raise ValueError(f"deform_conv2d: the output would be {out_hw}: the input is too small")
    if offset.shape[0] != n or tuple(offset.shape[2:]) != out_hw:
        raise ValueError(
            f"deform_conv2d: offset must be [{n}, {offset.shape[1]}, {out_hw[0]}, {out_hw[1]}], "
            f"got {list(offset.shape)}"
        )
    if mask is not None and (
        mask.shape[0] != n or mask.shape[1] != groups * taps or tuple(mask.shape[2:]) != out_hw
    ):
        raise ValueError(
            f"deform_conv2d: mask must be [{n}, {groups * taps}, {out_hw[0]}, {out_hw[1]}], "
            f"got {list(mask.shape)}"
        )


def _sample_columns(input: Tensor, y: Tensor, x: Tensor, groups: int) -> Tensor:
    """[N, C, L]: each channel sampled at its offset group's positions ``y``, ``x`` [N, G, L].

    torchvision's rule: zero when ``y <= -1``, ``y >= H``, ``x <= -1`` or ``x >= W``;
    else the bilinear mix of the four cells around, a cell outside reading zero.
    """
    n, c, h, w = input.shape
    length = y.shape[-1]
    inside = (y > -1) & (y < h) & (x > -1) & (x < w)
    y0f, x0f = torch.floor(y), torch.floor(x)
    ly, lx = y - y0f, x - x0f
    hy, hx = 1 - ly, 1 - lx
    y0, x0 = y0f.to(torch.int64), x0f.to(torch.int64)
    flat = input.reshape(n, groups, c // groups, h * w)
    out = None
    for dy, dx, wgt in ((0, 0, hy * hx), (0, 1, hy * lx), (1, 0, ly * hx), (1, 1, ly * lx)):
        yy, xx = y0 + dy, x0 + dx
        ok = inside & (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        index = (yy.clamp(0, h - 1) * w + xx.clamp(0, w - 1)).unsqueeze(2)
        index = index.expand(n, groups, c // groups, length)
        values = torch.gather(flat, 3, index)
        term = values * torch.where(ok, wgt, torch.zeros_like(wgt)).unsqueeze(2)
        out = term if out is None else out + term
    return out.reshape(n, c, length)


def deform_conv2d(
    input: Tensor,
    offset: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, int] = (1, 1),
    padding: int | tuple[int, int] = (0, 0),
    dilation: int | tuple[int, int] = (1, 1),
    mask: Tensor | None = None,
) -> Tensor:
    """Deformable convolution (v2 with ``mask``), as torchvision's ``deform_conv2d``.

    Args:
        input: [N, C_in, H, W].
        offset: [N, 2 * G * kh * kw, H_out, W_out], the (y, x) shift of each tap, per
            offset group ``G`` (input channels split evenly).
        weight: [C_out, C_in / groups, kh, kw].
        bias: [C_out], or None.
        stride: the convolution's stride.
        padding: zeros around the input.
        dilation: the spacing of the taps.
        mask: [N, G * kh * kw, H_out, W_out] modulating each tap (v2), or None (v1).

    Returns:
        [N, C_out, H_out, W_out].

    Example:
        >>> import torch
        >>> x = torch.rand(2, 3, 10, 10)
        >>> w = torch.rand(5, 3, 3, 3)
        >>> offset, mask = torch.rand(2, 18, 8, 8), torch.rand(2, 9, 8, 8)
        >>> deform_conv2d(x, offset, w, mask=mask).shape
        torch.Size([2, 5, 8, 8])
    """
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    if not isinstance(weight, Tensor) or weight.dim() != 4:
        raise ValueError("deform_conv2d: weight must be a 4D tensor [C_out, C_in / groups, kh, kw]")
    kh, kw = weight.shape[-2:]
    h, w = input.shape[-2:]
    out_h = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    out_w = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    _check(input, offset, weight, mask, (out_h, out_w))
    n, c = input.shape[:2]
    taps, length = kh * kw, out_h * out_w
    groups = offset.shape[1] // (2 * taps)
    off = offset.reshape(n, groups, taps, 2, length)
    ki = torch.arange(kh, device=input.device).repeat_interleave(kw) * dh  # [K]
    kj = torch.arange(kw, device=input.device).repeat(kh) * dw
    oy = torch.arange(out_h, device=input.device).repeat_interleave(out_w) * sh - ph  # [L]
    ox = torch.arange(out_w, device=input.device).repeat(out_h) * sw - pw
    base_y = (ki[:, None] + oy[None, :]).to(offset.dtype)  # [K, L]
    base_x = (kj[:, None] + ox[None, :]).to(offset.dtype)
    y = (base_y + off[:, :, :, 0]).reshape(n, groups, taps * length)
    x = (base_x + off[:, :, :, 1]).reshape(n, groups, taps * length)
    cols = _sample_columns(input, y, x, groups).view(n, c, taps, length)
    if mask is not None:
        m = mask.reshape(n, groups, 1, taps, length)
        cols = (cols.view(n, groups, c // groups, taps, length) * m).view(n, c, taps, length)
    weight_groups = c // weight.shape[1]
    out_c = weight.shape[0]
    cols = cols.reshape(n, weight_groups, (c // weight_groups) * taps, length)
    wg = weight.reshape(weight_groups, out_c // weight_groups, -1)
    out = torch.matmul(wg.unsqueeze(0), cols).reshape(n, out_c, out_h, out_w)
    if bias is not None:
        out = out + bias.view(1, -1, 1, 1)
    return out


class DeformConv2d(nn.Module):
    """:func:`deform_conv2d` with its weight and bias, as ``torchvision.ops.DeformConv2d``.

    The offsets (and mask) are given to ``forward``, usually from a plain convolution.
    Parameters ``weight`` and ``bias`` initialised as torchvision's.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel size.
        stride: the stride.
        padding: zeros around the input.
        dilation: the spacing of the taps.
        groups: the convolution's groups.
        bias: learn a bias.

    Example:
        >>> import torch
        >>> conv = DeformConv2d(3, 4, 3, padding=1)
        >>> conv(torch.rand(1, 3, 5, 5), torch.zeros(1, 18, 5, 5)).shape
        torch.Size([1, 4, 5, 5])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = _pair(stride, "stride")
        self.padding = _pair(padding, "padding")
        self.dilation = _pair(dilation, "dilation")
        self.groups = groups
        self.weight = nn.Parameter(
            torch.empty(out_channels, in_channels // groups, *self.kernel_size)
        )
        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Kaiming-uniform weights and a uniform bias, as torchvision's."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        """Convolve ``input`` at the offset taps (see :func:`deform_conv2d`)."""
        return deform_conv2d(
            input,
            offset,
            self.weight,
            self.bias,
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
            mask=mask,
        )

    def __repr__(self) -> str:
        s = (
            f"{self.__class__.__name__}("
            f"{self.in_channels}"
            f", {self.out_channels}"
            f", kernel_size={self.kernel_size}"
            f", stride={self.stride}"
        )
        s += f", padding={self.padding}" if self.padding != (0, 0) else ""
        s += f", dilation={self.dilation}" if self.dilation != (1, 1) else ""
        s += f", groups={self.groups}" if self.groups != 1 else ""
        s += ", bias=False" if self.bias is None else ""
        s += ")"
        return s
