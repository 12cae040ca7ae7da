"""The timing harness the benchmarks share: interleaved repeats, medians, ratio tables.

Every benchmark script times our call and its peers' calls on the same inputs in
one process: each side is warmed up, then timed in ``repeats`` loops of at least
``min_time`` seconds, the sides interleaved repeat by repeat, and the median
per-call time is kept. A :class:`Row` holds our time against one peer's; the
ratio is peer time / our time (above 1: we are faster). The peer libraries come
from ``tests/peers.py`` (torchvision and torchaudio's pure-Python code where their
C++ extensions, CUDA builds, cannot load); a peer that is missing leaves a row with
our time alone saying why (:func:`row_from`).

Example (from a script in ``benchmarks/``)::

    timings = measure([Side("ours", lambda: f(x)), Side("peer", lambda: g(x))], 7, 0.2)
    print(markdown_table([row_from("f vs g", timings, "ours", "peer", target=1.0)]))
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

# ---------------------------------------------------------------------- peers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
# tests/peers.py, where every peer library comes from: scripts take it from here
import peers  # noqa: E402, F401

Peer = tuple[ModuleType | None, str]


def load_peer(importer: Callable[[], ModuleType | None], missing: str = "not installed") -> Peer:
    """A peer library from ``importer`` (see ``tests/peers.py``) and a line saying what happened."""
    try:
        module = importer()
    except Exception as e:  # a broken install fails in many ways
        return None, f"does not import ({type(e).__name__}: {e})"
    if module is None:
        return None, missing
    return module, f"{module.__name__} {module.__version__}"


def rerun_under_peers(
    script: str | Path, modules: Sequence[str], peers_python: str, argv: Sequence[str]
) -> None:
    """Run ``script`` again under ``peers_python`` when one of ``modules`` is missing here.

    See :func:`rerun_in_peers`. Does nothing when every module imports.

    Example:
        >>> rerun_under_peers("image_io.py", ["json"], ".venv-peers/bin/python", [])  # json imports
    """
    if all(importlib.util.find_spec(name) is not None for name in modules):
        return
    rerun_in_peers(script, peers_python, argv)


def rerun_in_peers(script: str | Path, peers_python: str, argv: Sequence[str] | None) -> None:
    """Run ``script`` again under ``peers_python`` (the peers' virtualenv), in this process.

    That Python gets this environment's site-packages (where trivium is) through
    ``TRIVIUM_PROJECT_SITE``, which the script adds to its path before importing
    trivium. Does nothing when already re-run, or when that Python is absent or of
    another Python version (trivium's compiled modules would not load there).

    Example:
        >>> rerun_in_peers("image_io.py", "", [])  # no peers' Python given: nothing to do
    """
    if os.environ.get("TRIVIUM_PROJECT_SITE") or not peers_python:
        return
    python = Path(peers_python)
    if not python.exists():
        print(f"(no peers virtualenv at {python}: the missing peers are left out)")
        return
    version = "import sys; print(sys.version_info[:2])"
    theirs = subprocess.run(
        [str(python), "-c", version], capture_output=True, text=True, check=False
    ).stdout.strip()
    if theirs != str(sys.version_info[:2]):
        print(f"({python} is Python {theirs}, not {sys.version_info[:2]}: peers left out)")
        return
    env = dict(os.environ, TRIVIUM_PROJECT_SITE=sysconfig.get_paths()["purelib"])
    args = list(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    os.execve(str(python), [str(python), str(Path(script).resolve()), *args], env)


# ---------------------------------------------------------------------- machine info


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or platform.processor())."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_busy_seconds() -> tuple[float, float]:
    """(CPU seconds all processes have been busy since boot, CPU seconds of this process)."""
    own = os.times()
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return math.nan, own.user + own.system
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # up to steal; guest time is already in user
    return busy / os.sysconf("SC_CLK_TCK"), own.user + own.system


def other_load(start: tuple[float, float], wall_s: float) -> str:
    """How many CPUs other processes kept busy on average since `start`."""
    busy, own = cpu_busy_seconds()
    others = (busy - start[0]) - (own - start[1])
    if math.isnan(others):
        return "unknown (no /proc/stat)"
    return f"{max(others, 0.0) / wall_s:.2f} CPUs busy outside this process on average"


def version(module: ModuleType | None) -> str:
    """A peer's version, or that it is not installed."""
    return module.__version__ if module is not None else "not installed"


def machine_info(threads: str | int | Sequence[int], **peer_info: str) -> dict[str, str]:
    """The header's facts: CPU, Python, torch with its thread count(s), then ``peer_info``."""
    import torch  # the data-only benchmarks need not import it

    if not isinstance(threads, str | int):
        threads = ", ".join(map(str, threads))
    return {
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "torch": f"{torch.__version__} (threads: {threads})",
        **peer_info,
    }


# ------------------------------------------------------------------------- timing


@dataclass
class Side:
    """One thing to time: a call, and what to run before each repeat of it.

    ``setup`` must leave the side warm (e.g. resize the thread pool, then decode
    a little so its threads exist): it runs outside the timed loop.
    """

    name: str
    fn: Callable[[], object]
    setup: Callable[[], None] | None = None


@dataclass
class Timing:
    """Per-call seconds of every repeat of one side, and the calls per repeat."""

    samples: list[float]
    number: int

    @property
    def median(self) -> float:
        """The median per-call time in seconds."""
        return statistics.median(self.samples)


def loop_time(fn: Callable[[], object], number: int) -> float:
    """Seconds per call over `number` back-to-back calls of `fn` (GC paused).

    Each result is kept until the next call returns, the same for every side.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        result = None
        start = time.perf_counter()
        for _ in range(number):
            result = fn()
        elapsed = time.perf_counter() - start
        del result
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed / number


def calls_for(fn: Callable[[], object], min_time: float) -> int:
    """How many calls of an already warm `fn` make a loop of at least `min_time` seconds."""
    per_call = loop_time(fn, 1)
    if per_call < min_time / 20:  # one call is too short to estimate from: time a few
        per_call = loop_time(fn, max(2, int(min_time / 20 / max(per_call, 1e-7))))
    return max(1, math.ceil(min_time / max(per_call, 1e-9)))


def measure(sides: Sequence[Side], repeats: int, min_time: float) -> dict[str, Timing]:
    """Time every side `repeats` times, interleaving the sides within each repeat."""
    numbers: dict[str, int] = {}
    for side in sides:
        if side.setup is not None:
            side.setup()
        side.fn()  # warm-up
        numbers[side.name] = calls_for(side.fn, min_time)

    def sampler(side: Side) -> Callable[[], float]:
        def sample() -> float:
            if side.setup is not None:
                side.setup()
            return loop_time(side.fn, numbers[side.name])

        return sample

    samples = interleave({side.name: sampler(side) for side in sides}, repeats)
    return {name: Timing(samples[name], numbers[name]) for name in samples}


def interleave(samplers: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """``repeats`` samples of each sampler (seconds per call), the samplers taking turns.

    For sides that time themselves (a subprocess that reports its own timing).
    """
    samples: dict[str, list[float]] = {name: [] for name in samplers}
    for _ in range(repeats):
        for name, sample in samplers.items():
            samples[name].append(sample())
    return samples


def measure_at_threads(
    calls: dict[str, Callable[[], object]], threads: Sequence[int], repeats: int, min_time: float
) -> Iterator[tuple[int, dict[str, Timing]]]:
    """``(threads, timings)`` of all ``calls`` at each torch thread count in turn."""
    import torch

    for n in threads:
        torch.set_num_threads(n)
        sides = [Side(name, fn, lambda n=n: torch.set_num_threads(n)) for name, fn in calls.items()]
        yield n, measure(sides, repeats, min_time)


# ---------------------------------------------------------------------------- rows


@dataclass
class Row:
    """One line of the results table: our time against one peer's on one workload."""

    workload: str
    ours_s: float | None
    peer: str
    peer_s: float | None
    target: float | None = None  # the least acceptable ratio; None: reported only
    note: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        """Peer time / our time (above 1: we are faster), or None if either is missing."""
        if self.ours_s is None or self.peer_s is None or self.ours_s <= 0:
            return None
        return self.peer_s / self.ours_s

    @property
    def status(self) -> str:
        """PASS or FAIL against the target, or why there is no verdict."""
        if self.target is None:
            return "reported"
        if self.ratio is None:
            return "n/a"
        return "PASS" if self.ratio >= self.target else "FAIL"

    def to_json(self) -> dict[str, Any]:
        """The row as plain JSON data (times in seconds)."""
        data = asdict(self)
        data["ratio"] = self.ratio
        data["status"] = self.status
        return data


def fmt_time(seconds: float | None) -> str:
    """A per-call time in milliseconds with about four significant digits."""
    if seconds is None:
        return "—"
    ms = seconds * 1e3
    if ms >= 100:
        return f"{ms:.1f} ms"
    if ms >= 10:
        return f"{ms:.2f} ms"
    return f"{ms:.3f} ms"


def markdown_table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table: workload | ours | peer | ratio | target."""
    lines = ["| workload | ours | peer | ratio | target |", "|---|---:|---|---:|---|"]
    for row in rows:
        peer = f"{row.peer}: {fmt_time(row.peer_s)}" if row.peer_s is not None else row.peer
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "—"
        target = "—" if row.target is None else f"≥{row.target:g}x {row.status}"
        lines.append(f"| {row.workload} | {fmt_time(row.ours_s)} | {peer} | {ratio} | {target} |")
    return "\n".join(lines)


def row_from(
    workload: str,
    timings: dict[str, Timing],
    ours: str,
    peer: str,
    peer_label: str | None = None,
    target: float | None = None,
    note: str = "",
    missing: str = "not installed",
) -> Row:
    """A row comparing two timed sides of one measurement.

    When side ``peer`` was not timed (the peer library is missing), the row holds
    our time alone, keeps the target (its status is "n/a") and says
    ``"{peer_label}: {missing}"``.
    """
    label = peer_label or peer
    if peer not in timings:
        return Row(workload, timings[ours].median, f"{label}: {missing}", None, target, note)
    return Row(
        workload=workload,
        ours_s=timings[ours].median,
        peer=label,
        peer_s=timings[peer].median,
        target=target,
        note=note,
        samples={"ours": timings[ours].samples, "peer": timings[peer].samples},
    )


def layout_rows(at: str, timings: dict[str, Timing], peer: str = "torchvision") -> list[Row]:
    """Ours channels-last against the peer as documented (contiguous), then like for like.

    ``timings`` holds ``"ours channels-last"``, ``"ours contiguous"`` and the same two
    of ``peer``.
    """
    ours_cl, peer_cl = "ours channels-last", f"{peer} channels-last"
    ours_nchw, peer_nchw = "ours contiguous", f"{peer} contiguous"
    return [
        row_from(f"{at}: ours channels-last vs {peer} as documented", timings, ours_cl, peer_nchw,
                 target=1.0),
        row_from(f"{at}: both contiguous", timings, ours_nchw, peer_nchw),
        row_from(f"{at}: both channels-last", timings, ours_cl, peer_cl),
    ]  # fmt: skip


def layout_rows_by_threads(
    label: str, calls: dict[str, Callable[[], object]], args: argparse.Namespace
) -> list[Row]:
    """:func:`layout_rows` at each of ``args.threads``, timed with ``args``' settings."""
    rows = []
    for n, timings in measure_at_threads(calls, args.threads, args.repeats, args.min_time):
        rows += layout_rows(f"{label}, {n} thread(s)", timings)
    return rows


# ----------------------------------------------------------------- loader epochs


def epoch_labels(batches: Iterable[tuple[Any, Any]], dtype: Any, size: int) -> Counter:
    """The labels of an epoch's ``(images, labels)`` batches (the model step is a no-op).

    Each image batch is checked to be ``[N, 3, size, size]`` of ``dtype`` first.
    """
    seen: Counter = Counter()
    for images, labels in batches:
        if images.dtype != dtype or tuple(images.shape[1:]) != (3, size, size):
            raise AssertionError(f"bad batch {images.dtype} {tuple(images.shape)}")
        seen.update(labels.tolist())
    return seen


# ------------------------------------------------------------------- command line


def benchmark_parser(
    description: str,
    workloads: Sequence[str],
    repeats: int = 7,
    min_time: float = 0.2,
    threads: int | None = None,
) -> argparse.ArgumentParser:
    """The options every benchmark takes: --repeats, --min-time, --json, --only.

    With ``threads``, also ``--threads N`` (one torch thread count, ``threads`` by default).
    """
    parser = argparse.ArgumentParser(description=description)
    if threads is not None:
        help = f"torch threads (default {threads})"
        parser.add_argument("--threads", type=int, default=threads, help=help)
    parser.add_argument("--repeats", type=int, default=repeats, help="timed repeats per side")
    parser.add_argument(
        "--min-time", type=float, default=min_time, help="least seconds one timed repeat runs"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument(
        "--only",
        default=",".join(workloads),
        help=f"comma-separated workloads to run (default: all of {','.join(workloads)})",
    )
    return parser


def parse_benchmark_args(
    parser: argparse.ArgumentParser, workloads: Sequence[str], argv: Sequence[str] | None
) -> argparse.Namespace:
    """Parse and check the options of :func:`benchmark_parser` (``only`` becomes a list)."""
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.min_time <= 0:
        parser.error("--repeats must be >= 1 and --min-time > 0")
    if isinstance(getattr(args, "threads", None), int) and args.threads < 1:
        parser.error("--threads must be >= 1")
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.only) - set(workloads))
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {list(workloads)}")
    return args


def parse_thread_counts_args(
    description: str,
    workloads: Sequence[str],
    argv: Sequence[str] | None,
    repeats: int,
    min_time: float = 0.2,
    default: str = "1,2",
    peers_python: str | None = None,
) -> argparse.Namespace:
    """:func:`benchmark_parser`'s options and ``--threads`` (comma-separated counts, a list).

    With ``peers_python``, also ``--peers-python`` (that path by default): the peers'
    virtualenv, where torchvision's C++ ops load.
    """
    parser = benchmark_parser(description, workloads, repeats, min_time)
    help = f"comma-separated torch thread counts (default {default})"
    parser.add_argument("--threads", default=default, help=help)
    if peers_python is not None:
        help = "the peers' virtualenv, where torchvision's C++ ops load ('': stay here)"
        parser.add_argument("--peers-python", default=peers_python, help=help)
    args = parse_benchmark_args(parser, workloads, argv)
    try:
        args.threads = [int(n) for n in args.threads.split(",") if n.strip()]
    except ValueError:
        parser.error(f"--threads must be comma-separated integers, got {args.threads!r}")
    if not args.threads or min(args.threads) < 1:
        parser.error("--threads needs at least one count, each >= 1")
    return args


class Session:
    """One benchmark run: its clock and load counter, header facts, rows and checks.

    Start it right after parsing the options; :meth:`report` prints the results.
    """

    def __init__(self, args: argparse.Namespace, timing: str | None = None) -> None:
        """``timing``: how a side is timed, for the header (default: the repeats of at
        least ``args.min_time`` seconds that :func:`measure` runs)."""
        self.args = args
        self.timing: argparse.Namespace | str = timing or args
        self.started, self.cpu_start = time.perf_counter(), cpu_busy_seconds()
        self.info: dict[str, str] = {}
        self.rows: list[Row] = []
        self.checks: list[str] = []

    def header(self, title: str, info: dict[str, str]) -> None:
        """Keep ``info`` for the report and print the header."""
        self.info = info
        print_header(title, info, self.timing)

    def report(self) -> int:
        """Print (and write with ``--json``) the table, checks and load; returns 0."""
        report(self.rows, self.checks, self.info, self.args, self.started, self.cpu_start)
        return 0


def print_header(title: str, info: dict[str, str], timing: argparse.Namespace | str) -> None:
    """The title, the machine facts and the timing settings (options with ``repeats`` and
    ``min_time``, or a line saying how each side is timed)."""
    if not isinstance(timing, str):
        timing = f"{timing.repeats} (median), each ≥ {timing.min_time} s"
    print(f"# {title}\n")
    for key, value in info.items():
        print(f"- {key}: {value}")
    print(f"- repeats: {timing}\n", flush=True)


def report(
    rows: Sequence[Row],
    checks: Sequence[str],
    info: dict[str, str],
    args: argparse.Namespace,
    started: float,
    cpu_start: tuple[float, float],
) -> None:
    """Print the table, the checks and the load; write the JSON when ``--json`` asks."""
    elapsed = time.perf_counter() - started
    print(markdown_table(rows))
    print("\nRatio = peer time / our time (>1: we are faster). Checks:")
    for line in checks:
        print(f"- {line}")
    failed = [row for row in rows if row.status == "FAIL"]
    contention = other_load(cpu_start, elapsed)
    print(f"\n{len(failed)} target(s) missed; total run {elapsed:.1f} s; {contention}")
    if args.json is not None:
        payload = {
            "machine": info,
            "other_load": contention,
            "repeats": args.repeats,
            "min_time_s": getattr(args, "min_time", None),
            "rows": [row.to_json() for row in rows],
            "checks": list(checks),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
