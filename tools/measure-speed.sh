#!/bin/sh
# Measures the figures of docs/performance.md's section "Where a class waits" (issue 29): the
# PostgreSQL lessons' private server, the PostgreSQL explorer against SQLite's, and the soak
# beside a CPU hog, each NEW command side by side with the same command of an OLD binary
# (one built from an earlier commit), run in turn (old, new, old, new, ...) so that a drift of
# the machine's speed hits both alike. Prints markdown on stdout, progress on stderr.
#
#   sh tools/measure-speed.sh OLD_DEDUPSIM [NEW_DEDUPSIM] [ROUNDS] > figures.md
#
# NEW_DEDUPSIM defaults to build/cli/dedupsim, ROUNDS to 10. Each table gives the median of
# the rounds, the fastest and the slowest (min..max), the median of the rounds' own new/old
# ratios, and the load average (1 minute) before and after it. Run it on a machine at rest.
# Needs python3. Writes only under a temporary folder it removes, and the user's cache folder
# (the PostgreSQL template, docs/postgres.md).
set -eu
old="${1:?usage: sh tools/measure-speed.sh OLD_DEDUPSIM [NEW_DEDUPSIM] [ROUNDS]}"
new="${2:-build/cli/dedupsim}"
rounds="${3:-10}"
exec python3 - "$old" "$new" "$rounds" <<'PY'
import os, re, shutil, statistics, subprocess, sys, tempfile, time

old, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
work = tempfile.mkdtemp(prefix="measure-speed-")

def load():
    return open("/proc/loadavg").read().split()[0]

def say(text):
    print(text, file=sys.stderr, flush=True)

def run(argv, env=None):
    """Wall seconds of one whole process, and what it printed."""
    e = dict(os.environ)
    e.update(env or {})
    start = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=e, text=True)
    return time.monotonic() - start, p.stdout, p.returncode

def spread(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})"

def paired(name, args, n, env_new=None, env_old=None, pick=None):
    """Runs old and new in turn n times; returns the table row and the raw figures."""
    say(f"measure-speed: {name}, {n} pairs")
    l0 = load()
    run([new] + args, env_new)  # warm-up (and the template in the cache)
    run([old] + args, env_old)
    olds, news, ratios, outs_new, outs_old = [], [], [], [], []
    for _ in range(n):
        wo, oo, _ = run([old] + args, env_old)
        wn, on, _ = run([new] + args, env_new)
        if pick:
            wo, wn = pick(oo), pick(on)
        olds.append(wo); news.append(wn); ratios.append(wn / wo)
        outs_new.append(on); outs_old.append(oo)
    l1 = load()
    row = (f"| `dedupsim {' '.join(args)}` | {spread(olds)} | {spread(news)} | "
           f"{statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f}) | {l0} to {l1} |")
    return row, news, olds, outs_new, outs_old

print(f"**{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}**, new `{new}`, old `{old}`, "
      f"{os.cpu_count()} CPUs, {rounds} pairs per row unless said. Seconds: median (min..max).\n")

# --- the private PostgreSQL server ------------------------------------------------------
print("### `run all --backend postgres`: the private server\n")
print("Whole process, old and new in turn. The new binary copies the template from a cache "
      "folder of this script's (made by the warm-up run); the last row makes it anew for "
      "every run (an empty cache each time: initdb, then the template kept).\n")
print("| command | old | new | new/old, median of the pairs (min..max) | load |")
print("|---|--:|--:|--:|---|")
cache = {"DEDUPSIM_CACHE_DIR": os.path.join(work, "cache")}
row, pg_new, _, _, _ = paired("run all --backend postgres", ["run", "all", "--backend", "postgres"],
                              rounds, env_new=cache)
