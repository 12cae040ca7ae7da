"""DropBlock (Ghiasi et al.), as ``torchvision.ops.drop_block2d`` / ``drop_block3d``.

Contiguous blocks of a feature map are zeroed and the rest rescaled. Draws from
torch's global generator exactly as torchvision does (same seed, same blocks).

Example:
    >>> import torch
    >>> drop_block2d(torch.ones(1, 1, 5, 5), 0.3, 3, training=False).sum().item()
    25.0
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["DropBlock2d", "DropBlock3d", "drop_block2d", "drop_block3d"]


def _drop_block(
    input: Tensor, p: float, block_size: int, inplace: bool, eps: float, training: bool, dims: int
) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}.")
    if input.ndim != dims + 2:
        raise ValueError(f"input should be {dims + 2} dimensional. Got {input.ndim} dimensions.")
    if not training or p == 0.0:
        return input
    spatial = input.shape[2:]
    block_size = min(block_size, *spatial)
    if block_size % 2 == 0:
        raise ValueError(f"block size should be odd. Got {block_size} which is even.")
    # Block centres are drawn where a whole block fits, at the rate that drops p overall.
    valid = [s - block_size + 1 for s in spatial]
    gamma = p * _prod(spatial) / ((block_size**dims) * _prod(valid))
    noise = torch.empty((*input.shape[:2], *valid), dtype=input.dtype, device=input.device)
    noise.bernoulli_(gamma)
    noise = F.pad(noise, [block_size // 2] * (2 * dims), value=0)
    pool = F.max_pool2d if dims == 2 else F.max_pool3d
    noise = pool(
        noise, stride=(1,) * dims, kernel_size=(block_size,) * dims, padding=block_size // 2
    )
    noise = 1 - noise
    normalize_scale = noise.numel() / (eps + noise.sum())
    if inplace:
        return input.mul_(noise).mul_(normalize_scale)
    return input * noise * normalize_scale


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def drop_block2d(
    input: Tensor,
    p: float,
    block_size: int,
    inplace: bool = False,
    eps: float = 1e-06,
    training: bool = True,
) -> Tensor:
    """Zero random ``block_size`` x ``block_size`` blocks of [N, C, H, W] maps, as torchvision.

    Args:
        input: [N, C, H, W].
        p: the share of elements to drop, in [0, 1].
        block_size: the side of a block (odd; at most the map's sides).
        inplace: modify ``input``.
        eps: added to the rescaling's denominator.
        training: apply it; False returns ``input``.

    Returns:
        The input with blocks zeroed, the rest scaled by ``numel / kept``.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(2)
        >>> out = drop_block2d(torch.ones(1, 1, 8, 8), 0.3, 3)
        >>> int((out == 0).sum()), round(out.max().item(), 4)  # 18 of 64 dropped: x 64 / 46
        (18, 1.3913)
    """
    return _drop_block(input, p, block_size, inplace, eps, training, 2)


def drop_block3d(
    input: Tensor,
    p: float,
    block_size: int,
    inplace: bool = False,
    eps: float = 1e-06,
    training: bool = True,
) -> Tensor:
    """Zero random cubic blocks of [N, C, D, H, W] volumes, as torchvision.

    Args:
        input: [N, C, D, H, W].
        p: the share of elements to drop, in [0, 1].
        block_size: the side of a block (odd; at most the volume's sides).
        inplace: modify ``input``.
        eps: added to the rescaling's denominator.
        training: apply it; False returns ``input``.

    Returns:
        The input with blocks zeroed, the rest rescaled.

    Example:
        >>> import torch
        >>> drop_block3d(torch.ones(1, 1, 3, 3, 3), 0.5, 3, training=False).shape
        torch.Size([1, 1, 3, 3, 3])
    """
    return _drop_block(input, p, block_size, inplace, eps, training, 3)


class DropBlock2d(nn.Module):
    """:func:`drop_block2d` as a module, active in training mode only.

    Args:
        p: the share of elements to drop.
        block_size: the side of a block.
        inplace: modify the input.
        eps: added to the rescaling's denominator.

    Example:
        >>> import torch
        >>> DropBlock2d(0.1, 3).eval()(torch.ones(1, 2, 6, 6)).sum().item()
        72.0
    """

    def __init__(self, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06):
        super().__init__()
        self.p = p
        self.block_size = block_size
        self.inplace = inplace
        self.eps = eps

    def forward(self, input: Tensor) -> Tensor:
        """``input`` through :func:`drop_block2d` (in training mode)."""
        return drop_block2d(input, self.p, self.block_size, self.inplace, self.eps, self.training)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(p={self.p}, block_size={self.block_size}, "
            f"inplace={self.inplace})"
        )


class DropBlock3d(DropBlock2d):
    """:func:`drop_block3d` as a module, active in training mode only.

    Args:
        p: the share of elements to drop.
        block_size: the side of a block.
        inplace: modify the input.
        eps: added to the rescaling's denominator.

    Example:
        >>> import torch
        >>> DropBlock3d(0.1, 3).eval()(torch.ones(1, 1, 3, 3, 3)).sum().item()
        27.0
    """

    def forward(self, input: Tensor) -> Tensor:
        """``input`` through :func:`drop_block3d` (in training mode)."""
        return drop_block3d(input, self.p, self.block_size, self.inplace, self.eps, self.training)
