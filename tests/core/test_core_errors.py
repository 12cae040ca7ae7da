"""Tests for trivium.core.errors (re-exported by trivium.core)."""

from __future__ import annotations

import pickle

import pytest

import trivium.core as tc


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (tc.DecodeError, ValueError),
        (tc.EncodeError, ValueError),
        (tc.UnsupportedFormatError, ValueError),
        (tc.DatasetError, OSError),
    ],
)
def test_hierarchy_and_pickling(cls: type[tc.TriviumError], builtin: type) -> None:
    err = cls("bad header", path="data/cat.jpg")
    assert isinstance(err, tc.TriviumError) and isinstance(err, builtin)
    assert str(err) == "data/cat.jpg: bad header"
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is cls
    assert (clone.reason, clone.path, str(clone)) == ("bad header", "data/cat.jpg", str(err))
    with pytest.raises(builtin, match=r"cat\.jpg"):
        raise clone


def test_without_path() -> None:
    err = pickle.loads(pickle.dumps(tc.DecodeError("empty input")))
    assert err.path is None and str(err) == "empty input"
    assert isinstance(tc.UnsupportedFormatError("GIF"), tc.DecodeError)


def test_public_api() -> None:
    assert tc.__version__ == "0.1.0"
    missing = [name for name in tc.__all__ if not hasattr(tc, name)]
    assert missing == []
    assert {"move_to", "Transform", "parallel_map", "seed_everything", "DatasetError"} <= set(
        tc.__all__
    )
