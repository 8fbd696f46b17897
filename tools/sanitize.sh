#!/usr/bin/env bash
# Builds dedupsim and its tests with sanitizers and runs them, each in its own build folder
# (docs/testing.md says what runs where, and why):
#   build-asan: -fsanitize=address,undefined. The whole CTest suite but the Chromium
#               renders (label `browser`: they test the browser on pictures the other tests
#               already make under the sanitizer) and the CPU-hog race tests (label `hog`:
#               the hog only slows the sanitizer down; the other race tests run) and the
#               package tests (label `package`: a sanitized binary links libasan, which no
#               lab machine's package should depend on; the release build's suite runs them).
#   build-tsan: -fsanitize=thread. By hand (`all`, `thread`): the same selection as
#               build-asan. In CI (`ci`): the tests labelled `tsan` (tests/CMakeLists.txt),
#               where threads meet or a process forks: the explorer (one thread per
#               instance), the races (the instance runner, threads and processes), bench and
#               soak; only the targets they need are built (no PostgreSQL test binary).
# Both are optimised at -O1 with line tables (-g1): reports name file and line, and the
# build costs less than -O2 -g.
#
# Every process the tests start (the test binary, the dedupsim binaries it runs, the
# children they fork) writes its sanitizer reports to a file under the build folder
# (log_path), and the run fails when any such file exists: a report in a child whose
# output a test captured, or whose exit it expected to fail, is not lost.
#
#   bash tools/sanitize.sh            both, every test but `browser` and `hog`
#   bash tools/sanitize.sh address    only build-asan
#   bash tools/sanitize.sh thread     only build-tsan
#   bash tools/sanitize.sh ci         build-asan, then build-tsan over the `tsan` label
#                                     (what .ci/run runs); `ci address` or `ci thread`:
#                                     one half of it
# Each build and each run prints its wall and CPU time ("sanitize: ..." on stderr).
# Environment: SANITIZE_JOBS (default: the number of cores) for the builds and the tests;
# CCACHE_DISABLE=1 configures a new build folder without ccache (as on a fresh machine);
# SANITIZE_TESTS, a CTest regex: by hand, only the selected tests whose names match it (to
# check one fix, or that a planted error fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
part="${2:-}"  # after ci: address or thread, only that half of the CI mode
jobs="${SANITIZE_JOBS:-$(nproc)}"
case "$which:$part" in
  all: | address: | thread: | ci: | ci:address | ci:thread) ;;
  *)
    echo "usage: bash tools/sanitize.sh [all|address|thread|ci [address|thread]]" >&2
    exit 2
    ;;
esac
launcher=()
if command -v ccache >/dev/null && [ -z "${CCACHE_DISABLE:-}" ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# Prints a phase's wall and CPU time (its processes and their children) when it ends.
timed() {  # $1 phase name, the rest: the command
  local TIMEFORMAT="sanitize: $1: %0R s wall, %0U s user, %0S s sys"
  shift
  time "$@"
}

build() {  # $1 folder, $2 sanitizers, the rest: targets (none: every target)
  local folder="$1" sanitizers="$2"
  shift 2
  local targets=()
  if [ $# -gt 0 ]; then targets=(--target "$@"); fi
  # The ASan+UBSan executables are linked without PIE: as PIE, each of the suite's many
  # dedupsim processes spent about 0.3 s of its start applying 3.1 million relative
  # relocations (0.66 s against 0.31 s for `dedupsim --help`, measured 2026-12-06). TSan
  # needs PIE, so its build keeps it.
  local link=()
  case "$sanitizers" in *address*) link=(-DCMAKE_EXE_LINKER_FLAGS=-no-pie) ;; esac
  # A new folder is generated for Ninja, as tools/setup.sh's build is: the Makefiles compile
  # a target's files only once every library it links is archived, so one core waited while
  # the other compiled the longest unity batch of each library in turn (lesson, files,
  # explore, scenarios: build-asan took 663 s). An existing folder keeps its generator.
  local generator=()
  if [ ! -f "$folder/CMakeCache.txt" ] && command -v ninja >/dev/null; then
    generator=(-G Ninja)
  fi
  cmake -S . -B "$folder" "${generator[@]}" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
    -DDEDUPSIM_SANITIZE="$sanitizers" -DDEDUPSIM_TESTS=ON "${launcher[@]}" "${link[@]}" >/dev/null
  cmake --build "$folder" -j"$jobs" "${targets[@]}"
}

# $1 folder; the rest: ctest arguments. Fails on a test failure or on any report file.
run() {
  local folder="$1"
  shift
  local logs="$PWD/$folder/sanitizer-logs"
  rm -rf "$logs"
  mkdir -p "$logs"
  local status=0
  local only=()
  if [ -n "${SANITIZE_TESTS:-}" ]; then only=(-R "$SANITIZE_TESTS"); fi
  # --no-tests=error: a selection that selects nothing fails.
  ctest --test-dir "$folder" --output-on-failure --no-tests=error -j"$jobs" "$@" "${only[@]}" ||
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
if [ "$which" = all ] || [ "$which" = address ] || [ "$which:$part" = ci: ] ||
  [ "$which:$part" = ci:address ]; then
  echo "sanitize: address,undefined" >&2
  # Every target: the PostgreSQL tests run too.
  timed "build-asan build" build build-asan address,undefined
  logs="$PWD/build-asan/sanitizer-logs"
  # The fuzz test (tests/fuzz_test.cpp) mutates files for 30 s here, 10 s in the release
  # suite: under the sanitizers a memory error it provokes is a report, not luck.
  DEDUPSIM_FUZZ_SECONDS=30 \
  ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$logs/asan" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan" \
    timed "build-asan tests" run build-asan -LE 'browser|hog|package' || status=1
fi

if [ "$which" = all ] || [ "$which" = thread ] || [ "$which:$part" = ci: ] ||
  [ "$which:$part" = ci:thread ]; then
  echo "sanitize: thread" >&2
  selection=(-LE 'browser|hog|package')
  targets=()
  if [ "$which" = ci ]; then
    selection=(-L tsan)
    targets=(dedupsim dedupsim_tests)
  fi
  timed "build-tsan build" build build-tsan thread "${targets[@]}"
  logs="$PWD/build-tsan/sanitizer-logs"
  # No thread-leak reports: a std::thread left unjoined already terminates the program, so
  # the only leak TSan could report is the one an interrupt makes on purpose (cli/interrupt:
  # _exit ends the process with its threads, as Ctrl-C must).
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_thread_leaks=0:log_path=$logs/tsan" \
    timed "build-tsan tests" run build-tsan "${selection[@]}" || status=1
fi
exit "$status"
