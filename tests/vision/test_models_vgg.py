"""VGG against torchvision's: structure of every builder, outputs, weights."""

from __future__ import annotations

import pytest
import torch
from model_parity import assert_same_structure, loaded_from, randomize_norms

from trivium.vision import models
from trivium.vision.models import vgg

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("name", vgg.VGG_BUILDERS)
def test_structure_matches_torchvision(tv, name):
    assert_same_structure(getattr(models, name), getattr(tv.models, name), num_classes=7)


def _random_init(model: torch.nn.Module) -> torch.nn.Module:
    # Built on the meta device and filled here: a full VGG init draws ~130 M numbers.
    model.to_empty(device="cpu")
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02, generator=g)
        for b in model.buffers():
            b.zero_()
    return randomize_norms(model)


def test_outputs_match_torchvision(tv):
    # One builder of the family (they share VGG and make_layers), with BatchNorm.
    with torch.device("meta"):
        theirs = tv.models.vgg11_bn(num_classes=5, dropout=0.0)
    theirs = _random_init(theirs)
    ours = loaded_from(models.vgg11_bn, theirs, num_classes=5, dropout=0.0)
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    for training in (False, True):
        ours.train(training), theirs.train(training)
        with torch.no_grad():
            torch.testing.assert_close(ours(x), theirs(x), rtol=1e-4, atol=1e-5)


def test_weights_fix_num_classes(tmp_path):
    path = tmp_path / "vgg.pth"
    torch.save({"classifier.6.weight": torch.zeros(3, 4096)}, path)
    with pytest.raises(ValueError, match="num_classes=4 was given"):
        models.vgg11(weights=path, num_classes=4)
    with pytest.raises(ValueError, match="channel counts or 'M'"):
        vgg.make_layers([8, "X"])
