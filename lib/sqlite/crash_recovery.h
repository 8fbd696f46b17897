// SQLite's CrashRecovery (store/store.h): a writer process that dies leaves its work in the
// database's companion files (the WAL's frames, a hot rollback journal), and the next
// connection to open the database recovers from them. Made before the writer runs, it
// reads the log as it was then (the frames present then are not the writer's); after the
// death, Recover reads the files (sqlite/journal_files.h), opens the next connection, traced
// as the probe "check" (its first read recovers), and says what the dead process left.
#pragma once

#include <string>

#include "sqlite/database.h"
#include "sqlite/journal_files.h"
#include "store/store.h"

namespace dedupsim {

class SqliteCrashRecovery final : public CrashRecovery {
 public:
  // db: must outlive this object.
  explicit SqliteCrashRecovery(const DatabaseFile& db);
  std::string Found(int pid) override;
  std::string Recover(Recorder& recorder, int pid) override;

 private:
  const DatabaseFile& db_;
  WalFile wal_before_;
  JournalFile journal_found_;  // as Found read it
};

}  // namespace dedupsim
