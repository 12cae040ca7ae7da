"""deform_conv2d against a plain loop over torchvision's kernel definition, and against
conv2d for zero offsets; gradients by gradcheck and against the loop reference's."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from trivium.vision import ops


def _bilinear(plane: torch.Tensor, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """torchvision's deform-conv sample: zero off the map, cells outside read zero."""
    h, w = plane.shape
    if y <= -1 or y >= h or x <= -1 or x >= w:
        return plane.new_zeros(())
    y0, x0 = math.floor(float(y.detach())), math.floor(float(x.detach()))
    ly, lx = y - y0, x - x0
    total = plane.new_zeros(())
    for yy, xx, wgt in (
        (y0, x0, (1 - ly) * (1 - lx)),
        (y0, x0 + 1, (1 - ly) * lx),
        (y0 + 1, x0, ly * (1 - lx)),
        (y0 + 1, x0 + 1, ly * lx),
    ):
        if 0 <= yy < h and 0 <= xx < w:
            total = total + wgt * plane[yy, xx]
    return total


def ref_deform_conv2d(x, offset, weight, bias, stride, padding, dilation, mask):
    """Differentiable loop reference: every output element summed tap by tap."""
    n, c = x.shape[:2]
    o, cg, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    groups = c // cg
    og = offset.shape[1] // (2 * kh * kw)
    out = torch.zeros(n, o, oh, ow, dtype=x.dtype)
    rows = []
    for b in range(n):
        for oc in range(o):
            g = oc // (o // groups)
            for i in range(oh):
                for j in range(ow):
                    acc = bias[oc] if bias is not None else x.new_zeros(())
                    for ci in range(cg):
                        ch = g * cg + ci
                        grp = ch // (c // og)
                        for ki in range(kh):
                            for kj in range(kw):
                                k = ki * kw + kj
                                dy = offset[b, 2 * (grp * kh * kw + k), i, j]
                                dx = offset[b, 2 * (grp * kh * kw + k) + 1, i, j]
                                y = i * stride[0] - padding[0] + ki * dilation[0] + dy
                                xx = j * stride[1] - padding[1] + kj * dilation[1] + dx
                                v = _bilinear(x[b, ch], y, xx)
                                if mask is not None:
                                    v = v * mask[b, grp * kh * kw + k, i, j]
                                acc = acc + weight[oc, ci, ki, kj] * v
                    rows.append(acc)
    return torch.stack(rows).view_as(out)


def make(n, c, h, w, o, k, stride, pad, dil, groups, offset_groups, use_mask, seed=0):
    g = torch.Generator().manual_seed(seed)
    oh = (h + 2 * pad - (dil * (k - 1) + 1)) // stride + 1
    ow = (w + 2 * pad - (dil * (k - 1) + 1)) // stride + 1
    x = torch.randn(n, c, h, w, generator=g, dtype=torch.float64)
    weight = torch.randn(o, c // groups, k, k, generator=g, dtype=torch.float64)
    bias = torch.randn(o, generator=g, dtype=torch.float64)
    offset = torch.randn(n, 2 * offset_groups * k * k, oh, ow, generator=g, dtype=torch.float64)
    offset = offset * 2.5  # taps well off the map too
    mask = torch.rand(n, offset_groups * k * k, oh, ow, generator=g, dtype=torch.float64)
    return (
        x,
        offset,
        weight,
        bias,
        (mask if use_mask else None),
        (stride,) * 2,
        (pad,) * 2,
        (dil,) * 2,
    )


CASES = [
    (1, 2, 5, 6, 3, 3, 1, 1, 1, 1, 1, False),
    (2, 4, 6, 5, 4, 3, 2, 2, 2, 2, 2, True),
    (1, 4, 5, 5, 2, 2, 1, 0, 1, 1, 4, True),
]


@pytest.mark.parametrize("case", CASES)
def test_equals_loop_reference_forward_and_backward(case):
    x, offset, weight, bias, mask, s, p, d = make(*case)
    inputs = [t for t in (x, offset, weight, bias, mask) if t is not None]
    grads = []
    g = None
    for fn in (ops.deform_conv2d, ref_deform_conv2d):
        leaves = [t.clone().requires_grad_() for t in inputs]
        args = dict(zip(("x", "offset", "weight", "bias", "mask"), leaves, strict=False))
        out = fn(args["x"], args["offset"], args["weight"], args["bias"], s, p, d, args.get("mask"))
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(9), dtype=out.dtype)
        (out * g).sum().backward()
        grads.append([out.detach()] + [t.grad for t in leaves])
    torch.testing.assert_close(grads[0], grads[1])


def test_zero_offsets_are_a_convolution():
    x, offset, weight, bias, _, s, p, d = make(2, 6, 9, 8, 4, 3, 2, 1, 2, 2, 3, False)
    got = ops.deform_conv2d(x, torch.zeros_like(offset), weight, bias, s, p, d)
    torch.testing.assert_close(got, F.conv2d(x, weight, bias, s, p, d, groups=2))
    mask = torch.ones(2, 3 * 9, *offset.shape[2:], dtype=x.dtype)
    got = ops.deform_conv2d(x, torch.zeros_like(offset), weight, bias, s, p, d, mask)
    torch.testing.assert_close(got, F.conv2d(x, weight, bias, s, p, d, groups=2))


def test_gradcheck():
    x, offset, weight, bias, mask, s, p, d = make(1, 2, 4, 4, 2, 2, 1, 1, 1, 1, 2, True, seed=3)
    inputs = tuple(t.requires_grad_() for t in (x, offset, weight, bias, mask))

    def fn(a, b, c, e, m):
        return ops.deform_conv2d(a, b, c, e, s, p, d, m)

    assert torch.autograd.gradcheck(fn, inputs, fast_mode=True)


def test_module_and_compile():
    torch.manual_seed(0)
    conv = ops.DeformConv2d(4, 6, 3, stride=1, padding=1, groups=2)
    assert (
        repr(conv)
        == "DeformConv2d(4, 6, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=2)"
    )
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    x = torch.randn(2, 4, 7, 7)
    offset = torch.randn(2, 18, 7, 7)
    eager = conv(x, offset)
    compiled = torch.compile(conv, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, offset), eager)
    torch.testing.assert_close(
        eager, ops.deform_conv2d(x, offset, conv.weight, conv.bias, padding=(1, 1))
    )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda x, o, w: ops.deform_conv2d(x, o[:, :5], w), RuntimeError, "offset tensor"),
        (lambda x, o, w: ops.deform_conv2d(x, o[:, :, :2], w), ValueError, "offset must be"),
        (
            lambda x, o, w: ops.deform_conv2d(x, o, w, mask=torch.ones(1, 3, 4, 4)),
            ValueError,
            "mask must be",
        ),
        (lambda x, o, w: ops.deform_conv2d(x[0], o, w), ValueError, "input must be a 4D"),
        (lambda x, o, w: ops.deform_conv2d(x, o, w, stride=(1, 2, 3)), TypeError, "stride"),
        (lambda x, o, w: ops.deform_conv2d(x, o, w[:, :3]), ValueError, "groups"),
        (lambda x, o, w: ops.DeformConv2d(3, 4, 3, groups=2), ValueError, "divisible"),
    ],
)
def test_bad_arguments(call, error, match):
    x, o, w = torch.randn(1, 4, 6, 6), torch.randn(1, 18, 4, 4), torch.randn(2, 4, 3, 3)
    with pytest.raises(error, match=match):
        call(x, o, w)
