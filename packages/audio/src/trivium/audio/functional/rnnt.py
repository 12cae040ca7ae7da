"""The RNN transducer loss, as ``torchaudio.functional.rnnt_loss``.

The forward variable over the ``[T, U + 1]`` lattice runs one anti-diagonal at a
time (every cell of a diagonal depends only on the one before), vectorised over the
batch and the diagonal's cells, on the input's device. As torchaudio, the gradient is
computed with the loss (here by autograd through that recursion), clamped to
``[-clamp, clamp]`` when ``clamp > 0``, and scaled by the incoming gradient in the
backward pass.

Example:
    >>> import torch
    >>> logits = torch.zeros(1, 2, 2, 3)
    >>> round(rnnt_loss(logits, torch.tensor([[1]], dtype=torch.int32),
    ...                 torch.tensor([2], dtype=torch.int32), torch.tensor([1], dtype=torch.int32),
    ...                 blank=0).item(), 4)
    2.6027
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

__all__ = ["REDUCTIONS", "rnnt_loss"]

REDUCTIONS = ("none", "mean", "sum")
_FLOATS = (torch.float16, torch.float32, torch.float64)
_INTS = (torch.int32, torch.int64)


def _check_rnnt(
    logits: Tensor, targets: Tensor, logit_lengths: Tensor, target_lengths: Tensor, blank: int
) -> None:
    if logits.dtype not in _FLOATS:
        raise TypeError(f"logits must be float16, float32 or float64, got {logits.dtype}")
    for name, value in (
        ("targets", targets),
        ("logit_lengths", logit_lengths),
        ("target_lengths", target_lengths),
    ):
        if value.dtype not in _INTS:
            raise TypeError(f"{name} must be int32 (or int64), got {value.dtype}")
    if logits.ndim != 4:
        raise ValueError(
            f"logits must be 4-D (batch, max seq length, max target length + 1, class), got "
            f"{tuple(logits.shape)}"
        )
    if targets.ndim != 2 or logit_lengths.ndim != 1 or target_lengths.ndim != 1:
        raise ValueError(
            "targets must be 2-D (batch, max target length) and logit_lengths, target_lengths "
            f"1-D (batch,), got {tuple(targets.shape)}, {tuple(logit_lengths.shape)}, "
            f"{tuple(target_lengths.shape)}"
        )
    batch = logits.shape[0]
    if not targets.shape[0] == logit_lengths.shape[0] == target_lengths.shape[0] == batch:
        raise ValueError(
            f"batch dimension mismatch: logits {batch}, targets {targets.shape[0]}, "
            f"logit_lengths {logit_lengths.shape[0]}, target_lengths {target_lengths.shape[0]}"
        )
    if int(logit_lengths.max()) != logits.shape[1] or int(logit_lengths.min()) < 1:
        raise ValueError(
            f"logit_lengths must be in [1, {logits.shape[1]}] with maximum logits.shape[1]="
            f"{logits.shape[1]}, got {logit_lengths.tolist()}"
        )
    if int(target_lengths.max()) + 1 != logits.shape[2] or int(target_lengths.min()) < 0:
        raise ValueError(
            f"target_lengths must be >= 0 with maximum logits.shape[2] - 1={logits.shape[2] - 1}, "
            f"got {target_lengths.tolist()}"
        )
    if targets.shape[1] < logits.shape[2] - 1:
        raise ValueError(
            f"targets ({targets.shape[1]} labels) must hold max(target_lengths)="
            f"{logits.shape[2] - 1} labels"
        )
    if not 0 <= blank < logits.shape[-1]:
        raise ValueError(f"blank must be within [0, {logits.shape[-1]}) or negative, got {blank}")


def _sweep(into_t: Tensor, into_u: Tensor, start: Tensor) -> Tensor:
    """``x[t, u] = logaddexp(x[t-1, u] + into_t[t, u], x[t, u-1] + into_u[t, u])`` over
    ``[B, T, S]``, ``x[0, 0] = start``, one anti-diagonal at a time."""
    batch, frames, states = into_t.shape
    device = into_t.device
    t = torch.arange(frames, device=device)
    d = torch.arange(frames + states - 1, device=device)[:, None]
    u = d - t  # [diagonals, T]: the cell (t, d - t)
    on_lattice = (u >= 0) & (u < states)
    u_safe = u.clamp(0, states - 1)
    # Skewed onto the diagonals, [diagonals, B, T]; -inf off the lattice keeps x -inf there.
    skewed_t = torch.where(on_lattice, into_t[:, t, u_safe], -math.inf).transpose(0, 1)
    skewed_u = torch.where(on_lattice, into_u[:, t, u_safe], -math.inf).transpose(0, 1)
    skewed_t, skewed_u = skewed_t.contiguous(), skewed_u.contiguous()
    # Row k holds diagonal k at columns 1..T behind a -inf column: column t reads t - 1.
    x = torch.full((len(d), batch, frames + 1), -math.inf, dtype=into_t.dtype, device=device)
    x[0, :, 1] = start
    for k in range(1, len(d)):
        before = x[k - 1]
        torch.logaddexp(before[:, :-1] + skewed_t[k], before[:, 1:] + skewed_u[k], out=x[k, :, 1:])
    cells = t[:, None] + torch.arange(states, device=device)  # [T, S]: the diagonal t + u
    return x[cells, :, t[:, None].expand(-1, states) + 1].permute(2, 0, 1)


def _shifted(grid: Tensor, dt: int, du: int) -> Tensor:
    """``grid[:, t - dt, u - du]``, -inf where that falls outside."""
    out = torch.full_like(grid, -math.inf)
    frames, states = grid.shape[1], grid.shape[2]
    out[:, max(dt, 0) : frames + min(dt, 0), max(du, 0) : states + min(du, 0)] = grid[
        :, max(-dt, 0) : frames - max(dt, 0), max(-du, 0) : states - max(du, 0)
    ]
    return out


def _reversed(grid: Tensor, last_t: Tensor, last_u: Tensor) -> Tensor:
    """Each item's lattice ``[0, last_t] x [0, last_u]`` read backwards, -inf beyond it."""
    t = last_t[:, None] - torch.arange(grid.shape[1], device=grid.device)  # [B, T]
    u = last_u[:, None] - torch.arange(grid.shape[2], device=grid.device)  # [B, S]
    inside = (t >= 0)[:, :, None] & (u >= 0)[:, None, :]
    items = torch.arange(grid.shape[0], device=grid.device)[:, None, None]
    values = grid[items, t.clamp(min=0)[:, :, None], u.clamp(min=0)[:, None, :]]
    return torch.where(inside, values, -math.inf)


