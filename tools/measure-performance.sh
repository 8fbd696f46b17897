#!/bin/sh
# Measures every figure docs/performance.md quotes, on the code in this checkout, and prints
# them as the markdown that goes between the page's "measured" markers: a paste, not an edit.
#
#   sh tools/measure-performance.sh [--build] [--postgres] [--build-dir DIR] > figures.md
#
# Needs an already built DIR (default build/) with DIR/cli/dedupsim, and hyperfine, valgrind
# (callgrind_annotate), strace and python3 (all Debian packages). Without --build it takes
# about 5 minutes on 2 idle cores. Run it on a machine at rest: every table gives the load
# average read before and after it (uptime), and the spread between rounds.
#
#   --build      also the from-scratch build times (minutes): the README's first command in
#                a fresh clone of HEAD without ccache, and the whole suite's build
#   --postgres   also the PostgreSQL section (bench on a throwaway cluster; see
#                tools/measure-performance-postgres.sh, kept by whoever keeps that section)
#
# Progress goes to stderr, the figures to stdout.
# shellcheck disable=SC2016 # backquotes in single quotes are markdown, not commands
set -eu
cd "$(dirname "$0")/.."

build_dir=build
with_build=0
with_postgres=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) with_build=1 ;;
    --postgres) with_postgres=1 ;;
    --build-dir) shift; build_dir="$1" ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "measure-performance: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

dedupsim="$build_dir/cli/dedupsim"
if [ ! -x "$dedupsim" ]; then
  echo "measure-performance: $dedupsim not found: build first (README)" >&2
  exit 2
fi
for tool in hyperfine valgrind callgrind_annotate strace python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "measure-performance: $tool is needed (apt-get install hyperfine valgrind strace python3)" >&2
    exit 2
  fi
done
dedupsim=$(cd "$(dirname "$dedupsim")" && pwd)/dedupsim

