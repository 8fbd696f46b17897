#!/bin/sh
# Sets up dedupsim on Debian 12: installs the Debian packages that are missing (and only
# those), configures the build once, and builds what changed. Safe to run again: a second
# run installs nothing and rebuilds nothing that is up to date.
#
#   sh tools/setup.sh           what `dedupsim run` needs: builds the executable only (with
#                               --backend postgres: the server programs and libpq, from
#                               postgresql and libpq-dev; the broker clients' headers and
#                               libraries, libnats-dev and librabbitmq-dev, loaded only by
#                               --broker nats and rabbitmq)
#   sh tools/setup.sh --tests   also what the test suite needs, and builds the tests: with the
#                               brokers' servers (nats-server, rabbitmq-server), which
#                               dedupsim starts privately and never as system services
#   sh tools/setup.sh --package also what the Debian package needs (dpkg-shlibdeps), builds
#                               the executable and makes build/dedupsim_<version>_<arch>.deb
#                               (with the man page, shell completion and the examples)
#
# Its own output goes to stderr, so stdout carries only what runs after it.
set -eu
exec 1>&2
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --tests | --package) ;;
  *)
    echo "usage: sh tools/setup.sh [--tests | --package]"
    exit 2
    ;;
esac

packages="cmake g++ make ninja-build libsqlite3-dev sqlite3 libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev libpq-dev postgresql libnats-dev librabbitmq-dev"
# CPack's DEB generator computes Depends with dpkg-shlibdeps (dpkg-dev), which reads the
# executable's libraries with objdump (binutils) and finds them with file.
package_tools="dpkg-dev binutils file"
if [ "${1:-}" = "--package" ]; then
  packages="$packages $package_tools"
fi
if [ "${1:-}" = "--tests" ]; then
  # The package tests (tests/package/): the package made and unpacked, the man page rendered
  # by man (groff -ww), the bash and zsh completion driven as a shell would.
  packages="$packages catch2 jq libxml2-utils chromium python3 $package_tools man-db groff-base bash-completion zsh nats-server rabbitmq-server"
  # Node.js and npm for the rendering tests: Debian's packages, unless a node and npm are
  # already installed (a NodeSource nodejs carries its own npm, and Debian's npm conflicts).
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    packages="$packages nodejs npm"
  fi
fi

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing$missing"
  $sudo apt-get update -qq
  # rabbitmq-server's (and erlang's epmd's) installation starts a system node: refused while
  # we install (policy-rc.d, which invoke-rc.d asks), unless the machine has its own policy.
  # dedupsim starts private nodes of its own; nothing of the install is left running.
  policy=""
  trap 'if [ -n "$policy" ]; then $sudo rm -f "$policy"; fi' EXIT
  case " $missing " in *" rabbitmq-server "*)
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      policy=/usr/sbin/policy-rc.d
      printf '#!/bin/sh\n# tools/setup.sh: no service starts while dedupsim installs rabbitmq-server\nexit 101\n' | $sudo tee "$policy" >/dev/null
      $sudo chmod 755 "$policy"
    fi ;;
  esac
  status=0
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing || status=$?
  if [ -n "$policy" ]; then $sudo rm -f "$policy"; fi
  [ "$status" -eq 0 ] || exit "$status"
  case " $missing " in *" rabbitmq-server "*)
    # Under systemd the units are enabled for the next boot: not ours to run.
    if [ -d /run/systemd/system ]; then
      $sudo systemctl disable --now rabbitmq-server.service epmd.socket epmd.service >/dev/null 2>&1 || true
    fi ;;
  esac
fi

# The rendering tests load mermaid from tests/browser/node_modules (no CDN): the version
# pinned in its package-lock.json, installed once.
if [ "${1:-}" = "--tests" ] && [ ! -f tests/browser/node_modules/mermaid/package.json ]; then
  echo "setup: installing the pinned npm packages for the rendering tests"
  (cd tests/browser && npm ci --no-audit --no-fund)
fi

# A new build folder: optimised without debug information (a quarter less to compile),
# through ccache when it is installed, and with Ninja, which keeps both cores busy across the
# targets (the Makefiles compile a target's files only once the libraries it links are
# archived). An existing folder keeps its own settings, and its generator.
if [ ! -f build/CMakeCache.txt ]; then
  launcher=""
  if command -v ccache >/dev/null 2>&1; then
    launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  fi
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release $launcher
fi

if [ "${1:-}" = "--tests" ]; then
  # Switch the test suite on in a folder configured without it, then build everything.
  if ! grep -q '^DEDUPSIM_TESTS:BOOL=ON$' build/CMakeCache.txt; then
    cmake -S . -B build -DDEDUPSIM_TESTS=ON
  fi
  cmake --build build -j"$(nproc)"
else
  # Only what `dedupsim run` needs, even in a folder where the tests are on (the executable,
  # with its man page and the changelog, so `cmake --install build` has all it installs).
  cmake --build build -j"$(nproc)" --target dedupsim
fi

if [ "${1:-}" = "--package" ]; then
  # What `cmake --install` installs, as a Debian package, into build/.
  (cd build && cpack -G DEB)
  deb=$(ls -t build/dedupsim_*.deb | head -1)
  echo "setup: made $deb (install it with: apt install ./$deb)"
fi
