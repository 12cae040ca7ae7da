"""``trivium.core.tracing``: what counts as traced, checked against torch's own flags."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.flop_counter import FlopCounterMode

from trivium.core import is_tracing, ops_intercepted


class _Flags(nn.Module):
    """Returns the two flags, as seen while its forward runs, added to ``x``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tensor([float(is_tracing()), float(ops_intercepted())])


def test_eager_is_neither():
    assert (is_tracing(), ops_intercepted()) == (False, False)
    assert _Flags()(torch.zeros(2)).tolist() == [0.0, 0.0]


def test_torch_compile_traces():
    compiled = torch.compile(_Flags(), fullgraph=True, backend="eager")
    assert compiled(torch.zeros(2)).tolist() == [1.0, 1.0]
    assert (is_tracing(), ops_intercepted()) == (False, False)  # only while traced


def test_torch_export_traces_strict_and_non_strict():
    for strict in (True, False):
        program = torch.export.export(_Flags(), (torch.zeros(2),), strict=strict)
        assert program.module()(torch.zeros(2)).tolist() == [1.0, 1.0], strict


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_jit_script_traces():
    @torch.jit.script
    def flag(x: torch.Tensor) -> torch.Tensor:
        return x + int(is_tracing())

    assert flag(torch.zeros(1)).tolist() == [1.0]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_jit_trace_and_dispatch_modes_intercept_without_tracing():
    seen = []

    def record(x: torch.Tensor) -> torch.Tensor:
        seen.append((is_tracing(), ops_intercepted(), torch.jit.is_tracing()))
        return x * 2

    torch.jit.trace(record, torch.zeros(1), check_trace=False)
    with FlopCounterMode(display=False):
        record(torch.zeros(1))
    with FakeTensorMode():
        record(torch.zeros(1))
    assert seen == [(False, True, True), (False, True, False), (False, True, False)]
