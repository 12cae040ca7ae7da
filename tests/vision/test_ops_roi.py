"""RoI Align / RoI Pool / PS RoI Align / PS RoI Pool against plain loop references of
torchvision's CPU kernels and torchvision's own pure-Python ``_roi_align``.

The loop references are the C++ kernels' definitions written out element by element
(sample positions, the bilinear rule with its out-of-map cases, the rounding of RoI
Pool's corners), in float64 Python arithmetic.
"""

from __future__ import annotations

import math
import sys

import pytest
import torch
from peers import require_torchvision

from trivium.vision import ops
from trivium.vision.ops import roi_kernels

# -- loop references ------------------------------------------------------------------------


def _bilinear(plane, height: int, width: int, y: float, x: float) -> float:
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_high = y_low = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_high = x_low = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    return (
        hy * hx * plane[y_low][x_low]
        + hy * lx * plane[y_low][x_high]
        + ly * hx * plane[y_high][x_low]
        + ly * lx * plane[y_high][x_high]
    )


def _align_bin(plane, h, w, start, bin_size, grid, ph, pw) -> float:
    (sh, sw), (bh, bw), (gh, gw) = start, bin_size, grid
    total = 0.0
    for iy in range(max(gh, 0)):
        y = sh + ph * bh + (iy + 0.5) * bh / gh
        for ix in range(max(gw, 0)):
            x = sw + pw * bw + (ix + 0.5) * bw / gw
            total += _bilinear(plane, h, w, y, x)
    return total


def ref_roi_align(x, rois, scale, out, sr, aligned, ps=False):
    _n, c, h, w = x.shape
    ph_n, pw_n = out
    c_out = c // (ph_n * pw_n) if ps else c
    res = torch.zeros(len(rois), c_out, ph_n, pw_n, dtype=torch.float64)
    data = x.double().tolist()
    for k, r in enumerate(rois.double().tolist()):
        off = 0.5 if (aligned or ps) else 0.0
        sw, sh, ew, eh = (v * scale - off for v in r[1:])
        rw, rh = ew - sw, eh - sh
        if not (aligned or ps):
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph_n, rw / pw_n
        gh = sr if sr > 0 else math.ceil(rh / ph_n)
        gw = sr if sr > 0 else math.ceil(rw / pw_n)
        count = gh * gw if ps else max(gh * gw, 1)
        for co in range(c_out):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    ci = (co * ph_n + ph) * pw_n + pw if ps else co
                    s = _align_bin(data[int(r[0])][ci], h, w, (sh, sw), (bh, bw), (gh, gw), ph, pw)
                    res[k, co, ph, pw] = s / count if count else math.nan
    return res


def _c_round(v: float) -> int:
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def _pool_bins(r, scale, out, size, ps):
    """[(hstart, hend, wstart, wend)] per bin, row-major, as torchvision's (PS) RoI Pool."""
    sw, sh, ew, eh = (_c_round(v * scale) for v in r[1:])
    extra, limit = (0, -1) if ps else (1, 0)
    rw, rh = max(ew - sw + extra, 1), max(eh - sh + extra, 1)
    bh, bw = rh / out[0], rw / out[1]
    h, w = size

    def clip(v, hi):
        return min(max(v, 0), hi)

    return [
        (
            clip(math.floor(ph * bh) + sh, h + limit),
            clip(math.ceil((ph + 1) * bh) + sh, h + limit),
            clip(math.floor(pw * bw) + sw, w + limit),
            clip(math.ceil((pw + 1) * bw) + sw, w + limit),
        )
        for ph in range(out[0])
        for pw in range(out[1])
    ]


