"""Speech separation: Conv-TasNet trained with permutation-invariant SI-SNR on LibriMix data.

:func:`train` fits a :class:`~trivium.audio.models.ConvTasNet` on random crops of
``root/Libri2Mix/wav16k/min/<train_subset>``; :func:`evaluate` reports SI-SNR and
SI-SNRi (best permutation) on ``<test_subset>``; :class:`SeparationPipeline`'s
``separate(mixture) -> sources``.

Example:
    >>> import torch
    >>> config = SeparationConfig(enc_num_feats=16, msk_num_feats=8, msk_num_hidden_feats=16,
    ...                           msk_num_layers=2, msk_num_stacks=1)
    >>> SeparationPipeline(config).separate(torch.randn(1, 4000)).shape
    torch.Size([2, 4000])
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from trivium.audio.datasets import LibriMix
from trivium.audio.metrics import pit_loss, si_snr
from trivium.audio.models import ConvTasNet
from trivium.pipelines.audio.checkpoints import pipeline_from_checkpoint
from trivium.pipelines.audio.common import (
    RunConfig,
    eval_mode,
    evaluation_items,
    load_items,
    mean_metrics,
    train_pipeline,
)

__all__ = [
    "SeparationConfig",
    "SeparationPipeline",
    "dynamic_mixtures",
    "evaluate",
    "from_checkpoint",
    "mixture_speakers",
    "train",
]


@dataclass
class SeparationConfig(RunConfig):
    """Settings of a separation training run (stored in its checkpoints).

    The model sizes default to a reduced Conv-TasNet that trains on a CPU;
    :func:`~trivium.audio.models.conv_tasnet_base` is ``enc_num_feats=512,
    msk_num_feats=128, msk_num_hidden_feats=512, msk_num_layers=8, msk_num_stacks=3``.
    ``dynamic_mixing`` trains on mixtures made on the fly from the training sources
    (see :func:`dynamic_mixtures`) instead of the stored ones. The run settings
    (device, amp, checkpoint_every, eval_every, seed, progress) are
    :class:`~trivium.pipelines.audio.common.RunConfig`'s.

    Example:
        >>> SeparationConfig().num_sources
        2
    """

    root: str = "data"
    out_dir: str = "runs/convtasnet"
    train_subset: str = "train-100"
    test_subset: str = "test"
    sample_rate: int = 16000
    num_sources: int = 2
    enc_kernel_size: int = 16
    enc_num_feats: int = 128
    msk_kernel_size: int = 3
    msk_num_feats: int = 64
    msk_num_hidden_feats: int = 128
    msk_num_layers: int = 6
    msk_num_stacks: int = 2
    msk_activate: str = "sigmoid"
    segment_seconds: float = 1.0
    dynamic_mixing: bool = False
    batch_size: int = 8
    num_steps: int = 2000
    lr: float = 2e-3
    grad_clip_norm: float | None = 5.0
    max_eval_items: int | None = None


class SeparationPipeline(nn.Module):
    """A Conv-TasNet behind ``separate(mixture) -> sources``.

    Example:
        >>> config = SeparationConfig(msk_num_layers=1, msk_num_stacks=1)
        >>> SeparationPipeline(config).model.num_sources
        2
    """

    def __init__(self, config: SeparationConfig) -> None:
        super().__init__()
        self.config = config
        self.model = ConvTasNet(
            num_sources=config.num_sources,
            enc_kernel_size=config.enc_kernel_size,
            enc_num_feats=config.enc_num_feats,
            msk_kernel_size=config.msk_kernel_size,
            msk_num_feats=config.msk_num_feats,
            msk_num_hidden_feats=config.msk_num_hidden_feats,
            msk_num_layers=config.msk_num_layers,
            msk_num_stacks=config.msk_num_stacks,
            msk_activate=config.msk_activate,
        )

    @torch.no_grad()
    def separate(self, mixture: Tensor) -> Tensor:
        """Sources ``[num_sources, time]`` of a mono mixture ``[1, time]`` or ``[time]``.

        The mixture must be at ``config.sample_rate``; the sources come in no
        particular order.
        """
        if not isinstance(mixture, Tensor) or not mixture.is_floating_point():
            raise TypeError("mixture must be a floating point tensor [1, time] or [time]")
        if (mixture.dim() == 2 and mixture.shape[0] != 1) or mixture.dim() > 2:
            raise ValueError(
                f"mixture must be mono [1, time] or [time], got {tuple(mixture.shape)}"
            )
        if mixture.shape[-1] == 0:
            raise ValueError("mixture is empty")
        device = next(self.model.parameters()).device
        return self.model(mixture.reshape(1, 1, -1).to(device))[0]


def _load_subset(config: SeparationConfig, subset: str, limit: int | None) -> list:
    """``(mixture [time], sources [num_sources, time], speakers)`` per mixture of ``subset``."""
    dataset = LibriMix(
        config.root, subset=subset, num_speakers=config.num_sources, sample_rate=config.sample_rate
    )

    def item(i: int) -> tuple:
        _, mixture, sources = dataset[i]
        return (
            mixture[0],
            torch.cat(sources),
            mixture_speakers(dataset.files[i], config.num_sources),
        )

    return load_items(
        dataset, limit, item, f"no mixtures in LibriMix subset {subset!r} under {config.root}"
    )


def mixture_speakers(name: str, num_sources: int) -> tuple[str, ...] | None:
    """Speaker of each source in a LibriMix file name, or ``None`` if the name does not say.

    LibriMix names a mixture after its utterances, ``<utt1>_<utt2>...``, each a
    LibriSpeech id ``<speaker>-<chapter>-<utterance>``.

    Example:
        >>> mixture_speakers("103-1240-0001_1034-121119-0002.wav", 2)
        ('103', '1034')
        >>> mixture_speakers("a.wav", 2) is None
        True
    """
    stem = name.rsplit(".", 1)[0]
    ids = [part for part in stem.split("_") if part.count("-") == 2]
    if len(ids) < num_sources:
        return None
    return tuple(utterance.split("-")[0] for utterance in ids[:num_sources])


def _crop(signal: Tensor, length: int, generator: torch.Generator) -> Tensor:
    """A random ``length``-sample window of ``[..., time]``, zero-padded at the end if short."""
    if signal.shape[-1] < length:
        return nn.functional.pad(signal, (0, length - signal.shape[-1]))
    start = int(torch.randint(0, signal.shape[-1] - length + 1, (1,), generator=generator))
    return signal[..., start : start + length]


def _crops(items: list, indices: list[int], length: int, generator: torch.Generator):
    """The stored mixtures ``indices``, one random window each: ``([B, 1, L], [B, S, L])``."""
    mixtures, sources = [], []
    for i in indices:
        mixture, srcs, _ = items[i]
        both = _crop(torch.cat([mixture[None], srcs]), length, generator)
        mixtures.append(both[0])
        sources.append(both[1:])
    return torch.stack(mixtures).unsqueeze(1), torch.stack(sources)


def dynamic_mixtures(
    items: list,
    indices: list[int],
    length: int,
    generator: torch.Generator,
    gain_db: float = 5.0,
) -> tuple[Tensor, Tensor]:
    """Mixtures made on the fly: ``([B, 1, length], [B, num_sources, length])``.

    Dynamic mixing (as in SpeechBrain's and Asteroid's LibriMix recipes): source 1 of
    mixture ``b`` is source 1 of ``items[indices[b]]`` (so an epoch still visits
    every mixture); source ``k > 1`` is source ``k`` of a random item, by a speaker
    not yet in the mixture when the file names say who speaks. Each is cut at its
    own random offset and scaled to the loudness (RMS) of the first window times a
    random gain within ``±gain_db / 2`` dB, so two sources differ by at most
    ``gain_db``. New pairs and levels every step make far more distinct training
    mixtures than the stored ones. ``items`` are ``(mixture, sources, speakers)``
    triples; ``generator`` draws everything, so a step is reproducible.

    Example:
        >>> import torch
        >>> items = [(torch.zeros(50), torch.randn(2, 50), (str(i), str(i + 9))) for i in range(4)]
        >>> mix, src = dynamic_mixtures(items, [0, 3], 40, torch.Generator().manual_seed(0))
        >>> mix.shape, src.shape, torch.allclose(mix[:, 0], src.sum(1))
        (torch.Size([2, 1, 40]), torch.Size([2, 2, 40]), True)
    """
    num_sources = items[0][1].shape[0]
    mixtures, sources = [], []
    for first in indices:
        chosen = [first]
        for _ in range(1, num_sources):
            chosen.append(_other_speaker(items, chosen, generator))
        signals = [_crop(items[i][1][k], length, generator) for k, i in enumerate(chosen)]
        reference = signals[0].pow(2).mean().clamp_min(1e-10).sqrt()
        levels = (torch.rand(num_sources, generator=generator) - 0.5) * gain_db
        scaled = [
            s * reference / s.pow(2).mean().clamp_min(1e-10).sqrt() * 10 ** (float(g) / 20)
            for s, g in zip(signals, levels, strict=True)
        ]
        stacked = torch.stack(scaled)
        sources.append(stacked)
        mixtures.append(stacked.sum(0))
    return torch.stack(mixtures).unsqueeze(1), torch.stack(sources)


def _other_speaker(items: list, chosen: list[int], generator: torch.Generator) -> int:
    """A random item whose next source's speaker is not among the chosen sources' speakers."""
    k = len(chosen)
    taken = {items[i][2][j] for j, i in enumerate(chosen) if items[i][2] is not None}
    allowed = [i for i, item in enumerate(items) if item[2] is None or item[2][k] not in taken]
    pool = allowed or range(len(items))  # one speaker only: mix it with itself
    return pool[int(torch.randint(0, len(pool), (1,), generator=generator))]


def _pit_si_snr_loss(model: ConvTasNet, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, dict]:
    mixture, sources = batch
    estimates = model(mixture).float()
    loss, _ = pit_loss(estimates, sources)
    return loss, {"si_snr": -float(loss.detach())}


def evaluate(
    pipeline: SeparationPipeline, items: list | None = None, subset: str | None = None
) -> dict[str, float]:
    """Mean SI-SNR and SI-SNRi (dB, best permutation) over the test mixtures.

    ``items`` (``(mixture [time], sources [num_sources, time])`` pairs) skips loading.
    """
    config = pipeline.config
    items = evaluation_items(
        pipeline,
        items,
        lambda: _load_subset(config, subset or config.test_subset, config.max_eval_items),
    )
    rows = []
    with eval_mode(pipeline):
        for mixture, sources, *_ in items:
            estimates = pipeline.separate(mixture).cpu()
            loss, _ = pit_loss(estimates[None], sources[None], reduction="none")
            snr = -float(loss[0])
            baseline = float(si_snr(mixture.expand_as(sources), sources).mean())
            rows.append({"eval_si_snr": snr, "si_snri": snr - baseline})
    return mean_metrics(rows)


def train(
    config: SeparationConfig, resume: bool = True, until: int | None = None
) -> SeparationPipeline:
    """Train Conv-TasNet with PIT SI-SNR as ``config`` says; resumes from ``out_dir`` when it can.

    ``until`` stops after that many steps (see
    :func:`~trivium.pipelines.audio.common.train_pipeline`).

    Checkpoints and metric files go to ``out_dir`` as in
    :func:`trivium.pipelines.audio.asr.train`. Returns the pipeline in eval mode.
    """
    length = int(config.segment_seconds * config.sample_rate)
    make_batch = dynamic_mixtures if config.dynamic_mixing else _crops
    return train_pipeline(
        config,
        "separation",
        build=lambda: SeparationPipeline(config),
        load_train=lambda _: _load_subset(config, config.train_subset, None),
        load_test=lambda _: _load_subset(config, config.test_subset, config.max_eval_items),
        make_batch=lambda _, items, indices, generator: make_batch(
            items, indices, length, generator
        ),
        loss_fn=_pit_si_snr_loss,
        evaluate=evaluate,
        resume=resume,
        until=until,
    )


def from_checkpoint(
    path: str | os.PathLike[str], device: str | torch.device = "cpu"
) -> SeparationPipeline:
    """The :class:`SeparationPipeline` in a checkpoint (a file or a run's ``out_dir``), eval mode.

    Example:
        >>> import tempfile
        >>> from trivium.pipelines.audio.checkpoints import save_pipeline
        >>> pipeline = SeparationPipeline(SeparationConfig(msk_num_layers=1, msk_num_stacks=1))
        >>> path = save_pipeline(pipeline, tempfile.mkdtemp() + "/c.pt")
        >>> from_checkpoint(path).config.msk_num_layers
        1
    """
    return pipeline_from_checkpoint(path, SeparationPipeline, SeparationConfig, device)
