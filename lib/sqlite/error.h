// Errors of the SQLite layer. Every failing SQLite call becomes a SqliteError that keeps
// the extended result code (read before any rollback, which would reset it) and the
// message. Its base is the store's error funnel (store/error.h), which classifies the code
// (duplicate key, busy) as every backend does.
#pragma once

#include <stdexcept>
#include <string>

#include "store/error.h"

struct sqlite3;

namespace dedupsim {

// Extended result codes that the consumers and scenarios reason about. They mirror
// sqlite3.h so that headers need not include it.
inline constexpr int kSqliteBusy = 5;
inline constexpr int kSqliteConstraintPrimaryKey = 1555;  // SQLITE_CONSTRAINT_PRIMARYKEY
inline constexpr int kSqliteConstraintUnique = 2067;      // SQLITE_CONSTRAINT_UNIQUE

// True for the two codes that mean "this key is already there": SQLite's counterpart
// of SQL Server's errors 2627 (primary key) and 2601 (unique index).
inline bool IsDuplicateKeyCode(int extended_code) {
  return extended_code == kSqliteConstraintPrimaryKey ||
         extended_code == kSqliteConstraintUnique;
}

// The message of a failure on db: for the machine's errors (StoreErrorKind::kEnvironment:
// a full disk, an I/O error ...), prefixed with the database file and, for a full disk,
// what to do; other messages as they are (a lesson's trace shows them). Defined with the
// connection (sqlite3.h stays out of this header).
std::string DescribeFailure(sqlite3* db, int extended_code, const std::string& message);

class SqliteError : public StoreError {
 public:
  SqliteError(int extended_code, const std::string& message)
      : StoreError(ClassifySqliteCode(extended_code), std::to_string(extended_code), message),
        code_(extended_code) {}

  int code() const { return code_; }               // extended result code
  int primary_code() const { return code_ & 0xff; }
  bool IsBusy() const { return primary_code() == kSqliteBusy; }
  bool IsDuplicateKey() const { return IsDuplicateKeyCode(code_); }

 private:
  int code_;
};

}  // namespace dedupsim