def ref_roi_pool(x, rois, scale, out):
    _n, c, h, w = x.shape
    res = torch.zeros(len(rois), c, *out, dtype=x.dtype)
    arg = torch.full(res.shape, -1, dtype=torch.int64)
    for k, r in enumerate(rois.double().tolist()):
        for b, (hs, he, ws, we) in enumerate(_pool_bins(r, scale, out, (h, w), False)):
            for ch in range(c):
                best, at = (0.0, -1) if (he <= hs or we <= ws) else (-math.inf, -1)
                for y in range(hs, he):
                    for xx in range(ws, we):
                        v = float(x[int(r[0]), ch, y, xx])
                        if v > best:
                            best, at = v, y * w + xx
                res[k, ch, b // out[1], b % out[1]] = best
                arg[k, ch, b // out[1], b % out[1]] = at
    return res, arg


def ref_ps_roi_pool(x, rois, scale, out):
    _n, c, h, w = x.shape
    c_out = c // (out[0] * out[1])
    res = torch.zeros(len(rois), c_out, *out, dtype=torch.float64)
    for k, r in enumerate(rois.double().tolist()):
        for b, (hs, he, ws, we) in enumerate(_pool_bins(r, scale, out, (h, w), True)):
            ph, pw = divmod(b, out[1])
            for co in range(c_out):
                if he <= hs or we <= ws:
                    continue
                ci = (co * out[0] + ph) * out[1] + pw
                area = x[int(r[0]), ci, hs:he, ws:we].double()
                res[k, co, ph, pw] = area.sum() / ((he - hs) * (we - ws))
    return res


# -- inputs ---------------------------------------------------------------------------------


def make_rois(k: int, n: int, size: tuple[int, int], seed: int = 0, outside: bool = True):
    """[K, 5] RoIs over an image of ``size`` (in box coordinates): some cross or leave the
    map (``outside``), one has zero size and one is inverted."""
    g = torch.Generator().manual_seed(seed)
    h, w = size
    lo = -0.3 if outside else 0.0
    hi = 1.3 if outside else 0.7
    xy = (torch.rand(k, 2, generator=g) * (hi - lo) + lo) * torch.tensor([w, h])
    wh = torch.rand(k, 2, generator=g) * torch.tensor([w, h]) * 0.6
    if not outside:
        wh = torch.minimum(wh, torch.tensor([w, h]) - xy - 0.01)
    rois = torch.cat((torch.randint(0, n, (k, 1), generator=g).float(), xy, xy + wh), 1)
    rois[0, 3:] = rois[0, 1:3]  # a point
    if outside:
        rois[1, 3:] = rois[1, 1:3] - 2  # inverted
    return rois.double()


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 12, 9, 11, generator=g, dtype=torch.float64)
    return x, make_rois(10, 2, (18, 22), seed=2)


ALIGN_CASES = [(s, sr, a) for s in (0.5, 1.0, 0.7) for sr in (-1, 1, 2) for a in (False, True)]


# -- forward ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("scale", "sr", "aligned"), ALIGN_CASES)
def test_roi_align_equals_reference(data, scale, sr, aligned):
    x, rois = data
    got = ops.roi_align(x, rois, (3, 2), scale, sr, aligned)
    torch.testing.assert_close(got, ref_roi_align(x, rois, scale, (3, 2), sr, aligned))


@pytest.mark.parametrize(("scale", "sr"), [(0.5, -1), (1.0, 2), (0.7, -1), (0.7, 1)])
def test_ps_roi_align_equals_reference(data, scale, sr):
    x, rois = data
    got = ops.ps_roi_align(x, rois, (3, 2), scale, sr)
    want = ref_roi_align(x, rois, scale, (3, 2), sr, True, ps=True)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert torch.isnan(got).any() == (sr <= 0)  # the zero-size RoI: 0 / 0, as torchvision


@pytest.mark.parametrize("scale", [0.5, 1.0, 0.7])
def test_roi_pool_equals_reference(data, scale):
    x, rois = data
    out, argmax = torch.ops.trivium.roi_pool(x, rois, scale, 3, 2)
    want, want_arg = ref_roi_pool(x, rois, scale, (3, 2))
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    assert torch.equal(argmax, want_arg)
    torch.testing.assert_close(ops.roi_pool(x, rois, (3, 2), scale), want, rtol=0, atol=0)


@pytest.mark.parametrize("scale", [0.5, 1.0, 0.7])
def test_ps_roi_pool_equals_reference(data, scale):
    x, rois = data
    got = ops.ps_roi_pool(x, rois, (3, 2), scale)
    torch.testing.assert_close(got, ref_ps_roi_pool(x, rois, scale, (3, 2)))


def test_roi_pool_ties_take_the_first_maximum():
    x = torch.zeros(1, 1, 4, 4)
    out, argmax = torch.ops.trivium.roi_pool(x, torch.tensor([[0.0, 0, 0, 3, 3]]), 1.0, 1, 1)
    assert out.item() == 0.0 and argmax.item() == 0


@pytest.mark.parametrize(("sr", "aligned"), [(-1, False), (2, True), (-1, True)])
def test_roi_align_equals_torchvision_python(sr, aligned):
    """torchvision's pure-Python ``_roi_align`` (eager), on RoIs inside the map (it has no
    out-of-map rule), forward and gradient."""
    require_torchvision()
    module = sys.modules["torchvision.ops.roi_align"]  # the name ops.roi_align is the function
    tv_fn = getattr(module._roi_align, "__wrapped__", module._roi_align)  # eager, not compiled
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 12, 10, generator=g, dtype=torch.float64)
    # Without the zero-size RoI: its empty adaptive grid gives torchvision's Python NaN gradients.
    rois = make_rois(20, 2, (24, 20), seed=4, outside=False)[1:]
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours = ops.roi_align(x1, rois, (4, 3), 0.5, sr, aligned)
    theirs = tv_fn(x2, rois, 0.5, 4, 3, sr, aligned)
    torch.testing.assert_close(ours, theirs)
    weights = torch.randn(ours.shape, generator=g, dtype=torch.float64)
    (ours * weights).sum().backward()
    (theirs * weights).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad)


