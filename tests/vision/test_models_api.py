"""The model registry (``list_models``, ``get_model_builder``, ``get_model``) against
torchvision's."""

from __future__ import annotations

import pytest
import torch
from peers import require_torchvision

from trivium.vision import models

# Builders only Trivium has (smaller RetinaNets on the same code).
EXTRA = {"retinanet_resnet18_fpn", "retinanet_resnet34_fpn"}


def test_list_models_names_torchvision_builders_by_package():
    tv = require_torchvision()
    ours = set(models.list_models())
    assert ours - set(tv.models.list_models()) == EXTRA
    assert "mobilenet_v3_small" in ours and "lraspp_mobilenet_v3_large" in ours
    for package in (None, "detection", "segmentation", "video"):
        mine = models if package is None else getattr(models, package)
        theirs = tv.models if package is None else getattr(tv.models, package)
        listed = models.list_models(mine)
        assert listed == sorted(listed) and listed
        assert set(listed) - EXTRA == set(tv.models.list_models(theirs)) & ours


@pytest.mark.parametrize(
    ("include", "exclude"),
    [("resnet*", None), (["vgg1?", "r3d*"], "*_bn"), (None, ["*"]), ("*_fpn*", "mask*")],
)
def test_list_models_filters_as_torchvision(include, exclude):
    tv = require_torchvision()
    ours = models.list_models(include=include, exclude=exclude)
    theirs = [n for n in tv.models.list_models(include=include, exclude=exclude)]
    assert [n for n in ours if n not in EXTRA] == [n for n in theirs if n in models.list_models()]


def test_get_model_builds_the_builders_model():
    tv = require_torchvision()
    torch.manual_seed(0)
    ours = models.get_model("MobileNet_V3_Small", weights=None, num_classes=3)
    theirs = tv.models.get_model("mobilenet_v3_small", weights=None, num_classes=3)
    assert models.get_model_builder("mobilenet_v3_small") is models.mobilenet_v3_small
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    shapes = [
        (a.shape, b.shape)
        for a, b in zip(*(m.state_dict().values() for m in (ours, theirs)), strict=True)
    ]
    assert all(a == b for a, b in shapes)
    seg = models.get_model("lraspp_mobilenet_v3_large", num_classes=4, weights_backbone=None)
    assert type(seg) is models.segmentation.LRASPP


def test_unknown_model_and_bad_arguments():
    with pytest.raises(ValueError, match="Unknown model nope"):
        models.get_model("nope")
    with pytest.raises(TypeError, match="name must be a str"):
        models.get_model_builder(3)
    with pytest.raises(TypeError, match="module must be a module"):
        models.list_models("detection")
