"""The RoI pooling kernels and their ``torch.library`` custom ops.

Each op takes torchvision's arguments (``rois`` a float [K, 5] tensor of batch index
and ``x1, y1, x2, y2``) and gives torchvision's CPU kernel's result:

* ``trivium::roi_align(input, rois, spatial_scale, pooled_height, pooled_width,
  sampling_ratio, aligned)``: bilinear samples averaged per bin ([K, C, PH, PW]);
* ``trivium::roi_pool(input, rois, spatial_scale, pooled_height, pooled_width)``: the
  maximum of each quantised bin and its flat ``h * W + w`` index (-1 for an empty bin);
* ``trivium::ps_roi_align(input, rois, spatial_scale, pooled_height, pooled_width,
  sampling_ratio)`` and ``trivium::ps_roi_pool(input, rois, spatial_scale,
  pooled_height, pooled_width)``: position-sensitive versions, where output channel
  ``c`` at bin ``(ph, pw)`` reads input channel ``(c * PH + ph) * PW + pw``;

each with a backward op, autograd and a fake kernel, so they run under
``torch.compile(fullgraph=True)``.

How: a RoI Align bin averages bilinear samples whose weights are a product of a
weight along y and one along x, and a sample outside ``[-1, size]`` on either axis
counts zero, so the whole op is separable. Per RoI it is ``Ay @ F @ Ax^T`` with ``Ay``
a [PH, H] and ``Ax`` a [PW, W] interpolation matrix (the 1/count of each axis folded
in), and its gradient ``Ay^T @ G @ Ax``: matrix products over the RoIs of each image,
deterministic, on any device. PS RoI Pool's bin average is separable the same way
(0/1 row and column masks over the bin's area). RoI Pool's bin maximum is taken as a
maximum over each bin's columns, then over its rows.

Example:
    >>> import torch
    >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
    >>> rois = torch.tensor([[0.0, 0, 0, 4, 4]])
    >>> torch.ops.trivium.roi_align(x, rois, 1.0, 1, 1, 2, True).flatten().tolist()
    [7.5]
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

__all__ = [
    "ps_roi_align_op",
    "ps_roi_pool_op",
    "roi_align_op",
    "roi_pool_op",
]

# Elements of the largest intermediate one chunk of RoIs may make.
_CHUNK_ELEMENTS = 1 << 23


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 are computed in float32."""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def _check_inputs(name: str, input: Tensor, rois: Tensor, pooled_height: int, pooled_width: int):
    torch._check(
        input.dim() == 4, lambda: f"{name}: input must be [N, C, H, W], got {input.dim()}D"
    )
    torch._check(
        rois.dim() == 2 and rois.size(1) == 5,
        lambda: f"{name}: rois must be [K, 5], got {list(rois.shape)}",
    )
    torch._check(
        input.dtype == rois.dtype,
        lambda: f"{name}: input and rois must have one dtype, got {input.dtype} and {rois.dtype}",
    )
    torch._check(
        pooled_height > 0 and pooled_width > 0,
        lambda: f"{name}: output_size must be positive, got ({pooled_height}, {pooled_width})",
    )


def _batch_index(rois: Tensor, batch_size: int) -> Tensor:
    """The RoIs' batch indices (truncated, as torchvision's ``(int)``), checked in range.

    Non-finite coordinates are refused too: the kernels would size their sampling
    grids from them.
    """
    if rois.numel() and not bool(torch.isfinite(rois).all()):
        raise ValueError("rois must be finite, got NaN or infinite coordinates")
    idx = rois[:, 0].to(torch.int64)
    if idx.numel() and (bool((idx < 0).any()) or bool((idx >= batch_size).any())):
        raise ValueError(
            f"rois[:, 0] (batch index) must lie in [0, {batch_size - 1}], got "
            f"{idx.min().item()}..{idx.max().item()}"
        )
    return idx


