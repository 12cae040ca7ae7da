"""Speech metrics: word / character error rates, SI-SNR, SDR and permutation-invariant loss.

Error rates compare transcripts (``predictions`` first, ``references`` second, as
torchmetrics): total edit distance divided by the total reference length, over a
batch. Signal metrics take ``[..., time]`` tensors, reduce over time, and are
differentiable, so their negatives serve as training losses.

Example:
    >>> word_error_rate(["the cat sat"], ["the cat sat down"])
    0.25
    >>> import torch
    >>> x = torch.sin(torch.arange(1000.0))
    >>> round(float(si_snr(x + 0.1 * torch.cos(torch.arange(1000.0)), x)), 1)
    20.0
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from trivium.audio.functional.distances import edit_distance

__all__ = [
    "PITLoss",
    "char_error_rate",
    "edit_distance",
    "pit_loss",
    "sdr",
    "si_snr",
    "si_snr_improvement",
    "word_error_rate",
]


def _batch(texts: str | Sequence[str], name: str) -> list[str]:
    if isinstance(texts, str):
        return [texts]
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return texts


def _error_rate(
    predictions: str | Sequence[str],
    references: str | Sequence[str],
    tokenize: Callable[[str], Sequence[str]],
    unit: str,
) -> float:
    preds, refs = _batch(predictions, "predictions"), _batch(references, "references")
    if len(preds) != len(refs):
        raise ValueError(f"got {len(preds)} predictions for {len(refs)} references")
    errors = total = 0
    for pred, ref in zip(preds, refs, strict=True):
        ref_tokens = tokenize(ref)
        errors += edit_distance(tokenize(pred), ref_tokens)
        total += len(ref_tokens)
    if total == 0:
        raise ValueError(f"the references hold no {unit}s: the error rate is undefined")
    return errors / total


def word_error_rate(predictions: str | Sequence[str], references: str | Sequence[str]) -> float:
    """Word error rate over a batch: word edit distances summed / reference words summed.

    Words are whitespace-separated; compare text normalised the same way (case,
    punctuation). Equals ``jiwer.wer(references, predictions)``.

    Example:
        >>> word_error_rate(["hello world", "a b c"], ["hello there world", "a b c"])
        0.16666666666666666
    """
    return _error_rate(predictions, references, str.split, "word")


def _characters(text: str) -> list[str]:
    return list(" ".join(text.split()))  # jiwer's: strip and collapse runs of spaces


def char_error_rate(predictions: str | Sequence[str], references: str | Sequence[str]) -> float:
    """Character error rate over a batch (spaces count; runs of whitespace count as one).

    Equals ``jiwer.cer(references, predictions)``.

    Example:
        >>> char_error_rate("helo", "hello")
        0.2
    """
    return _error_rate(predictions, references, _characters, "character")


def _check_pair(estimate: Tensor, target: Tensor) -> None:
    try:
        torch.broadcast_shapes(estimate.shape, target.shape)
    except RuntimeError:
        raise ValueError(
            "estimate and target shapes do not broadcast: "
            f"{tuple(estimate.shape)} vs {tuple(target.shape)}"
        ) from None


def si_snr(estimate: Tensor, target: Tensor, zero_mean: bool = True, eps: float = 1e-8) -> Tensor:
    """Scale-invariant signal-to-noise ratio in dB, over the last dimension (``[...]`` out).

    The target is projected onto ``estimate``'s span: ``s = <e, t> t / |t|^2``,
    ``SI-SNR = 10 log10(|s|^2 / |e - s|^2)`` (Le Roux et al., 2019), after removing
    the means when ``zero_mean``.

    Example:
        >>> import torch
        >>> t = torch.randn(2, 800)
        >>> bool((si_snr(3 * t, t) > 60).all())  # scaling does not matter
        True
    """
    _check_pair(estimate, target)
    if zero_mean:
        estimate = estimate - estimate.mean(-1, keepdim=True)
        target = target - target.mean(-1, keepdim=True)
    dot = (estimate * target).sum(-1, keepdim=True)
    projection = dot / (target.pow(2).sum(-1, keepdim=True) + eps) * target
    noise = estimate - projection
    ratio = projection.pow(2).sum(-1) / (noise.pow(2).sum(-1) + eps)
    return 10 * torch.log10(ratio + eps)


def si_snr_improvement(
    estimate: Tensor, target: Tensor, mixture: Tensor, zero_mean: bool = True
) -> Tensor:
    """SI-SNRi: SI-SNR of ``estimate`` minus SI-SNR of the unprocessed ``mixture``.

    Example:
        >>> import torch
        >>> t, n = torch.randn(800), torch.randn(800)
        >>> float(si_snr_improvement(t + n, t, t + n))
        0.0
    """
    return si_snr(estimate, target, zero_mean) - si_snr(mixture, target, zero_mean)


def sdr(estimate: Tensor, target: Tensor, eps: float = 1e-8) -> Tensor:
    """Signal-to-distortion ratio ``10 log10(|t|^2 / |t - e|^2)`` in dB over the last dimension.

    This is the plain (scale-dependent) SDR used as a training objective, not the
    BSS-Eval SDR that allows a distortion filter.

    Example:
        >>> import torch
        >>> t = torch.ones(100)
        >>> round(float(sdr(t * 0.9, t)), 4)
        20.0
    """
    _check_pair(estimate, target)
    return 10 * torch.log10(
        target.pow(2).sum(-1) / ((target - estimate).pow(2).sum(-1) + eps) + eps
    )


def _neg_si_snr(estimate: Tensor, target: Tensor) -> Tensor:
    return -si_snr(estimate, target)


def pit_loss(
    estimates: Tensor,
    targets: Tensor,
    loss_fn: Callable[[Tensor, Tensor], Tensor] = _neg_si_snr,
    reduction: str = "mean",
) -> tuple[Tensor, Tensor]:
    """Permutation-invariant loss: the best assignment of estimated to target sources.

    ``estimates`` and ``targets`` are ``[batch, n_sources, ..., time]``;
    ``loss_fn(estimate, target)`` reduces over everything after the source dimension
    (broadcasting over the rest) and defaults to negative SI-SNR. Every permutation is
    tried (fine for the 2-4 sources of speech separation). Returns ``(loss, perm)``:
    the loss per example averaged over sources (``reduction="none"``) or its batch
    mean (``"mean"``) / sum (``"sum"``), and ``perm`` ``[batch, n_sources]`` with
    ``estimates[b, perm[b, i]]`` matching ``targets[b, i]``.

    Example:
        >>> import torch
        >>> t = torch.randn(1, 2, 400)
        >>> loss, perm = pit_loss(t.flip(1), t)
        >>> perm.tolist(), bool(loss < -60)
        ([[1, 0]], True)
    """
    if estimates.shape != targets.shape or estimates.dim() < 3:
        raise ValueError(
            "estimates and targets must both be [batch, n_sources, ..., time], got "
            f"{tuple(estimates.shape)} and {tuple(targets.shape)}"
        )
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    n = estimates.shape[1]
    # pairwise[b, i, j] = loss of estimate j against target i
    pairwise = loss_fn(estimates.unsqueeze(1), targets.unsqueeze(2))
    if pairwise.shape != (estimates.shape[0], n, n):
        pairwise = pairwise.reshape(estimates.shape[0], n, n, -1).mean(-1)
    perms = torch.tensor(list(itertools.permutations(range(n))), device=estimates.device)
    rows = torch.arange(n, device=estimates.device)
    totals = pairwise[:, rows[None, :], perms].mean(-1)  # [batch, n_perms]
    best, index = totals.min(dim=1)
    perm = perms[index]
    if reduction == "mean":
        return best.mean(), perm
    if reduction == "sum":
        return best.sum(), perm
    return best, perm


class PITLoss(nn.Module):
    """``nn.Module`` wrapper of :func:`pit_loss` returning the loss only (a training criterion).

    Example:
        >>> import torch
        >>> criterion = PITLoss()
        >>> est = torch.randn(4, 2, 800, requires_grad=True)
        >>> criterion(est, torch.randn(4, 2, 800)).backward()
        >>> est.grad.shape
        torch.Size([4, 2, 800])
    """

    def __init__(
        self,
        loss_fn: Callable[[Tensor, Tensor], Tensor] = _neg_si_snr,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        self.loss_fn = loss_fn
        self.reduction = reduction

    def forward(self, estimates: Tensor, targets: Tensor) -> Tensor:
        """The permutation-invariant loss of ``estimates`` against ``targets``."""
        return pit_loss(estimates, targets, self.loss_fn, self.reduction)[0]