work=$(mktemp -d "${TMPDIR:-/tmp}/measure-performance-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

load() { cut -d' ' -f1 /proc/loadavg; }
say() { echo "measure-performance: $*" >&2; }
started=$(date +%s)

# --- the machine and the code ----------------------------------------------------------
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=" (with uncommitted changes)"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
sqlite_version=$(python3 -c 'import sqlite3; print(sqlite3.sqlite_version)' 2>/dev/null || echo "?")
echo "**At $commit$dirty**, $(date -u '+%Y-%m-%d %H:%M UTC'), \`$build_dir\` ($build_type build), $(nproc) CPUs, SQLite $sqlite_version."
echo "Each table gives the load average (1 minute) read before and after it: read it before the figures."
echo

# --- instructions per message (callgrind) -----------------------------------------------
say "callgrind: raw and inbox, 5,000 messages"
l0=$(load)
for s in raw inbox; do
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$s" "$dedupsim" bench --messages 5000 \
    --strategy "$s" >/dev/null 2>"$work/cg.$s.log"
done
raw_ir=$(callgrind_annotate --inclusive=yes "$work/cg.raw" | grep 'RawInbox::Handle(' | head -1 | awk '{gsub(",","",$1); print $1}')
inbox_ir=$(callgrind_annotate --inclusive=yes "$work/cg.inbox" | grep 'IdempotentReserveStock::Handle(' | head -1 | awk '{gsub(",","",$1); print $1}')
l1=$(load)
echo "### Instructions per message (callgrind)"
echo
echo '`valgrind --tool=callgrind dedupsim bench --messages 5000 --strategy raw|inbox`, inclusive instructions of `RawInbox::Handle` and `IdempotentReserveStock::Handle` over 5,000 messages (deterministic: the load does not change them). Load '"$l0 to $l1"'.'
echo
python3 - "$raw_ir" "$inbox_ir" <<'EOF'
import sys
raw, inbox = (int(x) / 5000 for x in sys.argv[1:3])
print("| raw | inbox | inbox/raw by instructions | target 0.95 |")
print("|--:|--:|--:|---|")
r = raw / inbox
print(f"| {raw:,.0f} | {inbox:,.0f} | {r:.3f} | {'met' if r >= 0.95 else 'not met'} |")
EOF
echo

# --- bench: raw and inbox at 1, 2, 4 instances; checkpoints ---------------------------
say "bench: raw and inbox, 5 interleaved rounds at 1, 2, 4 instances"
l0=$(load)
for k in 1 2 4; do
  "$dedupsim" bench --strategy raw --strategy inbox --repeat 5 --instances-count "$k" \
    --format json >"$work/bench.$k.json"
done
"$dedupsim" bench --strategy raw --strategy inbox --repeat 5 --checkpoints after \
  --format json >"$work/bench.after.json"
l1=$(load)
echo "### Messages per second: raw and inbox"
echo
echo '`dedupsim bench --strategy raw --strategy inbox --repeat 5 --instances-count K --format json` (WAL, synchronous NORMAL, 20,000 messages, 30% duplicates, threads): median of 5 interleaved rounds, and the slowest and fastest round. Then the same at K = 1 with `--checkpoints after` (SQLite'"'"'s automatic checkpoints out of the timed loop). Load '"$l0 to $l1"'.'
echo
python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
def load(name):
    with open(f"{work}/{name}") as f:
        return {r["strategy"]: r for r in json.load(f)["results"]}
def cell(r):
    rounds = r["roundsMessagesPerSecond"]
    return f"{r['messagesPerSecond']:,.0f} ({min(rounds):,.0f}..{max(rounds):,.0f})"
print("| instances | raw msg/s | inbox msg/s | inbox/raw (medians) | target 0.93 |")
print("|--:|--:|--:|--:|---|")
for k in (1, 2, 4):
    r = load(f"bench.{k}.json")
    ratio = r["inbox"]["messagesPerSecond"] / r["raw"]["messagesPerSecond"]
    print(f"| {k} | {cell(r['raw'])} | {cell(r['inbox'])} | {ratio:.3f} | {'met' if ratio >= 0.93 else 'not met'} |")
inside, after = load("bench.1.json"), load("bench.after.json")
print()
print("| strategy | checkpoints inside msg/s | `--checkpoints after` msg/s | checkpoints' share of the time per message |")
print("|---|--:|--:|--:|")
for s in ("raw", "inbox"):
    share = 1 - inside[s]["messagesPerSecond"] / after[s]["messagesPerSecond"]
    print(f"| {s} | {cell(inside[s])} | {cell(after[s])} | {share:.0%} |")
ratio = after["inbox"]["messagesPerSecond"] / after["raw"]["messagesPerSecond"]
print()
print(f"inbox/raw without checkpoints in the timed loop: {ratio:.3f}.")
EOF
echo

# --- every strategy, WAL/NORMAL and DELETE/FULL ---------------------------------------
say "bench: every strategy, WAL and DELETE/FULL, 3 rounds"
l0=$(load)
"$dedupsim" bench --repeat 3 --format json >"$work/every.wal.json" || true
"$dedupsim" bench --journal delete --synchronous full --messages 2000 --repeat 3 --format json \
  >"$work/every.delete.json" || true
l1=$(load)
echo "### Every strategy, WAL and DELETE/FULL"
echo
echo '`dedupsim bench --repeat 3` (WAL, synchronous NORMAL, 20,000 messages) and `dedupsim bench --journal delete --synchronous full --messages 2000 --repeat 3`, one instance: median of 3 rounds (slowest..fastest), and what the check found. Load '"$l0 to $l1"'.'
echo
python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
def load(name):
    with open(f"{work}/{name}") as f:
        return {r["strategy"]: r for r in json.load(f)["results"]}
wal, delete = load("every.wal.json"), load("every.delete.json")
def cell(r):
    rounds = r["roundsMessagesPerSecond"]
    text = f"{r['messagesPerSecond']:,.0f} ({min(rounds):,.0f}..{max(rounds):,.0f})"
    if r["doubled"] or r["lost"]:
        text += f", doubled {r['doubled']:,}, lost {r['lost']:,}"
    return text
print("| strategy | WAL/NORMAL msg/s | DELETE/FULL msg/s (2,000 messages) |")
print("|---|--:|--:|")
for s in wal:
    print(f"| {s} | {cell(wal[s])} | {cell(delete[s]) if s in delete else '-'} |")
EOF
echo

# --- soak -----------------------------------------------------------------------------
say "soak: five runs"
l0=$(load)
i=0
for args in "--strategy inbox" "--strategy natural-key" "--strategy naive" \
  "--strategy check-then-process" "--strategy inbox --journal delete --synchronous full --messages 1000"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # the arguments are words
  "$dedupsim" soak --seed 7 $args --format json >"$work/soak.$i.json" 2>/dev/null || true
  echo "$args" >"$work/soak.$i.args"
done
l1=$(load)
echo "### Soak: consumers killed at random"
echo
echo '`dedupsim soak --seed 7 --strategy S` (4 consumers, a kill about every 50 ms, lease 200 ms, 5,000 messages unless said). The kill schedule comes from the seed; what each victim was doing when the signal came is up to the scheduler, so counts change from run to run. Load '"$l0 to $l1"'.'
echo
python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
print("| run | kills (mid-transaction) | redeliveries | lost | doubled | time | invariants held |")
print("|---|--:|--:|--:|--:|--:|---|")
for i in range(1, 6):
    args = open(f"{work}/soak.{i}.args").read().strip()
    try:
        r = json.load(open(f"{work}/soak.{i}.json"))
    except (OSError, ValueError):
        print(f"| `{args}` | (no result) | | | | | |")
        continue
    print(f"| `{args}` | {r['kills']} ({r['killsMidTransaction']}) | {r['redeliveries']} | {r['lost']} | "
          f"{r['doubled']:,} | {r['seconds']:.2f} s | {'yes' if r['held'] else 'no'} |")
EOF
echo

# --- run and process start (hyperfine) -------------------------------------------------
say "hyperfine: run all, run everything, list"
# The deliberate waits of run everything, read from what happened: every sleep of 0.3 s or
# more (the holds; the staggers of 0.1 s run inside them), and hung-consumer's busy timeout.
strace -f -T -e trace=clock_nanosleep -o "$work/sleeps.txt" "$dedupsim" run everything >/dev/null 2>&1 || true
"$dedupsim" run hung-consumer --format json >"$work/hung.json" 2>/dev/null || true
waits_everything=$(python3 - "$work" <<'EOF'
import json, re, sys
work = sys.argv[1]
total = 0.0
for line in open(f"{work}/sleeps.txt"):
    m = re.search(r"<(\d+\.\d+)>$", line.strip())
    if m and "clock_nanosleep" in line and float(m.group(1)) >= 0.3:
        total += float(m.group(1))
try:
    total += json.load(open(f"{work}/hung.json")).get("busyTimeoutMs", 0) / 1000
except (OSError, ValueError):
    pass
print(f"{total:.3f}")
EOF
)
l0=$(load)
hyperfine -N -w 2 -r 15 --export-json "$work/all.json" "$dedupsim run all" >/dev/null 2>&1
hyperfine -N -w 1 -r 5 --export-json "$work/everything.json" "$dedupsim run everything" >/dev/null 2>&1
hyperfine -N -w 3 -r 30 --export-json "$work/list.json" "$dedupsim list" >/dev/null 2>&1
l1=$(load)
echo "### \`dedupsim run\` and process start"
echo
echo '`hyperfine -N -w 2 -r 15 '"'"'dedupsim run all'"'"'`, `hyperfine -N -w 1 -r 5 '"'"'dedupsim run everything'"'"'`, `hyperfine -N -w 3 -r 30 '"'"'dedupsim list'"'"'`. The deliberate waits: `run all` has one hold of 500 ms (concurrent; the stagger runs inside it); `run everything`'"'"'s were read from a run: every sleep of 0.3 s or more (`strace -f -T -e trace=clock_nanosleep`) plus hung-consumer'"'"'s busy timeout. Load '"$l0 to $l1"'.'
echo
python3 - "$work" "$waits_everything" <<'EOF'
import json, sys
work, waits = sys.argv[1], float(sys.argv[2])
def row(name, what, deliberate, target):
    r = json.load(open(f"{work}/{name}"))["results"][0]
    def t(s):
        return f"{s * 1000:.1f} ms" if s < 2 else f"{s:.3f} s"
    figure = f"{t(r['mean'])} ± {r['stddev'] * 1000:.1f} ms ({t(r['min'])} … {t(r['max'])})"
    cpu = f"{(r['user'] + r['system']) * 1000:.1f} ms"
    if target is None:
        print(f"| {what} | - | {figure} | - | {cpu} | - |")
        return
    verdict = "met" if r["mean"] <= target else "not met"
    beyond = f"{(r['mean'] - deliberate) * 1000:.1f} ms"
    print(f"| {what} | {t(deliberate)} | {figure} | {beyond} | {cpu} | <= {t(target)}: {verdict} |")
print("| command | deliberate waits | mean ± σ (min … max) | beyond the waits (mean) | user + sys (mean) | target |")
print("|---|--:|---|--:|--:|---|")
row("all.json", "`dedupsim run all`", 0.5, 0.510)
row("everything.json", "`dedupsim run everything`", waits, waits + 0.050)
row("list.json", "`dedupsim list`", 0.0, None)
EOF
echo

# --- system calls of run (strace -c) -----------------------------------------------------
say "strace: system calls of run all and run everything"
l0=$(load)
echo "### System calls of \`dedupsim run\`"
echo
echo '`strace -f -c -o FILE dedupsim run all|everything` (counts; `fdatasync` and `unlink` do not depend on the load, the total does a little: a waiting busy handler retries every 0.5 ms). Also `LD_DEBUG=files dedupsim list`: the shared libraries opened at start-up.'
echo
echo "| command | fdatasync | fsync | unlink | openat | all system calls |"
echo "|---|--:|--:|--:|--:|--:|"
for what in all everything; do
  strace -f -c -o "$work/sc.$what" "$dedupsim" run "$what" >/dev/null 2>&1 || true
  python3 - "$work/sc.$what" "$what" <<'EOF'
import sys
counts = {}
total = 0
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit():
        if f[-1] == "total":
            total = int(f[3])
        else:
            counts[f[-1]] = int(f[3])
c = lambda n: f"{counts.get(n, 0):,}"
print(f"| `dedupsim run {sys.argv[2]}` | {c('fdatasync')} | {c('fsync')} | {c('unlink')} | {c('openat')} | {total:,} |")
EOF
done
libs=$(LD_DEBUG=files "$dedupsim" list 2>&1 >/dev/null | grep -c 'file=.*needed by' || true)
l1=$(load)
echo
echo "Shared libraries opened at start-up: $libs. Load $l0 to $l1."
echo

# --- PostgreSQL (optional; its own script) ---------------------------------------------
if [ "$with_postgres" = 1 ]; then
  if [ -f tools/measure-performance-postgres.sh ]; then
    say "PostgreSQL section"
    DEDUPSIM="$dedupsim" sh tools/measure-performance-postgres.sh
  else
    say "no tools/measure-performance-postgres.sh: PostgreSQL section skipped"
  fi
fi

# --- build from scratch (optional: minutes) ---------------------------------------------
if [ "$with_build" = 1 ]; then
  say "build: a fresh clone of HEAD, without ccache (minutes)"
  git clone -q . "$work/clone"
  l0=$(load)
  (cd "$work/clone" && CCACHE_DISABLE=1 /usr/bin/time -f '%e %U %S' -o "$work/time.first" \
    sh -c 'sh tools/setup.sh && build/cli/dedupsim run all' >/dev/null 2>"$work/build.first.log")
  l1=$(load)
  (cd "$work/clone" && rm -rf build-suite && CCACHE_DISABLE=1 /usr/bin/time -f '%e %U %S' -o "$work/time.suite" \
    sh -c 'cmake -S . -B build-suite -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEDUPSIM_TESTS=ON >/dev/null && cmake --build build-suite -j2' \
    >/dev/null 2>"$work/build.suite.log")
  l2=$(load)
  echo "### Build from scratch"
  echo
  echo "A fresh clone of $commit, without ccache (\`CCACHE_DISABLE=1\`), \`/usr/bin/time\`: wall, and the CPU time of every process (user + sys)."
  echo
  echo "| what | command | wall | user + sys | load before, after | target |"
  echo "|---|---|--:|--:|---|---|"
  read -r w u s <"$work/time.first"
  verdict=$(python3 -c "print('met' if $w < 100 else 'not met')")
  echo "| README's first command | \`sh tools/setup.sh && build/cli/dedupsim run all\` | $w s | $u + $s s | $l0, $l1 | < 100 s: $verdict |"
  read -r w u s <"$work/time.suite"
  verdict=$(python3 -c "print('met' if $w < 180 else 'not met')")
  echo "| the whole suite's build | \`cmake -B build-suite -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEDUPSIM_TESTS=ON && cmake --build build-suite -j2\` (what \`setup.sh --tests\` builds) | $w s | $u + $s s | $l1, $l2 | < 180 s: $verdict |"
  echo
fi

say "done in $(( $(date +%s) - started )) s"
