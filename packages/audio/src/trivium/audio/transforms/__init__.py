r"""Audio transforms as ``nn.Module``s (torchaudio's names and calls).

Those called with a sample (``t(waveform)``) are :class:`trivium.core.Transform`\ s;
those whose call takes options beside the data (``AddNoise``, ``FrequencyMasking``,
``TimeMasking``, ``InverseSpectrogram``, ``TimeStretch``, ``SpeedPerturbation``) are
:class:`~trivium.audio.transforms.base.CallTransform`\ s.

They take any leading batch shape, compute on the input's device (buffers follow
``.to()``), are differentiable where the math allows and run under ``torch.compile``.
Random ones take a ``generator``.

Example:
    >>> import torch
    >>> import trivium.audio.transforms as T
    >>> pipeline = torch.nn.Sequential(T.Resample(48000, 16000), T.MelSpectrogram(n_mels=64))
    >>> pipeline(torch.zeros(2, 48000)).shape
    torch.Size([2, 64, 81])
"""

from trivium.audio.transforms.base import CallTransform
from trivium.audio.transforms.effects import AddNoise, Fade, Vad, Vol
from trivium.audio.transforms.filtering import (
    MVDR,
    PSD,
    RTFMVDR,
    ComputeDeltas,
    Convolve,
    Deemphasis,
    FFTConvolve,
    Loudness,
    Preemphasis,
    SlidingWindowCmn,
    SoudenMVDR,
    SpectralCentroid,
)
from trivium.audio.transforms.masking import FrequencyMasking, SpecAugment, TimeMasking
from trivium.audio.transforms.mulaw import MuLawDecoding, MuLawEncoding
from trivium.audio.transforms.resample import PitchShift, Resample, Speed, SpeedPerturbation
from trivium.audio.transforms.rnnt import RNNTLoss
from trivium.audio.transforms.spectral import (
    LFCC,
    MFCC,
    AmplitudeToDB,
    GriffinLim,
    InverseMelScale,
    InverseSpectrogram,
    MelScale,
    MelSpectrogram,
    Spectrogram,
    TimeStretch,
)

__all__ = [
    "LFCC",
    "MFCC",
    "MVDR",
    "PSD",
    "RTFMVDR",
    "AddNoise",
    "AmplitudeToDB",
    "CallTransform",
    "ComputeDeltas",
    "Convolve",
    "Deemphasis",
    "FFTConvolve",
    "Fade",
    "FrequencyMasking",
    "GriffinLim",
    "InverseMelScale",
    "InverseSpectrogram",
    "Loudness",
    "MelScale",
    "MelSpectrogram",
    "MuLawDecoding",
    "MuLawEncoding",
    "PitchShift",
    "Preemphasis",
    "RNNTLoss",
    "Resample",
    "SlidingWindowCmn",
    "SoudenMVDR",
    "SpecAugment",
    "SpectralCentroid",
    "Spectrogram",
    "Speed",
    "SpeedPerturbation",
    "TimeMasking",
    "TimeStretch",
    "Vad",
    "Vol",
]
