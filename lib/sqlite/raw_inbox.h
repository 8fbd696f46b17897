// The bench's baseline on SQLite (store/workload_database.h's RawInbox): the inbox
// consumer's SQL written directly against the sqlite3 C API, as a careful C programmer
// would write it and with nothing around it: statements prepared once and reused,
// parameters bound without copies (SQLITE_STATIC) and the constant consumer name bound
// once, the timestamp written by hand with its date and time of day made once per second
// (RawStamp), the same open flags and pragmas as the library's connections, no tracing, no
// exceptions on the duplicate path; its transactions counted by SQLite's commit and
// rollback hooks.
//
// It writes exactly what IdempotentReserveStock writes (an Inbox row with ReceivedAt and
// CompletedAt, then Reserved += Quantity, in one deferred transaction), so the gap between
// the two is what dedupsim's own layers cost. One thread at a time; open it after fork.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/message.h"
#include "sqlite/connection.h"
#include "store/workload_database.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dedupsim {

class SqliteRawInbox final : public RawInbox {
 public:
  // Opens path read-write (the file must exist), sets synchronous, and installs a busy
  // handler that sleeps 500 us per call up to busy_timeout, as Connection's does, so
  // several instances compare fairly. Throws SqliteError.
  SqliteRawInbox(const std::string& path, Synchronous synchronous,
                 std::chrono::milliseconds busy_timeout);
  ~SqliteRawInbox() override;
  SqliteRawInbox(const SqliteRawInbox&) = delete;
  SqliteRawInbox& operator=(const SqliteRawInbox&) = delete;

  // True when the message was processed, false for a duplicate. Throws SqliteError.
  bool Handle(const OrderPlaced& m) override;
  BusyStats busy() const override;
  TransactionCounts transactions() const override { return *counts_; }

  sqlite3* handle() const { return db_; }

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
  RawStamp stamp_;
  // On the heap: the hooks hold its address.
  std::unique_ptr<TransactionCounts> counts_ = std::make_unique<TransactionCounts>();
};

}  // namespace dedupsim
