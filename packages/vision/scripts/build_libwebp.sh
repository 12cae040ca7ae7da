#!/usr/bin/env bash
# Builds the libwebp that trivium.vision._C links: static, position-independent
# libwebp, libwebpdemux (animations) and libsharpyuv (which libwebp's encoder calls),
# with libwebp's SIMD code (SSE2, SSE4.1 and AVX2 on x86-64, NEON on Arm, picked at
# run time by libwebp's CPU detection), threads, and no tools.
#
# The source is libwebp's release tarball as Debian's archive ships it
# (libwebp_1.6.0.orig.tar.gz, identical to upstream's libwebp-1.6.0.tar.gz), pinned by
# sha256. It is downloaded with Python's urllib (no pip, so this also runs inside pip's
# build isolation); offline, point TRIVIUM_LIBWEBP_ARCHIVE at a local copy. The build
# is skipped when the installed copy already matches.
#
#   usage: build_libwebp.sh PYTHON PREFIX
#   PREFIX/lib/{libwebp,libwebpdemux,libsharpyuv}.a, PREFIX/include/webp/*.h
set -euo pipefail

python=${1:?usage: build_libwebp.sh PYTHON PREFIX}
prefix=${2:?usage: build_libwebp.sh PYTHON PREFIX}
export PATH="$(dirname "$python"):$PATH"  # the environment's cmake and ninja

version=1.6.0
archive=libwebp_$version.orig.tar.gz
url=http://deb.debian.org/debian/pool/main/libw/libwebp/$archive
sha256=e4ab7009bf0629fd11982d4c2aa83964cf244cffba7347ecd39019a9e38c4564
stamp="$prefix/BUILT-FROM"
want="libwebp $version from $archive sha256:$sha256"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$prefix/lib/libwebp.a" ]; then
    exit 0
fi

work="$prefix.work"
rm -rf "$work" "$prefix"
mkdir -p "$work"
echo "Building libwebp $version (static, -fPIC, SIMD) into $prefix"

tarball="$work/$archive"
if [ -n "${TRIVIUM_LIBWEBP_ARCHIVE:-}" ]; then
    cp "$TRIVIUM_LIBWEBP_ARCHIVE" "$tarball"
else
    "$python" - "$url" "$tarball" "$archive" "$sha256" <<'EOF'
import shutil
import sys
import urllib.request

url, target, archive, sha256 = sys.argv[1:]
try:
    with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
        shutil.copyfileobj(response, out)
except OSError as e:
    sys.exit(
        f"cannot download libwebp's source from {url} ({e}).\n"
        f"Offline, download {archive} (sha256 {sha256}) elsewhere and set "
        "TRIVIUM_LIBWEBP_ARCHIVE to its path."
    )
EOF
fi
echo "$sha256  $tarball" | sha256sum -c --quiet - || {
    echo "$tarball is not libwebp $version's source (sha256 should be $sha256)" >&2
    exit 1
}

tar -xzf "$tarball" -C "$work"
src="$work/libwebp-$version"

log="$work/build.log"
trap 'status=$?; [ $status -eq 0 ] || tail -n 40 "$log" >&2' EXIT
no_tools=()
for tool in ANIM_UTILS CWEBP DWEBP GIF2WEBP IMG2WEBP VWEBP WEBPINFO LIBWEBPMUX WEBPMUX EXTRAS; do
    no_tools+=("-DWEBP_BUILD_$tool=OFF")
done
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
    -DWEBP_ENABLE_SIMD=ON -DWEBP_USE_THREAD=ON \
    "${no_tools[@]}" >"$log" 2>&1
cmake --build "$work/build" >>"$log" 2>&1
cmake --install "$work/build" >>"$log" 2>&1
echo "$want" >"$stamp"
trap - EXIT
rm -rf "$work"
