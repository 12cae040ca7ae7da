"""Test helper: which shared-memory file a tensor's storage lies in."""

from __future__ import annotations

import pathlib

import torch


def segment_inode(t: torch.Tensor) -> int:
    """The inode of the file mapped where ``t``'s storage lies (from ``/proc/self/maps``).

    Example:
        >>> t = torch.zeros(4).share_memory_()
        >>> segment_inode(t) > 0
        True
    """
    ptr = t.untyped_storage().data_ptr()
    for line in pathlib.Path("/proc/self/maps").read_text().splitlines():
        span, _, _, _, inode, *_ = line.split()
        lo, hi = (int(x, 16) for x in span.split("-"))
        if lo <= ptr < hi:
            return int(inode)
    raise AssertionError(f"no mapping holds {ptr:#x}")