print(row)
row, sqlite_new, _, _, _ = paired("run all", ["run", "all"], rounds)
print(row)
fresh_n = max(3, rounds // 3)
counter = [0]
def fresh_env():
    counter[0] += 1
    return {"DEDUPSIM_CACHE_DIR": os.path.join(work, f"fresh-{counter[0]}")}
say("measure-speed: run all --backend postgres with an empty cache")
l0 = load()
fresh = [run([new, "run", "all", "--backend", "postgres"], fresh_env())[0] for _ in range(fresh_n)]
print(f"| `dedupsim run all --backend postgres`, empty cache every run ({fresh_n} runs) | | "
      f"{spread(fresh)} | | {l0} to {load()} |")
beyond = statistics.median(pg_new) - 0.5
print(f"\nThe new `run all --backend postgres` is {statistics.median(pg_new):.2f} s, "
      f"{beyond:.2f} s beyond its deliberate 500 ms hold (target: within 1.0 s of it: "
      f"{'met' if beyond <= 1.0 else 'not met'} in this run), against "
      f"{statistics.median(sqlite_new):.2f} s for the same lessons on SQLite.\n")

# --- the PostgreSQL explorer -------------------------------------------------------------
rows = ["naive", "check-then-process", "record-first", "inbox", "claim-last", "email",
        "natural-key", "shared-key", "shared-key-email", "optimistic-email", "correlation-key"]
print("### `explore --backend postgres` against SQLite\n")
def explored(out):
    m = re.search(r"explored in (\d+) ms", out)
    return int(m.group(1)) / 1000.0 if m else float("nan")
def schedules(out):
    m = re.search(r"^(\d+) schedules", out, re.M)
    return int(m.group(1)) if m else 0
n = max(3, rounds // 2)
print("The explorer's own time (its last line, `explored in N ms`: the search, not the "
      "process start nor the server's), old and new in turn, then the same eleven rows on "
      f"SQLite ({n} pairs).\n")
print("| command | old | new | new/old, median of the pairs (min..max) | load |")
print("|---|--:|--:|--:|---|")
row, pgx, _, outs, _ = paired("explore --backend postgres", ["explore", "--backend", "postgres"],
                              n, env_new=cache, pick=explored)
print(row)
sq_args = ["explore"] + [a for r in rows for a in ("--strategy", r)]
row, sqx, _, souts, _ = paired("explore (SQLite, the same rows)", sq_args, n, pick=explored)
print(row.replace(" ".join(sq_args[1:]), "--strategy ... (the same 11 rows)"))
pg_s, sq_s = schedules(outs[-1]), schedules(souts[-1])
per_pg = statistics.median(pgx) / pg_s * 1000 if pg_s else float("nan")
per_sq = statistics.median(sqx) / sq_s * 1000 if sq_s else float("nan")
print(f"\nPer schedule: PostgreSQL {per_pg:.1f} ms ({pg_s} schedules), SQLite {per_sq:.2f} ms "
      f"({sq_s} schedules): {per_pg / per_sq:.1f} times (target: 5 or less: "
      f"{'met' if per_pg / per_sq <= 5 else 'not met'} in this run).\n")

# --- soak beside a CPU hog --------------------------------------------------------------
print("### The README's soak beside a CPU hog\n")
print("`dedupsim soak --seed 7` while two busy loops (`sh -c 'while :; do :; done'`) run "
      "beside it for the whole table; wall seconds of the whole process, and the kills the "
      "runs reported (median, min..max).\n")
hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
try:
    row, _, _, outs_n, outs_o = paired("soak --seed 7 beside a hog", ["soak", "--seed", "7"], rounds)
finally:
    for h in hogs:
        h.kill()
        h.wait()
def kills(out):
    m = re.search(r"kills (\d+) \((\d+) with", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)
print("| command | old | new | new/old, median of the pairs (min..max) | load |")
print("|---|--:|--:|--:|---|")
print(row)
kn = [kills(o) for o in outs_n]; ko = [kills(o) for o in outs_o]
def ks(k):
    a = [x[0] for x in k]; b = [x[1] for x in k]
    return f"{statistics.median(a):.0f} ({min(a)}..{max(a)}), inside a transaction {statistics.median(b):.0f} ({min(b)}..{max(b)})"
print(f"\nKills: old {ks(ko)}; new {ks(kn)}.\n")
shutil.rmtree(work, ignore_errors=True)
PY
