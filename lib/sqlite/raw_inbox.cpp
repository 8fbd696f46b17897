#include "sqlite/raw_inbox.h"

#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "sqlite/connection.h"
#include "sqlite/error.h"
#include "sqlite/library.h"
#include "sqlite/workload_database.h"

namespace dedupsim {

namespace {

int64_t NowMicros() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

int OnBusy(void* arg, int count) {
  auto* busy = static_cast<SqliteRawInbox::Busy*>(arg);
  int64_t now = NowMicros();
  if (count == 0) busy->started_us = now;
  if (now - busy->started_us >= busy->timeout.count() * 1000) return 0;
  usleep(500);
  busy->calls++;
  busy->waited_us += NowMicros() - now;
  return 1;
}

}  // namespace

SqliteRawInbox::SqliteRawInbox(const std::string& path, Synchronous synchronous,
                               std::chrono::milliseconds busy_timeout) {
  busy_.timeout = busy_timeout;
  ConfigureSqliteLibrary();  // what every connection of the process runs with
  int rc = sqlite3_open_v2(PlainFileName(path).c_str(), &db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqliteError(rc, "cannot open " + path + ": " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_handler(db_, &OnBusy, &busy_);
  std::string pragma = "PRAGMA synchronous=" + std::string(ToString(synchronous));
  if (sqlite3_exec(db_, pragma.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) Fail("pragma");
  begin_ = Prepare("BEGIN");
  insert_ = Prepare(
      "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES (?1, ?2, ?3, ?4)");
  update_ = Prepare("UPDATE StockItems SET Reserved = Reserved + ?1 WHERE BookId = ?2");
  // The consumer's name never changes: bound once (sqlite3_reset keeps bindings).
  sqlite3_bind_text(insert_, 2, kRawInboxConsumer, sizeof kRawInboxConsumer - 1, SQLITE_STATIC);
  commit_ = Prepare("COMMIT");
  rollback_ = Prepare("ROLLBACK");
  CountTransactions(db_, counts_.get());
}

SqliteRawInbox::~SqliteRawInbox() {
  for (sqlite3_stmt* s : {begin_, insert_, update_, commit_, rollback_}) sqlite3_finalize(s);
  sqlite3_close_v2(db_);
}

sqlite3_stmt* SqliteRawInbox::Prepare(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) Fail(sql);
  return stmt;
}

void SqliteRawInbox::Fail(const char* what) {
  int code = sqlite3_extended_errcode(db_);
  std::string message =
      DescribeFailure(db_, code, std::string(sqlite3_errmsg(db_)) + " in: " + what);
  if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  throw SqliteError(code, message);
}

bool SqliteRawInbox::Handle(const OrderPlaced& m) {
  if (sqlite3_step(begin_) != SQLITE_DONE) Fail("BEGIN");
  sqlite3_reset(begin_);

  const char* stamp = stamp_.Now();
  sqlite3_bind_text(insert_, 1, m.message_id.data(), static_cast<int>(m.message_id.size()),
                    SQLITE_STATIC);
  sqlite3_bind_text(insert_, 3, stamp, RawStamp::kLength, SQLITE_STATIC);
  sqlite3_bind_text(insert_, 4, stamp, RawStamp::kLength, SQLITE_STATIC);
  int rc = sqlite3_step(insert_);
  int code = rc == SQLITE_DONE ? 0 : sqlite3_extended_errcode(db_);
  sqlite3_reset(insert_);
  if (rc != SQLITE_DONE) {
    if (!IsDuplicateKeyCode(code)) Fail("INSERT INTO Inbox");
    if (sqlite3_step(rollback_) != SQLITE_DONE) Fail("ROLLBACK");
    sqlite3_reset(rollback_);
    return false;
  }

  sqlite3_bind_int64(update_, 1, m.quantity);
  sqlite3_bind_text(update_, 2, m.book_id.data(), static_cast<int>(m.book_id.size()),
                    SQLITE_STATIC);
  if (sqlite3_step(update_) != SQLITE_DONE) Fail("UPDATE StockItems");
  sqlite3_reset(update_);

  if (sqlite3_step(commit_) != SQLITE_DONE) Fail("COMMIT");
  sqlite3_reset(commit_);
  return true;
}

BusyStats SqliteRawInbox::busy() const {
  return BusyStats{busy_.calls, std::chrono::microseconds(busy_.waited_us)};
}

}  // namespace dedupsim
