"""A pipeline's checkpoints: reading its config and weights back, writing a pipeline as one.

A training run writes its checkpoints through its trainer
(:func:`trivium.pipelines.audio.common.make_trainer`, also importable from here).

Example:
    >>> import dataclasses, tempfile
    >>> from trivium.core.training import save_checkpoint
    >>> @dataclasses.dataclass
    ... class Config:
    ...     steps: int = 1
    >>> path = save_checkpoint(tempfile.mkdtemp() + "/c.pt",
    ...                        {"model": {}, "extra": {"config": {"steps": 5}}})
    >>> read_checkpoint(path, Config)[0]
    Config(steps=5)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from trivium.core.errors import DecodeError
from trivium.core.training import CHECKPOINT_NAME, load_checkpoint, save_checkpoint
from trivium.pipelines.audio.common import make_trainer

__all__ = ["make_trainer", "pipeline_from_checkpoint", "read_checkpoint", "save_pipeline"]

C = TypeVar("C")
P = TypeVar("P", bound=nn.Module)


def read_checkpoint(path: str | os.PathLike[str], config_cls: type[C]) -> tuple[C, dict[str, Any]]:
    """``(config, state)`` of a checkpoint file, or of ``checkpoint.pt`` in a run folder.

    Unknown configuration keys are ignored (newer checkpoints), missing ones take
    their defaults; a checkpoint without a configuration or weights raises
    :class:`~trivium.core.errors.DecodeError`.
    """
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    state = load_checkpoint(path)
    try:
        names = {f.name for f in dataclasses.fields(config_cls)}  # type: ignore[arg-type]
        raw = state["extra"]["config"]
        config = config_cls(**{k: v for k, v in raw.items() if k in names})
    except (KeyError, TypeError) as e:
        raise DecodeError(
            f"checkpoint has no {config_cls.__name__} configuration ({e})", path=path
        ) from e
    if "model" not in state:
        raise DecodeError("checkpoint has no model weights", path=path)
    return config, state


def pipeline_from_checkpoint(
    path: str | os.PathLike[str],
    make: Callable[[C], P],
    config_cls: type[C],
    device: str | torch.device = "cpu",
) -> P:
    """``make(config)`` with the ``model`` weights of a checkpoint, on ``device``, in eval mode.

    ``path`` is a checkpoint file or a run folder (see :func:`read_checkpoint`);
    ``make`` builds the pipeline (an ``nn.Module`` with a ``model``) from its config.

    Example:
        >>> import dataclasses, tempfile, torch
        >>> from trivium.core.training import save_checkpoint
        >>> @dataclasses.dataclass
        ... class Config:
        ...     width: int = 1
        >>> class Pipeline(torch.nn.Module):
        ...     def __init__(self, config):
        ...         super().__init__()
        ...         self.config, self.model = config, torch.nn.Linear(config.width, 1)
        >>> state = {"model": Pipeline(Config(3)).model.state_dict(),
        ...          "extra": {"config": {"width": 3}}}
        >>> path = save_checkpoint(tempfile.mkdtemp() + "/c.pt", state)
        >>> pipeline = pipeline_from_checkpoint(path, Pipeline, Config)
        >>> pipeline.model.in_features, pipeline.training
        (3, False)
    """
    config, state = read_checkpoint(path, config_cls)
    pipeline = make(config)
    pipeline.model.load_state_dict(state["model"])
    return pipeline.to(device).eval()


def save_pipeline(pipeline: nn.Module, path: str | os.PathLike[str]) -> Path:
    """Write ``pipeline``'s model weights and config as a checkpoint ``from_checkpoint`` reads.

    Example:
        >>> import tempfile
        >>> @dataclasses.dataclass
        ... class Config:
        ...     width: int = 2
        >>> pipeline = torch.nn.Module()
        >>> pipeline.config, pipeline.model = Config(), torch.nn.Linear(2, 1)
        >>> save_pipeline(pipeline, tempfile.mkdtemp() + "/c.pt").name
        'c.pt'
    """
    state = {
        "model": pipeline.model.state_dict(),
        "extra": {"config": dataclasses.asdict(pipeline.config)},
    }
    return save_checkpoint(path, state)
