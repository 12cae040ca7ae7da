"""Reading a pipeline's configuration and weights back from a training checkpoint.

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
from pathlib import Path
from typing import Any, TypeVar

from trivium.core.errors import DecodeError
from trivium.core.training import CHECKPOINT_NAME, load_checkpoint

__all__ = ["read_checkpoint"]

C = TypeVar("C")


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
