"""The RNN transducer loss as a module, as torchaudio's ``RNNTLoss``.

Example:
    >>> import torch
    >>> loss = RNNTLoss(blank=0)
    >>> logits = torch.zeros(1, 2, 2, 3)
    >>> ints = lambda *v: torch.tensor(v, dtype=torch.int32)
    >>> round(loss(logits, ints([1]), ints(2), ints(1)).item(), 4)
    2.6027
"""

from __future__ import annotations

from torch import Tensor

from trivium.audio.functional.rnnt import REDUCTIONS, rnnt_loss
from trivium.audio.transforms.base import CallTransform

__all__ = ["RNNTLoss"]


class RNNTLoss(CallTransform):
    """The RNN transducer loss: ``loss(logits, targets, logit_lengths, target_lengths)``.

    See :func:`~trivium.audio.functional.rnnt_loss` for the arguments.

    Example:
        >>> import torch
        >>> logits = torch.randn(2, 6, 3, 5, requires_grad=True)
        >>> targets = torch.tensor([[1, 2], [3, 0]], dtype=torch.int32)
        >>> lengths = torch.tensor([6, 4], dtype=torch.int32)
        >>> RNNTLoss(reduction="none")(logits, targets, lengths,
        ...                            torch.tensor([2, 1], dtype=torch.int32)).shape
        torch.Size([2])
    """

    def __init__(
        self,
        blank: int = -1,
        clamp: float = -1.0,
        reduction: str = "mean",
        fused_log_softmax: bool = True,
    ) -> None:
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        self.blank, self.clamp = blank, clamp
        self.reduction, self.fused_log_softmax = reduction, fused_log_softmax

    def forward(
        self, logits: Tensor, targets: Tensor, logit_lengths: Tensor, target_lengths: Tensor
    ) -> Tensor:
        """The loss of the batch."""
        return rnnt_loss(
            logits, targets, logit_lengths, target_lengths, self.blank, self.clamp,
            self.reduction, self.fused_log_softmax,
        )  # fmt: skip
