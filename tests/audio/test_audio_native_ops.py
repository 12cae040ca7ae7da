"""The native ``trivium_audio`` operators (``lfilter_core``, ``forced_align_paths``).

The CPU kernels (``packages/audio/csrc``) are compared with scipy.signal.lfilter in
float64, with the torch implementations that serve other devices, and with gradcheck;
the tests also check that a CPU call reaches the native kernel, that the kernel lets
go of the GIL, and that bad arguments raise ``TypeError`` / ``ValueError``.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
import scipy.signal
import torch

import trivium.audio.functional as F
from trivium.audio import _ops
from trivium.audio.functional.alignment import _forced_align_paths_numpy
from trivium.audio.functional.iir import _lfilter_torch

OPS = torch.ops.trivium_audio


def noise(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1


def stable_filters(filters: int, taps: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a, b)`` ``[filters, taps]`` float64: poles inside radius 0.9, ``a[0]`` not 1."""
    rng = np.random.default_rng(seed)
    a, b = [], []
    for _ in range(filters):
        pairs = (
            0.9
            * rng.uniform(0, 1, (taps - 1) // 2)
            * np.exp(1j * rng.uniform(0, 3, (taps - 1) // 2))
        )
        real = 0.9 * rng.uniform(-1, 1, (taps - 1) % 2)
        poly = np.real(np.atleast_1d(np.poly(np.concatenate([pairs, pairs.conj(), real]))))
        a.append(poly * rng.uniform(0.5, 2.0))
        b.append(rng.uniform(-1, 1, taps))
    return torch.tensor(np.array(a)), torch.tensor(np.array(b))


def test_the_operators_are_the_native_library_on_the_cpu() -> None:
    assert _ops.NATIVE
    for name, schema in _ops.SCHEMAS.items():
        op = getattr(OPS, name).default
        assert str(op._schema) == f"trivium_audio::{schema}"
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CPU")
    # A CPU lfilter runs the native kernel: its float64 sample loop rounds differently
    # from the torch implementation's float32 convolution and float64 blocks.
    x, a, b = noise(2, 1, 600), torch.tensor([[1.0, -1.2, 0.5]]), torch.tensor([[0.2, 0.1, 0.05]])
    ours = F.lfilter(x, a, b, clamp=False)
    assert torch.equal(ours, OPS.lfilter_core(x, a, b))
    assert not torch.equal(ours, _lfilter_torch(x, a, b))
    torch.testing.assert_close(ours, _lfilter_torch(x, a, b))


@pytest.mark.parametrize("taps", [1, 3, 4, 8])  # the unrolled kernels and the general one
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lfilter_core_equals_scipy_and_the_torch_implementation(taps: int, dtype) -> None:
    a, b = stable_filters(3, taps, seed=taps)
    x = noise(2, 3, 700, seed=taps).to(dtype)  # [batch, filters, time]: filter i, row i
    ours = OPS.lfilter_core(x, a.to(dtype), b.to(dtype))
    assert ours.shape == x.shape and ours.dtype == dtype
    expected = np.stack(
        [scipy.signal.lfilter(b[i], a[i], x[:, i].double().numpy(), axis=-1) for i in range(3)],
        axis=1,
    )
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    np.testing.assert_allclose(ours.double().numpy(), expected, atol=tol * np.abs(expected).max())
    torch.testing.assert_close(ours, _lfilter_torch(x, a.to(dtype), b.to(dtype)))


def test_lfilter_core_takes_strided_and_half_precision_waveforms() -> None:
    a, b = torch.tensor([[1.0, -1.2, 0.5]]), torch.tensor([[0.2, 0.1, 0.05]])
    x = noise(4, 1, 900)
    expected = OPS.lfilter_core(x, a, b)
    strided = noise(4, 1, 1800)[..., ::2]
    assert torch.equal(OPS.lfilter_core(strided, a, b), OPS.lfilter_core(strided.clone(), a, b))
    for dtype in (torch.float16, torch.bfloat16):  # float64 inside, rounded once
        half = OPS.lfilter_core(x.to(dtype), a, b)
        assert half.dtype == dtype
        torch.testing.assert_close(half.float(), expected, atol=0.05, rtol=0.02)
    assert OPS.lfilter_core(x[:, :, :0], a, b).shape == (4, 1, 0)


def test_a_bank_of_filters_and_its_gradient() -> None:
    """Every filter over every waveform (``batching=False``), ``a[0] != 1``, in float64."""
    a, b = stable_filters(2, 3, seed=7)
    x = noise(2, 1, 40, seed=1).double()
    out = F.lfilter(x, a, b, clamp=False, batching=False)
    assert out.shape == (2, 1, 2, 40)
    for i in range(2):
        expected = scipy.signal.lfilter(b[i], a[i], x.numpy(), axis=-1)
        np.testing.assert_allclose(out[:, :, i].numpy(), expected, atol=1e-12)
    leaves = [t.clone().requires_grad_() for t in (x, a, b)]
    filtered = lambda *v: F.lfilter(*v, clamp=False, batching=False)  # noqa: E731
    assert torch.autograd.gradcheck(filtered, leaves, fast_mode=True)
    assert torch.autograd.gradgradcheck(filtered, leaves, fast_mode=True)


def test_the_kernels_let_go_of_the_gil() -> None:
    """With the switch interval at its maximum the GIL changes hands only where a thread
    lets go of it; a watcher woken just before a kernel runs can only see it running if
    the kernel let go. Called below autograd, the call is the native kernel alone."""
    a, b = torch.tensor([[1.0, -1.2, 0.5]]), torch.tensor([[0.2, 0.1, 0.05]])
    x = noise(1, 1, 1 << 20)
    lp = torch.randn(1, 3000, 32, generator=torch.Generator().manual_seed(0)).log_softmax(-1)
    calls = {
        "lfilter_core": lambda: OPS.lfilter_core(x, a, b),
        "forced_align_paths": lambda: OPS.forced_align_paths(
            lp, torch.arange(1, 301)[None] % 31 + 1, torch.tensor([3000]), torch.tensor([300]), 0
        ),
    }
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e6)
    try:
        for name, call in calls.items():
            assert any(_seen_running(call) for _ in range(50)), name
    finally:
        sys.setswitchinterval(interval)


def _seen_running(call) -> bool:
    running, seen, woken = [False], [], threading.Event()

    def watcher() -> None:
        woken.wait()
        seen.append(running[0])

    thread = threading.Thread(target=watcher)
    thread.start()
    with torch._C._AutoDispatchBelowADInplaceOrView():
        running[0] = True
        woken.set()
        call()
        running[0] = False
    thread.join()
    return seen[0]


def test_forced_align_paths_equal_the_numpy_implementation_on_a_batch() -> None:
    gen = torch.Generator().manual_seed(3)
    lp = torch.randn(3, 120, 9, generator=gen).log_softmax(-1)
    targets = torch.randint(1, 9, (3, 25), generator=gen)
    targets[1, :4] = torch.tensor([2, 2, 2, 5])  # repeats: no skip between them
    frames, labels = torch.tensor([120, 70, 31]), torch.tensor([25, 12, 1])
    for dtype in (torch.float32, torch.float64, torch.float16):
        ours = OPS.forced_align_paths(lp.to(dtype), targets, frames, labels, 0)
        theirs = _forced_align_paths_numpy(lp.to(dtype), targets, frames, labels, 0)
        assert torch.equal(ours, theirs), dtype
    assert not ours[1, 70:].any() and not ours[2, 31:].any()


def test_bad_arguments_raise_type_and_value_errors() -> None:
    a, b = torch.tensor([[1.0, -0.5]]), torch.tensor([[1.0, 0.0]])
    x = torch.zeros(2, 1, 10)
    with pytest.raises(ValueError, match="waveform must be"):
        OPS.lfilter_core(x[0], a, b)
    with pytest.raises(ValueError, match="one shape"):
        OPS.lfilter_core(x, a, b[:, :1])
    with pytest.raises(ValueError, match="filters"):
        OPS.lfilter_core(torch.zeros(2, 3, 10), a, b)
    with pytest.raises(TypeError, match="waveform"):
        OPS.lfilter_core(x.long(), a, b)
    with pytest.raises(TypeError, match="waveform"):
        F.lfilter(torch.zeros(10, dtype=torch.int32), a[0], b[0])
    lp = torch.randn(1, 6, 4).log_softmax(-1)
    one, six = torch.tensor([1]), torch.tensor([6])
    with pytest.raises(ValueError, match="CTC dimension"):
        OPS.forced_align_paths(lp, torch.tensor([[9]]), six, one, 0)
    with pytest.raises(ValueError, match="blank index"):
        OPS.forced_align_paths(lp, torch.tensor([[0]]), six, one, 0)
    with pytest.raises(ValueError, match="input_lengths"):
        OPS.forced_align_paths(lp, torch.tensor([[1]]), torch.tensor([7]), one, 0)
    with pytest.raises(ValueError, match="target_lengths"):
        OPS.forced_align_paths(lp, torch.tensor([[1]]), six, torch.tensor([0]), 0)
    with pytest.raises(ValueError, match="too long"):
        OPS.forced_align_paths(lp, torch.tensor([[1, 1, 1, 1]]), six, torch.tensor([4]), 0)
    with pytest.raises(ValueError, match="blank"):
        OPS.forced_align_paths(lp, torch.tensor([[1]]), six, one, 4)
    with pytest.raises(TypeError, match="targets"):
        OPS.forced_align_paths(lp, torch.tensor([[1.0]]), six, one, 0)


@pytest.mark.slow
def test_lfilter_compiles_into_one_graph() -> None:
    a, b = torch.tensor([1.0, -1.2, 0.5]), torch.tensor([0.2, 0.1, 0.05])
    x = noise(2, 500)
    compiled = torch.compile(F.lfilter, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, a, b), F.lfilter(x, a, b))
