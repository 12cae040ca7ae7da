"""Stateless audio functions, named and behaving like ``torchaudio.functional``.

Example:
    >>> import torch
    >>> from trivium.audio.functional import mu_law_decoding, mu_law_encoding
    >>> codes = mu_law_encoding(torch.tensor([-1.0, 0.0, 1.0]), 256)
    >>> codes
    tensor([  0, 128, 255])
    >>> mu_law_decoding(codes, 256).abs().max() <= 1
    tensor(True)
"""

from trivium.audio.functional.effects import add_noise, fade, gain
from trivium.audio.functional.masking import mask_along_axis, mask_along_axis_iid
from trivium.audio.functional.mulaw import mu_law_decoding, mu_law_encoding
from trivium.audio.functional.resampling import resample, sinc_resample_kernel, speed
from trivium.audio.functional.spectral import (
    DB_to_amplitude,
    amplitude_to_DB,
    create_dct,
    griffinlim,
    inverse_spectrogram,
    melscale_fbanks,
    phase_vocoder,
    spectrogram,
)

__all__ = [
    "DB_to_amplitude",
    "add_noise",
    "amplitude_to_DB",
    "create_dct",
    "fade",
    "gain",
    "griffinlim",
    "inverse_spectrogram",
    "mask_along_axis",
    "mask_along_axis_iid",
    "melscale_fbanks",
    "mu_law_decoding",
    "mu_law_encoding",
    "phase_vocoder",
    "resample",
    "sinc_resample_kernel",
    "spectrogram",
    "speed",
]
