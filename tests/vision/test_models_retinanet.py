"""RetinaNet against torchvision's: same state dict, detections and losses; bad targets; training.

torchvision's detection models are its pure-Python code (see ``tests/peers.py``);
only its ``nms`` is a C++ op, absent here, so the tests register
``torchvision::nms`` with an independent NumPy greedy NMS (``tests/detection_peers.py``).
"""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
from detection_peers import torchvision_with_nms

from trivium.vision.models import (
    RetinaNet,
    retinanet_resnet18_fpn,
    retinanet_resnet34_fpn,
    retinanet_resnet50_fpn,
)
from trivium.vision.ops import FrozenBatchNorm2d
from trivium.vision.tv_tensors import BoundingBoxes

SIZES = {"min_size": 320, "max_size": 480}


@pytest.fixture(scope="module")
def tv():
    with torchvision_with_nms() as torchvision:
        yield torchvision


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def pair(tv):
    """torchvision's retinanet_resnet50_fpn (random init) and ours with its state dict."""
    torch.manual_seed(0)
    theirs = tv.models.detection.retinanet_resnet50_fpn(
        weights=None, weights_backbone=None, score_thresh=0.02, **SIZES
    )
    # Spread the class logits (at init they all sit near the 0.01 prior) for real detections.
    with torch.no_grad():
        theirs.head.classification_head.cls_logits.weight.normal_(
            0.0, 0.03, generator=torch.Generator().manual_seed(1)
        )
    ours = retinanet_resnet50_fpn(score_thresh=0.02, **SIZES)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return ours, theirs


def _images(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(3, 300, 410, generator=g), torch.rand(3, 352, 270, generator=g)]


def _targets() -> list[dict[str, torch.Tensor]]:
    boxes = torch.tensor(
        [[10.0, 20.0, 110.0, 200.0], [50.0, 60.0, 300.0, 250.0], [200.0, 30.0, 260.0, 90.0]]
    )
    return [
        {"boxes": boxes, "labels": torch.tensor([1, 5, 90])},
        {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)},
    ]


def test_state_dict_names_match_torchvision(pair):
    ours, theirs = pair
    ours_state, tv_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(tv_state)
    assert all(ours_state[k].shape == v.shape for k, v in tv_state.items())


def test_same_seed_same_initial_weights(tv):
    torch.manual_seed(3)
    theirs = tv.models.detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None)
    torch.manual_seed(3)
    ours = retinanet_resnet50_fpn()
    for (name, a), (_, b) in zip(
        ours.state_dict().items(), theirs.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_eval_detections_match_torchvision(pair):
    ours, theirs = pair
    ours.eval(), theirs.eval()
    images = _images()
    with torch.inference_mode():
        out, expected = ours(images), theirs(images)
    assert len(out) == len(expected) == 2
    for got, want, image in zip(out, expected, images, strict=True):
        assert sorted(got) == ["boxes", "labels", "scores"]
        assert len(want["boxes"]) > 10  # the comparison is not vacuous
        assert got["boxes"].shape == want["boxes"].shape
        torch.testing.assert_close(got["boxes"], want["boxes"], rtol=0, atol=1e-3)
        torch.testing.assert_close(got["scores"], want["scores"], rtol=0, atol=1e-4)
        assert torch.equal(got["labels"], want["labels"])
        # Boxes are in the input image's coordinates.
        h, w = image.shape[-2:]
        assert float(got["boxes"][:, 2].max()) <= w and float(got["boxes"][:, 3].max()) <= h


def test_eval_ignores_targets(pair):
    ours, _ = pair
    ours.eval()
    images = _images()
    bad = [{"boxes": torch.tensor([[5.0, 5.0, 1.0, 1.0]])}, {}]  # would be refused in training
    with torch.inference_mode():
        out, plain = ours(images, bad), ours(images)
    for a, b in zip(out, plain, strict=True):
        assert torch.equal(a["boxes"], b["boxes"]) and torch.equal(a["scores"], b["scores"])


# One box loss in the quick tier: the three share everything but the loss (about 40 s each).
_SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "loss_type", ["l1", pytest.param("smooth_l1", marks=_SLOW), pytest.param("giou", marks=_SLOW)]
)
def test_train_losses_match_torchvision(pair, loss_type):
    ours, theirs = pair
    ours.train(), theirs.train()
    ours.head.regression_head._loss_type = theirs.head.regression_head._loss_type = loss_type
    images = _images(1)
    losses, expected = ours(images, _targets()), theirs(images, _targets())
    assert sorted(losses) == ["bbox_regression", "classification"]
    for key in expected:
        torch.testing.assert_close(losses[key], expected[key], rtol=0, atol=1e-5)
    # The gradients flow to the same parameters with the same values.
    sum(losses.values()).backward()
    sum(expected.values()).backward()
    ours_params = dict(ours.named_parameters())
    for name, param in theirs.named_parameters():
        if name.startswith("head.") and param.grad is not None:
            torch.testing.assert_close(ours_params[name].grad, param.grad, rtol=1e-4, atol=1e-6)
    ours.zero_grad(), theirs.zero_grad()
    ours.head.regression_head._loss_type = theirs.head.regression_head._loss_type = "l1"