# -- backward ---------------------------------------------------------------------------------


def _small():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 8, 5, 6, generator=g, dtype=torch.float64)
    return x, make_rois(5, 2, (10, 12), seed=6)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, r: ops.roi_align(x, r, (2, 2), 0.5, -1, False),
        lambda x, r: ops.roi_align(x, r, (2, 3), 0.7, 2, True),
        lambda x, r: ops.roi_pool(x, r, (2, 2), 0.5),
        lambda x, r: ops.ps_roi_align(x, r, (2, 2), 0.5, 2),
        lambda x, r: ops.ps_roi_pool(x, r, (2, 2), 0.7),
    ],
    ids=["roi_align", "roi_align_aligned", "roi_pool", "ps_roi_align", "ps_roi_pool"],
)
def test_gradcheck(fn):
    x, rois = _small()
    x.requires_grad_()
    # The roi_pool maxima must not tie within the finite-difference step.
    assert torch.autograd.gradcheck(lambda t: fn(t, rois), (x,), fast_mode=True)


def test_roi_pool_gradient_goes_to_each_maximum(data):
    x, rois = data
    x = x.clone().requires_grad_()
    out = ops.roi_pool(x, rois, (3, 2), 0.7)
    weights = torch.arange(out.numel(), dtype=x.dtype).view_as(out)
    (out * weights).sum().backward()
    _, arg = ref_roi_pool(x.detach(), rois, 0.7, (3, 2))
    want = torch.zeros(x.shape, dtype=x.dtype).view(2, 12, -1)
    for k, ch, i, j in zip(*[t.tolist() for t in torch.nonzero(arg >= 0).T], strict=True):
        want[int(rois[k, 0]), ch, arg[k, ch, i, j]] += weights[k, ch, i, j]
    torch.testing.assert_close(x.grad, want.view_as(x))


# -- kernels, dtypes, batches ---------------------------------------------------------------


@pytest.mark.parametrize(("scale", "sr", "aligned"), ALIGN_CASES[::4])
def test_torch_kernels_equal_the_native_ones(data, scale, sr, aligned):
    """The tensor-op kernels (used off the CPU) give the CPU kernels' results."""
    x, rois = data
    g = torch.randn(len(rois), 12, 3, 2, dtype=torch.float64)
    args = (x, rois, scale, 3, 2, sr, aligned)
    torch.testing.assert_close(
        roi_kernels._roi_align_torch(*args), torch.ops.trivium.roi_align(*args)
    )
    back = (g, rois, scale, 3, 2, 2, 12, 9, 11, sr, aligned)
    torch.testing.assert_close(
        roi_kernels._roi_align_backward_torch(*back),
        torch.ops.trivium.roi_align_backward(*back),
    )
    out, arg = roi_kernels._roi_pool_forward(x, rois, scale, 3, 2)
    want, want_arg = torch.ops.trivium.roi_pool(x, rois, scale, 3, 2)
    torch.testing.assert_close(out, want)
    assert torch.equal(arg, want_arg)
    torch.testing.assert_close(
        roi_kernels._roi_pool_backward(g, rois, arg, (2, 12, 9, 11)),
        torch.ops.trivium.roi_pool_backward(g, rois, arg, 2, 12, 9, 11),
    )


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float16, 2e-3)])
@pytest.mark.parametrize("name", ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"])
def test_dtypes(data, dtype, tol, name):
    x, rois = data
    fn = getattr(ops, name)
    rois = rois[2:]  # no zero-size RoI (NaN in ps_roi_align)
    lowered = x.to(dtype)
    got = fn(lowered, rois.to(dtype), (3, 2), 0.5)
    want = fn(lowered.double(), rois.to(dtype).double(), (3, 2), 0.5)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)


