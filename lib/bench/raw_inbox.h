// The bench's baseline: the inbox consumer's SQL written directly against the sqlite3 C
// API, as a careful C programmer would write it and with nothing around it: statements
// prepared once and reused, parameters bound without copies, the timestamp made with
// gmtime_r and snprintf, no tracing, no hooks, no exceptions on the duplicate path.
//
// It writes exactly what IdempotentReserveStock writes (an Inbox row with ReceivedAt and
// CompletedAt, then Reserved += Quantity, in one deferred transaction), so the gap between
// the two is what dedupsim's own layers cost. One thread at a time; open it after fork.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "message.h"
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
};

}  // namespace dedupsim
