"""Semantic segmentation training as torchvision's reference script writes it
(``references/segmentation/train.py``): VOCSegmentation with v2 transforms on
(image, mask) pairs, LR-ASPP MobileNetV3, SGD on cross-entropy ignoring 255, then the
mIoU of the confusion matrix on the val split.

Only torchvision's names are used: the tests run it as it is and with its imports
renamed to ``trivium.vision`` (``tests/examples/test_torchvision_scripts.py``).

Run::

    python segmentation.py VOC_ROOT WEIGHTS.pt [--steps 2] [--size 64]
"""

import argparse
import math

import torch
import torchvision
from torchvision import tv_tensors
from torchvision.transforms import v2

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def wrap_into_tv_tensors(image, target):
    """The target as an int64 Mask (the reference's ``WrapIntoFeatures``)."""
    mask = v2.functional.pil_to_tensor(target).squeeze(0)
    return image, tv_tensors.Mask(mask, dtype=torch.int64)


def get_transform(size):
    # the reference preset's "tv_tensor" backend: the image as a tv_tensors.Image
    return v2.Compose(
        [
            wrap_into_tv_tensors,
            v2.ToImage(),
            v2.Resize((size, size)),
            v2.ToDtype(dtype={tv_tensors.Image: torch.float32, "others": None}, scale=True),
            v2.Normalize(mean=MEAN, std=STD),
            v2.ToPureTensor(),
        ]
    )


class ConfusionMatrix:
    def __init__(self, num_classes):
        self.num_classes = num_classes
        self.mat = torch.zeros((num_classes, num_classes), dtype=torch.int64)

    def update(self, a, b):
        n = self.num_classes
        k = (a >= 0) & (a < n)
        inds = n * a[k].to(torch.int64) + b[k]
        self.mat += torch.bincount(inds, minlength=n**2).reshape(n, n)

    def compute(self):
        h = self.mat.float()
        acc_global = torch.diag(h).sum() / h.sum()
        iu = torch.diag(h) / (h.sum(1) + h.sum(0) - torch.diag(h))
        return acc_global, iu


def criterion(inputs, target):
    losses = {}
    for name, x in inputs.items():
        losses[name] = torch.nn.functional.cross_entropy(x, target, ignore_index=255)
    if len(losses) == 1:
        return losses["out"]
    return losses["out"] + 0.5 * losses["aux"]


def evaluate(model, data_loader, num_classes):
    model.eval()
    confmat = ConfusionMatrix(num_classes)
    with torch.inference_mode():
        for image, target in data_loader:
            output = model(image)["out"]
            confmat.update(target.flatten(), output.argmax(1).flatten())
    return confmat


def main(argv=None):
    parser = argparse.ArgumentParser(description="LR-ASPP on VOCSegmentation")
    parser.add_argument("data_path")
    parser.add_argument("weights")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    train_set = torchvision.datasets.VOCSegmentation(
        args.data_path, year="2012", image_set="train", transforms=get_transform(args.size)
    )
    val_set = torchvision.datasets.VOCSegmentation(
        args.data_path, year="2012", image_set="val", transforms=get_transform(args.size)
    )
    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=args.batch_size, shuffle=True, drop_last=True
    )
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=1)

    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=21
    )
    model.load_state_dict(torch.load(args.weights, weights_only=True))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=1e-4)

    model.train()
    losses, shapes = [], []
    while len(losses) < args.steps:
        for image, target in train_loader:
            output = model(image)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            shapes.append(tuple(output["out"].shape))
            print(f"step {len(losses)}: loss {losses[-1]:.4f}")
            if len(losses) == args.steps:
                break

    confmat = evaluate(model, val_loader, 21)
    acc_global, iu = confmat.compute()
    miou = iu.nanmean().item()  # classes absent from both target and prediction: NaN
    print(f"global correct {acc_global.item() * 100:.1f}, mean IoU {miou * 100:.1f}")
    assert all(math.isfinite(x) for x in losses)
    return {"losses": losses, "shapes": shapes, "miou": miou, "confmat": confmat.mat}


if __name__ == "__main__":
    main()
