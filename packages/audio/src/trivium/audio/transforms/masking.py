"""SpecAugment masking: ``FrequencyMasking``, ``TimeMasking`` and ``SpecAugment`` (torchaudio's).

Example:
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> TimeMasking(time_mask_param=20, generator=g)(torch.ones(1, 80, 100)).shape
    torch.Size([1, 80, 100])
"""

from __future__ import annotations

import torch
from torch import Tensor

from trivium.audio.functional.masking import mask_along_axis, mask_along_axis_iid
from trivium.audio.transforms.base import CallTransform

__all__ = ["FrequencyMasking", "SpecAugment", "TimeMasking"]


class _AxisMasking(CallTransform):
    """Mask a band of ``[..., freq, time]`` along ``axis`` (-2 or -1)."""

    def __init__(
        self,
        mask_param: int,
        axis: int,
        iid_masks: bool,
        p: float,
        generator: torch.Generator | None,
    ) -> None:
        super().__init__(generator)
        if mask_param < 0:
            raise ValueError(f"mask_param must be >= 0, got {mask_param}")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.mask_param = mask_param
        self.axis = axis
        self.iid_masks = iid_masks
        self.p = p

    def forward(self, specgram: Tensor, mask_value: float = 0.0) -> Tensor:
        """Mask ``specgram`` ``[..., freq, time]``, filling with ``mask_value``."""
        if self.iid_masks:
            return mask_along_axis_iid(
                specgram, self.mask_param, mask_value, self.axis, self.p, self.active_generator()
            )
        return mask_along_axis(
            specgram, self.mask_param, mask_value, self.axis, self.p, self.active_generator()
        )


class FrequencyMasking(_AxisMasking):
    """Zero a random band of up to ``freq_mask_param`` frequency bins (SpecAugment).

    With ``iid_masks=True`` every example and channel (each leading index) gets its
    own band; otherwise one band is shared. Randomness comes from ``generator``.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> out = FrequencyMasking(30, generator=g)(torch.ones(2, 80, 10))
        >>> bool((out == 0).all(dim=-1).any())  # whole frequency rows are zero
        True
    """

    def __init__(
        self,
        freq_mask_param: int,
        iid_masks: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(freq_mask_param, -2, iid_masks, 1.0, generator)


class TimeMasking(_AxisMasking):
    """Zero a random span of up to ``time_mask_param`` frames (SpecAugment).

    ``p`` caps the span at ``p`` times the number of frames. With ``iid_masks=True``
    every example and channel gets its own span. Randomness comes from ``generator``.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> out = TimeMasking(50, iid_masks=True, generator=g)(torch.ones(4, 1, 8, 100))
        >>> out.shape
        torch.Size([4, 1, 8, 100])
    """

    def __init__(
        self,
        time_mask_param: int,
        iid_masks: bool = False,
        p: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(time_mask_param, -1, iid_masks, p, generator)


class SpecAugment(CallTransform):
    """SpecAugment: ``n_time_masks`` bands of up to ``time_mask_param`` frames, then
    ``n_freq_masks`` bands of up to ``freq_mask_param`` bins, of ``[..., freq, time]``.

    Masked values become the spectrogram's mean (0 with ``zero_masking``); with
    ``iid_masks`` (and a batch) every example and channel gets its own bands; ``p``
    caps a band at that fraction of its axis. Randomness comes from ``generator``.

    Example:
        >>> import torch
        >>> augment = SpecAugment(2, 10, 2, 8, zero_masking=True,
        ...                       generator=torch.Generator().manual_seed(0))
        >>> out = augment(torch.ones(4, 1, 40, 100))
        >>> out.shape, bool((out == 0).any())
        (torch.Size([4, 1, 40, 100]), True)
    """

    def __init__(
        self,
        n_time_masks: int,
        time_mask_param: int,
        n_freq_masks: int,
        freq_mask_param: int,
        iid_masks: bool = True,
        p: float = 1.0,
        zero_masking: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.n_time_masks, self.time_mask_param = n_time_masks, time_mask_param
        self.n_freq_masks, self.freq_mask_param = n_freq_masks, freq_mask_param
        self.iid_masks, self.p, self.zero_masking = iid_masks, p, zero_masking

    def forward(self, specgram: Tensor) -> Tensor:
        """Mask ``specgram`` ``[..., freq, time]``."""
        value = 0.0 if self.zero_masking else float(specgram.mean())
        mask = mask_along_axis_iid if self.iid_masks and specgram.dim() > 2 else mask_along_axis
        generator = self.active_generator()
        for _ in range(self.n_time_masks):
            specgram = mask(specgram, self.time_mask_param, value, -1, self.p, generator)
        for _ in range(self.n_freq_masks):
            specgram = mask(specgram, self.freq_mask_param, value, -2, self.p, generator)
        return specgram
