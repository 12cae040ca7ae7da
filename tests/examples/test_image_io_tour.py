"""The image I/O tour example answers --help with its defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOUR = Path(__file__).resolve().parents[2] / "examples" / "image_io_tour" / "tour.py"


def test_help_shows_defaults():
    result = subprocess.run(
        [sys.executable, str(TOUR), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "(default: tests/assets/images)" in " ".join(result.stdout.split())