def test_bounding_boxes_targets_are_plain_boxes(pair):
    ours, _ = pair
    ours.train()
    images = _images(1)
    targets = _targets()
    typed = [dict(t) for t in targets]
    typed[0]["boxes"] = BoundingBoxes(targets[0]["boxes"], format="XYXY", canvas_size=(300, 410))
    with torch.no_grad():
        a, b = ours(images, typed), ours(images, targets)
    for key in b:
        assert torch.equal(a[key], b[key])


def _v1_keys(state: dict[str, torch.Tensor]) -> OrderedDict[str, torch.Tensor]:
    """The layout of torchvision's published retinanet_resnet50_fpn_coco checkpoint."""
    old: OrderedDict[str, torch.Tensor] = OrderedDict()
    for key, value in state.items():
        if key.endswith("num_batches_tracked"):
            continue  # its backbone has FrozenBatchNorm2d
        for block in ("inner_blocks", "layer_blocks"):
            key = key.replace(f"fpn.{block}.0.0.", f"fpn.{block}.0.")
            for i in range(1, 4):
                key = key.replace(f"fpn.{block}.{i}.0.", f"fpn.{block}.{i}.")
        for i in range(4):
            key = key.replace(f"_head.conv.{i}.0.", f"_head.conv.{2 * i}.")
        old[key] = value
    return old


def test_published_checkpoint_layout_loads(pair, tmp_path):
    _, theirs = pair
    old = _v1_keys(theirs.state_dict())  # no version metadata, as in the .pth file
    assert "head.classification_head.conv.6.weight" in old
    assert "backbone.fpn.inner_blocks.2.weight" in old
    path = tmp_path / "retinanet_resnet50_fpn_coco.pth"
    torch.save(old, path)
    model = retinanet_resnet50_fpn(weights=str(path), **SIZES)  # strict load inside
    frozen = [m for m in model.modules() if isinstance(m, FrozenBatchNorm2d)]
    assert frozen and all(m.eps == 0.0 for m in frozen)  # as torchvision for these weights
    assert model.head.classification_head.num_classes == 91
    assert torch.equal(
        model.head.classification_head.conv[3][0].weight,
        theirs.head.classification_head.conv[3][0].weight,
    )
    # Trainable layers as torchvision's with weights: layer2..layer4.
    trainable = {
        n.split(".")[0] for n, p in model.backbone.body.named_parameters() if p.requires_grad
    }
    assert trainable == {"layer2", "layer3", "layer4"}
    with pytest.raises(ValueError, match="num_classes=3 was given"):
        retinanet_resnet50_fpn(weights=str(path), num_classes=3)


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(0)
    return retinanet_resnet18_fpn(num_classes=4, min_size=96, max_size=128)


