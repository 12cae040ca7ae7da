"""WaveRNN (Kalchbrenner et al., 2018), fatchord's variant: a mel-conditioned sample-level RNN.

Same constructor, layers, parameter names and output shapes as
``torchaudio.models.WaveRNN`` (state dicts load either way), plus a fast
generator: :meth:`WaveRNN.generate` precomputes every conditioning projection
once, and with ``batched=True`` cuts the conditioning into overlapping folds that
are generated side by side as one batch and cross-faded back together (the
fold-and-overlap scheme of fatchord/WaveRNN).

Example:
    >>> import torch
    >>> model = WaveRNN([2, 2], n_classes=16, hop_length=4, n_res_block=1, n_rnn=16,
    ...                 n_fc=16, n_freq=8, n_hidden=8, n_output=8)
    >>> mel = torch.rand(1, 8, 10)
    >>> model(torch.rand(1, 1, 24), mel.unsqueeze(1)).shape
    torch.Size([1, 1, 24, 16])
    >>> model.infer(mel)[0].shape
    torch.Size([1, 1, 40])
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trivium.audio.functional import mu_law_decoding

_ROWS_PER_CHUNK = 4096  # batch x steps whose projections are made at once
_HALF = (torch.bfloat16, torch.float16)

__all__ = ["MelResNet", "ResBlock", "Stretch2d", "UpsampleNetwork", "WaveRNN"]


class ResBlock(nn.Module):
    """Residual block of two 1x1 convolutions with batch norm.

    Example:
        >>> import torch
        >>> ResBlock(8)(torch.rand(2, 8, 5)).shape
        torch.Size([2, 8, 5])
    """

    def __init__(self, n_freq: int = 128) -> None:
        super().__init__()
        self.resblock_model = nn.Sequential(
            nn.Conv1d(n_freq, n_freq, kernel_size=1, bias=False),
            nn.BatchNorm1d(n_freq),
            nn.ReLU(inplace=True),
            nn.Conv1d(n_freq, n_freq, kernel_size=1, bias=False),
            nn.BatchNorm1d(n_freq),
        )

    def forward(self, specgram: Tensor) -> Tensor:
        """``[batch, n_freq, time]`` in and out."""
        return self.resblock_model(specgram) + specgram


class MelResNet(nn.Module):
    """A stack of :class:`ResBlock` over a spectrogram (time shrinks by ``kernel_size - 1``).

    Example:
        >>> import torch
        >>> MelResNet(2, 8, 8, 4, 5)(torch.rand(1, 8, 12)).shape
        torch.Size([1, 4, 8])
    """

    def __init__(
        self,
        n_res_block: int = 10,
        n_freq: int = 128,
        n_hidden: int = 128,
        n_output: int = 128,
        kernel_size: int = 5,
    ) -> None:
        super().__init__()
        self.melresnet_model = nn.Sequential(
            nn.Conv1d(n_freq, n_hidden, kernel_size=kernel_size, bias=False),
            nn.BatchNorm1d(n_hidden),
            nn.ReLU(inplace=True),
            *[ResBlock(n_hidden) for _ in range(n_res_block)],
            nn.Conv1d(n_hidden, n_output, kernel_size=1),
        )

    def forward(self, specgram: Tensor) -> Tensor:
        """``[batch, n_freq, time]`` to ``[batch, n_output, time - kernel_size + 1]``."""
        return self.melresnet_model(specgram)


class Stretch2d(nn.Module):
    """Repeat each element ``freq_scale`` times along -2 and ``time_scale`` times along -1.

    Example:
        >>> import torch
        >>> Stretch2d(time_scale=3, freq_scale=1)(torch.rand(1, 2, 4)).shape
        torch.Size([1, 2, 12])
    """

    def __init__(self, time_scale: int, freq_scale: int) -> None:
        super().__init__()
        self.freq_scale = freq_scale
        self.time_scale = time_scale

    def forward(self, specgram: Tensor) -> Tensor:
        """``[..., freq, time]`` to ``[..., freq * freq_scale, time * time_scale]``."""
        return specgram.repeat_interleave(self.freq_scale, -2).repeat_interleave(
            self.time_scale, -1
        )


def _smooth_time(specgram: Tensor, conv: nn.Conv2d) -> Tensor:
    """``conv`` (one channel, a ``(1, k)`` kernel, padding ``k // 2``) on ``[..., freq, time]``.

    As ``k`` shifted multiply-adds: the same sums as the convolution, which runs a
    one-channel 2-D kernel ~15x slower on CPU.
    """
    k = conv.weight.shape[-1]
    time = specgram.shape[-1]
    padded = F.pad(specgram, (k // 2, k // 2))
    weight = conv.weight.reshape(k)
    out = padded[..., :time] * weight[0]
    for j in range(1, k):
        out = out.addcmul_(padded[..., j : j + time], weight[j])
    return out


class UpsampleNetwork(nn.Module):
    """Upsample a spectrogram to sample rate: smoothed stretches plus MelResNet features.

    Example:
        >>> import torch
        >>> net = UpsampleNetwork([2, 3], n_res_block=1, n_freq=8, n_hidden=8, n_output=4)
        >>> [t.shape for t in net(torch.rand(1, 8, 10))]
        [torch.Size([1, 8, 36]), torch.Size([1, 4, 36])]
    """

    def __init__(
        self,
        upsample_scales: list[int],
        n_res_block: int = 10,
        n_freq: int = 128,
        n_hidden: int = 128,
        n_output: int = 128,
        kernel_size: int = 5,
    ) -> None:
        super().__init__()
        self.total_scale: int = math.prod(upsample_scales)
        self.indent = (kernel_size - 1) // 2 * self.total_scale
        self.resnet = MelResNet(n_res_block, n_freq, n_hidden, n_output, kernel_size)
        self.resnet_stretch = Stretch2d(self.total_scale, 1)
        layers: list[nn.Module] = []
        for scale in upsample_scales:
            conv = nn.Conv2d(1, 1, kernel_size=(1, scale * 2 + 1), padding=(0, scale), bias=False)
            nn.init.constant_(conv.weight, 1.0 / (scale * 2 + 1))
            layers += [Stretch2d(scale, 1), conv]
        self.upsample_layers = nn.Sequential(*layers)

    def forward(self, specgram: Tensor) -> tuple[Tensor, Tensor]:
        """``(upsampled [batch, n_freq, T], features [batch, n_output, T])``,
        ``T = (time - kernel_size + 1) * total_scale``."""
        resnet_output = self.resnet_stretch(self.resnet(specgram).unsqueeze(1)).squeeze(1)
        upsampled = specgram
        for layer in self.upsample_layers:
            upsampled = (
                _smooth_time(upsampled, layer) if isinstance(layer, nn.Conv2d) else layer(upsampled)
            )
        end = upsampled.shape[-1] - self.indent
        return upsampled[:, :, self.indent : end], resnet_output


def fold_with_overlap(x: Tensor, target: int, overlap: int) -> Tensor:
    """Cut ``[batch, channels, time]`` into overlapping folds ``[batch * folds, channels, length]``.

    Fold ``i`` covers ``[i * (target + overlap), ... + target + 2 * overlap)``; the
    end is zero-padded so that the last fold is whole. Every item gets the same
    number of folds (``folds`` of the first dimension of the result).

    Example:
        >>> import torch
        >>> fold_with_overlap(torch.arange(10.0).view(1, 1, 10), target=2, overlap=1).shape
        torch.Size([3, 1, 4])
    """
    total = x.shape[-1]
    step = target + overlap
    num_folds = max(1, -(-(total - overlap) // step))
    padded_len = num_folds * step + overlap
    x = F.pad(x, (0, padded_len - total))
    folds = x.unfold(-1, target + 2 * overlap, step)  # [batch, channels, folds, length]
    return folds.permute(0, 2, 1, 3).reshape(-1, x.shape[1], target + 2 * overlap)


def xfade_and_unfold(y: Tensor, batch_size: int, overlap: int) -> Tensor:
    """Inverse of :func:`fold_with_overlap` for ``[batch * folds, length]`` samples.

    In each overlap the new fold is muted for the first half (its fresh RNN state is
    still settling) while the previous fold plays on; the second half is an
    equal-power cross-fade between the two. Returns
    ``[batch, folds * (length - overlap) + overlap]``.

    Example:
        >>> import torch
        >>> xfade_and_unfold(torch.ones(3, 4), batch_size=1, overlap=1).shape
        torch.Size([1, 10])
    """
    length = y.shape[-1]
    step = length - overlap
    silence_len = overlap // 2
    fade_len = overlap - silence_len
    t = torch.linspace(-1, 1, fade_len, device=y.device, dtype=y.dtype)
    silence = torch.zeros(silence_len, device=y.device, dtype=y.dtype)
    fade_in = torch.cat([silence, torch.sqrt(0.5 * (1 + t))])
    fade_out = torch.cat([torch.ones_like(silence), torch.sqrt(0.5 * (1 - t))])
    y = y.reshape(batch_size, -1, length).clone()
    num_folds = y.shape[1]
    if overlap > 0:
        y[:, 1:, :overlap] *= fade_in  # the signal's very start and end are not faded
        y[:, :-1, length - overlap :] *= fade_out
    out = y.new_zeros(batch_size, num_folds * step + overlap)
    for i in range(num_folds):
        out[:, i * step : i * step + length] += y[:, i]
    return out


def _gru_cell_unfused(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, gi: Tensor, b_hh: Tensor
) -> Tensor:
    """A GRU cell step whose input bias ``gi`` may be per row (``[batch, 3 * hidden]``)."""
    i_r, i_z, i_n = torch.addmm(gi, x, w_ih.t()).chunk(3, 1)
    h_r, h_z, h_n = torch.addmm(b_hh, h, w_hh.t()).chunk(3, 1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(torch.addcmul(i_n, r, h_n))
    return torch.lerp(n, h, z)  # (1 - z) * n + z * h


def _gru_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, gi: Tensor, b_hh: Tensor) -> Tensor:
    """:func:`_gru_cell_unfused`, as one fused call on CPU.

    The CPU ``gru_cell`` broadcasts a 2-D input bias; the CUDA kernel takes 1-D only.
    """
    if h.device.type == "cpu":
        return torch._VF.gru_cell(x, h, w_ih, w_hh, gi, b_hh)
    return _gru_cell_unfused(x, h, w_ih, w_hh, gi, b_hh)


class WaveRNN(nn.Module):
    """WaveRNN vocoder: predicts the next sample's class from past samples and the mel.

    Args:
        upsample_scales: upsampling factors; their product must equal ``hop_length``.
        n_classes: output classes (``2 ** bits``; mu-law or linear quantisation).
        hop_length: samples per spectrogram frame.
        n_res_block: residual blocks of the spectrogram network (``MelResNet``).
        n_rnn: width of the input layer and of both GRUs.
        n_fc: width of the two fully connected layers after the GRUs.
        kernel_size: kernel of the spectrogram network's first convolution.
        n_freq: mel bins of the input spectrogram.
        n_hidden: channels inside the spectrogram network's residual blocks.
        n_output: channels of the spectrogram network's output.

    ``forward(waveform, specgram)`` is the teacher-forced pass for training;
    :meth:`infer` samples sequentially (torchaudio's method) and :meth:`generate`
    adds fold-and-overlap batching and decoding to a waveform.

    Example:
        >>> model = WaveRNN([5, 5, 8], n_classes=512, hop_length=200)
        >>> sum(p.numel() for p in model.parameters())
        4536231
    """

    def __init__(
        self,
        upsample_scales: list[int],
        n_classes: int,
        hop_length: int,
        n_res_block: int = 10,
        n_rnn: int = 512,
        n_fc: int = 512,
        kernel_size: int = 5,
        n_freq: int = 128,
        n_hidden: int = 128,
        n_output: int = 128,
    ) -> None:
        super().__init__()
        if math.prod(upsample_scales) != hop_length:
            raise ValueError(
                f"the product of upsample_scales {list(upsample_scales)} must equal "
                f"hop_length {hop_length}"
            )
        if n_classes < 2:
            raise ValueError(f"n_classes must be at least 2, got {n_classes}")
        self.kernel_size = kernel_size
        self._pad = (kernel_size - 1 if kernel_size % 2 else kernel_size) // 2
        self.n_rnn = n_rnn
        self.n_aux = n_output // 4
        self.hop_length = hop_length
        self.n_classes = n_classes
        self.n_bits: int = int(math.log2(n_classes))
        self.upsample = UpsampleNetwork(
            upsample_scales, n_res_block, n_freq, n_hidden, n_output, kernel_size
        )
        self.fc = nn.Linear(n_freq + self.n_aux + 1, n_rnn)
        self.rnn1 = nn.GRU(n_rnn, n_rnn, batch_first=True)
        self.rnn2 = nn.GRU(n_rnn + self.n_aux, n_rnn, batch_first=True)
        self.relu1 = nn.ReLU(inplace=True)
        self.relu2 = nn.ReLU(inplace=True)
        self.fc1 = nn.Linear(n_rnn + self.n_aux, n_fc)
        self.fc2 = nn.Linear(n_fc + self.n_aux, n_fc)
        self.fc3 = nn.Linear(n_fc, n_classes)

    def _split_aux(self, aux: Tensor) -> list[Tensor]:
        return [aux[..., self.n_aux * i : self.n_aux * (i + 1)] for i in range(4)]

    def forward(self, waveform: Tensor, specgram: Tensor) -> Tensor:
        """Teacher-forced logits ``[batch, 1, (frames - kernel_size + 1) * hop, n_classes]``.

        ``waveform`` is ``[batch, 1, (frames - kernel_size + 1) * hop_length]`` (the
        previous samples, in [-1, 1]), ``specgram`` ``[batch, 1, n_freq, frames]``.
        """
        if waveform.dim() != 3 or waveform.size(1) != 1:
            raise ValueError(f"waveform must be [batch, 1, time], got {tuple(waveform.shape)}")
        if specgram.dim() != 4 or specgram.size(1) != 1:
            raise ValueError(
                f"specgram must be [batch, 1, n_freq, frames], got {tuple(specgram.shape)}"
            )
        waveform, specgram = waveform.squeeze(1), specgram.squeeze(1)
        cond, aux = self.upsample(specgram)
        cond, aux = cond.transpose(1, 2), aux.transpose(1, 2)
        if cond.shape[1] != waveform.shape[1]:
            raise ValueError(
                f"waveform has {waveform.shape[1]} samples but the spectrogram conditions "
                f"{cond.shape[1]} ((frames - kernel_size + 1) * hop_length)"
            )
        a1, a2, a3, a4 = self._split_aux(aux)
        x = self.fc(torch.cat([waveform.unsqueeze(-1), cond, a1], dim=-1))
        res = x
        x, _ = self.rnn1(x)
        x = x + res
        res = x
        x, _ = self.rnn2(torch.cat([x, a2], dim=-1))
        x = x + res
        x = self.relu1(self.fc1(torch.cat([x, a3], dim=-1)))
        x = self.relu2(self.fc2(torch.cat([x, a4], dim=-1)))
        return self.fc3(x).unsqueeze(1)

    def _conditioning(self, specgram: Tensor) -> tuple[Tensor, Tensor]:
        if specgram.dim() != 3:
            raise ValueError(
                f"specgram must be [batch, n_freq, frames], got {tuple(specgram.shape)}"
            )
        return self.upsample(F.pad(specgram, (self._pad, self._pad)))

    def _projections(self, cond: Tensor, aux: Tensor) -> tuple[Tensor, ...]:
        """Every term that does not depend on generated samples, time-major ``[T, batch, .]``.

        ``x0`` is ``fc`` without the previous sample's term and ``gi1`` its input
        projection in ``rnn1`` (``fc`` is affine in that sample, so the projection
        splits the same way); the others project the aux inputs. One large matrix
        product each replaces a small one per step.
        """
        cond, aux = cond.permute(2, 0, 1), aux.permute(2, 0, 1)
        a1, a2, a3, a4 = self._split_aux(aux)
        n_rnn = self.n_rnn
        x0 = F.linear(torch.cat([cond, a1], dim=-1), self.fc.weight[:, 1:], self.fc.bias)
        gi1 = F.linear(x0, self.rnn1.weight_ih_l0, self.rnn1.bias_ih_l0)
        gi2 = F.linear(a2, self.rnn2.weight_ih_l0[:, n_rnn:], self.rnn2.bias_ih_l0)
        fc1 = F.linear(a3, self.fc1.weight[:, n_rnn:], self.fc1.bias)
        fc2 = F.linear(a4, self.fc2.weight[:, -self.n_aux :], self.fc2.bias)
        return x0, gi1, gi2, fc1, fc2

    def _step_weights(self) -> tuple[Tensor, ...]:
        """The weights of the per-step products, contiguous and transposed as ``addmm`` wants."""
        n_rnn = self.n_rnn
        w_x = self.fc.weight[:, :1]  # [n_rnn, 1]: the previous sample's column
        return (
            w_x.t().contiguous(),
            self.rnn1.weight_ih_l0 @ w_x,  # rnn1's input projection of that column
            self.rnn1.weight_hh_l0,
            self.rnn1.bias_hh_l0,
            self.rnn2.weight_ih_l0[:, :n_rnn].contiguous(),
            self.rnn2.weight_hh_l0,
            self.rnn2.bias_hh_l0,
            self.fc1.weight[:, :n_rnn].t().contiguous(),
            self.fc2.weight[:, : -self.n_aux].t().contiguous(),
            self.fc3.weight.t().contiguous(),
        )

    def _gumbel(
        self, shape: tuple[int, ...], like: Tensor, generator: torch.Generator | None
    ) -> Tensor:
        """Gumbel noise: ``argmax(logits + noise)`` is one draw from ``softmax(logits)``."""
        u = torch.rand(shape, generator=generator, device=like.device, dtype=like.dtype)
        return u.clamp_min_(1e-10).log_().neg_().log_().neg_()

    def _run(
        self,
        cond: Tensor,
        aux: Tensor,
        teacher: Tensor | None = None,
        generator: torch.Generator | None = None,
        step_dtype: torch.dtype | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Generate sequentially; returns ``(labels [batch, T], logits or None)``.

        With ``teacher`` (``[batch, T]`` previous samples in [-1, 1]) the inputs are
        those samples instead of the sampled ones, and the logits are returned: the
        same numbers as :meth:`forward` (used to test this loop). ``step_dtype``
        runs the per-step products and states in that dtype (e.g. ``torch.bfloat16``);
        the class scores and the sampling stay in ``cond``'s.
        """
        batch, steps = cond.shape[0], cond.shape[-1]
        dtype = step_dtype or cond.dtype
        rounded = dtype != cond.dtype
        weights = [w.to(dtype) for w in self._step_weights()]
        w_x, v1, w_hh1, b_hh1, w_ih2, w_hh2, b_hh2, w_fc1, w_fc2, w_fc3 = weights
        h1 = cond.new_zeros(batch, self.n_rnn, dtype=dtype)
        h2 = cond.new_zeros(batch, self.n_rnn, dtype=dtype)
        x = cond.new_zeros(batch, 1, dtype=dtype)
        levels = torch.linspace(-1.0, 1.0, self.n_classes, dtype=dtype, device=cond.device)
        labels = torch.empty(steps, batch, 1, dtype=torch.long, device=cond.device)
        logits_out: list[Tensor] = []
        # A chunk of steps at a time: bounded memory, still large matrix products.
        chunk = max(1, _ROWS_PER_CHUNK // batch)
        for start in range(0, steps, chunk):
            end = min(start + chunk, steps)
            with torch.autocast(cond.device.type, dtype, enabled=rounded and dtype in _HALF):
                projections = self._projections(cond[..., start:end], aux[..., start:end])
            x0s, gi1s, gi2s, fc1s, fc2s = [t.to(dtype) for t in projections]
            shape = (end - start, batch, self.n_classes)
            if teacher is None:
                out_bias = self._gumbel(shape, cond, generator).add_(self.fc3.bias)
                given = [None] * (end - start)
            else:
                out_bias = self.fc3.bias.expand(shape)
                given = teacher[:, start:end].to(dtype).t().unsqueeze(-1).unbind(0)
            for x0, gi1, gi2, fc1, fc2, bias, out, x_given in zip(
                x0s.unbind(0),
                gi1s.unbind(0),
                gi2s.unbind(0),
                fc1s.unbind(0),
                fc2s.unbind(0),
                out_bias.unbind(0),
                labels[start:end].unbind(0),
                given,
                strict=True,
            ):
                if x_given is not None:
                    x = x_given
                x0 = torch.addcmul(x0, x, w_x)
                h1 = _gru_cell(x, h1, v1, w_hh1, gi1, b_hh1)
                x1 = x0 + h1
                h2 = _gru_cell(x1, h2, w_ih2, w_hh2, gi2, b_hh2)
                y = torch.addmm(fc1, x1 + h2, w_fc1).relu_()
                y = torch.addmm(fc2, y, w_fc2).relu_()
                if rounded:  # scores and sampling in full precision (bf16 argmax is slow too)
                    logits = torch.mm(y, w_fc3).to(bias.dtype).add_(bias)
                else:
                    logits = torch.addmm(bias, y, w_fc3)
                if teacher is not None:
                    logits_out.append(logits)
                x = torch.take(levels, torch.argmax(logits, dim=1, keepdim=True, out=out))
        logits = torch.stack(logits_out, dim=1) if teacher is not None else None
        return labels[..., 0].t(), logits

    @torch.no_grad()
    def infer(
        self,
        specgram: Tensor,
        lengths: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Sample a waveform sample by sample, as ``torchaudio.models.WaveRNN.infer``.

        ``specgram`` is ``[batch, n_freq, frames]``; returns ``(waveform [batch, 1,
        frames * hop_length], lengths * hop_length or None)``. Labels map linearly to
        [-1, 1] (``2 * label / (n_classes - 1) - 1``); decode mu-law yourself, or use
        :meth:`generate`.

        Example:
            >>> import torch
            >>> model = WaveRNN([2], 4, 2, n_res_block=1, n_rnn=8, n_fc=8, n_freq=4,
            ...                 n_hidden=4, n_output=4).eval()
            >>> wave, lengths = model.infer(torch.rand(1, 4, 3), torch.tensor([3]))
            >>> wave.shape, lengths.tolist()
            (torch.Size([1, 1, 6]), [6])
        """
        cond, aux = self._conditioning(specgram)
        labels, _ = self._run(cond, aux, generator=generator)
        waveform = 2 * labels.to(specgram.dtype) / (2**self.n_bits - 1.0) - 1.0
        if lengths is not None:
            lengths = lengths * self.upsample.total_scale
        return waveform.unsqueeze(1), lengths

    @torch.no_grad()
    def generate(
        self,
        specgram: Tensor,
        batched: bool = True,
        target: int = 2000,
        overlap: int = 100,
        mulaw: bool = True,
        generator: torch.Generator | None = None,
        dtype: torch.dtype | None = None,
    ) -> Tensor:
        """Vocode ``[batch, n_freq, frames]`` (or ``[n_freq, frames]``) to ``[batch, 1, samples]``.

        With ``batched`` the conditioning is cut into folds of ``target`` samples
        plus ``overlap`` on each side, all generated at once and cross-faded; the
        sequential steps drop from ``samples`` to about ``target + 2 * overlap``.
        ``mulaw=True`` decodes labels as mu-law codes, ``False`` maps them linearly.
        ``dtype`` (e.g. ``torch.bfloat16``) runs the sequential steps, their matrix
        products and recurrent states, in that precision: with many folds the
        products dominate, and bfloat16 ones are ~1.5x faster on a CPU with
        AVX512-BF16. The output keeps ``specgram``'s dtype.

        Example:
            >>> import torch
            >>> model = WaveRNN([2], 16, 2, n_res_block=1, n_rnn=8, n_fc=8, n_freq=4,
            ...                 n_hidden=4, n_output=4).eval()
            >>> model.generate(torch.rand(4, 50), target=20, overlap=4).shape
            torch.Size([1, 1, 100])
        """
        if specgram.dim() == 2:
            specgram = specgram.unsqueeze(0)
        if target < 1 or overlap < 0:
            raise ValueError(f"need target >= 1 and overlap >= 0, got {target}, {overlap}")
        cond, aux = self._conditioning(specgram)
        batch, total = cond.shape[0], cond.shape[-1]
        if batched:
            cond = fold_with_overlap(cond, target, overlap)
            aux = fold_with_overlap(aux, target, overlap)
        labels, _ = self._run(cond, aux, generator=generator, step_dtype=dtype)
        if mulaw:
            samples = mu_law_decoding(labels, self.n_classes).to(specgram.dtype)
        else:
            samples = 2 * labels.to(specgram.dtype) / (self.n_classes - 1.0) - 1.0
        if batched:
            # equal-power fades sum to up to sqrt(2) where two folds agree: keep [-1, 1]
            samples = xfade_and_unfold(samples, batch, overlap).clamp_(-1.0, 1.0)
        return samples[:, :total].unsqueeze(1)
