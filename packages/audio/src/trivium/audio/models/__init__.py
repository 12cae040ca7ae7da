"""Speech models with torchaudio's constructors, layers and parameter names.

``Wav2Letter`` (CTC acoustic model), ``WaveRNN`` (vocoder, with fast fold-and-overlap
generation) and ``ConvTasNet`` (source separation); state dicts load to and from
``torchaudio.models`` of the same names.

Example:
    >>> import torch
    >>> from trivium.audio.models import ConvTasNet
    >>> ConvTasNet(msk_num_layers=1, msk_num_stacks=1)(torch.zeros(1, 1, 160)).shape
    torch.Size([1, 2, 160])
"""

from trivium.audio.models.conv_tasnet import ConvTasNet, conv_tasnet_base
from trivium.audio.models.wav2letter import Wav2Letter
from trivium.audio.models.wavernn import WaveRNN

__all__ = ["ConvTasNet", "Wav2Letter", "WaveRNN", "conv_tasnet_base"]
