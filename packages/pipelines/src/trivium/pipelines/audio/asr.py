"""Speech recognition: Wav2Letter + a character tokenizer + CTC, trained on LibriSpeech-layout data.

:func:`train` fits a :class:`~trivium.audio.models.Wav2Letter` with the CTC loss on
``root/LibriSpeech/<train_url>``, :func:`evaluate` reports WER/CER on
``<test_url>``, and :func:`from_checkpoint` returns an :class:`ASRPipeline` whose
:meth:`~ASRPipeline.transcribe` turns a waveform into text (greedy CTC, or a
character beam search).

Example:
    >>> import torch
    >>> pipeline = ASRPipeline(ASRConfig(num_features=13)).eval()
    >>> len(pipeline.tokenizer), pipeline.model.num_classes
    (29, 29)
    >>> isinstance(pipeline.transcribe(torch.zeros(1, 16000), 16000), str)
    True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.audio.datasets import LIBRISPEECH
from trivium.audio.datasets.collate import pad_sequence_last
from trivium.audio.functional import resample
from trivium.audio.metrics import char_error_rate, word_error_rate
from trivium.audio.models import Wav2Letter
from trivium.audio.transforms import MFCC, MelSpectrogram
from trivium.pipelines.audio.augment import augment_spectrogram
from trivium.pipelines.audio.checkpoints import pipeline_from_checkpoint
from trivium.pipelines.audio.common import (
    RunConfig,
    eval_mode,
    evaluation_items,
    load_items,
    train_pipeline,
)
from trivium.pipelines.audio.ctc_decoder import ctc_beam_search, ctc_greedy_decode
from trivium.pipelines.audio.tokenizer import DEFAULT_ALPHABET, CharTokenizer

__all__ = [
    "ASRConfig",
    "ASRPipeline",
    "class_log_probs",
    "evaluate",
    "from_checkpoint",
    "kaiming_init_",
    "train",
]


@dataclass
class ASRConfig(RunConfig):
    """Settings of an ASR training run (stored in its checkpoints).

    ``root`` holds ``LibriSpeech/<train_url>`` and ``LibriSpeech/<test_url>``;
    ``input_type`` is Wav2Letter's (``"mfcc"``: ``num_features`` MFCCs of as many
    mel bands; ``"power_spectrum"``: ``num_features`` log-mel bands; ``"waveform"``).
    ``freq_warp`` and ``time_stretch`` augment the training utterances' mel bands
    each time they are drawn (:func:`~trivium.pipelines.audio.augment.augment_spectrogram`:
    a random speaker warp within ``1 ± freq_warp``, a random tempo within
    ``1 ± time_stretch``); not for waveform input. ``hidden_channels`` and
    ``head_channels`` are Wav2Letter's widths (defaults: torchaudio's model). The run
    settings (device, amp, checkpoint_every, eval_every, seed, progress) are
    :class:`~trivium.pipelines.audio.common.RunConfig`'s.

    Example:
        >>> ASRConfig(root="data").num_steps
        3000
    """

    root: str = "data"
    out_dir: str = "runs/wav2letter"
    train_url: str = "train-clean-100"
    test_url: str = "test-clean"
    sample_rate: int = 16000
    input_type: str = "mfcc"
    num_features: int = 40
    freq_warp: float = 0.0
    time_stretch: float = 0.0
    hidden_channels: int = 250
    head_channels: int = 2000
    alphabet: str = DEFAULT_ALPHABET
    batch_size: int = 16
    num_steps: int = 3000
    lr: float = 3e-4
    weight_decay: float = 0.0
    grad_clip_norm: float | None = 5.0
    max_eval_items: int | None = None
    skip_final_relu: bool = True
    kaiming_init: bool = True


def class_log_probs(model: Wav2Letter, x: Tensor, skip_final_relu: bool = True) -> Tensor:
    """Wav2Letter's log-probabilities ``[batch, classes, frames]``, by default minus its last ReLU.

    Wav2Letter (as torchaudio's) applies a ReLU to the class scores before the
    softmax. Under CTC the blank wins early, the other classes' scores turn negative
    and the ReLU then stops their gradients for good: training stalls with every
    frame blank. Taking the scores before that ReLU keeps the same layers and
    weights (state dicts still load either way) and trains normally;
    ``skip_final_relu=False`` gives exactly ``model(x)``.

    Example:
        >>> import torch
        >>> model = Wav2Letter(5, "mfcc", 3)
        >>> x = torch.randn(1, 3, 20)
        >>> torch.equal(class_log_probs(model, x, skip_final_relu=False), model(x))
        True
    """
    if not skip_final_relu:
        return model(x)
    layers = model.acoustic_model
    if model.input_type == "waveform":
        x, layers = layers[0](x), layers[1]
    return F.log_softmax(layers[:-1](x), dim=1)


def kaiming_init_(model: nn.Module) -> nn.Module:
    """He-normal weights (ReLU gain, fan-in) and zero biases for every convolution, in place.

    PyTorch's default convolution initialisation shrinks the activations about
    2.5x per layer through Wav2Letter's 11 ReLU layers (no normalisation), so the
    class scores start near constant and CTC training stalls on all-blank output;
    He initialisation keeps their scale.

    Example:
        >>> import torch
        >>> model = kaiming_init_(Wav2Letter(5, "mfcc", 3))
        >>> float(model.acoustic_model[0].bias.detach().abs().sum())
        0.0
    """
    for module in model.modules():
        if isinstance(module, nn.Conv1d):
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    return model


class ASRPipeline(nn.Module):
    """Features, Wav2Letter and CTC decoding: ``transcribe(waveform, sample_rate) -> str``.

    Example:
        >>> import torch
        >>> pipeline = ASRPipeline(ASRConfig(num_features=13)).eval()
        >>> isinstance(pipeline.transcribe(torch.zeros(1, 8000), 16000), str)
        True
    """

    def __init__(self, config: ASRConfig, model: Wav2Letter | None = None) -> None:
        super().__init__()
        self.config = config
        self.tokenizer = CharTokenizer(config.alphabet)
        self.model = model or Wav2Letter(
            num_classes=len(self.tokenizer),
            input_type=config.input_type,
            num_features=config.num_features if config.input_type != "waveform" else 1,
            hidden_channels=config.hidden_channels,
            head_channels=config.head_channels,
        )
        melkwargs = {"n_fft": 400, "hop_length": 160, "n_mels": max(40, config.num_features)}
        if config.input_type == "mfcc":
            self.features: nn.Module | None = MFCC(
                config.sample_rate, n_mfcc=config.num_features, melkwargs=melkwargs
            )
        elif config.input_type == "power_spectrum":
            melkwargs["n_mels"] = config.num_features
            self.features = MelSpectrogram(config.sample_rate, **melkwargs)
        else:
            self.features = None

    def featurize(self, waveform: Tensor) -> Tensor:
        """``[1, time]`` (or ``[time]``) at ``config.sample_rate`` to ``[num_features, frames]``.

        Features are normalised per utterance (zero mean, unit variance per channel).
        """
        if self.features is None:
            return waveform.reshape(-1, waveform.shape[-1]).mean(0, keepdim=True)
        return self.features_from_mel(self.mel_bands(waveform))

    def mel_bands(self, waveform: Tensor) -> Tensor:
        """The log-mel bands ``[n_mels, frames]`` the features are made from.

        Decibels for MFCC input (as :class:`~trivium.audio.transforms.MFCC`), natural
        log for ``power_spectrum``; :meth:`features_from_mel` finishes them.

        Example:
            >>> import torch
            >>> pipeline = ASRPipeline(ASRConfig(num_features=13))
            >>> pipeline.mel_bands(torch.zeros(1, 1600)).shape  # 40 bands, 10 ms hop
            torch.Size([40, 11])
        """
        if self.features is None:
            raise ValueError("waveform input has no mel bands")
        waveform = waveform.reshape(-1, waveform.shape[-1]).mean(0)
        if isinstance(self.features, MFCC):
            mel = self.features.MelSpectrogram(waveform)
            return self.features.amplitude_to_DB.transform(mel, {})
        return torch.log(self.features(waveform) + 1e-6)

    def features_from_mel(self, mel: Tensor) -> Tensor:
        """Model input from :meth:`mel_bands`: MFCCs (a DCT) when asked, normalised per channel.

        Example:
            >>> import torch
            >>> pipeline = ASRPipeline(ASRConfig(num_features=13))
            >>> pipeline.features_from_mel(torch.randn(40, 11)).shape
            torch.Size([13, 11])
        """
        if isinstance(self.features, MFCC):
            mel = torch.matmul(mel.transpose(-1, -2), self.features.dct_mat).transpose(-1, -2)
        mean, std = mel.mean(-1, keepdim=True), mel.std(-1, keepdim=True)
        return (mel - mean) / (std + 1e-5)

    def _prepare(self, waveform: Tensor, sample_rate: int) -> Tensor:
        if not isinstance(waveform, Tensor) or not waveform.is_floating_point():
            raise TypeError("waveform must be a floating point tensor [channels, time]")
        if waveform.shape[-1] == 0:
            raise ValueError("waveform is empty")
        if sample_rate != self.config.sample_rate:
            waveform = resample(waveform, sample_rate, self.config.sample_rate)
        return waveform

    @torch.no_grad()
    def transcribe(
        self, waveform: Tensor, sample_rate: int, decoder: str = "greedy", beam_width: int = 10
    ) -> str:
        """Text of one utterance ``[channels, time]`` (channels are averaged).

        ``decoder`` is ``"greedy"`` or ``"beam"`` (character prefix beam search).
        """
        waveform = self._prepare(waveform, sample_rate)
        # Training moves only the model to its device: featurize where the features live.
        buffer = next(self.features.buffers(), None) if self.features is not None else None
        device = next(self.model.parameters()).device
        feats = self.featurize(waveform.to(device if buffer is None else buffer.device))
        feats = feats.to(device)
        scores = class_log_probs(self.model, feats.unsqueeze(0), self.config.skip_final_relu)
        log_probs = scores[0].transpose(0, 1)  # [frames, classes]
        if decoder == "greedy":
            ids = ctc_greedy_decode(log_probs, self.tokenizer.blank)
        elif decoder == "beam":
            ids = ctc_beam_search(log_probs, beam_width, self.tokenizer.blank)
        else:
            raise ValueError(f"decoder must be 'greedy' or 'beam', got {decoder!r}")
        return self.tokenizer.decode(ids)


def _load_split(
    pipeline: ASRPipeline, root: str, url: str, limit: int | None = None, mel: bool = False
) -> list:
    """``(waveform, features, transcript)`` per utterance; ``mel``: mel bands, not features."""
    dataset = LIBRISPEECH(root, url=url)
    featurize = pipeline.mel_bands if mel else pipeline.featurize

    def item(i: int) -> tuple[Tensor, Tensor, str]:
        waveform, sample_rate, transcript, *_ = dataset[i]
        waveform = pipeline._prepare(waveform, sample_rate)
        return waveform, featurize(waveform), transcript

    return load_items(
        dataset,
        limit,
        item,
        f"no utterances in {Path(root) / 'LibriSpeech' / url}",
        desc=f"load {url}",
        show_progress=pipeline.config.progress,
    )


def _ctc_loss(
    model: Wav2Letter, batch: tuple[Tensor, Tensor, Tensor, Tensor], skip_final_relu: bool = True
) -> Tensor:
    feats, feat_lengths, targets, target_lengths = batch
    scores = class_log_probs(model, feats, skip_final_relu)
    log_probs = scores.permute(2, 0, 1).float()  # [frames, batch, classes]
    out_lengths = model.output_lengths(feat_lengths).clamp(max=log_probs.shape[0])
    return F.ctc_loss(log_probs, targets, out_lengths, target_lengths, blank=0, zero_infinity=True)


def _augmented(pipeline: ASRPipeline, items: list, generator: torch.Generator) -> list:
    """``items`` with mel bands turned into features through a random augmentation each."""
    config = pipeline.config
    return [
        (
            waveform,
            pipeline.features_from_mel(
                augment_spectrogram(mel, generator, config.freq_warp, config.time_stretch)
            ),
            transcript,
        )
        for waveform, mel, transcript in items
    ]


def _batch(
    pipeline: ASRPipeline, items: list, indices: list[int], generator: torch.Generator
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The training batch of ``items[indices]``, augmented when the config asks."""
    chosen = [items[i] for i in indices]
    if pipeline.config.freq_warp or pipeline.config.time_stretch:
        chosen = _augmented(pipeline, chosen, generator)
    return _collate(chosen, pipeline.tokenizer)


def _collate(items: list, tokenizer: CharTokenizer) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    feats = [f for _, f, _ in items]
    encoded = [torch.tensor(tokenizer.encode(t), dtype=torch.long) for _, _, t in items]
    return (
        pad_sequence_last(feats),
        torch.tensor([f.shape[-1] for f in feats]),
        torch.cat(encoded),
        torch.tensor([len(e) for e in encoded]),
    )


def evaluate(
    pipeline: ASRPipeline,
    items: list | None = None,
    root: str | None = None,
    url: str | None = None,
    decoder: str = "greedy",
) -> dict[str, float]:
    """WER and CER of ``pipeline`` on ``root/LibriSpeech/<url>`` (default: the test split).

    ``items`` (``(waveform, features, transcript)`` triples) skips loading.
    """
    config = pipeline.config
    split = url or config.test_url
    items = evaluation_items(
        pipeline,
        items,
        lambda: _load_split(pipeline, root or config.root, split, config.max_eval_items),
    )
    hypotheses, references = [], []
    with eval_mode(pipeline):
        for waveform, _, transcript in items:
            hypotheses.append(pipeline.transcribe(waveform, config.sample_rate, decoder=decoder))
            references.append(pipeline.tokenizer.normalize(transcript))
    return {
        "wer": word_error_rate(hypotheses, references),
        "cer": char_error_rate(hypotheses, references),
    }


def train(config: ASRConfig, resume: bool = True, until: int | None = None) -> ASRPipeline:
    """Train Wav2Letter with CTC as ``config`` says; resumes from ``out_dir`` when it can.

    ``until`` stops after that many steps (see
    :func:`~trivium.pipelines.audio.common.train_pipeline`).

    Saves ``checkpoint.pt`` every ``checkpoint_every`` steps and at the end, with
    ``metrics.csv``/``metrics.json``/``metrics.png`` beside it. Returns the trained
    pipeline (in eval mode).
    """
    augment = bool(config.freq_warp or config.time_stretch)
    if augment and config.input_type == "waveform":
        raise ValueError("freq_warp and time_stretch augment mel bands: not for waveform input")

    def build() -> ASRPipeline:
        pipeline = ASRPipeline(config)
        if config.kaiming_init:
            kaiming_init_(pipeline.model)
        return pipeline

    def loss_fn(model: Wav2Letter, batch: tuple[Tensor, Tensor, Tensor, Tensor]) -> Tensor:
        return _ctc_loss(model, batch, config.skip_final_relu)

    return train_pipeline(
        config,
        "asr",
        build=build,
        load_train=lambda p: _load_split(p, config.root, config.train_url, mel=augment),
        load_test=lambda p: _load_split(p, config.root, config.test_url, config.max_eval_items),
        make_batch=_batch,
        loss_fn=loss_fn,
        evaluate=evaluate,
        resume=resume,
        until=until,
        weight_decay=config.weight_decay,
        warmup_fraction=0.1,
    )


def from_checkpoint(
    path: str | os.PathLike[str], device: str | torch.device = "cpu"
) -> ASRPipeline:
    """The :class:`ASRPipeline` in a checkpoint (a file, or a run's ``out_dir``), in eval mode.

    Example:
        >>> import tempfile
        >>> from trivium.pipelines.audio.checkpoints import save_pipeline
        >>> pipeline = ASRPipeline(ASRConfig(num_features=13))
        >>> path = save_pipeline(pipeline, tempfile.mkdtemp() + "/c.pt")
        >>> from_checkpoint(path).config.num_features
        13
    """
    return pipeline_from_checkpoint(path, ASRPipeline, ASRConfig, device)
