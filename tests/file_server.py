"""A loopback HTTP file server for the download tests (no request leaves the machine).

It serves a folder, answers range requests (``Range: bytes=N-``) with 206 as real
dataset mirrors do unless ``ranges`` is off, records each request's path and range,
and can cut the next response after ``cut_after`` bytes to stand for a dropped
connection.

Example:
    >>> import tempfile, urllib.request, pathlib
    >>> with serve(pathlib.Path(tempfile.mkdtemp())) as server:
    ...     _ = (server.root / "a.txt").write_bytes(b"hello")
    ...     urllib.request.urlopen(server.url + "/a.txt").read()
    b'hello'
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FileServer:
    """What a test sees of the server: its base URL, the folder it serves, its log."""

    url: str
    root: Path
    ranges: bool = True
    cut_after: int | None = None
    requests: list[tuple[str, str | None]] = field(default_factory=list)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args: object, state: FileServer, **kwargs: object) -> None:
        self.state = state
        super().__init__(*args, directory=str(state.root), **kwargs)  # type: ignore[arg-type]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        wanted = self.headers.get("Range")
        self.state.requests.append((self.path, wanted))
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404, "not found")
            return
        data = path.read_bytes()
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", wanted or "")
        if self.state.ranges and match:
            start = int(match.group(1))
            if start >= len(data):
                self.send_error(416, "range not satisfiable")
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut, self.state.cut_after = self.state.cut_after, None
        self.wfile.write(body if cut is None else body[:cut])
        if cut is not None:
            self.close_connection = True


@contextlib.contextmanager
def serve(root: Path) -> Iterator[FileServer]:
    """Serve ``root`` on 127.0.0.1 (a free port) for the ``with`` block."""
    os.makedirs(root, exist_ok=True)
    state = FileServer(url="", root=root)
    handler = functools.partial(_Handler, state=state)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