def _lattice(
    log_probs: Tensor, targets: Tensor, logit_lengths: Tensor, target_lengths: Tensor, blank: int
) -> tuple[Tensor, ...]:
    """Skip and emit log probabilities ``[B, T, U + 1]``, alpha, beta and the costs ``[B]``."""
    batch, frames, states = log_probs.shape[:3]
    skip = log_probs[..., blank]  # move to the next frame
    labels = targets[:, : states - 1].long().clamp(0, log_probs.shape[-1] - 1)
    index = labels[:, None, :, None].expand(-1, frames, -1, 1)
    emit = torch.full_like(skip, -math.inf)  # emit the next label (none from u = U)
    emit[..., :-1] = log_probs[:, :, :-1].gather(-1, index).squeeze(-1)
    start = torch.zeros(batch, dtype=log_probs.dtype, device=log_probs.device)
    alpha = _sweep(_shifted(skip, 1, 0), _shifted(emit, 0, 1), start)
    last_t, last_u = logit_lengths.long() - 1, target_lengths.long()
    items = torch.arange(batch, device=log_probs.device)
    final_skip = skip[items, last_t, last_u]
    costs = -(alpha[items, last_t, last_u] + final_skip)
    # beta runs the same sweep on each item's lattice reversed; the edge weights sit on
    # the cell the move leaves, which reversed is the cell it enters.
    beta_rev = _sweep(_reversed(skip, last_t, last_u), _reversed(emit, last_t, last_u), final_skip)
    beta = _reversed(beta_rev, last_t, last_u)
    return skip, emit, alpha, beta, costs


