#include "sqlite/transaction.h"

#include "sqlite/error.h"
#include "sqlite/statement.h"

namespace dedupsim {

const char* BeginSql(TransactionKind kind) {
  switch (kind) {
    case TransactionKind::kImmediate:
      return "BEGIN IMMEDIATE";
    case TransactionKind::kExclusive:
      return "BEGIN EXCLUSIVE";
    case TransactionKind::kDeferred:
      break;
  }
  return "BEGIN";
}

// BEGIN, COMMIT and ROLLBACK run through the connection's statement cache: prepared once
// per connection, not once per transaction. They are traced like any statement.
Transaction::Transaction(Connection& connection, TransactionKind kind) : connection_(connection) {
  connection_.Cached(BeginSql(kind)).Execute();
}

Transaction::~Transaction() {
  if (state_ != State::kActive || !connection_.is_open()) return;
  try {
    if (connection_.InTransaction()) connection_.Cached("ROLLBACK").Execute();
  } catch (...) {
    // A destructor must not throw; SQLite rolls back on close anyway.
  }
  state_ = State::kRolledBack;
}

void Transaction::Commit() {
  if (state_ != State::kActive) throw DatabaseError("commit of a transaction that is not active");
  connection_.Cached("COMMIT").Execute();
  state_ = State::kCommitted;
}

void Transaction::Rollback() {
  if (state_ != State::kActive) return;
  state_ = State::kRolledBack;
  if (connection_.InTransaction()) connection_.Cached("ROLLBACK").Execute();
}

}  // namespace dedupsim