def test_list_of_boxes_equals_the_indexed_tensor(data):
    x, rois = data
    per_image = [rois[rois[:, 0] == i, 1:] for i in range(2)]
    as_tensor = torch.cat(
        [torch.cat((torch.full_like(b[:, :1], i), b), 1) for i, b in enumerate(per_image)]
    )
    for name in ("roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"):
        fn = getattr(ops, name)
        torch.testing.assert_close(
            fn(x, per_image, 2, 0.5), fn(x, as_tensor, 2, 0.5), equal_nan=True
        )


@pytest.mark.parametrize(
    "boxes",
    [[], [torch.zeros(0, 4, dtype=torch.float64)] * 2, torch.zeros(0, 5, dtype=torch.float64)],
)
@pytest.mark.parametrize("name", ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"])
def test_no_rois(boxes, name):
    x = torch.randn(2, 4, 5, 5, dtype=torch.float64, requires_grad=True)
    out = getattr(ops, name)(x, boxes, 2, 1.0)
    assert out.shape[0] == 0 and out.shape[2:] == (2, 2)
    out.sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x))


def test_rois_outside_the_map_pool_zeros():
    x = torch.randn(1, 4, 6, 6)
    far = torch.tensor([[0.0, 100, 100, 120, 120]])
    for name in ("roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"):
        assert torch.equal(
            getattr(ops, name)(x, far, 2), torch.zeros(1, 4 if name[:2] != "ps" else 1, 2, 2)
        )


def test_modules():
    x, rois = _small()
    torch.testing.assert_close(
        ops.RoIAlign((2, 2), 0.5, 2, True)(x, rois), ops.roi_align(x, rois, 2, 0.5, 2, True)
    )
    torch.testing.assert_close(ops.RoIPool(2, 0.5)(x, rois), ops.roi_pool(x, rois, 2, 0.5))
    torch.testing.assert_close(
        ops.PSRoIAlign(2, 0.5, 2)(x, rois), ops.ps_roi_align(x, rois, 2, 0.5, 2)
    )
    torch.testing.assert_close(ops.PSRoIPool(2, 0.5)(x, rois), ops.ps_roi_pool(x, rois, 2, 0.5))
    assert repr(ops.RoIAlign(7, 0.25, 2)) == (
        "RoIAlign(output_size=7, spatial_scale=0.25, sampling_ratio=2, aligned=False)"
    )


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("RoIAlign", ((7, 7), 0.25, 2, True)),
        ("RoIPool", (2, 0.5)),
        ("PSRoIAlign", (3, 1.0, -1)),
        ("PSRoIPool", ((2, 3), 0.125)),
    ],
)
def test_module_options_and_repr_match_torchvision(name, args):
    tv = require_torchvision()
    ours, theirs = getattr(ops, name)(*args), getattr(tv.ops, name)(*args)
    assert repr(ours) == repr(theirs)
    assert vars(ours).keys() >= {"output_size", "spatial_scale"}
    for key in ("output_size", "spatial_scale", "sampling_ratio", "aligned"):
        assert getattr(ours, key, None) == getattr(theirs, key, None)


def test_under_torch_compile_fullgraph():
    x, rois = _small()

    def pooled(t):
        return (
            ops.roi_align(t, rois, 2, 0.5, -1, True).sum()
            + ops.roi_pool(t, rois, 2, 0.5).sum()
            + ops.ps_roi_align(t, rois, 2, 0.5, 2).sum()
            + ops.ps_roi_pool(t, rois, 2, 0.5).sum()
        )

    compiled = torch.compile(pooled, fullgraph=True, backend="aot_eager")
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    torch.testing.assert_close(compiled(a), pooled(b))
    compiled(a).backward()
    pooled(b).backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_fake_kernels_give_shapes():
    x = torch.empty(2, 12, 9, 11, device="meta")
    rois = torch.empty(7, 5, device="meta")
    assert torch.ops.trivium.roi_align(x, rois, 1.0, 3, 2, -1, False).shape == (7, 12, 3, 2)
    out, arg = torch.ops.trivium.roi_pool(x, rois, 1.0, 3, 2)
    assert out.shape == arg.shape == (7, 12, 3, 2) and arg.dtype == torch.int64
    assert torch.ops.trivium.ps_roi_align(x, rois, 1.0, 3, 2, 2).shape == (7, 2, 3, 2)
    assert torch.ops.trivium.ps_roi_pool(x, rois, 1.0, 3, 2).shape == (7, 2, 3, 2)


