"""Mu-law companding transforms (``torchaudio.transforms.MuLawEncoding`` / ``MuLawDecoding``).

Example:
    >>> import torch
    >>> MuLawDecoding()(MuLawEncoding()(torch.tensor([0.5]))).item() - 0.5 < 0.01
    True
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from trivium.audio.functional.mulaw import mu_law_decoding, mu_law_encoding
from trivium.core.transform import Transform

__all__ = ["MuLawDecoding", "MuLawEncoding"]


class MuLawEncoding(Transform):
    """Encode a signal in [-1, 1] into ``quantization_channels`` mu-law codes (int64).

    Example:
        >>> import torch
        >>> MuLawEncoding(256)(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([  0, 128, 255])
    """

    def __init__(self, quantization_channels: int = 256) -> None:
        super().__init__()
        self.quantization_channels = quantization_channels

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Encode one tensor."""
        return mu_law_encoding(inpt, self.quantization_channels)


class MuLawDecoding(Transform):
    """Decode mu-law codes back to a signal in [-1, 1].

    Example:
        >>> import torch
        >>> MuLawDecoding(256)(torch.tensor([0, 255]))
        tensor([-1.,  1.])
    """

    def __init__(self, quantization_channels: int = 256) -> None:
        super().__init__()
        self.quantization_channels = quantization_channels

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Decode one tensor."""
        return mu_law_decoding(inpt, self.quantization_channels)