def _small_batch() -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
    g = torch.Generator().manual_seed(0)
    images = [torch.rand(3, 96, 128, generator=g), torch.rand(3, 96, 96, generator=g)]
    targets = [
        {"boxes": torch.tensor([[8.0, 8.0, 60.0, 50.0]]), "labels": torch.tensor([1])},
        {"boxes": torch.tensor([[30.0, 20.0, 90.0, 90.0]]), "labels": torch.tensor([3])},
    ]
    return images, targets


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda t: t[0].update(boxes=torch.zeros(4)), ValueError, r"shape \[N, 4\].*index 0"),
        (lambda t: t[1].update(boxes=torch.zeros(1, 5)), ValueError, r"shape \[N, 4\].*index 1"),
        (
            lambda t: t[1].update(boxes=torch.tensor([[30.0, 20.0, 10.0, 90.0]])),
            ValueError,
            r"positive height and width.*\[30\.0, 20\.0, 10\.0, 90\.0\].*index 1",
        ),
        (
            lambda t: t[0].update(boxes=torch.tensor([[8.0, 50.0, 60.0, 50.0]])),
            ValueError,
            r"invalid box \[8\.0, 50\.0, 60\.0, 50\.0\] for target at index 0",
        ),
        (lambda t: t[0].pop("labels"), ValueError, r"targets\[0\] has no 'labels'"),
        (lambda t: t[1].pop("boxes"), ValueError, r"targets\[1\] has no 'boxes'"),
        (
            lambda t: t[0].update(boxes=torch.tensor([[8, 8, 60, 50]])),
            TypeError,
            "floating point",
        ),
        (lambda t: t[0].update(labels=torch.tensor([1, 2])), ValueError, r"shape \[1\]"),
        (lambda t: t[0].update(labels=torch.tensor([4])), ValueError, r"in \[0, 4\)"),
        (lambda t: t[0].update(labels=torch.tensor([1.0])), TypeError, "int64"),
        (lambda t: t.pop(), ValueError, "2 images, got 1"),
    ],
)
def test_bad_targets_are_refused(small, change, error, message):
    small.train()
    images, targets = _small_batch()
    change(targets)
    with pytest.raises(error, match=message):
        small(images, targets)


def test_training_needs_targets(small):
    small.train()
    images, _ = _small_batch()
    with pytest.raises(ValueError, match="targets should not be none when in training mode"):
        small(images)


def test_bad_images_are_refused(small):
    small.eval()
    with pytest.raises(ValueError, match=r"3d tensors of shape \[C, H, W\]"):
        small([torch.rand(1, 3, 32, 32)])
    with pytest.raises(TypeError, match="floating type"):
        small([torch.zeros(3, 32, 32, dtype=torch.uint8)])


def test_image_without_boxes_trains(small):
    small.train()
    images, _ = _small_batch()
    empty = {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)}
    losses = small(images, [empty, dict(empty)])
    assert losses["bbox_regression"].item() == 0.0
    assert losses["classification"].item() > 0.0


