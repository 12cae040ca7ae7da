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

import torch
from torch import nn

from trivium.core.seeding import keep_in_worker, transform_generator

__all__ = ["CallTransform"]

_REPR_SKIP = frozenset({"training", "generator"})


class CallTransform(nn.Module):
    """An ``nn.Module`` transform whose ``forward`` takes data and options (torchaudio's call).

    ``generator`` (optional) is the source of randomness; draw through
    :meth:`active_generator`, which follows the seeding rule of
    :mod:`trivium.core.seeding` as :class:`trivium.core.Transform` does (reproducible
    with a seeded generator, different per DataLoader worker, epoch and sample).
    ``repr`` lists the public settings.

    Example:
        >>> import torch
        >>> class Jitter(CallTransform):
        ...     def __init__(self, amount, generator=None):
        ...         super().__init__(generator)
        ...         self.amount = amount
        ...     def forward(self, waveform):
        ...         noise = torch.rand(waveform.shape, generator=self.active_generator())
        ...         return waveform + self.amount * noise
        >>> Jitter(0.1, generator=torch.Generator().manual_seed(0))
        Jitter(amount=0.1, generator=torch.Generator(device='cpu'))
    """

    def __init__(self, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(
                f"{type(self).__name__}: generator must be a torch.Generator or None, "
                f"got {type(generator).__name__}"
            )
        self.generator = generator
        keep_in_worker(generator)

    def active_generator(self) -> torch.Generator | None:
        """The generator to draw from now (:func:`trivium.core.seeding.transform_generator`).

        Example:
            >>> import torch
            >>> g = torch.Generator()
            >>> CallTransform(g).active_generator() is g  # outside a sample scope and worker
            True
        """
        if torch.compiler.is_compiling():  # compiled code cannot trace the lookup
            return self.generator
        return transform_generator(self.generator)

    def extra_repr(self) -> str:
        """The public settings, and the generator's device when there is one."""
        shown = [
            f"{name}={value!r}"
            for name, value in vars(self).items()
            if not (name.startswith("_") or name in _REPR_SKIP or callable(value))
        ]
        if self.generator is not None:
            shown.append(f"generator=torch.Generator(device={str(self.generator.device)!r})")
        return ", ".join(shown)
