// What a command asks of its database's durability and waiting, whichever the backend, so
// a command and the libraries above the backends can carry the choice without naming one:
// the journal and the synchronous level of a SQLite file, and how long a connection waits
// for a lock (SQLite's busy timeout). PostgreSQL's are the server's (its run ignores them;
// synchronous_commit is a setting of the bench's sessions, WorkloadSettings).
#pragma once

#include <chrono>
#include <string_view>

namespace dedupsim {

enum class JournalMode { kWal, kDelete };
enum class Synchronous { kOff, kNormal, kFull };

std::string_view ToString(JournalMode mode);   // "wal", "delete"
std::string_view ToString(Synchronous level);  // "off", "normal", "full"

struct DatabaseSettings {
  JournalMode journal = JournalMode::kWal;
  Synchronous synchronous = Synchronous::kNormal;
  std::chrono::milliseconds busy_timeout{5000};
};

}  // namespace dedupsim