def test_resnet18_fpn_learns():
    torch.manual_seed(0)
    model = retinanet_resnet18_fpn(num_classes=3, min_size=96, max_size=128)
    model.train()
    images, targets = _small_batch()
    targets[1]["labels"] = torch.tensor([2])
    optimizer = torch.optim.SGD(
        [p for p in model.parameters() if p.requires_grad], lr=0.02, momentum=0.9
    )
    history = []
    for _ in range(10):
        losses = model(images, targets)
        loss = losses["classification"] + losses["bbox_regression"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    assert history[-1] < 0.85 * history[0], history


def test_small_configurations():
    resnet34 = retinanet_resnet34_fpn(num_classes=2)
    inner = [block[0].in_channels for block in resnet34.backbone.fpn.inner_blocks]
    assert inner == [128, 256, 512]
    assert resnet34.backbone.fpn.extra_blocks.use_P5
    assert isinstance(resnet34, RetinaNet)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        retinanet_resnet18_fpn(weights="COCO_V1")
    with pytest.raises(ValueError, match="pretrained=True"):
        retinanet_resnet18_fpn(pretrained=True)


def _head_levels(model, images):
    batch, _ = model.transform(images)
    features = list(model.backbone(batch.tensors).values())
    return model.head.forward_levels(features)


def test_channels_last_gives_the_same_head_outputs(small):
    small.eval()
    images, _ = _small_batch()
    cl = retinanet_resnet18_fpn(num_classes=4, min_size=96, max_size=128)
    cl.load_state_dict(small.state_dict())
    cl.eval().to(memory_format=torch.channels_last)
    with torch.inference_mode():
        expected, out = _head_levels(small, images), _head_levels(cl, images)
        assert len(cl(images)) == 2
    for key in expected:
        for got, want in zip(out[key], expected[key], strict=True):
            torch.testing.assert_close(got, want, rtol=0, atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(small):
    small.eval()
    images, targets = _small_batch()
    model = retinanet_resnet18_fpn(num_classes=4, min_size=96, max_size=128)
    model.load_state_dict(small.state_dict())
    model.cuda().eval()
    cuda_images = [img.cuda() for img in images]
    with torch.inference_mode():
        expected, out = _head_levels(small, images), _head_levels(model, cuda_images)
        detections = model(cuda_images)
    for key in expected:
        for got, want in zip(out[key], expected[key], strict=True):
            torch.testing.assert_close(got.cpu(), want, rtol=0, atol=1e-3)
    assert all(d["boxes"].device.type == "cuda" for d in detections)
    model.train()
    cuda_targets = [{k: v.cuda() for k, v in t.items()} for t in targets]
    losses = model(cuda_images, cuda_targets)
    small.train()
    expected_losses = small(images, targets)
    for key in expected_losses:
        torch.testing.assert_close(losses[key].cpu(), expected_losses[key], rtol=1e-3, atol=1e-4)


def _small_images(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(3, 96, 128, generator=g), torch.rand(3, 112, 96, generator=g)]


def _small_targets() -> list[dict[str, torch.Tensor]]:
    return [
        {
            "boxes": torch.tensor([[8.0, 10.0, 60.0, 80.0], [50.0, 20.0, 120.0, 90.0]]),
            "labels": torch.tensor([1, 90]),
        },
        {"boxes": torch.tensor([[20.0, 30.0, 70.0, 100.0]]), "labels": torch.tensor([7])},
    ]


def test_v2_matches_torchvision(tv):
    from trivium.vision.models import retinanet_resnet50_fpn_v2

    sizes = {"min_size": 96, "max_size": 128, "score_thresh": 0.02}
    torch.manual_seed(0)
    theirs = tv.models.detection.retinanet_resnet50_fpn_v2(
        weights=None, weights_backbone=None, **sizes
    )
    with torch.no_grad():
        theirs.head.classification_head.cls_logits.weight.normal_(
            0.0, 0.03, generator=torch.Generator().manual_seed(1)
        )
    ours = retinanet_resnet50_fpn_v2(**sizes)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert ours.head.regression_head._loss_type == "giou"
    ours.eval(), theirs.eval()
    images = _small_images()
    with torch.inference_mode():
        out, expected = ours(images), theirs(images)
    for got, want in zip(out, expected, strict=True):
        assert len(want["boxes"]) > 10  # the comparison is not vacuous
        torch.testing.assert_close(got["boxes"], want["boxes"], rtol=0, atol=1e-3)
        torch.testing.assert_close(got["scores"], want["scores"], rtol=0, atol=1e-4)
        assert torch.equal(got["labels"], want["labels"])
    ours.train(), theirs.train()
    losses, expected_losses = ours(images, _small_targets()), theirs(images, _small_targets())
    assert sorted(losses) == sorted(expected_losses) == ["bbox_regression", "classification"]
    for key, value in expected_losses.items():
        torch.testing.assert_close(losses[key], value, rtol=0, atol=1e-5)
