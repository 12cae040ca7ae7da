"""Speech datasets returning torchaudio's tuples, a class-per-folder dataset, and collation.

Example:
    >>> import torch
    >>> from trivium.audio.datasets import pad_collate
    >>> pad_collate([torch.zeros(3), torch.zeros(5)])[1].tolist()
    [3, 5]
"""

from trivium.audio.datasets.audio_folder import AudioFolder
from trivium.audio.datasets.cmuarctic import CMUARCTIC
from trivium.audio.datasets.cmudict import CMUDict
from trivium.audio.datasets.collate import pad_collate
from trivium.audio.datasets.commonvoice import COMMONVOICE
from trivium.audio.datasets.dr_vctk import DR_VCTK
from trivium.audio.datasets.fluentcommands import FluentSpeechCommands
from trivium.audio.datasets.gtzan import GTZAN
from trivium.audio.datasets.iemocap import IEMOCAP
from trivium.audio.datasets.librilight_limited import LibriLightLimited
from trivium.audio.datasets.librimix import LibriMix, WSJ0Mix
from trivium.audio.datasets.librispeech import LIBRISPEECH
from trivium.audio.datasets.librispeech_biasing import LibriSpeechBiasing
from trivium.audio.datasets.libritts import LIBRITTS
from trivium.audio.datasets.ljspeech import LJSPEECH
from trivium.audio.datasets.musdb_hq import MUSDB_HQ
from trivium.audio.datasets.quesst14 import QUESST14
from trivium.audio.datasets.snips import Snips
from trivium.audio.datasets.speechcommands import SPEECHCOMMANDS
from trivium.audio.datasets.tedlium import TEDLIUM
from trivium.audio.datasets.vctk import VCTK_092
from trivium.audio.datasets.voxceleb1 import VoxCeleb1Identification, VoxCeleb1Verification
from trivium.audio.datasets.yesno import YESNO

__all__ = [
    "CMUARCTIC",
    "COMMONVOICE",
    "DR_VCTK",
    "GTZAN",
    "IEMOCAP",
    "LIBRISPEECH",
    "LIBRITTS",
    "LJSPEECH",
    "MUSDB_HQ",
    "QUESST14",
    "SPEECHCOMMANDS",
    "TEDLIUM",
    "VCTK_092",
    "YESNO",
    "AudioFolder",
    "CMUDict",
    "FluentSpeechCommands",
    "LibriLightLimited",
    "LibriMix",
    "LibriSpeechBiasing",
    "Snips",
    "VoxCeleb1Identification",
    "VoxCeleb1Verification",
    "WSJ0Mix",
    "pad_collate",
]
