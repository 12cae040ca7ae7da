"""The ``trivium_audio`` torch operators: the native library, or their schemas alone.

``trivium.audio._C`` (``csrc/``, built with the package) defines the operators with
``TORCH_LIBRARY(trivium_audio, m)`` and their CPU kernels; importing it registers
them, so ``torch.ops.trivium_audio.lfilter_core(...)`` runs the native kernel on the
CPU (the call releases the GIL). The torch implementations (every other device, and
the CPU where the library was not built), the fake kernels for ``torch.compile`` and
autograd are registered from Python beside the functions that call the operators
(``functional/iir.py``, ``functional/alignment.py``).

Example:
    >>> import torch
    >>> "lfilter_core" in SCHEMAS and hasattr(torch.ops.trivium_audio, "lfilter_core")
    True
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import torch

__all__ = ["NATIVE", "SCHEMAS", "check_torch_version"]

# As csrc/ops.cpp defines them (a test checks that they agree).
SCHEMAS = {
    "lfilter_core": "lfilter_core(Tensor waveform, Tensor a_coeffs, Tensor b_coeffs) -> Tensor",
    "forced_align_paths": (
        "forced_align_paths(Tensor log_probs, Tensor targets, Tensor input_lengths, "
        "Tensor target_lengths, int blank) -> Tensor"
    ),
    "flac_frame_at": "flac_frame_at(Tensor data, int start, int bits, int fixed_block) -> Tensor",
    "flac_decode_frames": (
        "flac_decode_frames(Tensor data, int begin, int stop, int bits, int fixed_block, "
        "int first_sample, Tensor(a!) out) -> Tensor"
    ),
}


def check_torch_version(built: str, installed: str) -> None:
    """Refuse an operator library built for another torch (its C++ ABI differs).

    Example:
        >>> check_torch_version("2.13.0+cpu", "2.13.0")
        >>> check_torch_version("2.13.0", "2.14.0")
        Traceback (most recent call last):
        ...
        ImportError: trivium.audio's operator library was built for torch 2.13.0, but torch 2.14.0 is installed: reinstall trivium-audio against this torch
    """  # noqa: E501
    if built.split("+")[0] != installed.split("+")[0]:
        raise ImportError(
            f"trivium.audio's operator library was built for torch {built}, but torch "
            f"{installed} is installed: reinstall trivium-audio against this torch"
        )


def _load_native() -> bool:
    """Import ``trivium.audio._C`` when it was built; False when it was not."""
    spec = importlib.util.find_spec("trivium.audio._C")
    if spec is None or spec.origin is None or not Path(spec.origin).exists():
        return False
    built = (Path(spec.origin).parent / "torch_version.txt").read_text().strip()
    check_torch_version(built, torch.__version__)
    importlib.import_module("trivium.audio._C")
    return True


NATIVE: bool = _load_native()
"""Whether the native CPU kernels are registered (else the torch ones serve the CPU too)."""

if not NATIVE:
    _LIBRARY = torch.library.Library("trivium_audio", "DEF")
    for _schema in SCHEMAS.values():
        _LIBRARY.define(_schema)
