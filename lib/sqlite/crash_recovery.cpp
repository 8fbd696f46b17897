#include "sqlite/crash_recovery.h"

#include <fmt/format.h>

#include <cstdint>

#include "sqlite/statement.h"
#include "sqlite/store.h"

namespace dedupsim {

namespace {

std::string Plural(int64_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// What the dead process left in the WAL, from its bytes: commit frames it wrote since it
// started (the frames present at fork are someone else's) and an uncommitted tail.
std::string DescribeWal(const WalFile& now, const WalFile& at_fork, int pid) {
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
      "WAL of {} bytes, {} valid: pid {} wrote {} since it started, so the first open after it sees {} of "
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

std::string DescribeJournal(const JournalFile& journal, int pid, bool removed) {
  if (!journal.exists) {
    return fmt::format("no rollback journal: pid {} left no unfinished transaction on disk", pid);
  }
  if (journal.bytes == 0 || !journal.hot) {
    return fmt::format(
        "journal of {} bytes left by pid {} is not hot (empty or header never finished; SQLite "
        "finishes it just before changing the database file): an open ignores it",
        journal.bytes, pid);
  }
  return fmt::format(
      "hot journal of {} bytes left by pid {} ({} of original pages): {}", journal.bytes, pid,
      Plural(journal.page_records, "image"),
      removed ? "rolled back and removed by that open" : "rolled back by that open");
}

}  // namespace

SqliteCrashRecovery::SqliteCrashRecovery(const DatabaseFile& db)
    : db_(db), wal_before_(ReadWal(db.path() + "-wal")) {}

std::string SqliteCrashRecovery::Recover(Recorder& recorder, int pid) {
  const std::string& path = db_.path();
  WalFile wal = ReadWal(path + "-wal");
  JournalFile journal = ReadJournal(path + "-journal");
  {
    // The scenario's check opens the database next: its first read recovers. It is the
    // probe's step, not the consumer's.
    Connection next = db_.Connect();
    next.SetTrace(&recorder, "check");
    next.SetTraceRole(kActorProbe, "database");
    next.Prepare("SELECT count(*) FROM Inbox").Step();
  }
  if (journal.exists) return DescribeJournal(journal, pid, !ReadJournal(path + "-journal").exists);
  if (wal.exists) return DescribeWal(wal, wal_before_, pid);
  return fmt::format("no WAL and no rollback journal: pid {} left nothing to recover", pid);
}

std::unique_ptr<CrashRecovery> SqliteBackend::WatchForCrash() const {
  return std::make_unique<SqliteCrashRecovery>(db_);
}

}  // namespace dedupsim
