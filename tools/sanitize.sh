#!/usr/bin/env bash
# Builds dedupsim and its tests with sanitizers and runs them, each in its own build folder:
#   build-asan: -fsanitize=address,undefined, the whole suite (less the Chromium render,
#               which tests the browser, and the CPU-hog race test, which would only be slow)
#   build-tsan: -fsanitize=thread, the tests where threads and processes meet: the
#               explorer, the instance runner (races, concurrent scenarios), bench and soak
# Any sanitizer report fails the run (halt_on_error). Run by hand for now: .ci/run does not
# call it until it has completed on the 2-core machine within CI's time.
#
#   bash tools/sanitize.sh            both
#   bash tools/sanitize.sh address    only build-asan
#   bash tools/sanitize.sh thread     only build-tsan
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
jobs="$(nproc)"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

configure() {  # $1 folder, $2 sanitizers
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEDUPSIM_SANITIZE="$2" \
    -DDEDUPSIM_TESTS=ON "${launcher[@]}" >/dev/null
  cmake --build "$1" -j"$jobs" --target dedupsim dedupsim_tests
}

if [ "$which" = all ] || [ "$which" = address ]; then
  echo "sanitize: address,undefined" >&2
  configure build-asan address,undefined
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    build-asan/tests/dedupsim_tests '~[hog]' --order decl
fi

if [ "$which" = all ] || [ "$which" = thread ]; then
  echo "sanitize: thread" >&2
  configure build-tsan thread
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    build-tsan/tests/dedupsim_tests \
    '[explore]~[hog],[races]~[hog],[bench],[soak],[scenarios],[faults]' --order decl
fi
