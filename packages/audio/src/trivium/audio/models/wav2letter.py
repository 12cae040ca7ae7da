"""Wav2Letter (Collobert et al., 2016): a fully convolutional acoustic model for CTC.

Same constructor, layers, parameter names and output shapes as
``torchaudio.models.Wav2Letter``, so state dicts load either way.

Example:
    >>> import torch
    >>> model = Wav2Letter(num_classes=29, input_type="mfcc", num_features=13)
    >>> model(torch.randn(2, 13, 100)).shape
    torch.Size([2, 29, 51])
"""

from __future__ import annotations

from torch import Tensor, nn

__all__ = ["Wav2Letter"]

_INPUT_TYPES = ("waveform", "power_spectrum", "mfcc")


def _conv_relu(in_channels: int, out_channels: int, kernel: int, stride: int, pad: int) -> list:
    return [
        nn.Conv1d(in_channels, out_channels, kernel_size=kernel, stride=stride, padding=pad),
        nn.ReLU(inplace=True),
    ]


def _acoustic_model(in_features: int, num_classes: int, hidden: int, head: int) -> nn.Sequential:
    layers = _conv_relu(in_features, hidden, 48, 2, 23)
    for _ in range(7):
        layers += _conv_relu(hidden, hidden, 7, 1, 3)
    layers += _conv_relu(hidden, head, 32, 1, 16)
    layers += _conv_relu(head, head, 1, 1, 0)
    layers += _conv_relu(head, num_classes, 1, 1, 0)
    return nn.Sequential(*layers)


class Wav2Letter(nn.Module):
    """Wav2Letter: ``[batch, num_features, time]`` in, log-probs ``[batch, classes, frames]``.

    Args:
        num_classes: output classes (characters plus the CTC blank).
        input_type: ``"waveform"`` (a strided front-end of 250 filters, 10 ms hop at
            16 kHz, comes first), ``"power_spectrum"`` or ``"mfcc"``.
        num_features: input channels (1 for a waveform; the number of bins or
            coefficients otherwise).
        hidden_channels: width of the front-end and the eight convolutions after it
            (torchaudio's fixed 250).
        head_channels: width of the kernel-32 convolution and the 1x1 one after it
            (torchaudio's fixed 2000). With both defaults the model is torchaudio's;
            narrower widths make a smaller model of the same depth and receptive field.

    The time axis is halved by the first acoustic layer (and divided by 160 first
    for waveforms).

    Example:
        >>> import torch
        >>> model = Wav2Letter(num_classes=40)
        >>> model(torch.randn(1, 1, 16000)).shape
        torch.Size([1, 40, 51])
    """

    def __init__(
        self,
        num_classes: int = 40,
        input_type: str = "waveform",
        num_features: int = 1,
        *,
        hidden_channels: int = 250,
        head_channels: int = 2000,
    ) -> None:
        super().__init__()
        if input_type not in _INPUT_TYPES:
            raise ValueError(f"input_type must be one of {_INPUT_TYPES}, got {input_type!r}")
        sizes = {
            "num_classes": num_classes,
            "num_features": num_features,
            "hidden_channels": hidden_channels,
            "head_channels": head_channels,
        }
        for name, value in sizes.items():
            if value < 1:
                raise ValueError(f"Wav2Letter: {name} must be positive, got {value}")
        self.num_classes = num_classes
        self.input_type = input_type
        self.num_features = num_features
        if input_type == "waveform":
            front_end = nn.Sequential(*_conv_relu(num_features, hidden_channels, 250, 160, 45))
            acoustic = _acoustic_model(hidden_channels, num_classes, hidden_channels, head_channels)
            self.acoustic_model = nn.Sequential(front_end, acoustic)
        else:
            self.acoustic_model = _acoustic_model(
                num_features, num_classes, hidden_channels, head_channels
            )

    def forward(self, x: Tensor) -> Tensor:
        """Log-probabilities over classes, ``[batch, num_classes, frames]``."""
        if x.dim() != 3 or x.shape[1] != self.num_features:
            raise ValueError(
                f"expected input [batch, {self.num_features}, time], got {tuple(x.shape)}"
            )
        shortest = 320 if self.input_type == "waveform" else 2
        if x.shape[-1] < shortest:
            raise ValueError(f"input has {x.shape[-1]} steps; Wav2Letter needs at least {shortest}")
        return nn.functional.log_softmax(self.acoustic_model(x), dim=1)

    def output_lengths(self, lengths: Tensor) -> Tensor:
        """Valid output frames for inputs of ``lengths`` valid steps (for the CTC loss).

        Example:
            >>> import torch
            >>> Wav2Letter(input_type="mfcc", num_features=13).output_lengths(torch.tensor([100]))
            tensor([51])
        """
        if self.input_type == "waveform":
            lengths = (lengths + 2 * 45 - 250) // 160 + 1
        lengths = (lengths + 2 * 23 - 48) // 2 + 1
        return lengths + 1  # the kernel-32 layer (padding 16) adds one frame
