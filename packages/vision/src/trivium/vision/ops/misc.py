"""Small layers the models share, named as in ``torchvision.ops.misc``.

Example:
    >>> import torch
    >>> FrozenBatchNorm2d(3)(torch.ones(1, 3, 2, 2)).shape
    torch.Size([1, 3, 2, 2])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["FrozenBatchNorm2d"]


class UpgradesStateDict(nn.Module):
    """A module that rewrites older state dicts (by their saved ``version``) before loading.

    A subclass overrides :meth:`upgrade_state_dict`; ``version`` is the one the
    state dict was saved with (None: saved before versions were recorded).

    Example:
        >>> import torch
        >>> class Renamed(UpgradesStateDict):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.register_buffer("new", torch.zeros(1))
        ...     def upgrade_state_dict(self, state_dict, prefix, version):
        ...         if prefix + "old" in state_dict:
        ...             state_dict[prefix + "new"] = state_dict.pop(prefix + "old")
        >>> Renamed().load_state_dict({"old": torch.ones(1)})
        <All keys matched successfully>
    """

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        """Rewrite ``state_dict``'s keys under ``prefix`` in place (default: nothing)."""

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        self.upgrade_state_dict(state_dict, prefix, local_metadata.get("version"))
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class FrozenBatchNorm2d(UpgradesStateDict):
    """BatchNorm2d whose statistics and affine parameters are fixed buffers, as torchvision's.

    ``y = (x - running_mean) / sqrt(running_var + eps) * weight + bias`` per channel,
    in training mode too: nothing is learnt or updated. Detection backbones use it
    in place of ``nn.BatchNorm2d`` (``resnet50(norm_layer=FrozenBatchNorm2d)``), since
    their small batches give poor statistics. The buffers are ``weight``, ``bias``,
    ``running_mean`` and ``running_var``; ``eps`` is a plain attribute, as in
    torchvision, so state dicts load either way. Loading a ``BatchNorm2d`` state
    dict drops its ``num_batches_tracked``.

    Example:
        >>> import torch
        >>> bn = torch.nn.BatchNorm2d(2).eval()
        >>> frozen = FrozenBatchNorm2d(2)
        >>> frozen.load_state_dict(bn.state_dict())
        <All keys matched successfully>
        >>> x = torch.randn(1, 2, 3, 3)
        >>> torch.allclose(frozen(x), bn(x), atol=1e-6)
        True
    """

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def upgrade_state_dict(
        self, state_dict: dict[str, Any], prefix: str, version: int | None
    ) -> None:
        """Drop a ``BatchNorm2d`` state dict's ``num_batches_tracked``."""
        state_dict.pop(prefix + "num_batches_tracked", None)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``x`` [N, C, H, W] with the frozen statistics.

        Example:
            >>> import torch
            >>> FrozenBatchNorm2d(1, eps=0.0)(torch.full((1, 1, 1, 1), 2.0)).item()
            2.0
        """
        # The same arithmetic as torchvision, in the same order, for equal outputs.
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"
