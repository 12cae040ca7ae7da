"""Inference and training pipelines: ASR (Wav2Letter), vocoder (WaveRNN), separation (Conv-TasNet).

Each pipeline module has a configuration dataclass, ``train(config)``,
``evaluate(pipeline)`` and ``from_checkpoint(path)``; the pipelines themselves
offer ``transcribe(waveform, sample_rate)``, ``vocode(mel)`` and ``separate(mixture)``.
The modules are imported here as ``asr``, ``vocoder`` and ``separation``.

Example:
    >>> from trivium.audio.pipelines import CharTokenizer, ctc_greedy_decode
    >>> import torch
    >>> CharTokenizer().decode(ctc_greedy_decode(torch.eye(29)[[9, 9, 0, 10]]))
    'hi'
"""

from trivium.audio.pipelines import asr, separation, vocoder
from trivium.audio.pipelines.asr import ASRConfig, ASRPipeline
from trivium.audio.pipelines.ctc_decoder import ctc_beam_search, ctc_greedy_decode
from trivium.audio.pipelines.separation import SeparationConfig, SeparationPipeline
from trivium.audio.pipelines.tokenizer import CharTokenizer
from trivium.audio.pipelines.vocoder import VocoderConfig, VocoderPipeline

__all__ = [
    "ASRConfig",
    "ASRPipeline",
    "CharTokenizer",
    "SeparationConfig",
    "SeparationPipeline",
    "VocoderConfig",
    "VocoderPipeline",
    "asr",
    "ctc_beam_search",
    "ctc_greedy_decode",
    "separation",
    "vocoder",
]
