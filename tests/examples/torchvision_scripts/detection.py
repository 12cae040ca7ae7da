"""Object detection training as torchvision's reference script writes it
(``references/detection/train.py``, ``presets.py``, ``coco_utils.py``, ``utils.py``):
CocoDetection wrapped for the v2 transforms (``wrap_dataset_for_transforms_v2``, boxes,
labels and masks as tv_tensors), the "ssd" training preset (RandomPhotometricDistort,
RandomZoomOut, RandomIoUCrop, RandomHorizontalFlip, SanitizeBoundingBoxes), Faster R-CNN
MobileNetV3-Large 320 FPN, SGD on the sum of the loss dict, then the model's detections
on the val split.

Only torchvision's names are used: the tests run it as it is and with its imports
renamed to ``trivium.vision`` (``tests/examples/test_torchvision_scripts.py``).

Run::

    python detection.py COCO_ROOT WEIGHTS.pt [--steps 2] [--test-only]
"""

import argparse
import math
import os
from collections import defaultdict

import torch
import torchvision
from torchvision import tv_tensors
from torchvision.transforms import v2


class DetectionPresetTrain:
    def __init__(self, *, data_augmentation, hflip_prob=0.5, mean=(123.0, 117.0, 104.0)):
        transforms = []
        if data_augmentation == "hflip":
            transforms += [v2.RandomHorizontalFlip(p=hflip_prob)]
        elif data_augmentation == "ssd":
            fill = defaultdict(lambda: mean, {tv_tensors.Mask: 0})
            transforms += [
                v2.RandomPhotometricDistort(),
                v2.RandomZoomOut(fill=fill),
                v2.RandomIoUCrop(),
                v2.RandomHorizontalFlip(p=hflip_prob),
            ]
        else:
            raise ValueError(f'Unknown data augmentation policy "{data_augmentation}"')
        transforms += [
            v2.PILToTensor(),
            v2.ToDtype(torch.float, scale=True),
            v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
            v2.SanitizeBoundingBoxes(),
            v2.ToPureTensor(),
        ]
        self.transforms = v2.Compose(transforms)

    def __call__(self, img, target):
        return self.transforms(img, target)


class DetectionPresetEval:
    def __init__(self):
        self.transforms = v2.Compose(
            [v2.PILToTensor(), v2.ToDtype(torch.float, scale=True), v2.ToPureTensor()]
        )

    def __call__(self, img, target):
        return self.transforms(img, target)


def get_coco(root, image_set, transforms, with_masks=True):
    img_folder = os.path.join(root, image_set)
    ann_file = os.path.join(root, "annotations", f"instances_{image_set}.json")
    dataset = torchvision.datasets.CocoDetection(img_folder, ann_file, transforms=transforms)
    target_keys = ["boxes", "labels", "image_id"]
    if with_masks:
        target_keys += ["masks"]
    return torchvision.datasets.wrap_dataset_for_transforms_v2(dataset, target_keys=target_keys)


def collate_fn(batch):
    return tuple(zip(*batch, strict=True))


def evaluate(model, data_loader):
    model.eval()
    detections = []
    with torch.inference_mode():
        for images, targets in data_loader:
            outputs = model(list(images))
            for target, output in zip(targets, outputs, strict=True):
                detections.append((target["image_id"], {k: v.clone() for k, v in output.items()}))
    return detections


def main(argv=None):
    parser = argparse.ArgumentParser(description="Faster R-CNN on a COCO folder")
    parser.add_argument("data_path")
    parser.add_argument("weights")
    parser.add_argument("--model", default="fasterrcnn_mobilenet_v3_large_320_fpn")
    parser.add_argument("--num-classes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--data-augmentation", default="ssd")
    parser.add_argument("--min-size", type=int, default=96)
    parser.add_argument("--max-size", type=int, default=128)
    parser.add_argument("--test-only", action="store_true")
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    train_set = get_coco(
        args.data_path, "train", DetectionPresetTrain(data_augmentation=args.data_augmentation)
    )
    val_set = get_coco(args.data_path, "val", DetectionPresetEval())
    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=args.batch_size, shuffle=True, collate_fn=collate_fn, drop_last=True
    )
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=1, collate_fn=collate_fn)

    kwargs = {"min_size": args.min_size, "max_size": args.max_size}
    model = torchvision.models.get_model(
        args.model, weights=None, weights_backbone=None, num_classes=args.num_classes, **kwargs
    )
    model.load_state_dict(torch.load(args.weights, weights_only=True))
    if args.test_only:
        return {"detections": evaluate(model, val_loader)}

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=1e-4)

    model.train()
    losses, loss_names, target_keys = [], [], []
    while len(losses) < args.steps:
        for images, targets in train_loader:
            images = list(image for image in images)
            targets = [{k: v for k, v in t.items()} for t in targets]
            loss_dict = model(images, targets)
            loss = sum(loss for loss in loss_dict.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            loss_names.append(sorted(loss_dict))
            target_keys.append(sorted(targets[0]))
            print(f"step {len(losses)}: loss {losses[-1]:.4f}")
            if len(losses) == args.steps:
                break

    detections = evaluate(model, val_loader)
    assert all(math.isfinite(x) for x in losses)
    return {
        "losses": losses,
        "loss_names": loss_names,
        "target_keys": target_keys,
        "detections": detections,
    }


if __name__ == "__main__":
    main()
