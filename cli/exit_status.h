// The exit statuses of the dedupsim command, and what each means: the table below is the
// one source of --help's footer, the man page's EXIT STATUS and docs/cli.md's Exit status
// (the README has its own summary). Only cli/ knows them: lib/ reports what happened, the
// command maps it.
#pragma once

namespace dedupsim {

enum ExitStatus : int {
  kExitOk = 0,             // ran, and every check held
  kExitCheckFailed = 1,    // --check (or an invariant) found a difference
  kExitUsage = 2,          // unknown scenario, bad option or value
  kExitDatabase = 3,       // the database could not be used
  kExitCannotWrite = 3,    // an output file (--timeline, a docs page) cannot be written
  kExitProcess = 4,        // a child died unplanned, or the system refused a fork or a pipe
  kExitNotExhaustive = 5,  // check: no failure found, but a search was cut short by --budget
  kExitInterrupted = 130,  // SIGINT or SIGTERM: stopped, children killed, this run's files removed
};

struct ExitStatusMeaning {
  int code;
  const char* brief;   // --help's footer: plain text
  const char* detail;  // the man page and docs/cli.md: `code` marks what is typed or printed
};
inline constexpr ExitStatusMeaning kExitStatusMeanings[] = {
    {kExitOk, "ran and every check held", "ran, and every check held"},
    {kExitCheckFailed, "a check failed",
     "a check failed (`run --check`; `docs` with a page out of date or a run that differs from "
     "its lesson; bench or soak: a strategy that promises exactly-once broke it)"},
    {kExitUsage,
     "usage error (unknown scenario, bad option or value, a bad consumer or scenario file: "
     "FILE:LINE:COLUMN, an output file that is a file the run uses or not .svg)",
     "usage error: unknown scenario or command, bad option or value (`--diagram` other than "
     "`mermaid`; an integer that is not plain decimal digits, such as `010`, `0x10`, `-1`, or "
     "out of its range; an empty `--db`, `--timeline` or `--seed`), an option the scenario has "
     "no use for, a consumer or scenario file that cannot be read (`FILE:LINE:COLUMN: ...`), a "
     "docs page with broken markers, a `--timeline` that does not end in `.svg` or is a file "
     "the run uses"},
    {kExitDatabase,
     "database error (not a dedupsim database, altered schema, in use by another dedupsim, "
     "locked, unwritable), or an output file that cannot be written",
     "the database could not be used (not a dedupsim database, a schema altered by hand, in "
     "use by another dedupsim process, locked, unwritable; the message names the file; a "
     "PostgreSQL schema or table dedupsim did not create, a server that cannot be reached or "
     "started, libpq that cannot be opened), or an output file cannot be written (`--timeline`, "
     "a docs page, a symbolic link at its name)"},
    {kExitProcess, "a child process that died unplanned, or a fork or pipe the system refused",
     "a process failure: a child process (a crash mode's, a process instance's, a bench or "
     "soak consumer) died in a way nobody planned (the message names the child and its wait "
     "status), or the system refused a `fork` or a `pipe`"},
    {kExitNotExhaustive,
     "check: no file failed, but the search of one was cut short by --budget (sampled)",
     "`check`: no file failed, but the search of one was cut short by `--budget` (sampled, "
     "not exhaustive)"},
    {kExitInterrupted,
     "interrupted (SIGINT, SIGTERM, or SIGPIPE when its output's reader went away): children "
     "killed, every file the run created removed, "
     "a kept --db left valid",
     "interrupted by SIGINT (Ctrl-C) or SIGTERM, or by SIGPIPE when the reader of its output "
     "went away (`dedupsim run all | head -1`), on every command (run, explain, docs, "
     "cleanup, explore, bench, soak): children killed, the files the run created removed, a "
     "kept `--db` left valid; with `run --backend postgres` the throwaway server is stopped "
     "and its folder removed; nothing is reported"},
};

}  // namespace dedupsim
