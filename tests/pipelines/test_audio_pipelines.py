"""ASR, vocoder and separation pipelines end to end on a tiny espeak-ng corpus.

Each trains a few steps, is interrupted and resumed (the result must equal the
uninterrupted run bit for bit), then is evaluated, reloaded and used for inference.
Decoders and tokenizer are checked against brute-force references.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import shutil

import jiwer
import numpy as np
import pytest
import torch

from trivium.audio.datasets import LIBRISPEECH, LibriMix
from trivium.audio.metrics import si_snr
from trivium.audio.transforms import MFCC, MelSpectrogram
from trivium.core.errors import DecodeError
from trivium.pipelines.audio import (
    ASRConfig,
    CharTokenizer,
    SeparationConfig,
    VocoderConfig,
    asr,
    ctc_beam_search,
    ctc_greedy_decode,
    separation,
    vocoder,
)
from trivium.pipelines.audio.augment import augment_spectrogram, stretch_time, warp_frequency

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from trivium.audio.corpora import build_corpus

    return build_corpus(tmp_path_factory.mktemp("corpus"), 4, 4, (4, 2))


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def tiny_run(config_type, corpus, **options):
    """``config_type`` for a few steps on ``corpus`` on the CPU, checkpointing halfway."""
    run = {
        "batch_size": 2,
        "num_steps": 4,
        "checkpoint_every": 2,
        "device": "cpu",
        "progress": False,
    }
    return config_type(root=str(corpus), **run, **options)


def check_resume_is_exact(module, config, tmp_path):
    straight = module.train(dataclasses.replace(config, out_dir=str(tmp_path / "straight")))
    split_config = dataclasses.replace(config, out_dir=str(tmp_path / "split"))
    module.train(split_config, until=config.num_steps // 2)
    resumed = module.train(split_config)
    assert same_weights(straight, resumed)
    for name in ("checkpoint.pt", "metrics.csv", "metrics.json", "metrics.png"):
        assert (tmp_path / "split" / name).is_file()
    return resumed, split_config


# ----------------------------------------------------------------------------- ASR


def test_asr_pipeline_end_to_end(corpus, tmp_path):
    config = tiny_run(ASRConfig, corpus, num_features=13, lr=1e-3)
    pipeline, config = check_resume_is_exact(asr, config, tmp_path)
    metrics = asr.evaluate(pipeline)
    assert set(metrics) == {"wer", "cer"} and metrics["cer"] >= 0

    loaded = asr.from_checkpoint(config.out_dir)
    assert same_weights(loaded, pipeline)
    waveform, sample_rate, *_ = LIBRISPEECH(corpus, url="test-clean")[0]
    text = loaded.transcribe(waveform, sample_rate)
    assert text == pipeline.transcribe(waveform, sample_rate)
    assert set(text) <= set(config.alphabet)
    # other sample rates are resampled; beam search gives a string too
    resampled = torch.nn.functional.interpolate(waveform[None], scale_factor=0.5)[0]
    assert isinstance(loaded.transcribe(resampled, 8000, decoder="beam", beam_width=4), str)
    with pytest.raises(ValueError, match="decoder"):
        loaded.transcribe(waveform, sample_rate, decoder="lm")
    with pytest.raises(ValueError, match="empty"):
        loaded.transcribe(torch.zeros(1, 0), 16000)


@pytest.mark.parametrize(("input_type", "features"), [("mfcc", 13), ("power_spectrum", 24)])
def test_asr_features_are_normalised_mfcc_or_log_mel(input_type, features):
    pipeline = asr.ASRPipeline(ASRConfig(input_type=input_type, num_features=features))
    wave = torch.randn(1, 8000)
    melkwargs = {"n_fft": 400, "hop_length": 160, "n_mels": max(40, features)}
    if input_type == "mfcc":
        reference = MFCC(16000, n_mfcc=features, melkwargs=melkwargs)(wave[0])
    else:
        melkwargs["n_mels"] = features
        reference = torch.log(MelSpectrogram(16000, **melkwargs)(wave[0]) + 1e-6)
    reference = (reference - reference.mean(-1, keepdim=True)) / (
        reference.std(-1, keepdim=True) + 1e-5
    )
    got = pipeline.featurize(wave)
    assert got.shape == (features, 51)
    torch.testing.assert_close(got, reference, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(pipeline.features_from_mel(pipeline.mel_bands(wave)), got)


def test_warp_frequency_and_stretch_time_match_numpy_interp():
    rng = np.random.default_rng(0)
    spec = torch.from_numpy(rng.standard_normal((2, 40, 30))).float()
    for factor in (0.85, 1.0, 1.2):
        positions = np.minimum(np.arange(40) / factor, 39)
        expected = np.stack(
            [
                [np.interp(positions, np.arange(40), spec[b, :, t].numpy()) for t in range(30)]
                for b in range(2)
            ]
        ).transpose(0, 2, 1)
        np.testing.assert_allclose(warp_frequency(spec, factor).numpy(), expected, atol=1e-5)
    for factor in (0.8, 1.3):
        frames = round(30 * factor)
        grid = np.linspace(0, 29, frames)
        expected = np.stack(
            [[np.interp(grid, np.arange(30), row) for row in spec[b].numpy()] for b in range(2)]
        )
        np.testing.assert_allclose(stretch_time(spec, factor).numpy(), expected, atol=1e-5)
    with pytest.raises(ValueError, match="positive"):
        warp_frequency(spec, 0.0)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a = augment_spectrogram(spec[0], g1, freq_warp=0.2, time_stretch=0.2)
    assert torch.equal(a, augment_spectrogram(spec[0], g2, freq_warp=0.2, time_stretch=0.2))
    assert not torch.equal(a, augment_spectrogram(spec[0], g2, freq_warp=0.2, time_stretch=0.2))
    assert torch.equal(augment_spectrogram(spec[0], g1), spec[0])


def tiny_augmented_asr_config(corpus) -> ASRConfig:
    """A narrow Wav2Letter on augmented MFCCs, a few steps."""
    return tiny_run(
        ASRConfig,
        corpus,
        num_features=13,
        freq_warp=0.15,
        time_stretch=0.15,
        hidden_channels=16,
        head_channels=32,
    )


def test_asr_trains_with_augmentation(corpus, tmp_path):
    config = tiny_augmented_asr_config(corpus)
    pipeline, config = check_resume_is_exact(asr, config, tmp_path)
    assert pipeline.model.acoustic_model[-2].in_channels == 32
    assert asr.from_checkpoint(config.out_dir).config.freq_warp == 0.15
    # every draw of an utterance is a different augmentation of its mel bands
    items = asr._load_split(pipeline, str(corpus), "train-clean-100", 1, mel=True)
    generator = torch.Generator().manual_seed(0)
    first, second = (asr._augmented(pipeline, items, generator)[0][1] for _ in range(2))
    assert first.shape[0] == 13 and not torch.equal(first, second)
    waveform_config = ASRConfig(root=str(corpus), input_type="waveform", freq_warp=0.1)
    with pytest.raises(ValueError, match="waveform"):
        asr.train(waveform_config)


def test_asr_ctc_loss_matches_a_manual_computation(corpus):
    pipeline = asr.ASRPipeline(ASRConfig(num_features=13))
    items = asr._load_split(pipeline, str(corpus), "test-clean", 2)
    batch = asr._collate(items, pipeline.tokenizer)
    loss = asr._ctc_loss(pipeline.model, batch)
    feats, feat_lengths, targets, target_lengths = batch
    # the same loss one utterance at a time, without padding
    losses = []
    offset = 0
    for i in range(2):
        scores = asr.class_log_probs(pipeline.model, feats[i : i + 1, :, : feat_lengths[i]])
        lp = scores[0].T.unsqueeze(1)
        tgt = targets[offset : offset + target_lengths[i]]
        offset += int(target_lengths[i])
        losses.append(
            torch.nn.functional.ctc_loss(lp, tgt[None], [lp.shape[0]], [len(tgt)], reduction="sum")
            / len(tgt)
        )
    torch.testing.assert_close(loss, torch.stack(losses).mean(), rtol=1e-4, atol=1e-4)


def test_class_log_probs_skip_only_the_final_relu():
    torch.manual_seed(0)
    for input_type, features, length in (("mfcc", 3, 30), ("waveform", 1, 800)):
        model = asr.Wav2Letter(6, input_type, features)
        x = torch.randn(2, features, length)
        scores = asr.class_log_probs(model, x)
        with torch.no_grad():
            pre = model.acoustic_model[-1][:-1] if input_type == "waveform" else None
            hidden = model.acoustic_model[0](x) if pre is not None else x
            raw = (pre or model.acoustic_model[:-1])(hidden)
        torch.testing.assert_close(scores, torch.log_softmax(raw, dim=1))
        torch.testing.assert_close(torch.log_softmax(raw.clamp(min=0), dim=1), model(x))


def test_evaluate_error_rates_match_jiwer():
    class Fixed(asr.ASRPipeline):
        def transcribe(self, waveform, sample_rate, decoder="greedy", beam_width=10):
            return ["the cat sat", "a dog"][int(waveform[0, 0])]

    pipeline = Fixed(ASRConfig(num_features=13))
    items = [(torch.zeros(1, 10), None, "THE CAT SAT DOWN"), (torch.ones(1, 10), None, "A BIG DOG")]
    metrics = asr.evaluate(pipeline, items)
    refs, hyps = ["the cat sat down", "a big dog"], ["the cat sat", "a dog"]
    assert metrics["wer"] == pytest.approx(jiwer.wer(refs, hyps))
    assert metrics["cer"] == pytest.approx(jiwer.cer(refs, hyps))


def test_tokenizer_round_trip_and_errors():
    tok = CharTokenizer()
    assert tok.decode(tok.encode("Don't STOP now")) == "don't stop now"
    assert tok.encode("a-b") == tok.encode("ab")
    with pytest.raises(ValueError, match="not in the alphabet"):
        CharTokenizer(strict=True).encode("a-b")
    with pytest.raises(ValueError, match="outside"):
        tok.decode([99])
    with pytest.raises(ValueError, match="repeats"):
        CharTokenizer("aa")


def brute_force_ctc(probs: np.ndarray, blank: int = 0) -> dict[tuple, float]:
    """Probability of every label sequence, summing over all alignments."""
    frames, classes = probs.shape
    totals: dict[tuple, float] = {}
    for path in itertools.product(range(classes), repeat=frames):
        p = math.prod(probs[t, c] for t, c in enumerate(path))
        collapsed = tuple(
            c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1])
        )
        totals[collapsed] = totals.get(collapsed, 0.0) + p
    return totals


@pytest.mark.parametrize("seed", range(6))
def test_ctc_decoders_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3) * 0.5, size=5)
    log_probs = torch.tensor(np.log(probs), dtype=torch.float32)
    totals = brute_force_ctc(probs)
    best = max(totals, key=totals.get)
    # an exhaustive beam finds the most probable labelling
    assert tuple(ctc_beam_search(log_probs, beam_width=1000, prune=-math.inf)) == best
    greedy_path = probs.argmax(1)
    expected = [
        int(c) for i, c in enumerate(greedy_path) if c != 0 and (i == 0 or c != greedy_path[i - 1])
    ]
    assert ctc_greedy_decode(log_probs) == expected


# ------------------------------------------------------------------------- vocoder


def tiny_vocoder_config(corpus) -> VocoderConfig:
    return tiny_run(
        VocoderConfig,
        corpus,
        n_rnn=16,
        n_fc=16,
        n_res_block=1,
        n_hidden=8,
        n_output=8,
        n_mels=20,
        segment_frames=3,
        max_eval_items=1,
    )


def test_vocoder_pipeline_end_to_end(corpus, tmp_path):
    pipeline, config = check_resume_is_exact(vocoder, tiny_vocoder_config(corpus), tmp_path)
    metrics = vocoder.evaluate(pipeline, max_seconds=0.1)
    assert set(metrics) == {"eval_loss", "mel_l1", "spectral_convergence"}
    assert all(math.isfinite(v) for v in metrics.values())

    loaded = vocoder.from_checkpoint(tmp_path / "split" / "checkpoint.pt")
    assert same_weights(loaded, pipeline)
    mel = loaded.mel(torch.randn(1, 1600) * 0.1)
    wave = loaded.vocode(mel, target=200, overlap=20)
    assert wave.shape == (1, mel.shape[-1] * config.hop_length)
    assert wave.abs().max() <= 1
    with pytest.raises(ValueError, match="mel must be"):
        loaded.vocode(torch.rand(3, 10))


def test_vocoder_segments_are_aligned(corpus):
    # The teacher-forced segment of frames [s, s + n) must hold exactly the samples
    # [s * hop, (s + n) * hop] of the utterance, and its mel the matching frames.
    config = tiny_vocoder_config(corpus)
    pipeline = vocoder.VocoderPipeline(config)
    items = vocoder._load_split(pipeline, config.root, "test-clean", 1)
    waveform, mel = items[0]
    mel_seg, wave_seg = vocoder._aligned(waveform, mel, config, start=5, frames=3)
    hop, pad = config.hop_length, 2
    assert torch.equal(wave_seg, waveform[5 * hop : 8 * hop + 1])
    assert torch.equal(mel_seg, mel[:, 5 - pad : 8 + pad])


def test_spectral_convergence_reference():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(8000).astype(np.float32)
    y = x + 0.1 * rng.standard_normal(8000).astype(np.float32)
    got = vocoder.spectral_convergence(torch.from_numpy(y), torch.from_numpy(x), n_fft=512)
    import scipy.signal

    def mag(v):
        return np.abs(
            scipy.signal.stft(
                v,
                nperseg=512,
                noverlap=384,
                window="hann",
                boundary="even",
                padded=False,
                scaling="psd",
            )[2]
        )

    expected = np.linalg.norm(mag(x) - mag(y)) / np.linalg.norm(mag(x))
    assert got == pytest.approx(expected, rel=0.05)


# ----------------------------------------------------------------------- separation


def tiny_separation_config(corpus) -> SeparationConfig:
    return tiny_run(
        SeparationConfig,
        corpus,
        enc_num_feats=16,
        msk_num_feats=8,
        msk_num_hidden_feats=16,
        msk_num_layers=2,
        msk_num_stacks=1,
        segment_seconds=0.25,
    )


def test_separation_pipeline_end_to_end(corpus, tmp_path):
    pipeline, config = check_resume_is_exact(separation, tiny_separation_config(corpus), tmp_path)
    metrics = separation.evaluate(pipeline)
    assert set(metrics) == {"eval_si_snr", "si_snri"}

    loaded = separation.from_checkpoint(config.out_dir)
    assert same_weights(loaded, pipeline)
    _, mixture, sources = LibriMix(corpus, subset="test", sample_rate=16000)[0]
    estimates = loaded.separate(mixture)
    assert estimates.shape == (2, mixture.shape[-1])
    # evaluate's SI-SNRi equals a direct computation with the best permutation
    one = separation.evaluate(loaded, items=[(mixture[0], torch.cat(sources))])
    target = torch.cat(sources)
    best = max(
        float(si_snr(estimates[list(p)], target).mean()) for p in itertools.permutations(range(2))
    )
    baseline = float(si_snr(mixture.expand_as(target), target).mean())
    assert one["si_snri"] == pytest.approx(best - baseline, abs=1e-4)
    with pytest.raises(ValueError, match="mono"):
        loaded.separate(torch.zeros(2, 100))


def _best_match(window: torch.Tensor, signal: torch.Tensor) -> float:
    """Highest normalised correlation of ``window`` with any same-length stretch of ``signal``."""
    signal = torch.nn.functional.pad(signal, (0, len(window)))  # windows may be zero-padded
    dots = torch.nn.functional.conv1d(signal[None, None], window[None, None])[0, 0]
    energy = torch.nn.functional.avg_pool1d(signal.pow(2)[None, None], len(window), 1)[0, 0]
    return float((dots / (energy * len(window) * window.pow(2).sum()).sqrt()).nan_to_num().max())


def test_dynamic_mixtures_pair_other_speakers_at_bounded_levels(corpus):
    items = separation._load_subset(tiny_separation_config(corpus), "train-100", None)
    assert all(s is not None and s[0] != s[1] for *_, s in items)
    indices = [0, 1, 2, 3] * 5
    mix, src = separation.dynamic_mixtures(
        items, indices, 4000, torch.Generator().manual_seed(0), gain_db=6.0
    )
    assert mix.shape == (20, 1, 4000) and src.shape == (20, 2, 4000)
    torch.testing.assert_close(mix[:, 0], src.sum(1))
    rms = src.pow(2).mean(-1).sqrt()
    voiced = (rms > 1e-4).all(1)  # a window may fall into a silent stretch
    assert int(voiced.sum()) >= 10
    spread = 20 * torch.log10(rms[voiced, 1] / rms[voiced, 0])
    assert float(spread.abs().max()) <= 6.0 + 1e-3 and float(spread.std()) > 0.5
    # source 1 is a window of the indexed mixture's first source; source 2 is a window of
    # some mixture's second source, never by the same speaker
    speaker = {}
    for b, i in enumerate(indices):
        if not voiced[b]:
            continue
        assert _best_match(src[b, 0], items[i][1][0]) > 0.999
        matches = [j for j, item in enumerate(items) if _best_match(src[b, 1], item[1][1]) > 0.999]
        assert matches and all(items[j][2][1] != items[i][2][0] for j in matches)
        speaker[b] = items[matches[0]][2][1]
    assert len(set(speaker.values())) > 1  # the partners vary
    again = separation.dynamic_mixtures(
        items, indices, 4000, torch.Generator().manual_seed(0), gain_db=6.0
    )
    assert torch.equal(again[1], src)


def test_mixture_speakers_from_librimix_names():
    assert separation.mixture_speakers("19-198-0001_8842-304647-0013.wav", 2) == ("19", "8842")
    assert separation.mixture_speakers("1-2-3_4-5-6_7-8-9_0007.wav", 3) == ("1", "4", "7")
    assert separation.mixture_speakers("1-2-3.wav", 2) is None


def test_separation_trains_with_dynamic_mixing(corpus, tmp_path):
    config = tiny_separation_config(corpus)
    config.dynamic_mixing = True
    pipeline, _ = check_resume_is_exact(separation, config, tmp_path)
    assert math.isfinite(separation.evaluate(pipeline)["si_snri"])


def test_corpus_mixtures_sum_to_the_mixture(corpus):
    _, mixture, sources = LibriMix(corpus, subset="train-100", sample_rate=16000)[0]
    torch.testing.assert_close(sources[0] + sources[1], mixture, rtol=0, atol=1e-6)


def test_from_checkpoint_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        asr.from_checkpoint(tmp_path)
    (tmp_path / "checkpoint.pt").write_bytes(b"garbage")
    with pytest.raises(DecodeError, match="checkpoint"):
        separation.from_checkpoint(tmp_path)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_pipelines_train_on_cuda(corpus, tmp_path):
    def on_cuda(config, name, amp=True):
        return dataclasses.replace(config, device="cuda", amp=amp, out_dir=str(tmp_path / name))

    pipeline = separation.train(on_cuda(tiny_separation_config(corpus), "sep"))
    assert next(pipeline.parameters()).device.type == "cuda"
    assert math.isfinite(separation.evaluate(pipeline)["si_snri"])
    model = vocoder.train(on_cuda(tiny_vocoder_config(corpus), "voc", amp=False))
    mel = model.mel(torch.zeros(1, 800, device="cuda"))
    assert model.vocode(mel).device.type == "cuda"
    assert model.vocode(mel, dtype=torch.bfloat16).dtype == torch.float32
    recognizer = asr.train(on_cuda(tiny_augmented_asr_config(corpus), "asr"))
    assert next(recognizer.model.parameters()).device.type == "cuda"
    waveform, sample_rate, *_ = LIBRISPEECH(corpus, url="test-clean")[0]
    assert isinstance(recognizer.transcribe(waveform, sample_rate), str)


# ----------------------------------------------------------------------------- bad files


def test_a_bad_file_stops_a_run_naming_it_or_is_skipped_and_named(corpus, tmp_path):
    """A truncated utterance in the training split: ``on_error`` raises or skips it by name."""
    import json

    root = tmp_path / "corpus"
    shutil.copytree(corpus, root)
    audio = sorted((root / "LibriSpeech" / "train-clean-100").rglob("*.flac"))
    audio += sorted((root / "LibriSpeech" / "train-clean-100").rglob("*.wav"))
    broken = audio[1]
    broken.write_bytes(broken.read_bytes()[:30])  # the header only, cut
    config = dataclasses.replace(tiny_run(ASRConfig, root, num_features=13, lr=1e-3), num_steps=2)
    with pytest.raises(DecodeError) as caught:
        asr.train(dataclasses.replace(config, out_dir=str(tmp_path / "raise")))
    assert caught.value.path == str(broken)
    skip = dataclasses.replace(config, out_dir=str(tmp_path / "skip"), on_error="skip")
    asr.train(skip)
    report = json.loads((tmp_path / "skip" / "data_report.json").read_text())
    assert list(report["skipped_files"]) == [str(broken)]
    metrics = json.loads((tmp_path / "skip" / "metrics.json").read_text())
    assert ["data_skipped_files", 1.0] in [r[1:] for r in metrics["records"]]
    with pytest.raises(ValueError, match="on_error"):
        dataclasses.replace(config, on_error="ignore")
