// The bench's baseline: the inbox consumer's SQL written directly against the sqlite3 C
// API, as a careful C programmer would write it and with nothing around it: statements
// prepared once and reused, parameters bound without copies (SQLITE_STATIC) and the
// constant consumer name bound once, the timestamp written by hand with its date and time
// of day made once per second, the same open flags and pragmas as the library's
// connections, no tracing, no hooks, no exceptions on the duplicate path.
//
// It writes exactly what IdempotentReserveStock writes (an Inbox row with ReceivedAt and
// CompletedAt, then Reserved += Quantity, in one deferred transaction), so the gap between
// the two is what dedupsim's own layers cost. One thread at a time; open it after fork.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/message.h"
#include "sqlite/connection.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dedupsim {

class RawInbox {
 public:
  // Opens path read-write (the file must exist), sets synchronous, and installs a busy
  // handler that sleeps 500 us per call up to busy_timeout, as Connection's does, so
  // several instances compare fairly. Throws SqliteError.
  RawInbox(const std::string& path, Synchronous synchronous,
           std::chrono::milliseconds busy_timeout);
  ~RawInbox();
  RawInbox(const RawInbox&) = delete;
  RawInbox& operator=(const RawInbox&) = delete;

  // True when the message was processed, false for a duplicate. Throws SqliteError.
  bool Handle(const OrderPlaced& m);

  sqlite3* handle() const { return db_; }
  BusyStats busy() const;

  // The timestamp's text, 2026-11-30T22:41:04.123Z: remade once per second, then only the
  // milliseconds are written.
  struct Stamp {
    static constexpr int kLength = 24;
    const char* Now();  // valid until the next call
    time_t second = -1;
    char text[80] = {};  // room for any int snprintf might write; 24 used
  };

  struct Busy {
    std::chrono::milliseconds timeout;
    int64_t calls = 0;
    int64_t waited_us = 0;
    int64_t started_us = 0;
  };

 private:
  [[noreturn]] void Fail(const char* what);
  sqlite3_stmt* Prepare(const char* sql);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* update_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* rollback_ = nullptr;
  Busy busy_;
  Stamp stamp_;
};

}  // namespace dedupsim
