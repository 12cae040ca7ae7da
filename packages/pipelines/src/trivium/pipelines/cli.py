"""The ``trivium-data`` command line.

``trivium-data convert image-folder ROOT OUT`` and ``trivium-data convert audio-folder
ROOT OUT`` write Parquet shards (see :mod:`trivium.pipelines.convert`), showing a progress
bar and printing a summary. ``--engine ray [--address ADDR]`` runs the conversion on a
Ray cluster (:func:`trivium.pipelines.ray.convert_folder`); Ray is imported only then.
``--verify`` decodes every file in full and refuses those
that fail (headers alone miss a truncated JPEG).

Example:
    >>> main(["--help"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    SystemExit: 0
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence

from trivium.core.errors import TriviumError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trivium-data", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    convert = commands.add_parser("convert", help="convert a folder of files to Parquet shards")
    kinds = convert.add_subparsers(dest="kind", required=True)
    for kind, what in (("image-folder", "images"), ("audio-folder", "audio files")):
        sub = kinds.add_parser(kind, help=f"ROOT/<class>/<file> {what} -> Parquet shards")
        sub.add_argument("root", help="folder with one subfolder per class")
        sub.add_argument("out", help="output folder for part-NNNNN.parquet")
        sub.add_argument("--rows-per-file", type=int, default=10_000)
        sub.add_argument("--row-group-size", type=int, default=256)
        sub.add_argument("--compression", default=None, help="Parquet codec (default: none)")
        sub.add_argument(
            "--on-error",
            choices=("raise", "skip"),
            default="raise",
            help="stop at an unreadable file, or skip it and list it in the summary",
        )
        sub.add_argument(
            "--engine",
            choices=("local", "ray"),
            default="local",
            help="run here (default) or on a Ray cluster (pip install 'trivium-pipelines[ray]')",
        )
        sub.add_argument("--address", default=None, help="the Ray cluster (default: a local one)")
        sub.add_argument(
            "--verify",
            action="store_true",
            help="decode every file in full (not only its header) and refuse those that fail",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 on success).

    Example:
        >>> import tempfile
        >>> main(["convert", "image-folder", tempfile.mkdtemp(), tempfile.mkdtemp()])
        1
    """
    args = _parser().parse_args(argv)
    from trivium.pipelines.convert import convert_audio_folder, convert_image_folder

    convert = convert_image_folder if args.kind == "image-folder" else convert_audio_folder
    try:
        if args.engine == "ray":
            from trivium.pipelines.ray import convert_folder

            kind = "images" if args.kind == "image-folder" else "audio"
            convert = functools.partial(convert_folder, kind=kind, address=args.address)
        summary = convert(
            args.root,
            args.out,
            args.rows_per_file,
            args.row_group_size,
            args.compression,
            on_error=args.on_error,
            verify=args.verify,
            progress_bar=None,
        )
    except (TriviumError, ImportError, ValueError) as e:
        print(f"trivium-data: error: {e}", file=sys.stderr)
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
