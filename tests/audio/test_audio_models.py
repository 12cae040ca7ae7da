"""Wav2Letter, WaveRNN and ConvTasNet: structure against torchaudio and fixed counts, behaviour."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from peers import require_torchaudio

from trivium.audio.functional import mu_law_decoding
from trivium.audio.models import ConvTasNet, Wav2Letter, WaveRNN, conv_tasnet_base, wavernn
from trivium.audio.models.wavernn import fold_with_overlap, xfade_and_unfold


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def small_wavernn(n_classes: int = 16) -> WaveRNN:
    return WaveRNN(
        [2, 3], n_classes, 6, n_res_block=2, n_rnn=24, n_fc=20, n_freq=10, n_hidden=12, n_output=8
    )


# Parameter counts of torchaudio 2.11's models with the same arguments.
WAV2LETTER_COUNTS = {
    ("waveform", 1, 40): 26_211_290,
    ("mfcc", 13, 29): 23_282_529,
    ("power_spectrum", 40, 40): 23_628_540,
}
WAVERNN_COUNTS = {((5, 5, 8), 512, 200): 4_536_231, ((4, 5, 8), 256, 160): 4_404_901}
CONVTASNET_BASE = 4_984_881


@pytest.mark.parametrize(("input_type", "num_features", "num_classes"), list(WAV2LETTER_COUNTS))
def test_wav2letter_counts_and_shapes(input_type, num_features, num_classes):
    model = Wav2Letter(num_classes, input_type, num_features)
    assert n_params(model) == WAV2LETTER_COUNTS[(input_type, num_features, num_classes)]
    length = 16000 if input_type == "waveform" else 137
    out = model(torch.randn(2, num_features, length))
    assert out.shape[:2] == (2, num_classes)
    assert out.shape[-1] == int(model.output_lengths(torch.tensor(length)))
    # log_softmax over classes
    torch.testing.assert_close(out.exp().sum(1), torch.ones(2, out.shape[-1]))


@pytest.mark.parametrize("input_type", ["mfcc", "waveform"])
def test_wav2letter_narrow_widths(input_type):
    # hidden_channels/head_channels keep the depth, kernels and strides (so the output
    # length) and shrink every layer's width; defaults are torchaudio's model.
    features = 13 if input_type == "mfcc" else 1
    wide = Wav2Letter(29, input_type, features)
    narrow = Wav2Letter(29, input_type, features, hidden_channels=16, head_channels=32)
    x = torch.randn(1, features, 4000 if input_type == "waveform" else 60)
    assert narrow(x).shape == wide(x).shape
    kinds = [(m.kernel_size, m.stride) for m in narrow.modules() if isinstance(m, torch.nn.Conv1d)]
    assert kinds == [
        (m.kernel_size, m.stride) for m in wide.modules() if isinstance(m, torch.nn.Conv1d)
    ]
    hidden = 16 * 16 * 7 + 16
    head = 16 * 32 * 32 + 32 + 32 * 32 + 32 + 32 * 29 + 29
    front = (features * 16 * (250 if input_type == "waveform" else 48) + 16) + (
        16 * 16 * 48 + 16 if input_type == "waveform" else 0
    )
    assert n_params(narrow) == front + 7 * hidden + head
    with pytest.raises(ValueError, match="head_channels"):
        Wav2Letter(head_channels=0)


@pytest.mark.parametrize("length", [2, 47, 48, 100, 1001])
def test_wav2letter_output_lengths_match_forward(length):
    model = Wav2Letter(5, "mfcc", 3)
    assert model(torch.randn(1, 3, length)).shape[-1] == int(
        model.output_lengths(torch.tensor(length))
    )


def test_wav2letter_bad_arguments():
    with pytest.raises(ValueError, match="input_type"):
        Wav2Letter(input_type="spectrum")
    with pytest.raises(ValueError, match="expected input"):
        Wav2Letter(input_type="mfcc", num_features=13)(torch.randn(1, 12, 50))
    with pytest.raises(ValueError, match="at least 320"):
        Wav2Letter()(torch.randn(1, 1, 319))


def test_conv_tasnet_counts_and_shapes():
    assert n_params(conv_tasnet_base()) == CONVTASNET_BASE
    assert isinstance(conv_tasnet_base().mask_generator.mask_activate, torch.nn.ReLU)
    model = ConvTasNet(
        num_sources=3,
        enc_kernel_size=15,
        enc_num_feats=32,
        msk_num_feats=16,
        msk_num_hidden_feats=24,
        msk_num_layers=3,
        msk_num_stacks=2,
    )
    for length in (1, 7, 8, 100, 1003):
        assert model(torch.randn(2, 1, length)).shape == (2, 3, length)
    with pytest.raises(ValueError, match="channel==1"):
        model(torch.randn(2, 2, 100))
    with pytest.raises(ValueError, match="msk_activate"):
        ConvTasNet(msk_activate="tanh")


def test_conv_tasnet_masks_add_up_to_the_mixture_encoding():
    # With a sigmoid mask summing to one per bin and a decoder that inverts the encoder,
    # the sources sum to the mixture: check the decomposition is linear in the masks.
    torch.manual_seed(0)
    model = ConvTasNet(
        enc_num_feats=16,
        msk_num_feats=8,
        msk_num_hidden_feats=8,
        msk_num_layers=2,
        msk_num_stacks=1,
    ).eval()
    x = torch.randn(1, 1, 400)
    feats = model.encoder(x)
    masks = model.mask_generator(feats)
    manual = model.decoder((masks * feats.unsqueeze(1)).view(2, 16, -1)).view(1, 2, -1)
    torch.testing.assert_close(model(x), manual)


def test_wavernn_counts_and_hop_check():
    for (scales, n_classes, hop), count in WAVERNN_COUNTS.items():
        assert n_params(WaveRNN(list(scales), n_classes, hop)) == count
    with pytest.raises(ValueError, match="hop_length"):
        WaveRNN([5, 5], 256, 200)


def test_wavernn_forward_shape_and_errors():
    model = small_wavernn()
    mel = torch.rand(2, 1, 10, 9)
    out = model(torch.rand(2, 1, (9 - 4) * 6), mel)
    assert out.shape == (2, 1, 30, 16)
    with pytest.raises(ValueError, match="samples"):
        model(torch.rand(2, 1, 31), mel)
    with pytest.raises(ValueError, match="waveform"):
        model(torch.rand(2, 2, 30), mel)


@pytest.mark.parametrize("rows_per_chunk", [4096, 14])
def test_wavernn_generation_loop_equals_teacher_forced_forward(monkeypatch, rows_per_chunk):
    # The fast step loop (precomputed projections, gru_cell) must compute the same
    # logits as the reference teacher-forced forward pass, also across chunks of steps.
    monkeypatch.setattr(wavernn, "_ROWS_PER_CHUNK", rows_per_chunk)
    torch.manual_seed(0)
    model = small_wavernn().eval()
    mel = torch.rand(2, 10, 8)
    cond, aux = model.upsample(mel)
    wave = torch.rand(2, cond.shape[-1]) * 2 - 1
    with torch.no_grad():
        _, logits = model._run(cond, aux, teacher=wave)
        expected = model(wave.unsqueeze(1), mel.unsqueeze(1))[:, 0]
    torch.testing.assert_close(logits, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_wavernn_bfloat16_steps_stay_close_to_float32():
    # step_dtype=bfloat16 rounds the step products to 8 mantissa bits: the teacher-forced
    # distributions must stay close to float32's (KL in nats), and generation runs.
    torch.manual_seed(0)
    model = small_wavernn(n_classes=64).eval()
    mel = torch.rand(2, 10, 8)
    cond, aux = model.upsample(mel)
    wave = torch.rand(2, cond.shape[-1]) * 2 - 1
    with torch.no_grad():
        _, exact = model._run(cond, aux, teacher=wave)
        _, rounded = model._run(cond, aux, teacher=wave, step_dtype=torch.bfloat16)
    assert rounded.dtype == torch.float32  # scores come back in full precision
    p, q = exact.log_softmax(-1), rounded.log_softmax(-1)
    kl = (p.exp() * (p - q)).sum(-1)
    assert 0 < float(kl.max()) < 1e-2
    folded = model.generate(mel, target=8, overlap=2, dtype=torch.bfloat16)
    assert folded.dtype == torch.float32 and folded.shape == (2, 1, 48)
    assert torch.equal(
        model.generate(mel, generator=torch.Generator().manual_seed(3), dtype=torch.float32),
        model.generate(mel, generator=torch.Generator().manual_seed(3)),
    )


def test_upsample_smoothing_equals_its_convolutions():
    # The upsampling's one-channel convolutions run as shifted multiply-adds: same
    # values and the same weight gradients as the Conv2d modules themselves.
    torch.manual_seed(0)
    net = wavernn.UpsampleNetwork([2, 3], n_res_block=1, n_freq=6, n_hidden=4, n_output=4)
    for layer in net.upsample_layers:
        if isinstance(layer, torch.nn.Conv2d):
            torch.nn.init.normal_(layer.weight)
    mel = torch.rand(2, 6, 12)
    upsampled, _ = net(mel)
    reference = net.upsample_layers(mel.unsqueeze(1)).squeeze(1)[..., net.indent : -net.indent]
    torch.testing.assert_close(upsampled, reference)
    convs = [m for m in net.upsample_layers if isinstance(m, torch.nn.Conv2d)]
    grads = torch.autograd.grad(upsampled.square().sum(), [c.weight for c in convs])
    expected = torch.autograd.grad(reference.square().sum(), [c.weight for c in convs])
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want)


def test_unfused_gru_cell_equals_torch_gru_cell():
    # The step used off CPU (a per-row input bias) against nn.GRUCell, one row at a time.
    torch.manual_seed(0)
    cell = torch.nn.GRUCell(5, 7)
    x, h, gi = torch.randn(3, 5), torch.randn(3, 7), torch.randn(3, 21)
    with torch.no_grad():
        got = wavernn._gru_cell_unfused(x, h, cell.weight_ih, cell.weight_hh, gi, cell.bias_hh)
        rows = []
        for i in range(3):
            cell.bias_ih.copy_(gi[i])
            rows.append(cell(x[i : i + 1], h[i : i + 1]))
    torch.testing.assert_close(got, torch.cat(rows))


def test_wavernn_infer_shapes_lengths_and_reproducibility():
    model = small_wavernn().eval()
    mel = torch.rand(3, 10, 5)
    wave, lengths = model.infer(
        mel, torch.tensor([5, 4, 2]), generator=torch.Generator().manual_seed(1)
    )
    assert wave.shape == (3, 1, 30)
    assert lengths.tolist() == [30, 24, 12]
    assert wave.min() >= -1 and wave.max() <= 1
    # linear label mapping: every value is 2 * k / 15 - 1
    k = (wave + 1) * 15 / 2
    torch.testing.assert_close(k, k.round(), atol=1e-5, rtol=0)
    again, _ = model.infer(mel, generator=torch.Generator().manual_seed(1))
    assert torch.equal(wave, again)


def test_wavernn_sampling_follows_the_softmax():
    # A model whose output ignores its input: the sampled labels follow softmax(fc3.bias).
    model = small_wavernn(n_classes=4).eval()
    with torch.no_grad():
        model.fc3.weight.zero_()
        model.fc3.bias.copy_(torch.log(torch.tensor([0.1, 0.2, 0.3, 0.4])))
    wave, _ = model.infer(torch.rand(1, 10, 400), generator=torch.Generator().manual_seed(0))
    labels = ((wave + 1) * 3 / 2).round().long().flatten()
    freq = np.bincount(labels.numpy(), minlength=4) / labels.numel()
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.02)


def test_fold_and_unfold_reconstruct_a_signal():
    x = torch.randn(2, 1, 1000)
    folds = fold_with_overlap(x, target=100, overlap=20)
    assert folds.shape == (2 * 9, 1, 140)  # ceil((1000 - 20) / 120) folds per item
    torch.testing.assert_close(folds[1, 0], x[0, 0, 120:260])  # fold i starts at i * 120
    out = xfade_and_unfold(folds[:, 0], batch_size=2, overlap=20)
    assert out.shape == (2, 9 * 120 + 20)
    # outside the second halves of the overlaps the signal comes back exactly
    for start, end in ((0, 130), (140, 250), (260, 370)):
        torch.testing.assert_close(out[:, start:end], x[:, 0, start:end])
    # in a cross-fade, equal-power curves weigh identical content by fade_in + fade_out
    ones = xfade_and_unfold(torch.ones(3, 140), batch_size=1, overlap=20)
    weights = ones[0, 130:140]
    assert bool((weights >= 1 - 1e-6).all() and (weights <= 2**0.5 + 1e-6).all())
    torch.testing.assert_close(ones[0, :130], torch.ones(130))


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_wavernn_generate_folded_and_mulaw():
    model = small_wavernn(n_classes=256).eval()
    mel = torch.rand(2, 10, 40)
    plain = model.generate(mel, batched=False, generator=torch.Generator().manual_seed(0))
    folded = model.generate(mel, target=50, overlap=10, generator=torch.Generator().manual_seed(0))
    assert plain.shape == folded.shape == (2, 1, 240)
    # mu-law output values are decoded codes
    codes = torch.arange(256)
    decoded = mu_law_decoding(codes, 256)
    nearest = (plain.flatten()[:, None] - decoded[None]).abs().min(1).values
    assert nearest.max() < 1e-6
    raw = model.generate(mel, batched=False, mulaw=False)
    assert raw.shape == (2, 1, 240)


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_models_compile_and_match_eager():
    model = ConvTasNet(
        enc_num_feats=8, msk_num_feats=4, msk_num_hidden_feats=8, msk_num_layers=2, msk_num_stacks=1
    ).eval()
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(1, 1, 200)
    torch.testing.assert_close(compiled(x), model(x))


def _state_dict_round_trip(ours: torch.nn.Module, theirs: torch.nn.Module, *inputs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    ours.eval()
    theirs.eval()
    with torch.no_grad():
        torch.testing.assert_close(ours(*inputs), theirs(*inputs))


def test_wav2letter_matches_torchaudio():
    ta = require_torchaudio()
    for args in WAV2LETTER_COUNTS:
        input_type, num_features, num_classes = args
        theirs = ta.models.Wav2Letter(num_classes, input_type, num_features)
        assert n_params(theirs) == WAV2LETTER_COUNTS[args]
        length = 4000 if input_type == "waveform" else 60
        _state_dict_round_trip(
            Wav2Letter(num_classes, input_type, num_features),
            theirs,
            torch.randn(1, num_features, length),
        )


def test_wavernn_matches_torchaudio():
    ta = require_torchaudio()
    for (scales, n_classes, hop), count in WAVERNN_COUNTS.items():
        assert n_params(ta.models.WaveRNN(list(scales), n_classes, hop)) == count
    kwargs = {
        "n_res_block": 2,
        "n_rnn": 24,
        "n_fc": 20,
        "n_freq": 10,
        "n_hidden": 12,
        "n_output": 8,
    }
    theirs = ta.models.WaveRNN([2, 3], 16, 6, **kwargs)
    ours = WaveRNN([2, 3], 16, 6, **kwargs)
    _state_dict_round_trip(ours, theirs, torch.rand(2, 1, 30), torch.rand(2, 1, 10, 9))
    wave, lengths = ours.infer(torch.rand(1, 10, 4), torch.tensor([4]))
    ref, ref_lengths = theirs.infer(torch.rand(1, 10, 4), torch.tensor([4]))
    assert wave.shape == ref.shape and lengths.tolist() == ref_lengths.tolist()


def test_conv_tasnet_matches_torchaudio():
    ta = require_torchaudio()
    assert n_params(ta.models.conv_tasnet_base()) == CONVTASNET_BASE
    kwargs = {
        "enc_num_feats": 32,
        "msk_num_feats": 16,
        "msk_num_hidden_feats": 24,
        "msk_num_layers": 3,
        "msk_num_stacks": 2,
    }
    _state_dict_round_trip(
        ConvTasNet(**kwargs), ta.models.ConvTasNet(**kwargs), torch.randn(2, 1, 1001)
    )


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_models_on_cuda_match_cpu():
    torch.manual_seed(0)
    for model, inputs in (
        (Wav2Letter(10, "mfcc", 13), (torch.randn(2, 13, 80),)),
        (ConvTasNet(enc_num_feats=32, msk_num_layers=2), (torch.randn(2, 1, 800),)),
        (small_wavernn(), (torch.rand(2, 1, 30), torch.rand(2, 1, 10, 9))),
    ):
        model.eval()
        expected = model(*inputs)
        got = model.cuda()(*(x.cuda() for x in inputs)).cpu()
        torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3)
    wavernn = small_wavernn().cuda().eval()
    out = wavernn.generate(torch.rand(1, 10, 20, device="cuda"), target=30, overlap=6)
    assert out.device.type == "cuda" and out.shape == (1, 1, 120)