def _gradients(
    log_probs: Tensor, targets: Tensor, logit_lengths: Tensor, target_lengths: Tensor,
    blank: int, fused_log_softmax: bool,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """The costs and their gradient with respect to the logits (or the log probabilities)."""
    skip, emit, alpha, beta, costs = _lattice(
        log_probs, targets, logit_lengths, target_lengths, blank
    )
    batch, frames, states = skip.shape
    base = alpha + costs[:, None, None]
    last_t, last_u = logit_lengths.long() - 1, target_lengths.long()
    items = torch.arange(batch, device=skip.device)
    # The posterior of each move: alpha + its weight + beta after it, over the total.
    beta_after_skip = _shifted(beta, -1, 0)
    beta_after_skip[items, last_t, last_u] = 0.0  # the final blank ends the lattice
    through_skip = torch.exp(base + skip + beta_after_skip)
    through_emit = torch.exp(base + emit + _shifted(beta, 0, -1))
    valid = (torch.arange(frames, device=skip.device) <= last_t[:, None])[:, :, None] & (
        torch.arange(states, device=skip.device) <= last_u[:, None]
    )[:, None, :]
    if fused_log_softmax:
        grad = torch.exp(log_probs + (base + beta)[..., None])
    else:
        grad = torch.zeros_like(log_probs)
    grad[..., blank] -= through_skip
    labels = targets[:, : states - 1].long()
    emitted = grad[:, :, :-1].gather(-1, labels[:, None, :, None].expand(-1, frames, -1, 1))
    emitted = emitted - through_emit[:, :, :-1, None]
    grad[:, :, :-1].scatter_(-1, labels[:, None, :, None].expand(-1, frames, -1, 1), emitted)
    return costs, grad.mul_(valid[..., None])


class _RNNTLoss(torch.autograd.Function):
    """Costs forward; the gradient computed with them (clamped), scaled backward."""

    @staticmethod
    def forward(
        ctx: Any,
        logits: Tensor,
        targets: Tensor,
        logit_lengths: Tensor,
        target_lengths: Tensor,
        blank: int,
        clamp: float,
        fused_log_softmax: bool,
    ) -> Tensor:
        compute = torch.float64 if logits.dtype == torch.float64 else torch.float32
        with torch.no_grad():
            log_probs = logits.detach().to(compute)
            if fused_log_softmax:
                log_probs = log_probs.log_softmax(-1)
            costs, grad = _gradients(
                log_probs, targets, logit_lengths, target_lengths, blank, fused_log_softmax
            )
        if clamp > 0:
            grad = grad.clamp(-clamp, clamp)
        ctx.save_for_backward(grad.to(logits.dtype))
        return costs.detach().to(logits.dtype)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple[Tensor | None, ...]:
        (grad,) = ctx.saved_tensors
        return (grad * grad_outputs[0].view(-1, 1, 1, 1), None, None, None, None, None, None)


def rnnt_loss(
    logits: Tensor,
    targets: Tensor,
    logit_lengths: Tensor,
    target_lengths: Tensor,
    blank: int = -1,
    clamp: float = -1,
    reduction: str = "mean",
    fused_log_softmax: bool = True,
) -> Tensor:
    """The RNN transducer loss (Graves 2012), as ``torchaudio.functional.rnnt_loss``.

    Args:
        logits: the joiner's output ``[B, T, U + 1, C]``.
        targets: labels ``[B, U]`` (zero-padded), int32.
        logit_lengths: frames of each item ``[B]`` (the largest is ``T``), int32.
        target_lengths: labels of each item ``[B]`` (the largest is ``U``), int32.
        blank: the blank's index; negative counts from the end (-1: the last class).
        clamp: when > 0, each gradient element is clamped to ``[-clamp, clamp]``.
        reduction: ``"none"`` (``[B]``), ``"mean"`` or ``"sum"``.
        fused_log_softmax: apply ``log_softmax`` to ``logits`` inside the loss; False when
            ``logits`` already are log probabilities.

    Returns:
        The loss, ``[B]`` or a scalar.

    Example:
        >>> import torch
        >>> logits = torch.randn(2, 10, 4, 6, requires_grad=True)
        >>> targets = torch.randint(0, 5, (2, 3), dtype=torch.int32)
        >>> lengths = torch.tensor([10, 8], dtype=torch.int32)
        >>> loss = rnnt_loss(logits, targets, lengths, torch.tensor([3, 2], dtype=torch.int32))
        >>> loss.backward()
        >>> logits.grad.shape
        torch.Size([2, 10, 4, 6])
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f'reduction should be one of "none", "mean", or "sum", got {reduction!r}')
    if blank < 0:
        blank = logits.shape[-1] + blank
    _check_rnnt(logits, targets, logit_lengths, target_lengths, blank)
    targets, logit_lengths, target_lengths = (
        v.to(logits.device) for v in (targets, logit_lengths, target_lengths)
    )
    costs = _RNNTLoss.apply(
        logits, targets, logit_lengths, target_lengths, blank, clamp, fused_log_softmax
    )
    if reduction == "mean":
        return costs.mean()
    if reduction == "sum":
        return costs.sum()
    return costs
