"""Speech-separation mixtures: ``LibriMix`` (Cosentino et al., 2020) and the WSJ0-2mix layout.

LibriMix: ``root/Libri{N}Mix/wav{8k,16k}/{min,max}/<subset>/{mix_clean,mix_single,
mix_both,s1,s2,s3,noise}/<id>.wav``. WSJ0-2mix / 3mix (Hershey et al., 2016):
``<root>/{mix,s1,s2[,s3]}/<id>.wav``, ``root`` being e.g. ``wsj0-mix/2speakers/wav8k/min/tt``.
Both return torchaudio's tuple ``(sample_rate, mixture, [source, ...])`` with
``[1, time]`` float32 waveforms of equal length.

Example:
    >>> import tempfile
    >>> len(WSJ0Mix(tempfile.mkdtemp(), num_speakers=2, sample_rate=8000))
    0
"""

from __future__ import annotations

import os
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.io import load
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError

__all__ = ["LibriMix", "WSJ0Mix"]

_TASKS_TO_MIXTURE = {
    "sep_clean": "mix_clean",
    "enh_single": "mix_single",
    "enh_both": "mix_both",
    "sep_noisy": "mix_both",
}

Item = tuple[int, Tensor, list[Tensor]]


class _Mixtures(Dataset):
    """Mixture files in ``mix_dir`` and same-named source files in each of ``src_dirs``."""

    def __init__(
        self, root: Path, mix_dir: Path, src_dirs: list[Path], sample_rate: int, ext: str
    ) -> None:
        self.root = root
        self.mix_dir = mix_dir
        self.src_dirs = src_dirs
        self.sample_rate = sample_rate
        self.files = sorted(p.name for p in mix_dir.glob("*" + ext))

    def get_metadata(self, key: int) -> tuple[int, str, list[str]]:
        """``(sample_rate, mixture path, [source paths])``, paths relative to ``root``."""
        name = self.files[key]
        mixture = os.path.relpath(self.mix_dir / name, self.root)
        return (
            self.sample_rate,
            mixture,
            [os.path.relpath(d / name, self.root) for d in self.src_dirs],
        )

    def _load(self, relpath: str) -> Tensor:
        path = self.root / relpath
        if not path.is_file():
            raise DatasetError("source file missing for this mixture", path=path)
        waveform, sample_rate = load(path)
        if sample_rate != self.sample_rate:
            raise DatasetError(
                f"sample rate {sample_rate} differs from the dataset's {self.sample_rate}",
                path=path,
            )
        return waveform

    def __getitem__(self, key: int) -> Item:
        """Load ``(sample_rate, mixture, [sources])`` number ``key``."""
        sample_rate, mix_path, src_paths = self.get_metadata(key)
        mixture = self._load(mix_path)
        sources = []
        for src_path in src_paths:
            source = self._load(src_path)
            if source.shape != mixture.shape:
                raise DatasetError(
                    f"source shape {tuple(source.shape)} differs from the mixture's "
                    f"{tuple(mixture.shape)}",
                    path=self.root / src_path,
                )
            sources.append(source)
        return sample_rate, mixture, sources

    def __len__(self) -> int:
        return len(self.files)


def _rate_folder(sample_rate: int) -> str:
    if sample_rate not in (8000, 16000):
        raise ValueError(f"sample_rate must be 8000 or 16000, got {sample_rate}")
    return f"wav{sample_rate // 1000}k"


class LibriMix(_Mixtures):
    """LibriMix: ``root`` holds ``Libri2Mix`` / ``Libri3Mix`` (arguments as torchaudio's).

    ``task`` picks the mixture folder (``"sep_clean"``: ``mix_clean``, ``"sep_noisy"``
    and ``"enh_both"``: ``mix_both``, ``"enh_single"``: ``mix_single``) and the targets
    (the ``s1..sN`` sources; ``mix_clean`` for ``"enh_both"``). LibriMix is generated
    locally with its scripts (github.com/JorisCos/LibriMix), or for the embedded
    corpus by :func:`trivium.audio.corpora.build_corpus`; there is no download.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> base = root / "Libri2Mix" / "wav8k" / "min" / "dev"
        >>> for folder in ("mix_clean", "s1", "s2"):
        ...     (base / folder).mkdir(parents=True)
        ...     save(base / folder / "a.wav", torch.zeros(1, 80), 8000)
        >>> sr, mixture, sources = LibriMix(root, subset="dev")[0]
        >>> sr, mixture.shape, len(sources)
        (8000, torch.Size([1, 80]), 2)
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        subset: str = "train-360",
        num_speakers: int = 2,
        sample_rate: int = 8000,
        task: str = "sep_clean",
        mode: str = "min",
    ) -> None:
        if num_speakers not in (2, 3):
            raise ValueError(f"num_speakers must be 2 or 3, got {num_speakers}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        if task not in _TASKS_TO_MIXTURE:
            raise ValueError(f"task must be one of {list(_TASKS_TO_MIXTURE)}, got {task!r}")
        base = Path(root) / f"Libri{num_speakers}Mix"
        subset_dir = base / _rate_folder(sample_rate) / mode / subset
        mix_dir = subset_dir / _TASKS_TO_MIXTURE[task]
        if not mix_dir.is_dir():
            from trivium.audio.corpora import librimix_remedy

            remedy = librimix_remedy(root, mix_dir) or (
                f"generate it with the LibriMix scripts so that {mix_dir} exists"
            )
            raise PathNotFoundError(f"{NO_SUCH_PATH}; LibriMix folder: {remedy}", path=mix_dir)
        if task == "enh_both":
            src_dirs = [subset_dir / "mix_clean"]
        else:
            src_dirs = [subset_dir / f"s{i + 1}" for i in range(num_speakers)]
        super().__init__(base, mix_dir, src_dirs, sample_rate, ".wav")
        self.task = task


class WSJ0Mix(_Mixtures):
    """WSJ0-2mix / WSJ0-3mix: ``root`` is one split folder holding ``mix`` and ``s1..sN``.

    (The layout of the original MATLAB scripts; the arguments follow torchaudio's
    source-separation recipe.)

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> for folder in ("mix", "s1", "s2"):
        ...     (root / folder).mkdir()
        ...     save(root / folder / "x.wav", torch.zeros(1, 40), 8000)
        >>> WSJ0Mix(root, 2, 8000)[0][0]
        8000
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        num_speakers: int = 2,
        sample_rate: int = 8000,
        audio_ext: str = ".wav",
    ) -> None:
        if num_speakers < 1:
            raise ValueError(f"num_speakers must be >= 1, got {num_speakers}")
        root = Path(root)
        src_dirs = [root / f"s{i + 1}" for i in range(num_speakers)]
        super().__init__(root, root / "mix", src_dirs, sample_rate, audio_ext)