# -- bad arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda x, r: ops.roi_align(x[0], r, 2), ValueError, "input must be"),
        (lambda x, r: ops.roi_align(x, r[:, 1:], 2), ValueError, r"boxes must be a \[K, 5\]"),
        (lambda x, r: ops.roi_align(x, [r], 2), ValueError, r"boxes\[0\] must be"),
        (lambda x, r: ops.roi_align(x, r.float(), 2), TypeError, "dtype"),
        (lambda x, r: ops.roi_align(x, "boxes", 2), TypeError, "boxes must be"),
        (lambda x, r: ops.roi_align(x, r, (2, 2, 2)), TypeError, "output_size"),
        (lambda x, r: ops.roi_align(x, r, 0), ValueError, "output_size must be positive"),
        (lambda x, r: ops.roi_align(x, r, 2, sampling_ratio=1.5), TypeError, "sampling_ratio"),
        (lambda x, r: ops.roi_align(x.long(), r.long(), 2), TypeError, "floating-point"),
        (lambda x, r: ops.ps_roi_align(x, r, 3), ValueError, "multiple of"),
        (lambda x, r: ops.ps_roi_pool(x, r, (2, 3)), ValueError, "multiple of"),
        (
            lambda x, r: ops.roi_pool(x, r + torch.tensor([5.0, 0, 0, 0, 0]), 2),
            ValueError,
            "batch index",
        ),
        (
            lambda x, r: ops.roi_align(x, r * torch.tensor([1.0, 1, float("inf"), 1, 1]), 2),
            ValueError,
            "finite",
        ),
        (
            lambda x, r: ops.ps_roi_pool(x, r * torch.tensor([1.0, 1, float("nan"), 1, 1]), 2),
            ValueError,
            "finite",
        ),
        (
            lambda x, r: ops.roi_align(x, r - torch.tensor([1.0, 0, 0, 0, 0]), 2),
            ValueError,
            "batch index",
        ),
    ],
)
def test_bad_arguments(call, error, match):
    x, rois = _small()
    with pytest.raises(error, match=match):
        call(x, rois)


# -- MultiScaleRoIAlign -----------------------------------------------------------------------


@pytest.mark.parametrize("names", [["p2", "p3", "p4", "p5"], ["p3"], ["p2", "p4"]])
def test_multiscale_roi_align_equals_torchvision(monkeypatch, names):
    """torchvision's MultiScaleRoIAlign (its level mapping and scales) over our roi_align."""
    tv = require_torchvision()
    monkeypatch.setattr(sys.modules["torchvision.ops.poolers"], "roi_align", ops.roi_align)
    g = torch.Generator().manual_seed(7)
    x = {
        f"p{lvl}": torch.randn(2, 3, 128 // 2**lvl, 96 // 2**lvl, generator=g)
        for lvl in range(2, 6)
    }
    xy = torch.rand(2, 30, 2, generator=g) * torch.tensor([90.0, 120])
    wh = torch.rand(2, 30, 2, generator=g) ** 2 * 300 + 2
    boxes = [torch.cat((xy[i], xy[i] + wh[i]), 1) for i in range(2)]
    shapes = [(128, 96), (120, 90)]
    ours = ops.MultiScaleRoIAlign(names, (3, 2), 2)
    theirs = tv.ops.MultiScaleRoIAlign(names, (3, 2), 2)
    torch.testing.assert_close(ours(x, boxes, shapes), theirs(x, boxes, shapes))
    assert ours.scales == theirs.scales
    levels = ours.map_levels(boxes)
    assert torch.equal(levels, theirs.map_levels(boxes))
    assert len(names) == 1 or len(set(levels.tolist())) > 1  # the boxes span levels


def test_level_mapper_equals_torchvision():
    poolers = require_torchvision().ops.poolers
    boxes = [torch.tensor([[0.0, 0, 224, 224], [0, 0, 112, 112], [0, 0, 1000, 1000], [0, 0, 4, 4]])]
    for args in [(2, 5), (3, 4, 112, 3)]:
        assert torch.equal(ops.LevelMapper(*args)(boxes), poolers.LevelMapper(*args)(boxes))


def test_multiscale_roi_align_names_no_feature():
    with pytest.raises(ValueError, match="featmap_names"):
        ops.MultiScaleRoIAlign(["x"], 2, 2)(
            {"p2": torch.zeros(1, 1, 4, 4)}, [torch.zeros(1, 4)], [(8, 8)]
        )
