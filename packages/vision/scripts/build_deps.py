"""Builds the native libraries that ``trivium.vision._C`` links, from pinned source archives.

Every library is built once, static and position-independent, into ``PREFIX/<name>``
(``lib/``, ``include/``; libjpeg-turbo's ``bin/cjpeg`` and ``djpeg`` too, which the
tests use), and rebuilt only when its pin changes. The sources are the upstream release
tarballs as Debian's archive ships them (``<name>_<version>.orig.tar.*``), checked by
sha256, downloaded with Python's urllib (so this runs inside pip's build isolation) and
kept in ``PREFIX/archives``. Offline, set ``TRIVIUM_SOURCE_ARCHIVES`` to a folder that
holds those files. A build needs a C compiler, CMake and a CMake generator (the Python
packages ``cmake`` and ``ninja`` do); NASM, which libjpeg-turbo's x86 SIMD code needs,
is built from its own pinned source where none is installed.

Run by ``CMakeLists.txt`` at configure time::

    python scripts/build_deps.py PREFIX --cmake CMAKE [--generator Ninja --make-program NINJA]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEBIAN_POOL = "https://deb.debian.org/debian/pool/main"


@dataclass(frozen=True)
class Library:
    """One pinned library: where its source is, and how it is configured."""

    name: str
    version: str
    archive: str  # the file in Debian's pool, under pool
    pool: str
    sha256: str
    source_dir: str  # the folder the archive unpacks to
    cmake_args: tuple[str, ...] = ()
    built: str = ""  # a file under the prefix that the finished build leaves
    # ./configure ARGS && make install instead of CMake (None: CMake)
    configure: tuple[str, ...] | None = None

    @property
    def url(self) -> str:
        return f"{DEBIAN_POOL}/{self.pool}/{self.archive}"

    @property
    def pin(self) -> str:
        return f"{self.name} {self.version} from {self.archive} sha256:{self.sha256}"


NASM = Library(
    "nasm",
    "2.16.03",
    "nasm_2.16.03.orig.tar.xz",
    "n/nasm",
    "1412a1c760bbd05db026b6c0d1657affd6631cd0a63cddb6f73cc6d4aa616148",
    "nasm-2.16.03",
    built="bin/nasm",
    configure=(),
)
ZLIB = Library(
    "zlib",
    "1.3.1",
    "zlib_1.3.dfsg+really1.3.1.orig.tar.gz",
    "z/zlib",
    "60dd315c07f616887caa029408308a018ace66e3d142726a97db164b3b8f69fb",
    "zlib-1.3.1",
    built="lib/libz.a",
    # zlib's own configure: its CMake build wants the Windows resource file that
    # Debian's tarball leaves out.
    configure=("--static",),
)
LIBSPNG = Library(
    "libspng",
    "0.7.4",
    "libspng_0.7.4.orig.tar.gz",
    "libs/libspng",
    "47ec02be6c0a6323044600a9221b049f63e1953faf816903e7383d4dc4234487",
    "libspng-0.7.4",
    ("-DSPNG_SHARED=OFF", "-DSPNG_STATIC=ON", "-DBUILD_EXAMPLES=OFF", "-DENABLE_OPT=ON"),
    built="lib/libspng_static.a",
)
LIBJPEG_TURBO = Library(
    "libjpeg-turbo",
    "3.1.3",
    "libjpeg-turbo_3.1.3.orig.tar.gz",
    "libj/libjpeg-turbo",
    "3a13a5ba767dc8264bc40b185e41368a80d5d5f945944d1dbaa4b2fb0099f4e5",
    "libjpeg-turbo-3.1.3",
    (
        "-DENABLE_SHARED=OFF",
        "-DENABLE_STATIC=ON",
        "-DWITH_TURBOJPEG=OFF",
        "-DWITH_TOOLS=ON",
        "-DWITH_TESTS=OFF",
        "-DREQUIRE_SIMD=ON",
    ),
    built="lib/libjpeg.a",
)
LIBWEBP = Library(
    "libwebp",
    "1.6.0",
    "libwebp_1.6.0.orig.tar.gz",
    "libw/libwebp",
    "e4ab7009bf0629fd11982d4c2aa83964cf244cffba7347ecd39019a9e38c4564",
    "libwebp-1.6.0",
    (
        "-DBUILD_SHARED_LIBS=OFF",
        "-DWEBP_ENABLE_SIMD=ON",
        "-DWEBP_USE_THREAD=ON",
        *(
            f"-DWEBP_BUILD_{tool}=OFF"
            for tool in (
                "ANIM_UTILS",
                "CWEBP",
                "DWEBP",
                "GIF2WEBP",
                "IMG2WEBP",
                "VWEBP",
                "WEBPINFO",
                "LIBWEBPMUX",
                "WEBPMUX",
                "EXTRAS",
            )
        ),
    ),
    built="lib/libwebp.a",
)


@dataclass
class Builder:
    """Builds libraries into ``prefix`` with one CMake and generator."""

    prefix: Path
    cmake: str
    generator: str | None = None
    make_program: str | None = None
    log: Callable[[str], None] = print

    def archive(self, lib: Library) -> Path:
        """The checked source archive of ``lib``: from ``TRIVIUM_SOURCE_ARCHIVES``, the
        cache, or downloaded."""
        offline = os.environ.get("TRIVIUM_SOURCE_ARCHIVES")
        path = Path(offline) / lib.archive if offline else self.prefix / "archives" / lib.archive
        if not path.exists():
            if offline:
                sys.exit(f"{path} is missing: TRIVIUM_SOURCE_ARCHIVES holds no {lib.archive}")
            path.parent.mkdir(parents=True, exist_ok=True)
            self.log(f"downloading {lib.url}")
            partial = path.with_suffix(".part")
            try:
                with (
                    urllib.request.urlopen(lib.url, timeout=60) as response,
                    open(partial, "wb") as out,
                ):
                    shutil.copyfileobj(response, out)
            except OSError as e:
                sys.exit(
                    f"cannot download {lib.name}'s source from {lib.url} ({e}).\n"
                    f"Offline, put {lib.archive} (sha256 {lib.sha256}) in a folder and set "
                    "TRIVIUM_SOURCE_ARCHIVES to it."
                )
            partial.replace(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != lib.sha256:
            sys.exit(
                f"{path} is not {lib.name} {lib.version}'s source "
                f"(sha256 {digest}, should be {lib.sha256})"
            )
        return path

    def is_built(self, lib: Library) -> bool:
        """Whether ``lib`` is installed under the prefix from its pinned archive."""
        stamp = self.prefix / lib.name / "BUILT-FROM"
        return (
            stamp.exists()
            and stamp.read_text().strip() == lib.pin
            and (self.prefix / lib.name / lib.built).exists()
        )

    def build(self, lib: Library, extra_args: tuple[str, ...] = ()) -> Path:
        """Build ``lib`` unless the installed copy matches its pin; its prefix."""
        target = self.prefix / lib.name
        if self.is_built(lib):
            return target
        work = self.prefix / f"{lib.name}.work"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
        work.mkdir(parents=True)
        self.log(f"building {lib.name} {lib.version} (static, -fPIC) into {target}")
        with tarfile.open(self.archive(lib)) as tar:
            # the "data" filter refuses links and paths out of work (Python >= 3.10.12)
            kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(work, **kwargs)
        source = work / lib.source_dir
        log = work / "build.log"
        steps, cwd, env = self._commands(lib, source, target, work / "build", extra_args)
        with open(log, "w") as out:
            for step in steps:
                done = subprocess.run(step, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
                if done.returncode != 0:
                    out.flush()
                    tail = log.read_text().splitlines()[-40:]
                    sys.exit(f"building {lib.name} failed at {' '.join(step)}:\n" + "\n".join(tail))
        (target / "BUILT-FROM").write_text(lib.pin + "\n")
        shutil.rmtree(work)
        return target

    def _commands(
        self, lib: Library, source: Path, target: Path, build: Path, extra_args: tuple[str, ...]
    ) -> tuple[list[list[str]], Path, dict[str, str] | None]:
        """The commands that build and install ``lib``, their folder and environment."""
        if lib.configure is not None:
            steps = [
                [str(source / "configure"), f"--prefix={target}", *lib.configure],
                ["make", f"-j{os.cpu_count() or 1}"],
                ["make", "install"],
            ]
            return (
                steps,
                source,
                {**os.environ, "CFLAGS": "-O3 -fPIC " + os.environ.get("CFLAGS", "")},
            )
        configure = [self.cmake, "-S", str(source), "-B", str(build)]
        if self.generator:
            configure += ["-G", self.generator]
        if self.make_program:
            configure.append(f"-DCMAKE_MAKE_PROGRAM={self.make_program}")
        configure += [
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_INSTALL_PREFIX={target}",
            "-DCMAKE_INSTALL_LIBDIR=lib",
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            *lib.cmake_args,
            *extra_args,
        ]
        build_and_install = [
            [self.cmake, "--build", str(build), "--parallel"],
            [self.cmake, "--install", str(build)],
        ]
        return [configure, *build_and_install], source.parent, None

    def nasm_args(self) -> tuple[str, ...]:
        """How libjpeg-turbo finds an assembler for its SIMD code (x86 only): the one on
        PATH, else NASM built here."""
        if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
            return ()
        installed = shutil.which("nasm") or shutil.which("yasm")
        nasm = installed or str(self.build(NASM) / "bin" / "nasm")
        return (f"-DCMAKE_ASM_NASM_COMPILER={nasm}",)

    def build_all(self) -> None:
        """Build every library ``_C`` links, in the order their users need them."""
        zlib = self.build(ZLIB)
        zlib_args = (
            f"-DZLIB_INCLUDE_DIR={zlib / 'include'}",
            f"-DZLIB_LIBRARY={zlib / 'lib' / 'libz.a'}",
        )
        self.build(LIBSPNG, zlib_args)
        self.build(LIBJPEG_TURBO, self.nasm_args())
        self.build(LIBWEBP)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix", type=Path)
    parser.add_argument("--cmake", default=shutil.which("cmake") or "cmake")
    parser.add_argument("--generator", default=None)
    parser.add_argument("--make-program", default=None)
    args = parser.parse_args(argv)
    generator = args.generator
    if generator is None and shutil.which("ninja"):
        generator = "Ninja"
    Builder(args.prefix.resolve(), args.cmake, generator, args.make_program).build_all()


if __name__ == "__main__":
    main()
