// The one error funnel every backend feeds: whatever a database calls a failure (SQLite's
// extended result code, PostgreSQL's SQLSTATE), a consumer reasons about its kind.
// SQLite 1555/2067 and SQLSTATE 23505 are the same duplicate key; 40001 and 40P01 are a
// transaction to retry; 25P02 is a transaction the server has already aborted.
//
// DatabaseError is the base of every error that makes a database unusable for dedupsim (a
// foreign file or schema, a missing folder, a lock held elsewhere, a server that will not
// start); the CLI maps it to exit 3.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace dedupsim {

class DatabaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class StoreErrorKind {
  kOther,
  kDuplicateKey,        // SQLite 1555, 2067; SQLSTATE 23505
  kRetryable,           // SQLSTATE 40001 (serialization failure), 40P01 (deadlock)
  kTransactionAborted,  // SQLSTATE 25P02: every statement fails until ROLLBACK
  kBusy,                // SQLite 5, SQLSTATE 55P03: the lock stayed taken past the timeout
  // The machine's, not the consumer's: a full disk, an I/O error, no memory, a file that
  // cannot be opened or is damaged (SQLite 7, 8, 10, 11, 13, 14, 26; SQLSTATE classes 53
  // and 58). Never a delivery's outcome: the run stops and says so, naming the file.
  kEnvironment,
};

// "other", "duplicate-key", "retryable", "transaction-aborted", "busy".
std::string_view ToString(StoreErrorKind kind);

// The kind of an SQLite extended result code.
StoreErrorKind ClassifySqliteCode(int extended_code);
// The kind of a PostgreSQL SQLSTATE (five characters).
StoreErrorKind ClassifySqlstate(std::string_view sqlstate);

// A failed statement, with the backend's own code kept as text ("2067", "23505") so a
// trace can show what the database said.
class StoreError : public DatabaseError {
 public:
  StoreError(StoreErrorKind kind, std::string code, const std::string& message)
      : DatabaseError(message), kind_(kind), code_(std::move(code)) {}

  StoreErrorKind kind() const { return kind_; }
  const std::string& backend_code() const { return code_; }
  bool IsDuplicateKey() const { return kind_ == StoreErrorKind::kDuplicateKey; }
  bool IsRetryable() const { return kind_ == StoreErrorKind::kRetryable; }

 private:
  StoreErrorKind kind_;
  std::string code_;
};

}  // namespace dedupsim
