// A transaction on one connection: BEGIN in the constructor, ROLLBACK in the destructor
// unless Commit or Rollback ran. The state is tracked so a failed commit or an explicit
// rollback is never rolled back twice, and the destructor never throws.
#pragma once

#include "sqlite/connection.h"
#include "store/store.h"

namespace dedupsim {

// "BEGIN", "BEGIN IMMEDIATE", "BEGIN EXCLUSIVE".
const char* BeginSql(TransactionKind kind);

class Transaction {
 public:
  enum class State { kActive, kCommitted, kRolledBack };

  // Throws SqliteError when BEGIN fails (e.g. BEGIN IMMEDIATE past the busy timeout).
  explicit Transaction(Connection& connection, TransactionKind kind = TransactionKind::kDeferred);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Throws SqliteError; on failure SQLite may have kept the transaction open, and the
  // destructor will roll it back.
  void Commit();
  void Rollback();
  State state() const { return state_; }

 private:
  Connection& connection_;
  State state_ = State::kActive;
};

}  // namespace dedupsim
