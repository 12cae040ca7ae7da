"""trivium.core.training: steps, clipping, AMP, checkpoints with exact resume, metric files."""

from __future__ import annotations

import csv
import json
import random

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DecodeError
from trivium.core.training import (
    MetricLogger,
    Trainer,
    get_rng_state,
    load_checkpoint,
    save_checkpoint,
    set_rng_state,
)

DATA = torch.Generator().manual_seed(0)
X = torch.randn(64, 4, generator=DATA)
Y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(64, 1, generator=DATA)


def make_trainer(out_dir=None, step_size=3, **kwargs) -> Trainer:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=step_size, gamma=0.5)
    kwargs.setdefault("device", "cpu")
    kwargs.setdefault("progress", False)
    return Trainer(model, optimizer, scheduler, out_dir=out_dir, **kwargs)


def batch_fn(step: int):
    index = torch.arange(step * 8, step * 8 + 8) % 64
    return X[index], Y[index]


def loss_fn(model, batch):
    # dropout and torch.rand make the loss depend on the global RNG: resume must restore it
    x, y = batch
    noise = 0.01 * torch.rand(1)
    loss = torch.nn.functional.mse_loss(model(x), y) + noise.squeeze()
    return loss, {"noise": float(noise)}


def test_fit_lowers_the_loss_and_logs():
    trainer = make_trainer(step_size=20)
    logger = trainer.fit(batch_fn, 40, loss_fn)
    losses = [v for _, v in logger.history("loss")]
    assert trainer.step == 40 and len(losses) == 40
    assert np.mean(losses[-5:]) < 0.3 * np.mean(losses[:5])
    assert logger.names() == ["loss", "noise"]


def test_resume_gives_exactly_the_uninterrupted_weights(tmp_path):
    straight = make_trainer(tmp_path / "a")
    straight.fit(batch_fn, 10, loss_fn)

    first = make_trainer(tmp_path / "b", checkpoint_every=4)
    first.fit(batch_fn, 6, loss_fn)  # checkpoints at 4 and at the end (6)
    torch.manual_seed(123)  # disturb every RNG between the runs
    random.seed(5)
    np.random.seed(5)
    second = make_trainer(tmp_path / "b")
    assert second.resume() == 6
    second.fit(batch_fn, 10, loss_fn)

    for p, q in zip(straight.model.parameters(), second.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert straight.optimizer.param_groups[0]["lr"] == second.optimizer.param_groups[0]["lr"]
    assert straight.logger.history("loss") == second.logger.history("loss")


def test_resume_from_an_earlier_checkpoint_drops_later_metrics(tmp_path):
    trainer = make_trainer(tmp_path, checkpoint_every=3)
    trainer.fit(batch_fn, 3, loss_fn)
    path = tmp_path / "at3.pt"
    trainer.save(path)
    trainer.fit(batch_fn, 5, loss_fn)
    again = make_trainer(tmp_path)
    assert again.resume(path) == 3
    assert [s for s, _ in again.logger.history("loss")] == [1, 2, 3]


def test_a_fresh_run_does_not_inherit_old_metrics(tmp_path):
    make_trainer(tmp_path).fit(batch_fn, 3, loss_fn)
    fresh = make_trainer(tmp_path)
    fresh.fit(batch_fn, 2, loss_fn)
    assert [s for s, _ in MetricLogger(tmp_path).history("loss")] == [1, 2]


def test_metric_files_csv_json_png(tmp_path):
    trainer = make_trainer(tmp_path, log_every=2)
    trainer.fit(batch_fn, 6, loss_fn, eval_fn=lambda m: {"val": 1.5}, eval_every=3)
    with open(tmp_path / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["name"] for r in rows} == {"loss", "noise", "val"}
    assert [int(r["step"]) for r in rows if r["name"] == "loss"] == [2, 4, 6]
    assert [float(r["value"]) for r in rows if r["name"] == "val"] == [1.5, 1.5]
    data = json.loads((tmp_path / "metrics.json").read_text())
    assert len(data["records"]) == len(rows)
    with Image.open(tmp_path / "metrics.png") as image:
        assert image.format == "PNG" and image.width > 100
    assert MetricLogger(tmp_path).history("val") == [(3, 1.5), (6, 1.5)]  # reopened


def test_gradient_clipping_bounds_the_update():
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    trainer = Trainer(
        model,
        torch.optim.SGD(model.parameters(), lr=1.0),
        device="cpu",
        grad_clip_norm=0.5,
        progress=False,
    )
    metrics = trainer.train_step(lambda m, b: (m(b) - 100).pow(2).mean(), torch.ones(4, 1))
    assert metrics["grad_norm"] == pytest.approx(200.0)  # reported before clipping
    assert float(model.weight.detach()) == pytest.approx(0.5)  # one SGD step of a clipped gradient


def test_amp_on_cpu_uses_bfloat16():
    trainer = make_trainer(amp=True)
    seen = []

    def loss(model, batch):
        out = model(batch[0])
        seen.append(out.dtype)
        return torch.nn.functional.mse_loss(out.float(), batch[1])

    trainer.fit(batch_fn, 2, loss)
    assert seen == [torch.bfloat16, torch.bfloat16]


def test_non_finite_loss_stops_before_the_update():
    trainer = make_trainer()
    before = [p.clone() for p in trainer.model.parameters()]
    with pytest.raises(FloatingPointError, match="step 1"):
        trainer.train_step(lambda m, b: m(b[0]).sum() * float("nan"), batch_fn(0))
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True))


def test_bad_checkpoints_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"\x00" * 100)
    with pytest.raises(DecodeError, match=r"bad\.pt"):
        load_checkpoint(bad)
    partial = save_checkpoint(tmp_path / "partial.pt", {"step": 1})
    with pytest.raises(DecodeError, match="lacks"):
        make_trainer().resume(partial)
    with pytest.raises(ValueError, match="grad_clip_norm"):
        make_trainer(grad_clip_norm=0.0)


def test_rng_state_round_trip():
    state = get_rng_state()
    expected = (random.random(), np.random.rand(), torch.rand(1))
    set_rng_state(state)
    assert (random.random(), np.random.rand()) == expected[:2]
    assert torch.equal(torch.rand(1), expected[2])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_trainer_on_cuda_with_amp_and_resume(tmp_path):
    trainer = make_trainer(tmp_path, device="cuda", amp=True)
    trainer.fit(batch_fn, 3, loss_fn)
    assert next(trainer.model.parameters()).device.type == "cuda"
    again = make_trainer(tmp_path, device="cuda", amp=True)
    assert again.resume() == 3
    again.fit(batch_fn, 4, loss_fn)
    assert again.step == 4


def test_plot_leaves_the_matplotlib_backend_and_pyplot_alone(tmp_path):
    """The plot is drawn on its own canvas: a fresh process keeps its backend, no pyplot."""
    import subprocess
    import sys

    script = (
        "import sys, matplotlib\n"
        "matplotlib.use('svg')\n"
        "from trivium.core.training import MetricLogger\n"
        f"logger = MetricLogger({str(tmp_path)!r})\n"
        "logger.log(0, loss=2.0); logger.log(1, loss=1.0)\n"
        "logger.plot()\n"
        "print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["svg", "False"]
    with Image.open(tmp_path / "metrics.png") as image:
        assert image.format == "PNG" and image.height > 100
