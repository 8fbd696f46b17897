#!/bin/sh
# Measures docs/check.md's "A class of 200 files": a generated class graded in one command,
# `dedupsim check DIR --jobs JOBS --format json`, as a teaching assistant would run it.
# The class is the test data's consumers (tests/data/consumers/right and wrong: right ones,
# subtly wrong ones and one the loader refuses), copied in turn until there are FILES of
# them, each under a name of its own. Prints markdown on stdout: the wall time, the CPU
# time of every process, the load average (1 minute) before and after, and the summary
# line of the grades; ROUNDS runs, each timed alone.
#
#   sh tools/measure-class.sh [DEDUPSIM] [FILES] [JOBS] [ROUNDS] [BACKEND] > figures.md
#
# Defaults: build/cli/dedupsim, 200 files, 2 jobs, 3 rounds, sqlite (postgres: `check
# --backend postgres`, its throwaway server started by the command and timed with it).
# Needs python3. Writes only under a temporary folder it removes.
set -eu
dedupsim="${1:-build/cli/dedupsim}"
files="${2:-200}"
jobs="${3:-2}"
rounds="${4:-3}"
backend="${5:-sqlite}"
here="$(dirname "$0")/.."
exec python3 - "$dedupsim" "$files" "$jobs" "$rounds" "$here/tests/data/consumers" "$backend" <<'PY'
import glob, json, os, resource, shutil, statistics, subprocess, sys, tempfile, time

dedupsim, files, jobs, rounds, data = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
backend = sys.argv[6]
sources = sorted(glob.glob(os.path.join(data, "right", "*.toml"))) + \
          sorted(glob.glob(os.path.join(data, "wrong", "*.toml")))
work = tempfile.mkdtemp(prefix="measure-class-")
try:
    klass = os.path.join(work, "class")
    os.mkdir(klass)
    for i in range(files):
        src = sources[i % len(sources)]
        kind = os.path.basename(os.path.dirname(src))
        shutil.copy(src, os.path.join(klass, f"student-{i + 1:03d}-{kind}-{os.path.basename(src)}"))
    print(f"{files} files ({len(sources)} sources in turn: "
          f"{sum('/right/' in s for s in sources)} right, {sum('/wrong/' in s for s in sources)} wrong), "
          f"`check DIR --jobs {jobs} --format json --backend {backend}`, {os.cpu_count()} CPUs\n")
    print("| round | wall s | CPU s (user+sys) | load before | load after | summary |")
    print("|---|---|---|---|---|---|")
    walls = []
    for r in range(rounds):
        load_before = open("/proc/loadavg").read().split()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        p = subprocess.run([dedupsim, "check", klass, "--jobs", jobs, "--format", "json",
                            "--backend", backend],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_after = open("/proc/loadavg").read().split()[0]
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        lines = p.stdout.splitlines()
        summary = json.loads(lines[-1])["summary"] if lines else {}
        rows = [json.loads(l) for l in lines[:-1]]
        slowest = max((row.get("seconds", 0) for row in rows), default=0)
        walls.append(wall)
        print(f"| {r + 1} | {wall:.1f} | {cpu:.1f} | {load_before} | {load_after} | "
              f"exit {p.returncode}; {summary.get('files')} files: {summary.get('passed')} pass, "
              f"{summary.get('failed')} fail, {summary.get('errors')} errors; slowest file "
              f"{slowest:.2f} s |", flush=True)
    print(f"\nmedian wall: {statistics.median(walls):.1f} s")
finally:
    shutil.rmtree(work)
PY