def _by_image(idx: Tensor, per_roi: int) -> Iterator[tuple[int, Tensor]]:
    """``(n, positions)`` of the RoIs of image n, in chunks bounding the intermediates."""
    chunk = max(1, _CHUNK_ELEMENTS // max(per_roi, 1))
    for n in torch.unique(idx).tolist():
        pos = (idx == n).nonzero().squeeze(1)
        for start in range(0, pos.numel(), chunk):
            yield n, pos[start : start + chunk]


# -- interpolation matrices ---------------------------------------------------------------


def _bilinear_axis(
    start: Tensor, bin_size: Tensor, grid: Tensor, pooled: int, size: int, ps: bool
) -> Tensor:
    """[K, pooled, size]: each bin's bilinear sample weights along one axis, / grid.

    ``start``, ``bin_size`` [K] in the compute dtype, ``grid`` [K] int64 (samples per
    bin). The positions are torchvision's, in its order of operations: ``start + p *
    bin + (i + 0.5) * bin / grid`` (PS RoI Align adds ``p * bin`` to ``start`` last).
    """
    k = start.shape[0]
    dtype = start.dtype
    g = int(grid.max()) if k else 0
    p = torch.arange(pooled, device=start.device, dtype=dtype)[None, :, None]
    i = torch.arange(g, device=start.device)
    grid_t = grid.clamp(min=1).to(dtype)[:, None, None]
    step = (i.to(dtype) + 0.5)[None, None, :] * bin_size[:, None, None] / grid_t
    pb = p * bin_size[:, None, None]
    pos = (pb + start[:, None, None] if ps else start[:, None, None] + pb) + step
    used = (i[None, None, :] < grid[:, None, None]) & (pos >= -1.0) & (pos <= size)
    pos = pos.clamp(min=0)
    low = pos.to(torch.int64)
    top = low >= size - 1
    low = torch.where(top, size - 1, low)
    high = torch.where(top, size - 1, low + 1)
    frac = torch.where(top, torch.zeros_like(pos), pos - low.to(dtype))
    zero = torch.zeros((), dtype=dtype, device=start.device)
    w_high = torch.where(used, frac / grid_t, zero)
    w_low = torch.where(used, (1.0 - frac) / grid_t, zero)
    out = torch.zeros(k, pooled, size, dtype=dtype, device=start.device)
    return out.scatter_add_(2, low, w_low).scatter_add_(2, high, w_high)


def _align_geometry(
    rois: Tensor, spatial_scale: float, pooled: tuple[int, int], sampling_ratio: int, aligned: bool
) -> tuple[Tensor, ...]:
    """``(y1, x1, bin_h, bin_w, grid_h, grid_w)`` [K] of RoI Align, in torchvision's arithmetic."""
    dtype = _compute_dtype(rois.dtype)
    r = rois.to(dtype)
    offset = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = ((r[:, j] * spatial_scale - offset) for j in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    if not aligned:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / pooled[0], roi_w / pooled[1]
    if sampling_ratio > 0:
        grid_h = torch.full_like(roi_h, sampling_ratio, dtype=torch.int64)
        grid_w = grid_h
    else:
        grid_h = torch.ceil(roi_h / pooled[0]).to(torch.int64)
        grid_w = torch.ceil(roi_w / pooled[1]).to(torch.int64)
    return y1, x1, bin_h, bin_w, grid_h, grid_w


def _align_weights(
    rois: Tensor,
    spatial_scale: float,
    pooled_height: int,
    pooled_width: int,
    sampling_ratio: int,
    aligned: bool,
    height: int,
    width: int,
    ps: bool = False,
) -> tuple[Tensor, Tensor]:
    """``(Ay [K, PH, H], Ax [K, PW, W])`` of RoI Align (PS RoI Align with ``ps``)."""
    y1, x1, bin_h, bin_w, grid_h, grid_w = _align_geometry(
        rois, spatial_scale, (pooled_height, pooled_width), sampling_ratio, aligned
    )
    ay = _bilinear_axis(y1, bin_h, grid_h, pooled_height, height, ps)
    ax = _bilinear_axis(x1, bin_w, grid_w, pooled_width, width, ps)
    return ay, ax


def _round_half_away(x: Tensor) -> Tensor:
    """C's ``round``: halves away from zero (``torch.round`` rounds them to even)."""
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def _pool_bins(
    rois: Tensor, spatial_scale: float, pooled: tuple[int, int], size: tuple[int, int], ps: bool
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(hstart, hend [K, PH], wstart, wend [K, PW])`` of RoI Pool's quantised bins.

    As torchvision: corners scaled in the input's dtype and rounded; RoI Pool counts
    ``end - start + 1`` cells and clips to ``[0, size]``, PS RoI Pool counts
    ``end - start`` and clips to ``[0, size - 1]``.
    """
    dtype = _compute_dtype(rois.dtype)
    corners = _round_half_away(rois[:, 1:].to(dtype) * spatial_scale).to(torch.int64)
    extra, limit = (0, -1) if ps else (1, 0)
    bounds = []
    for axis, (p, s) in enumerate(zip(pooled, size, strict=True)):
        start, end = corners[:, 1 - axis], corners[:, 3 - axis]
        length = (end - start + extra).clamp(min=1).to(dtype)
        bin_size = (length / p)[:, None]
        steps = torch.arange(p + 1, device=rois.device, dtype=dtype)[None, :]
        lo = torch.floor(steps[:, :-1] * bin_size).to(torch.int64) + start[:, None]
        hi = torch.ceil(steps[:, 1:] * bin_size).to(torch.int64) + start[:, None]
        bounds += [lo.clamp(0, s + limit), hi.clamp(0, s + limit)]
    return bounds[0], bounds[1], bounds[2], bounds[3]


def _mask_axis(lo: Tensor, hi: Tensor, size: int, dtype: torch.dtype) -> Tensor:
    """[K, P, size]: 1/(hi - lo) on each bin's cells ``lo <= i < hi``, else 0."""
    i = torch.arange(size, device=lo.device)[None, None, :]
    inside = (i >= lo[..., None]) & (i < hi[..., None])
    return inside.to(dtype) / (hi - lo).clamp(min=1).to(dtype)[..., None]


# -- separable pooling: out_k = Ay_k @ F @ Ax_k^T ------------------------------------------


def _separable_forward(input: Tensor, idx: Tensor, ay: Tensor, ax: Tensor) -> Tensor:
    """[K, C, PH, PW] = Ay_k @ input[idx_k] @ Ax_k^T for every RoI k."""
    _n, c, h, w = input.shape
    k, ph, pw = idx.numel(), ay.shape[1], ax.shape[1]
    dtype = ay.dtype
    out = torch.zeros(k, c, ph, pw, dtype=dtype, device=input.device)
    if k == 0 or c == 0:
        return out
    rows, rows_of = None, -1
    for img, pos in _by_image(idx, ph * c * w):
        if img != rows_of:  # the image's [H, C*W] view, made once per image
            rows, rows_of = input[img].to(dtype).permute(1, 0, 2).reshape(h, c * w), img
        t = ay[pos].reshape(-1, h) @ rows  # [k*PH, C*W]
        t = torch.bmm(t.view(pos.numel(), ph * c, w), ax[pos].transpose(1, 2))
        out[pos] = t.view(pos.numel(), ph, c, pw).permute(0, 2, 1, 3)
    return out


def _separable_backward(
    grad: Tensor, idx: Tensor, ay: Tensor, ax: Tensor, shape: tuple[int, int, int, int]
) -> Tensor:
    """d input of :func:`_separable_forward`: sum over k of Ay_k^T @ G_k @ Ax_k."""
    n, c, h, w = shape
    k, ph, pw = idx.numel(), ay.shape[1], ax.shape[1]
    acc = torch.zeros(n, h, c * w, dtype=ay.dtype, device=grad.device)
    if k and c:
        g_all = grad.to(ay.dtype)
        for img, pos in _by_image(idx, ph * c * w):
            g = g_all[pos].permute(0, 2, 1, 3).reshape(pos.numel(), ph * c, pw)
            t = torch.bmm(g, ax[pos]).view(-1, c * w)  # [k*PH, C*W]
            acc[img] += ay[pos].reshape(-1, h).t() @ t
    return acc.view(n, h, c, w).permute(0, 2, 1, 3).contiguous()


def _ps_forward(input: Tensor, idx: Tensor, ay: Tensor, ax: Tensor) -> Tensor:
    """Position-sensitive :func:`_separable_forward`: bin (ph, pw) reads its own channels."""
    _n, c_in, h, w = input.shape
    k, ph, pw = idx.numel(), ay.shape[1], ax.shape[1]
    c = c_in // (ph * pw)
    dtype = ay.dtype
    out = torch.zeros(k, c, ph, pw, dtype=dtype, device=input.device)
    if k == 0 or c == 0:
        return out
    for img, pos in _by_image(idx, c * pw * w):
        f = input[img].to(dtype).view(c, ph, pw, h, w)
        axk = ax[pos][:, None]  # [k, 1, PW, W]
        for p in range(ph):
            rows = f[:, p].permute(2, 0, 1, 3).reshape(h, c * pw * w)
            t = (ay[pos, p] @ rows).view(pos.numel(), c, pw, w)
            out[pos, :, p] = (t * axk).sum(-1)
    return out


def _ps_backward(
    grad: Tensor, idx: Tensor, ay: Tensor, ax: Tensor, shape: tuple[int, int, int, int]
) -> Tensor:
    """d input of :func:`_ps_forward`."""
    n, c_in, h, w = shape
    k, ph, pw = idx.numel(), ay.shape[1], ax.shape[1]
    c = c_in // (ph * pw)
    acc = torch.zeros(n, c, ph, pw, h, w, dtype=ay.dtype, device=grad.device)
    if k and c:
        g_all = grad.to(ay.dtype)
        for img, pos in _by_image(idx, c * pw * w):
            axk = ax[pos][:, None]  # [k, 1, PW, W]
            for p in range(ph):
                u = (g_all[pos, :, p, :, None] * axk).reshape(pos.numel(), -1)
                t = ay[pos, p].t() @ u  # [H, C*PW*W]
                acc[img, :, p] += t.view(h, c, pw, w).permute(1, 2, 0, 3)
    return acc.view(n, c_in, h, w)


# -- RoI Pool: the maximum of each bin -----------------------------------------------------


def _roi_pool_forward(
    input: Tensor, rois: Tensor, spatial_scale: float, pooled_height: int, pooled_width: int
) -> tuple[Tensor, Tensor]:
    n, c, h, w = input.shape
    idx = _batch_index(rois, n)
    k = idx.numel()
    hs, he, ws, we = _pool_bins(rois, spatial_scale, (pooled_height, pooled_width), (h, w), False)
    out = torch.zeros(k, c, pooled_height, pooled_width, dtype=input.dtype, device=input.device)
    arg = torch.full(out.shape, -1, dtype=torch.int64, device=input.device)
    if k == 0 or c == 0:
        return out, arg
    bw = int((we - ws).max())
    bh = int((he - hs).max())
    if bw <= 0 or bh <= 0:
        return out, arg
    neg = torch.tensor(float("-inf"), dtype=input.dtype, device=input.device)
    step_w = torch.arange(bw, device=input.device)
    step_h = torch.arange(bh, device=input.device)
    step_pw = torch.arange(pooled_width, device=input.device)
    for img, pos in _by_image(idx, c * h * pooled_width * bw):
        kc = pos.numel()
        # The maximum over each bin's columns, for every row: [k, H, C, PW].
        cols = ws[pos, :, None] + step_w
        col_ok = cols < we[pos, :, None]
        vals = input[img][:, :, cols.clamp(max=w - 1)]  # [C, H, k, PW, BW]
        vals = torch.where(col_ok, vals, neg)
        col_max, col_arg = vals.max(-1)
        col_max = col_max.permute(2, 1, 0, 3)
        col_arg = col_arg.permute(2, 1, 0, 3)
        # Then over each bin's rows: [k, PH, BH, C, PW].
        rows = hs[pos, :, None] + step_h
        row_ok = (rows < he[pos, :, None])[..., None, None]
        kk = torch.arange(kc, device=input.device)[:, None, None]
        rows_c = rows.clamp(max=h - 1)
        best, row_arg = torch.where(row_ok, col_max[kk, rows_c], neg).max(2)  # [k, PH, C, PW]
        row = hs[pos][:, :, None, None] + row_arg
        chan = torch.arange(c, device=input.device)[:, None]
        col = col_arg[kk[..., None], row.clamp(max=h - 1), chan, step_pw]
        col = col + ws[pos][:, None, None, :]
        empty = ((he[pos] <= hs[pos])[:, :, None, None]) | ((we[pos] <= ws[pos])[:, None, None, :])
        out[pos] = torch.where(empty, 0, best).permute(0, 2, 1, 3)
        arg[pos] = torch.where(empty, -1, row * w + col).permute(0, 2, 1, 3)
    return out, arg


def _roi_pool_backward(
    grad: Tensor, rois: Tensor, argmax: Tensor, shape: tuple[int, int, int, int]
) -> Tensor:
    n, c, h, w = shape
    out = torch.zeros(n * c * h * w, dtype=grad.dtype, device=grad.device)
    if argmax.numel():
        idx = rois[:, 0].to(torch.int64)
        base = (idx[:, None] * c + torch.arange(c, device=grad.device)) * (h * w)
        flat = (base[:, :, None, None] + argmax).flatten()
        ok = argmax.flatten() >= 0
        out.index_add_(0, flat[ok], grad.flatten()[ok])
    return out.view(n, c, h, w)


# -- the custom ops ------------------------------------------------------------------------


def _shape(input: Tensor) -> tuple[int, int, int, int]:
    n, c, h, w = input.shape
    return n, c, h, w


@torch.library.custom_op("trivium::roi_align", mutates_args=())
def roi_align_op(
    input: Tensor,
    rois: Tensor,
    spatial_scale: float,
    pooled_height: int,
    pooled_width: int,
    sampling_ratio: int,
    aligned: bool,
) -> Tensor:
    """RoI Align as a custom op (see :func:`trivium.vision.ops.roi_align`)."""
    _check_inputs("roi_align", input, rois, pooled_height, pooled_width)
    return _roi_align_torch(
        input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned
    )


def _roi_align_torch(
    input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned
):
    n, _, h, w = input.shape
    idx = _batch_index(rois, n)
    ay, ax = _align_weights(
        rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned, h, w
    )
    return _separable_forward(input, idx, ay, ax).to(input.dtype)


@roi_align_op.register_fake
def _(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    _check_inputs("roi_align", input, rois, pooled_height, pooled_width)
    return input.new_empty(rois.shape[0], input.shape[1], pooled_height, pooled_width)


def _roi_align_backward_torch(
    grad: Tensor,
    rois: Tensor,
    spatial_scale: float,
    pooled_height: int,
    pooled_width: int,
    batch_size: int,
    channels: int,
    height: int,
    width: int,
    sampling_ratio: int,
    aligned: bool,
) -> Tensor:
    """The gradient of ``trivium::roi_align`` with respect to its input."""
    idx = _batch_index(rois, batch_size)
    ay, ax = _align_weights(
        rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned, height, width
    )
    shape = (batch_size, channels, height, width)
    return _separable_backward(grad, idx, ay, ax, shape).to(grad.dtype)


# The op is the PyTorch implementation, which the CPU kernel also falls back on.
roi_align_backward_op = torch.library.custom_op(
    "trivium::roi_align_backward", _roi_align_backward_torch, mutates_args=()
)


@roi_align_backward_op.register_fake
def _(grad, rois, spatial_scale, ph, pw, batch_size, channels, height, width, sr, aligned):
    return grad.new_empty(batch_size, channels, height, width)


def _roi_align_setup(ctx, inputs, output) -> None:
    input, rois, spatial_scale, ph, pw, sampling_ratio, aligned = inputs
    ctx.save_for_backward(rois)
    ctx.args = (spatial_scale, ph, pw, *_shape(input), sampling_ratio, aligned)


def _roi_align_grad(ctx, grad):
    (rois,) = ctx.saved_tensors
    return roi_align_backward_op(grad, rois, *ctx.args), None, None, None, None, None, None


roi_align_op.register_autograd(_roi_align_grad, setup_context=_roi_align_setup)


@torch.library.custom_op("trivium::roi_pool", mutates_args=())
def roi_pool_op(
    input: Tensor, rois: Tensor, spatial_scale: float, pooled_height: int, pooled_width: int
) -> tuple[Tensor, Tensor]:
    """RoI Pool as a custom op: the bins' maxima and their flat ``h * W + w`` indices."""
    _check_inputs("roi_pool", input, rois, pooled_height, pooled_width)
    return _roi_pool_forward(input, rois, spatial_scale, pooled_height, pooled_width)


@roi_pool_op.register_fake
def _(input, rois, spatial_scale, pooled_height, pooled_width):
    _check_inputs("roi_pool", input, rois, pooled_height, pooled_width)
    out = input.new_empty(rois.shape[0], input.shape[1], pooled_height, pooled_width)
    return out, out.new_empty(out.shape, dtype=torch.int64)


@torch.library.custom_op("trivium::roi_pool_backward", mutates_args=())
def roi_pool_backward_op(
    grad: Tensor,
    rois: Tensor,
    argmax: Tensor,
    batch_size: int,
    channels: int,
    height: int,
    width: int,
) -> Tensor:
    """The gradient of ``trivium::roi_pool``: each bin's gradient to its maximum."""
    return _roi_pool_backward(grad, rois, argmax, (batch_size, channels, height, width))


@roi_pool_backward_op.register_fake
def _(grad, rois, argmax, batch_size, channels, height, width):
    return grad.new_empty(batch_size, channels, height, width)


def _roi_pool_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[1], output[1])
    ctx.shape = _shape(inputs[0])


def _roi_pool_grad(ctx, grad, _grad_argmax):
    rois, argmax = ctx.saved_tensors
    return roi_pool_backward_op(grad, rois, argmax, *ctx.shape), None, None, None, None


roi_pool_op.register_autograd(_roi_pool_grad, setup_context=_roi_pool_setup)


def _check_ps_channels(name: str, channels: int, pooled_height: int, pooled_width: int) -> None:
    torch._check(
        channels % (pooled_height * pooled_width) == 0,
        lambda: (
            f"{name}: input channels ({channels}) must be a multiple of "
            f"output_size[0] * output_size[1] ({pooled_height * pooled_width})"
        ),
    )


def _check_ps_inputs(
    name: str, input: Tensor, rois: Tensor, pooled_height: int, pooled_width: int
) -> None:
    _check_inputs(name, input, rois, pooled_height, pooled_width)
    _check_ps_channels(name, input.shape[1], pooled_height, pooled_width)


def _ps_fake(
    name: str, input: Tensor, rois: Tensor, pooled_height: int, pooled_width: int
) -> Tensor:
    """The checked, empty output of a position-sensitive op (for the fake tensors)."""
    _check_ps_inputs(name, input, rois, pooled_height, pooled_width)
    c = input.shape[1] // (pooled_height * pooled_width)
    return input.new_empty(rois.shape[0], c, pooled_height, pooled_width)


def _ps_align_weights(rois, spatial_scale, ph, pw, sampling_ratio, height, width):
    return _align_weights(rois, spatial_scale, ph, pw, sampling_ratio, True, height, width, True)


def _ps_pool_weights(rois, spatial_scale, ph, pw, height, width):
    hs, he, ws, we = _pool_bins(rois, spatial_scale, (ph, pw), (height, width), True)
    dtype = _compute_dtype(rois.dtype)
    return _mask_axis(hs, he, height, dtype), _mask_axis(ws, we, width, dtype)


@torch.library.custom_op("trivium::ps_roi_align", mutates_args=())
def ps_roi_align_op(
    input: Tensor,
    rois: Tensor,
    spatial_scale: float,
    pooled_height: int,
    pooled_width: int,
    sampling_ratio: int,
) -> Tensor:
    """Position-sensitive RoI Align as a custom op (see :func:`trivium.vision.ops.ps_roi_align`)."""
    _check_ps_inputs("ps_roi_align", input, rois, pooled_height, pooled_width)
    n, _, h, w = input.shape
    idx = _batch_index(rois, n)
    ay, ax = _ps_align_weights(
        rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, h, w
    )
    out = _ps_forward(input, idx, ay, ax)
    # torchvision divides by the sample count unclamped: 0/0 where an adaptive grid is empty.
    grids = _align_geometry(
        rois, spatial_scale, (pooled_height, pooled_width), sampling_ratio, True
    )
    no_samples = (grids[4] * grids[5] == 0)[:, None, None, None]
    return torch.where(no_samples, float("nan"), out).to(input.dtype)


@ps_roi_align_op.register_fake
def _(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    return _ps_fake("ps_roi_align", input, rois, pooled_height, pooled_width)


@torch.library.custom_op("trivium::ps_roi_align_backward", mutates_args=())
def ps_roi_align_backward_op(
    grad: Tensor,
    rois: Tensor,
    spatial_scale: float,
    pooled_height: int,
    pooled_width: int,
    sampling_ratio: int,
    batch_size: int,
    channels: int,
    height: int,
    width: int,
) -> Tensor:
    """The gradient of ``trivium::ps_roi_align`` with respect to its input."""
    idx = _batch_index(rois, batch_size)
    ay, ax = _ps_align_weights(
        rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, height, width
    )
    shape = (batch_size, channels, height, width)
    return _ps_backward(grad, idx, ay, ax, shape).to(grad.dtype)


@ps_roi_align_backward_op.register_fake
def _(grad, rois, spatial_scale, ph, pw, sr, batch_size, channels, height, width):
    return grad.new_empty(batch_size, channels, height, width)


def _ps_align_setup(ctx, inputs, output) -> None:
    input, rois, spatial_scale, ph, pw, sampling_ratio = inputs
    ctx.save_for_backward(rois)
    ctx.args = (spatial_scale, ph, pw, sampling_ratio, *_shape(input))


def _ps_align_grad(ctx, grad):
    (rois,) = ctx.saved_tensors
    return ps_roi_align_backward_op(grad, rois, *ctx.args), None, None, None, None, None


ps_roi_align_op.register_autograd(_ps_align_grad, setup_context=_ps_align_setup)


@torch.library.custom_op("trivium::ps_roi_pool", mutates_args=())
def ps_roi_pool_op(
    input: Tensor, rois: Tensor, spatial_scale: float, pooled_height: int, pooled_width: int
) -> Tensor:
    """Position-sensitive RoI Pool as a custom op (see :func:`trivium.vision.ops.ps_roi_pool`)."""
    _check_ps_inputs("ps_roi_pool", input, rois, pooled_height, pooled_width)
    n, _, h, w = input.shape
    idx = _batch_index(rois, n)
    ay, ax = _ps_pool_weights(rois, spatial_scale, pooled_height, pooled_width, h, w)
    return _ps_forward(input, idx, ay, ax).to(input.dtype)


@ps_roi_pool_op.register_fake
def _(input, rois, spatial_scale, pooled_height, pooled_width):
    return _ps_fake("ps_roi_pool", input, rois, pooled_height, pooled_width)


@torch.library.custom_op("trivium::ps_roi_pool_backward", mutates_args=())
def ps_roi_pool_backward_op(
    grad: Tensor,
    rois: Tensor,
    spatial_scale: float,
    pooled_height: int,
    pooled_width: int,
    batch_size: int,
    channels: int,
    height: int,
    width: int,
) -> Tensor:
    """The gradient of ``trivium::ps_roi_pool`` with respect to its input."""
    idx = _batch_index(rois, batch_size)
    ay, ax = _ps_pool_weights(rois, spatial_scale, pooled_height, pooled_width, height, width)
    shape = (batch_size, channels, height, width)
    return _ps_backward(grad, idx, ay, ax, shape).to(grad.dtype)


@ps_roi_pool_backward_op.register_fake
def _(grad, rois, spatial_scale, ph, pw, batch_size, channels, height, width):
    return grad.new_empty(batch_size, channels, height, width)


def _ps_pool_setup(ctx, inputs, output) -> None:
    input, rois, spatial_scale, ph, pw = inputs
    ctx.save_for_backward(rois)
    ctx.args = (spatial_scale, ph, pw, *_shape(input))


def _ps_pool_grad(ctx, grad):
    (rois,) = ctx.saved_tensors
    return ps_roi_pool_backward_op(grad, rois, *ctx.args), None, None, None, None


ps_roi_pool_op.register_autograd(_ps_pool_grad, setup_context=_ps_pool_setup)


# -- the native CPU kernels (trivium.vision._C) --------------------------------------------


def _native():  # the _C module when it has the RoI kernels, else None
    try:
        from trivium.vision import _C
    except ImportError:
        return None
    return _C if hasattr(_C, "roi_align_forward") else None


def _arrays(*tensors: Tensor):
    """NumPy views of the tensors in the native kernels' dtype (float16/bfloat16: float32)."""
    dtype = _compute_dtype(tensors[0].dtype)
    return [t.detach().to(dtype).contiguous().numpy() for t in tensors]


@roi_align_op.register_kernel("cpu")
def _(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    _check_inputs("roi_align", input, rois, pooled_height, pooled_width)
    native = _native()
    if native is None:
        return _roi_align_torch(
            input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned
        )
    _batch_index(rois, input.shape[0])
    x, r = _arrays(input, rois)
    out = native.roi_align_forward(
        x,
        r,
        spatial_scale,
        pooled_height,
        pooled_width,
        sampling_ratio,
        aligned,
        torch.get_num_threads(),
    )
    return torch.from_numpy(out).to(input.dtype)


@roi_align_backward_op.register_kernel("cpu")
def _(grad, rois, spatial_scale, ph, pw, batch_size, channels, height, width, sr, aligned):
    native = _native()
    if native is None:
        return _roi_align_backward_torch(
            grad, rois, spatial_scale, ph, pw, batch_size, channels, height, width, sr, aligned
        )
    _batch_index(rois, batch_size)
    g, r = _arrays(grad, rois)
    out = native.roi_align_backward(
        g, r, spatial_scale, sr, aligned, batch_size, height, width, torch.get_num_threads()
    )
    return torch.from_numpy(out).to(grad.dtype)


@roi_pool_op.register_kernel("cpu")
def _(input, rois, spatial_scale, pooled_height, pooled_width):
    _check_inputs("roi_pool", input, rois, pooled_height, pooled_width)
    native = _native()
    if native is None:
        return _roi_pool_forward(input, rois, spatial_scale, pooled_height, pooled_width)
    _batch_index(rois, input.shape[0])
    x, r = _arrays(input, rois)
    out, argmax = native.roi_pool_forward(
        x, r, spatial_scale, pooled_height, pooled_width, torch.get_num_threads()
    )
    return torch.from_numpy(out).to(input.dtype), torch.from_numpy(argmax)


@roi_pool_backward_op.register_kernel("cpu")
def _(grad, rois, argmax, batch_size, channels, height, width):
    native = _native()
    if native is None:
        return _roi_pool_backward(grad, rois, argmax, (batch_size, channels, height, width))
    _batch_index(rois, batch_size)
    g, r = _arrays(grad, rois)
    a = argmax.contiguous().numpy()
    out = native.roi_pool_backward(g, r, a, batch_size, height, width, torch.get_num_threads())
    return torch.from_numpy(out).to(grad.dtype)
