#include "crash.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pipe_io.h"
#include "sqlite/statement.h"
#include "trace_json.h"

namespace dedupsim {

namespace {

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// Opens the next connection after a process died, as SQLite's recovery needs, and notes
// what the dead process left behind and what became of it.
void RecoverAndNote(ScenarioEnv& env, pid_t pid) {
  const std::string& path = env.db.path();
  int64_t journal_before = FileSize(path + "-journal");
  int64_t wal_before = FileSize(path + "-wal");
  // A journal is hot (must be played back) only when its header carries the magic number;
  // SQLite writes that once it may have changed the database file itself.
  static constexpr unsigned char kJournalMagic[8] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7};
  bool hot = false;
  if (journal_before > 0) {
    unsigned char magic[8] = {};
    if (FILE* f = std::fopen((path + "-journal").c_str(), "rb")) {
      hot = std::fread(magic, 1, sizeof magic, f) == sizeof magic &&
            std::memcmp(magic, kJournalMagic, sizeof magic) == 0;
      std::fclose(f);
    }
  }
  {
    // The scenario's check opens the database next: its first read recovers. It is the
    // probe's step, not the consumer's.
    Connection next = env.db.Connect();
    next.SetTrace(&env.recorder, "check");
    next.SetTraceRole(kActorProbe, "database");
    next.Prepare("SELECT count(*) FROM Inbox").Step();
  }
  int64_t journal_after = FileSize(path + "-journal");
  std::string what;
  if (journal_before > 0) {
    if (!hot) {
      what = fmt::format(
          "journal of {} bytes left by pid {} has no valid header: the database file was never "
          "changed, nothing to roll back",
          journal_before, pid);
    } else {
      what = fmt::format("hot journal of {} bytes left by pid {}: {}", journal_before, pid,
                         journal_after > 0 ? "rolled back by the next open"
                                           : "rolled back and removed by the next open");
    }
  } else if (wal_before >= 0) {
    what = fmt::format(
        "WAL of {} bytes: pid {} wrote no commit frame, so the next open sees none of its work",
        wal_before, pid);
  } else {
    what = fmt::format("pid {} had no transaction open: nothing to recover", pid);
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
  pid_t pid = ::fork();
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
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

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
    RecoverAndNote(env, pid);
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
