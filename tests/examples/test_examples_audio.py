"""The audio example pipelines run end to end with tiny settings (and answer --help)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trivium.audio.io import info

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "asr": ROOT / "examples" / "wav2letter_librispeech" / "train.py",
    "vocoder": ROOT / "examples" / "wavernn_libritts" / "train.py",
    "separation": ROOT / "examples" / "convtasnet_librimix" / "train.py",
}

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES[name])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli_args(**options) -> list[str]:
    """``--name value`` per option: ``_`` becomes ``-``, a tuple gives values, ``True`` a flag."""
    args = []
    for name, value in options.items():
        args.append("--" + name.replace("_", "-"))
        if value is not True:
            args.extend(str(v) for v in (value if isinstance(value, tuple) else (value,)))
    return args


def tiny_run_args(out_dir: Path, **options) -> list[str]:
    """A two-step run of batch 2 on the CPU into ``out_dir``, with the example's ``options``."""
    return cli_args(out_dir=out_dir, steps=2, batch_size=2, device="cpu", **options)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from trivium.audio.corpora import build_corpus

    return build_corpus(tmp_path_factory.mktemp("corpus"), 4, 4, (4, 2))


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_help(name):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES[name]), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "--root" in result.stdout and "--steps" in result.stdout
    # every option shows its default
    steps = {"asr": 400, "vocoder": 1000, "separation": 500}[name]
    text = " ".join(result.stdout.split())  # argparse wraps long help lines
    assert f"(default: {steps})" in text
    assert "(default: data/espeak_corpus)" in text
    assert "(default: (300, 60))" in text
    assert "(default: auto)" in text
    assert "(default: None)" not in text


def test_asr_example_builds_its_corpus_and_resumes(tmp_path):
    module = load("asr")
    options = {
        "corpus_dir": tmp_path / "corpus",
        "corpus_size": (4, 2),
        "num_features": 13,
        "checkpoint_every": 1,
        # the embedded-corpus recipe's options: narrow model, augmented log-mel input
        "input_type": "power_spectrum",
        "hidden_channels": 16,
        "head_channels": 32,
        "freq_warp": 0.15,
        "time_stretch": 0.15,
    }
    args = tiny_run_args(tmp_path / "run", **options)
    metrics = module.main(args)
    assert set(metrics) == {"wer", "cer"}
    assert json.loads((tmp_path / "run" / "eval.json").read_text()) == metrics
    assert (tmp_path / "corpus" / "LibriSpeech" / "test-clean").is_dir()
    config = module.asr.from_checkpoint(tmp_path / "run").config
    assert (config.hidden_channels, config.freq_warp, config.input_type) == (
        16,
        0.15,
        "power_spectrum",
    )
    # a second call with more steps resumes from the checkpoint
    again = module.main(args + cli_args(steps=3))  # the last --steps wins
    assert set(again) == {"wer", "cer"}
    rows = (tmp_path / "run" / "metrics.csv").read_text().splitlines()[1:]
    steps = [row.split(",")[0] for row in rows if row.split(",")[1] == "loss"]
    assert steps == ["1", "2", "3"]


def test_vocoder_example(corpus, tmp_path):
    out = tmp_path / "run"
    metrics = load("vocoder").main(
        tiny_run_args(
            out,
            root=corpus,
            segment_frames=2,
            n_rnn=16,
            n_fc=16,
            max_eval_items=1,
            eval_seconds=0.05,
        )
    )
    assert {"eval_loss", "mel_l1", "spectral_convergence", "first_train_loss"} <= set(metrics)
    assert info(out / "vocoded.wav").sample_rate == 16000


def test_separation_example(corpus, tmp_path):
    metrics = load("separation").main(
        tiny_run_args(
            tmp_path / "run",
            root=corpus,
            segment_seconds=0.2,
            dynamic_mixing=True,
            enc_kernel_size=32,
        )
    )
    assert set(metrics) == {"eval_si_snr", "si_snri"}
    assert (tmp_path / "run" / "metrics.png").is_file()


def test_vocoder_loss_fall_averages_the_first_and_last_steps():
    losses = [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    history = list(enumerate(losses, start=1))
    got = load("vocoder").loss_fall(history, window=2)
    assert got == pytest.approx(
        {"first_train_loss": 5.5, "last_train_loss": 1.5, "train_loss_fall": 1 - 1.5 / 5.5}
    )
    # a window longer than half the run is cut to half: the two means never overlap
    got = load("vocoder").loss_fall(history, window=10)
    assert got["first_train_loss"] == pytest.approx(5.0)
    assert got["last_train_loss"] == pytest.approx(2.0)
    assert load("vocoder").loss_fall([], window=5) == {}


class _Prepared(Exception):
    """Raised by the stubbed ``train``: the example got as far as its config."""


def prepare(name: str, argv: list[str], monkeypatch) -> Path:
    """Run an example's ``main`` up to training; the dataset root its config got."""
    module = load(name)

    def stop(config, **kwargs):
        raise _Prepared(config.root)

    monkeypatch.setattr(getattr(module, name), "train", stop)
    with pytest.raises(_Prepared) as prepared:
        module.main(argv)
    return Path(str(prepared.value))


def check_corpus(root: Path) -> None:
    from trivium.audio.datasets import LIBRISPEECH, LIBRITTS, LibriMix

    for url, count in (("train-clean-100", 4), ("test-clean", 2)):
        assert len(LIBRISPEECH(root, url=url)) == count
        assert len(LIBRITTS(root, url=url)) == count
        LIBRISPEECH(root, url=url)[0]
    for subset, count in (("train-100", 2), ("test", 1)):
        mixtures = LibriMix(root, subset=subset, sample_rate=16000)
        assert len(mixtures) == count
        sample_rate, _, sources = mixtures[0]
        assert sample_rate == 16000 and len(sources) == 2


def mtimes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_examples_share_one_corpus_dir(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    common = cli_args(corpus_dir=corpus, corpus_size=(4, 2), device="cpu")
    argv = {
        "asr": common,
        "vocoder": common,
        "separation": [*common, *cli_args(mixtures=(2, 1))],
    }
    # Separation first, then the speech examples: these used to rebuild the corpus
    # without its mixtures.
    for name in ("separation", "asr", "vocoder"):
        assert prepare(name, argv[name], monkeypatch) == corpus
    check_corpus(corpus)
    before = mtimes(corpus)
    for name in ("asr", "separation", "vocoder", "separation"):
        prepare(name, argv[name], monkeypatch)
    assert mtimes(corpus) == before  # nothing rebuilt
    check_corpus(corpus)
