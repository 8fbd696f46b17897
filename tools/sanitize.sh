#!/usr/bin/env bash
# Builds dedupsim and its tests with sanitizers and runs them, each in its own build folder
# (docs/testing.md says what runs where, and why):
#   build-asan: -fsanitize=address,undefined. The whole CTest suite but the Chromium
#               renders (they test the browser on pictures the other tests already make
#               under the sanitizer) and the CPU-hog race test (its hog only slows the
#               sanitizer down; the other race tests run).
#   build-tsan: -fsanitize=thread. The tests where threads meet, or where a process made
#               threads before it forks: the explorer (one thread per instance), the
#               instance runner (threads and processes), bench, soak, the scenarios, faults,
#               the SQLite layer and every end-to-end run of the binary (it has a signal
#               thread from its start and forks children for kills and processes).
# Both are optimised at -O1 with line tables (-g1): reports name file and line, and the
# build costs less than -O2 -g.
#
# Every process the tests start (the test binary, the dedupsim binaries it runs, the
# children they fork) writes its sanitizer reports to a file under the build folder
# (log_path), and the run fails when any such file exists: a report in a child whose
# output a test captured, or whose exit it expected to fail, is not lost.
#
#   bash tools/sanitize.sh            both
#   bash tools/sanitize.sh address    only build-asan
#   bash tools/sanitize.sh thread     only build-tsan
# Environment: SANITIZE_JOBS (default: the number of cores) for the builds and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
jobs="${SANITIZE_JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

build() {  # $1 folder, $2 sanitizers
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
    -DDEDUPSIM_SANITIZE="$2" -DDEDUPSIM_TESTS=ON "${launcher[@]}" >/dev/null
  cmake --build "$1" -j"$jobs"  # every test target: dedupsim, both test binaries, the pg fixture
}

# $1 folder; the rest: ctest arguments. Fails on a test failure or on any report file.
run() {
  local folder="$1"
  shift
  local logs="$PWD/$folder/sanitizer-logs"
  rm -rf "$logs"
  mkdir -p "$logs"
  local status=0
  ctest --test-dir "$folder" --output-on-failure -j"$jobs" "$@" ||
    status=$?
  if compgen -G "$logs/*" >/dev/null; then
    echo "sanitize: reports in $logs:" >&2
    for f in "$logs"/*; do
      echo "== $f" >&2
      head -c 20000 "$f" >&2
    done
    status=1
  fi
  return "$status"
}

status=0
if [ "$which" = all ] || [ "$which" = address ]; then
  echo "sanitize: address,undefined" >&2
  build build-asan address,undefined
  logs="$PWD/build-asan/sanitizer-logs"
  ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$logs/asan" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan" \
    run build-asan -E 'chromium|cpu_hog' || status=1
fi

if [ "$which" = all ] || [ "$which" = thread ]; then
  echo "sanitize: thread" >&2
  build build-tsan thread
  logs="$PWD/build-tsan/sanitizer-logs"
  # No thread-leak reports: a std::thread left unjoined already terminates the program, so
  # the only leak TSan could report is the one an interrupt makes on purpose (cli/interrupt:
  # _exit ends the process with its threads, as Ctrl-C must).
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_thread_leaks=0:log_path=$logs/tsan" \
    run build-tsan -E 'chromium|cpu_hog' || status=1
fi
exit "$status"
