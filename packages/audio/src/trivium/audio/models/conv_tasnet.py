"""Conv-TasNet (Luo & Mesgarani, 2019), the non-causal time-domain separation network.

Same constructor, layers, parameter names and output shapes as
``torchaudio.models.ConvTasNet``, so state dicts load either way.

Example:
    >>> import torch
    >>> model = ConvTasNet(msk_num_layers=2, msk_num_stacks=1)
    >>> model(torch.randn(1, 1, 800)).shape
    torch.Size([1, 2, 800])
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["ConvBlock", "ConvTasNet", "MaskGenerator", "conv_tasnet_base"]

_ACTIVATIONS = {"sigmoid": nn.Sigmoid, "relu": nn.ReLU}


class ConvBlock(nn.Module):
    """1-D convolution block: 1x1 conv, depthwise dilated conv, residual and skip outputs.

    Example:
        >>> import torch
        >>> block = ConvBlock(16, 32, kernel_size=3, padding=2, dilation=2)
        >>> residual, skip = block(torch.randn(1, 16, 50))
        >>> residual.shape, skip.shape
        (torch.Size([1, 16, 50]), torch.Size([1, 16, 50]))
    """

    def __init__(
        self,
        io_channels: int,
        hidden_channels: int,
        kernel_size: int,
        padding: int,
        dilation: int = 1,
        no_residual: bool = False,
    ) -> None:
        super().__init__()
        self.conv_layers = nn.Sequential(
            nn.Conv1d(io_channels, hidden_channels, kernel_size=1),
            nn.PReLU(),
            nn.GroupNorm(num_groups=1, num_channels=hidden_channels, eps=1e-8),
            nn.Conv1d(
                hidden_channels,
                hidden_channels,
                kernel_size=kernel_size,
                padding=padding,
                dilation=dilation,
                groups=hidden_channels,
            ),
            nn.PReLU(),
            nn.GroupNorm(num_groups=1, num_channels=hidden_channels, eps=1e-8),
        )
        self.res_out = (
            None if no_residual else nn.Conv1d(hidden_channels, io_channels, kernel_size=1)
        )
        self.skip_out = nn.Conv1d(hidden_channels, io_channels, kernel_size=1)

    def forward(self, input: Tensor) -> tuple[Tensor | None, Tensor]:
        """``(residual or None, skip)``, each ``[batch, io_channels, frames]``."""
        feature = self.conv_layers(input)
        residual = None if self.res_out is None else self.res_out(feature)
        return residual, self.skip_out(feature)


class MaskGenerator(nn.Module):
    """The temporal convolution network that predicts one mask per source.

    Example:
        >>> import torch
        >>> gen = MaskGenerator(32, 2, 3, 16, 32, num_layers=2, num_stacks=1, msk_activate="relu")
        >>> gen(torch.randn(1, 32, 20)).shape
        torch.Size([1, 2, 32, 20])
    """

    def __init__(
        self,
        input_dim: int,
        num_sources: int,
        kernel_size: int,
        num_feats: int,
        num_hidden: int,
        num_layers: int,
        num_stacks: int,
        msk_activate: str,
    ) -> None:
        super().__init__()
        if msk_activate not in _ACTIVATIONS:
            raise ValueError(f"msk_activate must be 'sigmoid' or 'relu', got {msk_activate!r}")
        self.input_dim = input_dim
        self.num_sources = num_sources
        self.input_norm = nn.GroupNorm(num_groups=1, num_channels=input_dim, eps=1e-8)
        self.input_conv = nn.Conv1d(input_dim, num_feats, kernel_size=1)
        self.receptive_field = 0
        self.conv_layers = nn.ModuleList()
        for s in range(num_stacks):
            for layer in range(num_layers):
                dilation = 2**layer
                last = layer == num_layers - 1 and s == num_stacks - 1
                self.conv_layers.append(
                    ConvBlock(num_feats, num_hidden, kernel_size, dilation, dilation, last)
                )
                first = s == 0 and layer == 0
                self.receptive_field += kernel_size if first else (kernel_size - 1) * dilation
        self.output_prelu = nn.PReLU()
        self.output_conv = nn.Conv1d(num_feats, input_dim * num_sources, kernel_size=1)
        self.mask_activate = _ACTIVATIONS[msk_activate]()

    def forward(self, input: Tensor) -> Tensor:
        """Masks ``[batch, num_sources, input_dim, frames]`` for ``[batch, input_dim, frames]``."""
        feats = self.input_conv(self.input_norm(input))
        output = torch.zeros_like(feats)
        for layer in self.conv_layers:
            residual, skip = layer(feats)
            if residual is not None:  # the very last block has no residual output
                feats = feats + residual
            output = output + skip
        output = self.mask_activate(self.output_conv(self.output_prelu(output)))
        return output.view(input.shape[0], self.num_sources, self.input_dim, -1)


class ConvTasNet(nn.Module):
    """Conv-TasNet: a mixture ``[batch, 1, time]`` in, sources ``[batch, num_sources, time]`` out.

    Args:
        num_sources: sources to separate.
        enc_kernel_size: encoder/decoder kernel ``L`` (stride ``L // 2``).
        enc_num_feats: encoder filters ``N``.
        msk_kernel_size: kernel ``P`` of the mask generator's blocks.
        msk_num_feats: block input/output channels ``B`` (= skip channels ``Sc``).
        msk_num_hidden_feats: block hidden channels ``H``.
        msk_num_layers: blocks per stack ``X`` (dilations 1, 2, ..., 2**(X-1)).
        msk_num_stacks: stacks ``R``.
        msk_activate: mask activation, ``"sigmoid"`` or ``"relu"``.

    Example:
        >>> import torch
        >>> model = ConvTasNet(num_sources=3, enc_num_feats=64, msk_num_layers=2)
        >>> model(torch.randn(2, 1, 1001)).shape
        torch.Size([2, 3, 1001])
    """

    def __init__(
        self,
        num_sources: int = 2,
        enc_kernel_size: int = 16,
        enc_num_feats: int = 512,
        msk_kernel_size: int = 3,
        msk_num_feats: int = 128,
        msk_num_hidden_feats: int = 512,
        msk_num_layers: int = 8,
        msk_num_stacks: int = 3,
        msk_activate: str = "sigmoid",
    ) -> None:
        super().__init__()
        if enc_kernel_size < 2:
            raise ValueError(f"enc_kernel_size must be at least 2, got {enc_kernel_size}")
        self.num_sources = num_sources
        self.enc_num_feats = enc_num_feats
        self.enc_kernel_size = enc_kernel_size
        self.enc_stride = enc_kernel_size // 2
        # The decoder transposes the encoder: the same framing, mirrored channels.
        stride = self.enc_stride
        framing = {"kernel_size": enc_kernel_size, "stride": stride, "padding": stride}
        self.encoder = nn.Conv1d(1, enc_num_feats, bias=False, **framing)
        self.mask_generator = MaskGenerator(
            input_dim=enc_num_feats,
            num_sources=num_sources,
            kernel_size=msk_kernel_size,
            num_feats=msk_num_feats,
            num_hidden=msk_num_hidden_feats,
            num_layers=msk_num_layers,
            num_stacks=msk_num_stacks,
            msk_activate=msk_activate,
        )
        self.decoder = nn.ConvTranspose1d(enc_num_feats, 1, bias=False, **framing)

    def _pad_to_strides(self, input: Tensor) -> tuple[Tensor, int]:
        # Pad the end so that the last encoder window ends where the signal does.
        is_odd = self.enc_kernel_size % 2
        num_frames = input.shape[-1]
        remainder = (num_frames - is_odd) % self.enc_stride
        if remainder == 0:
            return input, 0
        num_pads = self.enc_stride - remainder
        return nn.functional.pad(input, (0, num_pads)), num_pads

    def forward(self, input: Tensor) -> Tensor:
        """Separate ``[batch, 1, time]`` into ``[batch, num_sources, time]``."""
        if input.dim() != 3 or input.shape[1] != 1:
            raise ValueError(
                f"expected a [batch, channel==1, time] tensor, got {tuple(input.shape)}"
            )
        padded, num_pads = self._pad_to_strides(input)
        batch_size, num_padded = padded.shape[0], padded.shape[2]
        feats = self.encoder(padded)
        masked = self.mask_generator(feats) * feats.unsqueeze(1)
        masked = masked.view(batch_size * self.num_sources, self.enc_num_feats, -1)
        output = self.decoder(masked).view(batch_size, self.num_sources, num_padded)
        return output[..., : num_padded - num_pads]


def conv_tasnet_base(num_sources: int = 2) -> ConvTasNet:
    """The non-causal Conv-TasNet of the paper's best setting, with a ReLU mask (torchaudio's).

    Example:
        >>> sum(p.numel() for p in conv_tasnet_base().parameters())
        4984881
    """
    return ConvTasNet(
        num_sources=num_sources,
        enc_kernel_size=16,
        enc_num_feats=512,
        msk_kernel_size=3,
        msk_num_feats=128,
        msk_num_hidden_feats=512,
        msk_num_layers=8,
        msk_num_stacks=3,
        msk_activate="relu",
    )
