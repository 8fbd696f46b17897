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

std::string DescribeJournal(const JournalFile& journal, int pid) {
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
      "hot journal of {} bytes left by pid {} ({} of original pages): the first open after it "
      "rolls the database back to them",
      journal.bytes, pid, Plural(journal.page_records, "image"));
}

}  // namespace

SqliteCrashRecovery::SqliteCrashRecovery(const DatabaseFile& db)
    : db_(db), wal_before_(ReadWal(db.path() + "-wal")) {}

std::string SqliteCrashRecovery::Found(int pid) {
  const std::string& path = db_.path();
  journal_found_ = ReadJournal(path + "-journal");
  if (journal_found_.exists) return DescribeJournal(journal_found_, pid);
  WalFile wal = ReadWal(path + "-wal");
  if (wal.exists) return DescribeWal(wal, wal_before_, pid);
  return fmt::format("no WAL and no rollback journal: pid {} left nothing to recover", pid);
}

std::string SqliteCrashRecovery::Recover(Recorder& recorder, int pid) {
  const std::string journal = db_.path() + "-journal";
  {
    // The scenario's check opens the database next: its first read recovers. It is the
    // probe's step, not the consumer's.
    Connection next = db_.Connect();
    next.SetTrace(&recorder, "check");
    next.SetTraceRole(kActorProbe, "database");
    next.Prepare("SELECT count(*) FROM Inbox").Step();
  }
  // What the open did to a hot journal, read from the disk after it.
  if (!journal_found_.exists || journal_found_.bytes == 0 || !journal_found_.hot) return "";
  return ReadJournal(journal).exists
             ? fmt::format("the hot journal left by pid {} is still there after it", pid)
             : fmt::format("the hot journal left by pid {} is gone after it: rolled back and "
                           "removed",
                           pid);
}

std::unique_ptr<CrashRecovery> SqliteBackend::WatchForCrash() const {
  return std::make_unique<SqliteCrashRecovery>(db_);
}

}  // namespace dedupsim
