"""Trivium audio: waveforms as float32 ``[..., channels, time]`` in [-1, 1].

Example:
    >>> import torch
    >>> import trivium.audio as ta
    >>> ta.functional.mu_law_encoding(torch.zeros(1, 4), 256).shape
    torch.Size([1, 4])
"""

from trivium.audio import functional
from trivium.audio.functional import mu_law_decoding, mu_law_encoding

__version__ = "0.1.0"

__all__ = ["__version__", "functional", "mu_law_decoding", "mu_law_encoding"]
