"""Stateless audio functions, named and behaving like ``torchaudio.functional``.

Example:
    >>> import torch
    >>> from trivium.audio.functional import gain, resample, spectrogram
    >>> waveform = gain(resample(torch.randn(1, 16000), 16000, 8000), -6.0)
    >>> window = torch.hann_window(256)
    >>> spectrogram(waveform, 0, window, 256, 128, 256, 2.0, False).shape
    torch.Size([1, 129, 63])
"""

from trivium.audio.functional.alignment import TokenSpan, forced_align, merge_tokens
from trivium.audio.functional.beamforming import (
    apply_beamforming,
    mvdr_weights_rtf,
    mvdr_weights_souden,
    psd,
    rtf_evd,
    rtf_power,
)
from trivium.audio.functional.convolution import convolve, fftconvolve
from trivium.audio.functional.distances import edit_distance, frechet_distance
from trivium.audio.functional.effects import add_noise, dcshift, fade, gain, overdrive
from trivium.audio.functional.filtering import (
    compute_deltas,
    contrast,
    deemphasis,
    preemphasis,
    sliding_window_cmn,
)
from trivium.audio.functional.iir import (
    allpass_biquad,
    band_biquad,
    bandpass_biquad,
    bandreject_biquad,
    bass_biquad,
    biquad,
    deemph_biquad,
    equalizer_biquad,
    filtfilt,
    highpass_biquad,
    lfilter,
    lowpass_biquad,
    riaa_biquad,
    treble_biquad,
)
from trivium.audio.functional.loudness import loudness
from trivium.audio.functional.masking import mask_along_axis, mask_along_axis_iid
from trivium.audio.functional.mulaw import mu_law_decoding, mu_law_encoding
from trivium.audio.functional.pitch import detect_pitch_frequency
from trivium.audio.functional.resampling import pitch_shift, resample, sinc_resample_kernel, speed
from trivium.audio.functional.rnnt import rnnt_loss
from trivium.audio.functional.sox_effects import dither, flanger, phaser
from trivium.audio.functional.spectral import (
    DB_to_amplitude,
    amplitude_to_DB,
    create_dct,
    griffinlim,
    inverse_spectrogram,
    linear_fbanks,
    melscale_fbanks,
    phase_vocoder,
    spectral_centroid,
    spectrogram,
)
from trivium.audio.functional.vad import vad

__all__ = [
    "DB_to_amplitude",
    "TokenSpan",
    "add_noise",
    "allpass_biquad",
    "amplitude_to_DB",
    "apply_beamforming",
    "band_biquad",
    "bandpass_biquad",
    "bandreject_biquad",
    "bass_biquad",
    "biquad",
    "compute_deltas",
    "contrast",
    "convolve",
    "create_dct",
    "dcshift",
    "deemph_biquad",
    "deemphasis",
    "detect_pitch_frequency",
    "dither",
    "edit_distance",
    "equalizer_biquad",
    "fade",
    "fftconvolve",
    "filtfilt",
    "flanger",
    "forced_align",
    "frechet_distance",
    "gain",
    "griffinlim",
    "highpass_biquad",
    "inverse_spectrogram",
    "lfilter",
    "linear_fbanks",
    "loudness",
    "lowpass_biquad",
    "mask_along_axis",
    "mask_along_axis_iid",
    "melscale_fbanks",
    "merge_tokens",
    "mu_law_decoding",
    "mu_law_encoding",
    "mvdr_weights_rtf",
    "mvdr_weights_souden",
    "overdrive",
    "phase_vocoder",
    "phaser",
    "pitch_shift",
    "preemphasis",
    "psd",
    "resample",
    "riaa_biquad",
    "rnnt_loss",
    "rtf_evd",
    "rtf_power",
    "sinc_resample_kernel",
    "sliding_window_cmn",
    "spectral_centroid",
    "spectrogram",
    "speed",
    "treble_biquad",
    "vad",
]
