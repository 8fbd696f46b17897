#!/bin/sh
# The package tests' fixture: the Debian package made from the build folder as it is (cpack
# packs what the install rules install, from the files already built: nothing is
# rebuilt), unpacked into a scratch root as dpkg would lay it out, and beside it the same
# build installed by `cmake --install` under the prefix /usr.
#   make_package.sh BUILD_DIR OUT_DIR
# leaves OUT_DIR/dedupsim_<version>_<arch>.deb, OUT_DIR/root/ (dpkg -x) and OUT_DIR/install/.
set -eu
build="$1" out="$2"
rm -rf "$out"
mkdir -p "$out"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 || {
  cat "$out/cpack.log"
  exit 1
}
set -- "$out"/*.deb
if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
  echo "cpack made no single .deb in $out:"
  ls -la "$out"
  exit 1
fi
dpkg-deb -x "$1" "$out/root"
DESTDIR="$out/install" cmake --install "$build" --prefix /usr >"$out/install.log"
echo "made $(basename "$1"), unpacked into $out/root, installed into $out/install"
