"""Video classification training as torchvision's reference script writes it
(``references/video_classification/train.py``): UCF101 clips chosen by its split files,
v2 transforms on TCHW clips, the audio dropped in ``collate_fn``, R3D-18, SGD, then the
clip accuracy on the test fold.

Only torchvision's names are used: the tests run it as it is and with its imports
renamed to ``trivium.vision`` (``tests/examples/test_torchvision_scripts.py``).

Run::

    python video_classification.py UCF101_ROOT SPLITS_DIR WEIGHTS.pt [--steps 2]
"""

import argparse
import math

import torch
import torchvision
from torchvision.transforms import v2


class ConvertTCHWtoCTHW(torch.nn.Module):
    """The clip's frames ``[T, C, H, W]`` as the model's ``[C, T, H, W]``."""

    def forward(self, vid):
        return vid.permute(1, 0, 2, 3)


def get_transform(size):
    return v2.Compose(
        [
            v2.ToDtype(torch.float32, scale=True),
            v2.Resize((size, size), antialias=False),
            v2.Normalize(mean=(0.43216, 0.394666, 0.37645), std=(0.22803, 0.22145, 0.216989)),
            ConvertTCHWtoCTHW(),
        ]
    )


def collate_fn(batch):
    # remove audio from the batch
    batch = [(d[0], d[2]) for d in batch]
    return torch.utils.data.dataloader.default_collate(batch)


def get_dataset(args, train):
    return torchvision.datasets.UCF101(
        args.data_path,
        args.annotation_path,
        frames_per_clip=args.clip_len,
        step_between_clips=args.clip_len,
        fold=1,
        train=train,
        transform=get_transform(args.size),
        num_workers=1,
        output_format="TCHW",
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description="R3D-18 on UCF101")
    parser.add_argument("data_path")
    parser.add_argument("annotation_path")
    parser.add_argument("weights")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--clip-len", type=int, default=4)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    dataset, dataset_test = get_dataset(args, True), get_dataset(args, False)
    data_loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, drop_last=True, collate_fn=collate_fn
    )
    data_loader_test = torch.utils.data.DataLoader(
        dataset_test, batch_size=args.batch_size, collate_fn=collate_fn
    )

    model = torchvision.models.video.r3d_18(weights=None, num_classes=len(dataset.classes))
    model.load_state_dict(torch.load(args.weights, weights_only=True))
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)

    model.train()
    losses, shapes = [], []
    while len(losses) < args.steps:
        for video, target in data_loader:
            output = model(video)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            shapes.append(tuple(output.shape))
            print(f"step {len(losses)}: loss {losses[-1]:.4f}")
            if len(losses) == args.steps:
                break

    model.eval()
    correct = total = 0
    with torch.inference_mode():
        for video, target in data_loader_test:
            correct += (model(video).argmax(1) == target).sum().item()
            total += len(target)
    print(f"clip accuracy {100 * correct / total:.1f} ({total} clips)")
    assert all(math.isfinite(x) for x in losses)
    return {"losses": losses, "shapes": shapes, "accuracy": correct / total, "clips": total}


if __name__ == "__main__":
    main()
