"""Inference and training pipelines: ASR (Wav2Letter), vocoder (WaveRNN), separation (Conv-TasNet).

Each pipeline module has a configuration dataclass, ``train(config)``,
``evaluate(pipeline)`` and ``from_checkpoint(path)``; the pipelines themselves
offer ``transcribe(waveform, sample_rate)``, ``vocode(mel)`` and ``separate(mixture)``.
The modules are imported here as ``asr``, ``vocoder`` and ``separation``.

Example:
    >>> from trivium.pipelines.audio import CharTokenizer, ctc_greedy_decode
    >>> import torch
    >>> CharTokenizer().decode(ctc_greedy_decode(torch.eye(29)[[9, 9, 0, 10]]))
    'hi'
"""

from trivium.pipelines.audio import asr, separation, vocoder
from trivium.pipelines.audio.asr import ASRConfig, ASRPipeline
from trivium.pipelines.audio.ctc_decoder import ctc_beam_search, ctc_greedy_decode
from trivium.pipelines.audio.separation import SeparationConfig, SeparationPipeline
from trivium.pipelines.audio.tokenizer import CharTokenizer
from trivium.pipelines.audio.vocoder import VocoderConfig, VocoderPipeline

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
