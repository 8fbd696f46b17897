#!/bin/sh
# Measures docs/postgres.md's "kill to go on": in hung-consumer's killed half, the time from
# A's SIGKILL to B's INSERT answered (the figure killed.afterKillMs of
# `dedupsim run hung-consumer --backend postgres --format json`), side by side with a plain
# libpq program doing the same (build/tools/pg-kill-to-go-on/pg-kill-to-go-on), on one
# server started for this run, in turns: a dedupsim run, then a round of the plain program,
# ROUNDS times. Prints markdown on stdout: each side's median, quartiles, min and max, and
# the load average (1 minute) before and after.
#
#   sh tools/measure-kill-to-go-on.sh [BUILD] [ROUNDS] > figures.md
#
# Defaults: build, 20 rounds. Needs python3 and PostgreSQL's server programs (as root, the
# server runs as the postgres user). Writes only under a temporary folder it removes; stops
# the server it started.
set -eu
build="${1:-build}"
rounds="${2:-20}"
exec python3 - "$build/cli/dedupsim" "$build/tools/pg-kill-to-go-on/pg-kill-to-go-on" "$rounds" <<'PY'
import glob, json, os, pwd, shutil, statistics, subprocess, sys, tempfile

dedupsim, plain, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
work = tempfile.mkdtemp(prefix="kill-to-go-on-")
data = os.path.join(work, "data")
started = False
# PostgreSQL refuses to run as root: as root, the server runs as the postgres user.
as_user = []
if os.geteuid() == 0:
    user = pwd.getpwnam("postgres")
    os.chown(work, user.pw_uid, user.pw_gid)
    as_user = ["runuser", "-u", "postgres", "--"]
try:
    subprocess.run(as_user + [os.path.join(bindir, "initdb"), "-D", data, "-A", "trust", "-U", "postgres"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(as_user + [os.path.join(bindir, "pg_ctl"), "-D", data, "-w", "-l", os.path.join(work, "log"),
                    "-o", f"-k {work} -c listen_addresses='' -p 5432", "start"],
                   check=True, stdout=subprocess.DEVNULL)
    started = True
    dsn = f"host={work} port=5432 user=postgres dbname=postgres"
    load_before = os.getloadavg()[0]
    ours, theirs = [], []
    for _ in range(rounds):
        run = subprocess.run([dedupsim, "run", "hung-consumer", "--backend", "postgres", "--dsn", dsn,
                              "--format", "json"], check=True, capture_output=True, text=True)
        figures = json.loads(run.stdout.splitlines()[0])
        ours.append(float(figures["killed"]["afterKillMs"]))
        plain_run = subprocess.run([plain, dsn, "1"], capture_output=True, text=True)
        if plain_run.returncode != 0:
            sys.exit("pg-kill-to-go-on failed: " + plain_run.stderr.strip())
        out = plain_run.stdout
        theirs.append(float(out.split()[1]))
    load_after = os.getloadavg()[0]

    def row(name, xs):
        q = statistics.quantiles(xs, n=4)
        return (f"| {name} | {len(xs)} | {statistics.median(xs):.2f} | {q[0]:.2f} to {q[2]:.2f} | "
                f"{min(xs):.2f} | {max(xs):.2f} |")

    print(f"{rounds} rounds in turns on one PostgreSQL server ({os.path.basename(os.path.dirname(bindir))}), "
          f"{os.cpu_count()} CPUs, load average (1 min) {load_before:.1f} before, {load_after:.1f} after\n")
    print("| kill to go on, ms | N | median | quartiles | min | max |")
    print("|---|---|---|---|---|---|")
    print(row("dedupsim run hung-consumer (killed.afterKillMs)", ours))
    print(row("plain libpq program (pg-kill-to-go-on)", theirs))
finally:
    if started:
        subprocess.run(as_user + [os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
PY
