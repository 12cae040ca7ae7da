"""Image classification training as torchvision's reference script writes it
(``references/classification/train.py``, ``presets.py``, ``transforms.py``, ``utils.py``):
ImageFolder with the v2 presets (RandomResizedCrop, flip, an auto-augment policy,
ToDtype, Normalize, RandomErasing), MixUp / CutMix chosen per batch in ``collate_fn``,
SGD with label smoothing, the exponential moving average of the weights
(``torch.optim.swa_utils.AveragedModel``), then the top-1 / top-5 accuracy of the model
and of its average on the val folder (Resize, CenterCrop).

Only torchvision's names are used: the tests run it as it is and with its imports
renamed to ``trivium.vision`` (``tests/examples/test_torchvision_scripts.py``).

Run::

    python classification.py DATA_DIR WEIGHTS.pt [--steps 2] [--test-only]
"""

import argparse
import math
import os

import torch
import torchvision
from torch.utils.data.dataloader import default_collate
from torchvision.transforms import v2


class ClassificationPresetTrain:
    def __init__(
        self,
        *,
        crop_size,
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
        interpolation=v2.InterpolationMode.BILINEAR,
        hflip_prob=0.5,
        auto_augment_policy=None,
        ra_magnitude=9,
        random_erase_prob=0.0,
    ):
        transforms = [v2.PILToTensor()]  # the reference's "tensor" backend
        transforms.append(v2.RandomResizedCrop(crop_size, interpolation=interpolation))
        if hflip_prob > 0:
            transforms.append(v2.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy is not None:
            if auto_augment_policy == "ra":
                transforms.append(
                    v2.RandAugment(interpolation=interpolation, magnitude=ra_magnitude)
                )
            elif auto_augment_policy == "ta_wide":
                transforms.append(v2.TrivialAugmentWide(interpolation=interpolation))
            else:
                aa_policy = v2.AutoAugmentPolicy(auto_augment_policy)
                transforms.append(v2.AutoAugment(policy=aa_policy, interpolation=interpolation))
        transforms.extend([v2.ToDtype(torch.float, scale=True), v2.Normalize(mean=mean, std=std)])
        if random_erase_prob > 0:
            transforms.append(v2.RandomErasing(p=random_erase_prob))
        transforms.append(v2.ToPureTensor())
        self.transforms = v2.Compose(transforms)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEval:
    def __init__(
        self,
        *,
        crop_size,
        resize_size=256,
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
        interpolation=v2.InterpolationMode.BILINEAR,
    ):
        self.transforms = v2.Compose(
            [
                v2.PILToTensor(),
                v2.Resize(resize_size, interpolation=interpolation, antialias=True),
                v2.CenterCrop(crop_size),
                v2.ToDtype(torch.float, scale=True),
                v2.Normalize(mean=mean, std=std),
                v2.ToPureTensor(),
            ]
        )

    def __call__(self, img):
        return self.transforms(img)


def get_mixup_cutmix(*, mixup_alpha, cutmix_alpha, num_classes):
    mixup_cutmix = []
    if mixup_alpha > 0:
        mixup_cutmix.append(v2.MixUp(alpha=mixup_alpha, num_classes=num_classes))
    if cutmix_alpha > 0:
        mixup_cutmix.append(v2.CutMix(alpha=cutmix_alpha, num_classes=num_classes))
    if not mixup_cutmix:
        return None
    return v2.RandomChoice(mixup_cutmix)


class ExponentialMovingAverage(torch.optim.swa_utils.AveragedModel):
    """Maintains moving averages of model parameters using an exponential decay.
    ``ema_avg = decay * avg_model_param + (1 - decay) * model_param``"""

    def __init__(self, model, decay, device="cpu"):
        def ema_avg(avg_model_param, model_param, num_averaged):
            return decay * avg_model_param + (1 - decay) * model_param

        super().__init__(model, device, ema_avg, use_buffers=True)


def accuracy(output, target, topk=(1,)):
    """The accuracy over the k top predictions, for each k in ``topk``."""
    with torch.inference_mode():
        maxk = max(topk)
        batch_size = target.size(0)
        if target.ndim == 2:
            target = target.max(dim=1)[1]
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target[None])
        res = []
        for k in topk:
            correct_k = correct[:k].flatten().sum(dtype=torch.float32)
            res.append(correct_k * (100.0 / batch_size))
        return res


