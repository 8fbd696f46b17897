// Errors of the SQLite layer. Every failing SQLite call becomes a SqliteError that keeps
// the extended result code (read before any rollback, which would reset it) and the
// message. DatabaseError is its base: anything that makes a database unusable for
// dedupsim (a foreign file, a missing folder, a lock held elsewhere) and maps to exit 3.
#pragma once

#include <stdexcept>
#include <string>

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

class DatabaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SqliteError : public DatabaseError {
 public:
  SqliteError(int extended_code, const std::string& message)
      : DatabaseError(message), code_(extended_code) {}

  int code() const { return code_; }               // extended result code
  int primary_code() const { return code_ & 0xff; }
  bool IsBusy() const { return primary_code() == kSqliteBusy; }
  bool IsDuplicateKey() const { return IsDuplicateKeyCode(code_); }

 private:
  int code_;
};

}  // namespace dedupsim
