#include "crash.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>

#include "child_process.h"
#include "pipe_io.h"
#include "sqlite/journal_files.h"
#include "sqlite/statement.h"
#include "store/store.h"
#include "trace_json.h"

namespace dedupsim {

namespace {

std::string Plural(int64_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// What the dead process left in the WAL, from its bytes: commit frames it wrote since it
// started (the frames present at fork are someone else's) and an uncommitted tail.
std::string DescribeWal(const WalFile& now, const WalFile& at_fork, pid_t pid) {
  if (!now.exists) return fmt::format("no WAL file: pid {} left nothing in a log", pid);
  if (now.bytes == 0) {
    return fmt::format(
        "empty WAL: no frame of pid {} is in the log, so the next open sees none of "
        "its work",
        pid);
  }
  if (!now.header_valid) {
    return fmt::format("WAL of {} bytes with no valid header: the next open replays none of it",
                       now.bytes);
  }
  int64_t commits = CommitsSince(now, at_fork);
  int64_t tail = TailSince(now, at_fork);
  std::string what = fmt::format(
      "WAL of {} bytes, {} valid: pid {} wrote {} since it started, so the next open sees {} of "
      "its work",
      now.bytes, Plural(now.valid_frames, "frame"), pid, Plural(commits, "commit frame"),
      commits == 0 ? std::string("none") : Plural(commits, "committed transaction"));
  if (tail > 0) {
    what += fmt::format(
        "; {} after the last commit frame (its unfinished transaction) are "
        "discarded",
        Plural(tail, "frame"));
  } else {
    what +=
        "; no frame after the last commit frame: its unfinished work, if any, never reached "
        "the log";
  }
  return what;
}

std::string DescribeJournal(const JournalFile& journal, pid_t pid, bool removed) {
  if (!journal.exists) {
    return fmt::format("no rollback journal: pid {} left no unfinished transaction on disk", pid);
  }
  if (journal.bytes == 0 || !journal.hot) {
    return fmt::format(
        "journal of {} bytes left by pid {} is not hot (empty or header never finished; SQLite "
        "finishes it just before changing the database file): the next open ignores it",
        journal.bytes, pid);
  }
  return fmt::format(
      "hot journal of {} bytes left by pid {} ({} of original pages): {}", journal.bytes, pid,
      Plural(journal.page_records, "image"),
      removed ? "rolled back and removed by the next open" : "rolled back by the next open");
}

// Opens the next connection after a process died, as SQLite's recovery needs, and notes
// what the dead process left behind, read from the files before the open.
void RecoverAndNote(ScenarioEnv& env, pid_t pid, const WalFile& wal_at_fork) {
  const std::string& path = env.db.path();
  WalFile wal = ReadWal(path + "-wal");
  JournalFile journal = ReadJournal(path + "-journal");
  {
    // The scenario's check opens the database next: its first read recovers. It is the
    // probe's step, not the consumer's.
    Connection next = env.db.Connect();
    next.SetTrace(&env.recorder, "check");
    next.SetTraceRole(kActorProbe, "database");
    next.Prepare("SELECT count(*) FROM Inbox").Step();
  }
  std::string what;
  if (journal.exists) {
    what = DescribeJournal(journal, pid, !ReadJournal(path + "-journal").exists);
  } else if (wal.exists) {
    what = DescribeWal(wal, wal_at_fork, pid);
  } else {
    what = fmt::format("no WAL and no rollback journal: pid {} left nothing to recover", pid);
  }
  // What the database did on that open: the database's step.
  TraceEvent e;
  e.at_us = env.recorder.MicrosSinceOrigin();
  e.instance = "database";
  e.pid = static_cast<int>(getpid());
  e.kind = "recover";
  e.actor = kActorDatabase;
  e.detail = what;
  e.result = "ok";
  env.recorder.Record(std::move(e));
}

}  // namespace

CrashReport RunCrashingDelivery(ScenarioEnv& env, const std::string& instance,
                                const std::string& point,
                                const std::function<void(const Hook& crash)>& delivery,
                                InMemoryEmailProvider* emails) {
  CrashReport report;
  if (env.options.crash_mode == CrashMode::kThrow) {
    try {
      delivery(CrashHook(point));
    } catch (const SimulatedCrash&) {
      report.crashed = true;
      report.pid = static_cast<int>(getpid());
      report.how = "SimulatedCrash";
    }
    return report;
  }

  const bool kill_mode = env.options.crash_mode == CrashMode::kKill;
  int fds[2];
  if (::pipe(fds) != 0) throw DatabaseError(fmt::format("pipe: {}", std::strerror(errno)));
  const size_t emails_before = emails ? static_cast<size_t>(emails->sent_count()) : 0;
  // The log as it was before the child ran: its frames are not the child's.
  const WalFile wal_at_fork = ReadWal(env.db.path() + "-wal");
  pid_t pid = ForkChild();  // dies with this process
  if (pid < 0) throw DatabaseError(fmt::format("fork: {}", std::strerror(errno)));

  if (pid == 0) {
    // Child: the delivery opens its own connection. Report, then die at the hook.
    ::close(fds[0]);
    env.recorder.Clear();
    Hook crash = [&, point] {
      env.recorder.Note(instance, "crash", point,
                        kill_mode ? "waiting for SIGKILL" : fmt::format("_exit({})", kPlannedExitCode));
      nlohmann::json message;
      message["events"] = EventsToJson(env.recorder.Events());
      nlohmann::json sent = nlohmann::json::array();
      if (emails) {
        auto all = emails->sent();
        for (size_t i = emails_before; i < all.size(); ++i) sent.push_back(all[i]);
      }
      message["emails"] = sent;
      WriteAll(fds[1], message.dump() + "\n");
      if (!kill_mode) ::_exit(kPlannedExitCode);
      for (;;) ::pause();  // stand at the hook point until the parent's SIGKILL
    };
    int code = 0;
    try {
      delivery(crash);
    } catch (const std::exception& e) {
      std::string text = fmt::format("dedupsim: child {}: {}\n", getpid(), e.what());
      WriteAll(STDERR_FILENO, text);
      code = 70;
    }
    ::_exit(code);  // the delivery finished without reaching the crash point
  }

  ::close(fds[1]);
  std::string line = ReadLine(fds[0]);
  if (kill_mode && !line.empty()) ::kill(pid, SIGKILL);
  ::close(fds[0]);
  int status = 0;
  WaitChild(pid, &status);

  if (!line.empty()) {
    nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
    if (!message.is_discarded()) {
      for (const TraceEvent& e : EventsFromJson(message["events"])) env.recorder.Record(e);
      if (emails) {
        for (const auto& text : message["emails"]) {
          std::string s = text.get<std::string>();
          auto colon = s.find(": ");
          emails->Send(s.substr(0, colon), colon == std::string::npos ? "" : s.substr(colon + 2));
        }
      }
    }
  }

  const bool planned = kill_mode ? (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !line.empty())
                                 : (WIFEXITED(status) && WEXITSTATUS(status) == kPlannedExitCode);
  if (planned) {
    report.crashed = true;
    report.pid = static_cast<int>(pid);
    report.how = kill_mode ? "SIGKILL" : fmt::format("_exit({})", kPlannedExitCode);
    // Seen by the parent, drawn on the dead process's own lane (its pid).
    TraceEvent died;
    died.at_us = env.recorder.MicrosSinceOrigin();
    died.instance = instance;
    died.pid = static_cast<int>(pid);
    died.kind = "died";
    died.actor = kActorConsumer;
    died.detail = point;
    died.result = fmt::format("pid {} {}", pid, kill_mode ? "killed by SIGKILL" : "called _exit");
    env.recorder.Record(std::move(died));
    // SQLite recovers from the files the dead process left; a server database (env.backend
    // not SQLite) discards the dead connection's open transaction itself, and there are no
    // files of ours to read.
    if (env.backend == nullptr || env.backend->name() == "sqlite") {
      RecoverAndNote(env, pid, wal_at_fork);
    }
    return report;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    report.pid = static_cast<int>(pid);
    return report;  // never reached the crash point
  }
  throw UnplannedDeath(fmt::format("child {} ({}) {} before reaching {}", pid, instance,
                                   DescribeWaitStatus(status), point));
}

}  // namespace dedupsim