def evaluate(model, criterion, data_loader, num_classes):
    model.eval()
    topk = (1, min(5, num_classes))  # top-5 where there are 5 classes
    loss_sum, top1_sum, top5_sum, count, first = 0.0, 0.0, 0.0, 0, None
    with torch.inference_mode():
        for image, target in data_loader:
            output = model(image)
            if first is None:
                first = output.clone()
            loss = criterion(output, target)
            acc1, acc5 = accuracy(output, target, topk=topk)
            batch_size = image.shape[0]
            loss_sum += loss.item() * batch_size
            top1_sum += acc1.item() * batch_size
            top5_sum += acc5.item() * batch_size
            count += batch_size
    return {"loss": loss_sum / count, "acc1": top1_sum / count, "acc5": top5_sum / count}, first


def main(argv=None):
    parser = argparse.ArgumentParser(description="Classification training on an ImageFolder")
    parser.add_argument("data_path")
    parser.add_argument("weights")
    parser.add_argument("--model", default="mobilenet_v3_small")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--mixup-alpha", type=float, default=0.0)
    parser.add_argument("--cutmix-alpha", type=float, default=0.0)
    parser.add_argument("--auto-augment", default=None)
    parser.add_argument("--random-erase", type=float, default=0.0)
    parser.add_argument("--model-ema-decay", type=float, default=0.9)
    parser.add_argument("--train-crop-size", type=int, default=64)
    parser.add_argument("--val-resize-size", type=int, default=72)
    parser.add_argument("--val-crop-size", type=int, default=64)
    parser.add_argument("--test-only", action="store_true")
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    train_set = torchvision.datasets.ImageFolder(
        os.path.join(args.data_path, "train"),
        ClassificationPresetTrain(
            crop_size=args.train_crop_size,
            auto_augment_policy=args.auto_augment,
            random_erase_prob=args.random_erase,
        ),
    )
    val_set = torchvision.datasets.ImageFolder(
        os.path.join(args.data_path, "val"),
        ClassificationPresetEval(crop_size=args.val_crop_size, resize_size=args.val_resize_size),
    )
    num_classes = len(train_set.classes)
    mixup_cutmix = get_mixup_cutmix(
        mixup_alpha=args.mixup_alpha, cutmix_alpha=args.cutmix_alpha, num_classes=num_classes
    )
    collate_fn = default_collate
    if mixup_cutmix is not None:

        def collate_fn(batch):
            return mixup_cutmix(*default_collate(batch))

    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=args.batch_size, shuffle=True, drop_last=True, collate_fn=collate_fn
    )
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=args.batch_size)

    model = torchvision.models.get_model(args.model, weights=None, num_classes=num_classes)
    model.load_state_dict(torch.load(args.weights, weights_only=True))
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    if args.test_only:
        metrics, first = evaluate(model, criterion, val_loader, num_classes)
        return {"metrics": metrics, "first_output": first, "classes": train_set.classes}

    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(parameters, lr=args.lr, momentum=0.9, weight_decay=1e-4)
    model_ema = ExponentialMovingAverage(model, decay=args.model_ema_decay)

    model.train()
    losses, shapes, target_shapes = [], [], []
    while len(losses) < args.steps:
        for image, target in train_loader:
            output = model(image)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            model_ema.update_parameters(model)
            losses.append(loss.item())
            shapes.append(tuple(output.shape))
            target_shapes.append(tuple(target.shape))
            print(f"step {len(losses)}: loss {losses[-1]:.4f}")
            if len(losses) == args.steps:
                break

    metrics, _ = evaluate(model, criterion, val_loader, num_classes)
    ema_metrics, _ = evaluate(model_ema, criterion, val_loader, num_classes)
    print(f"Acc@1 {metrics['acc1']:.1f} Acc@5 {metrics['acc5']:.1f}")
    print(f"EMA Acc@1 {ema_metrics['acc1']:.1f} Acc@5 {ema_metrics['acc5']:.1f}")
    assert all(math.isfinite(x) for x in losses)
    return {
        "losses": losses,
        "shapes": shapes,
        "target_shapes": target_shapes,
        "metrics": metrics,
        "ema_metrics": ema_metrics,
        "n_averaged": int(model_ema.n_averaged),
    }


if __name__ == "__main__":
    main()
