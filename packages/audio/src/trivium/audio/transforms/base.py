"""``CallTransform``: the base of audio transforms called with torchaudio's arguments.

:class:`trivium.core.Transform` takes a *sample*: every argument of its call is an
input, and each gets the same random parameters. Some torchaudio transforms take
the data plus options instead (``AddNoise()(waveform, noise, snr, lengths)``,
``TimeMasking(...)(specgram, mask_value)``, ``InverseSpectrogram(...)(spec, length)``,
``TimeStretch(...)(spec, overriding_rate)``, ``SpeedPerturbation(...)(waveform,
lengths)``); these subclass :class:`CallTransform` and define ``forward`` with that
signature, as any ``nn.Module`` does.

Example:
    >>> import torch
    >>> class Gain(CallTransform):
    ...     def forward(self, waveform, factor=2.0):
    ...         return waveform * factor
    >>> Gain()(torch.ones(2), 3.0)
    tensor([3., 3.])
"""

from __future__ import annotations

from trivium.core.transform import RandomModule

__all__ = ["CallTransform"]


class CallTransform(RandomModule):
    """A transform whose ``forward`` takes data and options (torchaudio's call).

    A :class:`trivium.core.RandomModule`: ``generator`` (optional) is the source of
    randomness, drawn through ``active_generator()`` by the seeding rule of
    :mod:`trivium.core.seeding` as :class:`trivium.core.Transform` draws
    (reproducible with a seeded generator, different per DataLoader worker, epoch
    and sample); ``repr`` lists the public settings.

    Example:
        >>> import torch
        >>> class RandomGain(CallTransform):
        ...     def forward(self, waveform, max_gain=2.0):
        ...         u = torch.rand((), generator=self.active_generator())
        ...         return waveform * (1.0 + (max_gain - 1.0) * u)
        >>> gain = RandomGain(torch.Generator().manual_seed(0))
        >>> gain
        RandomGain(generator=torch.Generator(device='cpu'))
        >>> bool((1.0 <= gain(torch.ones(4), max_gain=3.0)).all())
        True
    """
