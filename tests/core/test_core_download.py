"""trivium.core.download against a loopback file server: resume, digests, safe extraction."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from trivium.core.download import (
    download_and_extract,
    download_url,
    extract_archive,
    file_digest,
    split_url,
)
from trivium.core.errors import DatasetError

PAYLOAD = os.urandom(3 << 20)  # three 1 MiB read chunks


def _serve_payload(file_server) -> str:
    (file_server.root / "blob.bin").write_bytes(PAYLOAD)
    return f"{file_server.url}/blob.bin"


def test_interrupted_download_resumes_from_the_part(tmp_path: Path, file_server) -> None:
    url = _serve_payload(file_server)
    dest = tmp_path / "out" / "blob.bin"
    file_server.cut_after = 1_500_000
    with pytest.raises(DatasetError, match="next try resumes") as info:
        download_url(url, dest)
    assert str(dest) in str(info.value)
    part = dest.with_name("blob.bin.part")
    assert part.stat().st_size == 1_500_000 and not dest.exists()
    out = download_url(url, dest, sha256=hashlib.sha256(PAYLOAD).hexdigest())
    assert out.read_bytes() == PAYLOAD and not part.exists()
    assert file_server.requests[-1] == ("/blob.bin", "bytes=1500000-")


def test_server_without_ranges_sends_the_whole_file_again(tmp_path: Path, file_server) -> None:
    url = _serve_payload(file_server)
    dest = tmp_path / "blob.bin"
    dest.with_name("blob.bin.part").write_bytes(b"stale bytes of an earlier try")
    file_server.ranges = False
    assert download_url(url, dest, md5=hashlib.md5(PAYLOAD).hexdigest()).read_bytes() == PAYLOAD


def test_a_complete_part_is_verified_not_fetched_again(tmp_path: Path, file_server) -> None:
    url = _serve_payload(file_server)
    dest = tmp_path / "blob.bin"
    dest.with_name("blob.bin.part").write_bytes(PAYLOAD)
    assert download_url(url, dest, md5=hashlib.md5(PAYLOAD).hexdigest()).read_bytes() == PAYLOAD
    assert file_server.requests == [("/blob.bin", f"bytes={len(PAYLOAD)}-")]


@pytest.mark.parametrize("algorithm", ["sha256", "md5"])
def test_digest_mismatch_deletes_the_download(tmp_path: Path, file_server, algorithm) -> None:
    url = _serve_payload(file_server)
    dest = tmp_path / "blob.bin"
    with pytest.raises(DatasetError, match=f"expected {algorithm} 0+, got ") as info:
        download_url(url, dest, **{algorithm: "0" * 8})
    assert info.value.path == str(dest)
    assert not dest.exists() and not dest.with_name("blob.bin.part").exists()


def test_http_errors_and_unreachable_servers(tmp_path: Path, file_server) -> None:
    with pytest.raises(DatasetError, match="HTTP 404"):
        download_url(f"{file_server.url}/missing.tar.gz", tmp_path / "missing.tar.gz")
    with pytest.raises(DatasetError, match="no network connection") as info:
        download_url("http://127.0.0.1:9/x.tar.gz", tmp_path / "x.tar.gz", timeout=5)
    assert f"place it at {tmp_path / 'x.tar.gz'}" in str(info.value)


def test_download_and_extract_checks_an_archive_already_there(tmp_path: Path, file_server) -> None:
    with tarfile.open(file_server.root / "ds.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("ds/a.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"1"))
    md5 = file_digest(file_server.root / "ds.tar.gz", "md5")
    root = tmp_path / "root"
    download_and_extract(f"{file_server.url}/ds.tar.gz", root, None, "", md5=md5)
    assert (root / "ds" / "a.txt").read_text() == "1"
    (root / "ds.tar.gz").write_bytes(b"replaced")
    with pytest.raises(DatasetError, match="file present: expected md5"):
        download_and_extract(f"{file_server.url}/ds.tar.gz", root, None, "", md5=md5)


def test_extraction_refuses_members_outside_the_root(tmp_path: Path) -> None:
    evil_tar = tmp_path / "evil.tar"
    with tarfile.open(evil_tar, "w") as tar:
        member = tarfile.TarInfo("../escape.txt")
        member.size = 1
        tar.addfile(member, io.BytesIO(b"x"))
    with pytest.raises(DatasetError, match=r"evil\.tar"):
        extract_archive(evil_tar, tmp_path / "out")
    evil_zip = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil_zip, "w") as z:
        z.writestr("../../escape.txt", b"x")
    with pytest.raises(DatasetError, match="unsafe member path"):
        extract_archive(evil_zip, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()
    (tmp_path / "junk.tar.gz").write_bytes(b"not an archive")
    with pytest.raises(DatasetError, match="cannot extract"):
        extract_archive(tmp_path / "junk.tar.gz", tmp_path / "out")


def test_split_url() -> None:
    assert split_url("https://m/x/a.tgz") == ("https://m/x/a.tgz", "a", None)
    assert split_url("https://m/x/b.zip#sha256=AB") == ("https://m/x/b.zip", "b", "ab")
    with pytest.raises(ValueError, match="fragment"):
        split_url("https://m/a.tar.gz#md5=abc")
