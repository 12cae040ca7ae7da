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
from trivium.audio.pipelines.checkpoints import fit_pipeline, read_checkpoint
from trivium.core.seeding import seed_everything

__all__ = ["SeparationConfig", "SeparationPipeline", "evaluate", "from_checkpoint", "train"]


@dataclass
class SeparationConfig:
    """Settings of a separation training run (stored in its checkpoints).

    The model sizes default to a reduced Conv-TasNet that trains on a CPU;
    :func:`~trivium.audio.models.conv_tasnet_base` is ``enc_num_feats=512,
    msk_num_feats=128, msk_num_hidden_feats=512, msk_num_layers=8, msk_num_stacks=3``.

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
    batch_size: int = 8
    num_steps: int = 2000
    lr: float = 2e-3
    grad_clip_norm: float | None = 5.0
    amp: bool = False
    device: str = "auto"
    checkpoint_every: int = 500
    eval_every: int = 0
    max_eval_items: int | None = None
    seed: int = 0
    progress: bool | None = None


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
    dataset = LibriMix(
        config.root, subset=subset, num_speakers=config.num_sources, sample_rate=config.sample_rate
    )
    count = len(dataset) if limit is None else min(limit, len(dataset))
    items = []
    for i in range(count):
        _, mixture, sources = dataset[i]
        items.append((mixture[0], torch.cat(sources)))
    if not items:
        raise ValueError(f"no mixtures in LibriMix subset {subset!r} under {config.root}")
    return items


def _crops(items: list, indices: list[int], length: int, generator: torch.Generator):
    mixtures, sources = [], []
    for i in indices:
        mixture, srcs = items[i]
        if mixture.shape[-1] < length:
            pad = length - mixture.shape[-1]
            mixture = nn.functional.pad(mixture, (0, pad))
            srcs = nn.functional.pad(srcs, (0, pad))
        start = int(torch.randint(0, mixture.shape[-1] - length + 1, (1,), generator=generator))
        mixtures.append(mixture[start : start + length])
        sources.append(srcs[:, start : start + length])
    return torch.stack(mixtures).unsqueeze(1), torch.stack(sources)


def _pit_si_snr_loss(model: ConvTasNet, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, dict]:
    mixture, sources = batch
    estimates = model(mixture).float()
    loss, _ = pit_loss(estimates, sources)
    return loss, {"si_snr": -float(loss.detach())}


def evaluate(
    pipeline: SeparationPipeline, items: list | None = None, subset: str | None = None
) -> dict[str, float]:
    """Mean SI-SNR and SI-SNRi (dB, best permutation) over the test mixtures."""
    config = pipeline.config
    if items is None:
        items = _load_subset(config, subset or config.test_subset, config.max_eval_items)
    was_training = pipeline.training
    pipeline.eval()
    total_snr = total_snri = 0.0
    for mixture, sources in items:
        estimates = pipeline.separate(mixture).cpu()
        loss, _ = pit_loss(estimates[None], sources[None], reduction="none")
        snr = -float(loss[0])
        baseline = float(si_snr(mixture.expand_as(sources), sources).mean())
        total_snr += snr
        total_snri += snr - baseline
    pipeline.train(was_training)
    return {"eval_si_snr": total_snr / len(items), "si_snri": total_snri / len(items)}


def train(
    config: SeparationConfig, resume: bool = True, until: int | None = None
) -> SeparationPipeline:
    """Train Conv-TasNet with PIT SI-SNR as ``config`` says; resumes from ``out_dir`` when it can.

    ``until`` stops after that many steps (the schedule still spans
    ``config.num_steps``), e.g. to split a run into time-bounded jobs.

    Checkpoints and metric files go to ``out_dir`` as in
    :func:`trivium.audio.pipelines.asr.train`. Returns the pipeline in eval mode.
    """
    seed_everything(config.seed)
    pipeline = SeparationPipeline(config)
    train_items = _load_subset(config, config.train_subset, None)
    test_items = (
        _load_subset(config, config.test_subset, config.max_eval_items)
        if config.eval_every
        else None
    )
    length = int(config.segment_seconds * config.sample_rate)
    fit_pipeline(
        pipeline.model,
        config,
        "separation",
        resume,
        until,
        len(train_items),
        lambda indices, generator: _crops(train_items, indices, length, generator),
        _pit_si_snr_loss,
        (lambda model: evaluate(pipeline, test_items)) if test_items else None,
    )
    return pipeline.eval()


def from_checkpoint(
    path: str | os.PathLike[str], device: str | torch.device = "cpu"
) -> SeparationPipeline:
    """The :class:`SeparationPipeline` in a checkpoint (a file or a run's ``out_dir``), eval mode.

    Example:
        >>> import dataclasses, tempfile
        >>> from trivium.core.training import save_checkpoint
        >>> config = SeparationConfig(msk_num_layers=1, msk_num_stacks=1)
        >>> state = {"model": SeparationPipeline(config).model.state_dict(),
        ...          "extra": {"config": dataclasses.asdict(config)}}
        >>> path = save_checkpoint(tempfile.mkdtemp() + "/c.pt", state)
        >>> from_checkpoint(path).config.msk_num_layers
        1
    """
    config, state = read_checkpoint(path, SeparationConfig)
    pipeline = SeparationPipeline(config)
    pipeline.model.load_state_dict(state["model"])
    return pipeline.to(device).eval()
