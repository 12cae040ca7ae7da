#!/usr/bin/env bash
# Builds the libjpeg-turbo that trivium.vision._C links: a static, position-independent
# libjpeg (with the 12-bit and lossless API of libjpeg-turbo 3) plus cjpeg/djpeg, which
# the tests use to make 12-bit and lossless files.
#
# The source comes from PyPI: the sdist of pylibjxl bundles libjpeg-turbo's release
# tree under third_party/libjpeg-turbo (its code is identical to the upstream release
# tarball, which Debian ships as libjpeg-turbo_3.1.3.orig.tar.gz). The sdist is pinned
# by version and sha256, downloaded once with pip, and the build is skipped when the
# installed copy already matches.
#
#   usage: build_libjpeg_turbo.sh PYTHON PREFIX
#   PREFIX/lib/libjpeg.a, PREFIX/include/jpeglib.h, PREFIX/bin/{cjpeg,djpeg}
set -euo pipefail

python=${1:?usage: build_libjpeg_turbo.sh PYTHON PREFIX}
prefix=${2:?usage: build_libjpeg_turbo.sh PYTHON PREFIX}
export PATH="$(dirname "$python"):$PATH"  # the environment's cmake and ninja

version=3.1.3
sdist=pylibjxl-0.5.0.tar.gz
sdist_sha256=3fea4e1a4b8fee307c4ce8c8be9f8ef14062d78baa85ee9137c234a9a2f89b79
stamp="$prefix/BUILT-FROM"
want="libjpeg-turbo $version from $sdist sha256:$sdist_sha256"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$prefix/lib/libjpeg.a" ]; then
    exit 0
fi

work="$prefix.work"
rm -rf "$work" "$prefix"
mkdir -p "$work/download"
echo "Building libjpeg-turbo $version (static, -fPIC) into $prefix"

# --no-build-isolation: reading the sdist's metadata needs only scikit-build-core,
# which the environment already has; --ignore-requires-python: we only unpack it.
"$python" -m pip download --disable-pip-version-check -q --no-deps --no-build-isolation \
    --ignore-requires-python --no-binary pylibjxl -d "$work/download" "pylibjxl==0.5.0"
echo "$sdist_sha256  $work/download/$sdist" | sha256sum -c --quiet -

tar -xzf "$work/download/$sdist" -C "$work" --strip-components=2 \
    "pylibjxl-0.5.0/third_party/libjpeg-turbo"
src="$work/libjpeg-turbo"
grep -q "^set(VERSION $version)" "$src/CMakeLists.txt" || {
    echo "the sdist does not hold libjpeg-turbo $version" >&2
    exit 1
}

log="$work/build.log"
trap 'status=$?; [ $status -eq 0 ] || tail -n 40 "$log" >&2' EXIT
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DENABLE_SHARED=OFF -DENABLE_STATIC=ON \
    -DWITH_TURBOJPEG=OFF -DWITH_TOOLS=ON -DWITH_TESTS=OFF -DREQUIRE_SIMD=ON >"$log" 2>&1
cmake --build "$work/build" >>"$log" 2>&1
# The bundled tree has no doc/, so install the library, headers and tools only.
for component in lib include bin; do
    cmake --install "$work/build" --component "$component" >>"$log" 2>&1
done
echo "$want" >"$stamp"
trap - EXIT
rm -rf "$work"
