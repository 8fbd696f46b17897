#include "store/store.h"

#include "store/error.h"

namespace dedupsim {

std::string_view ToString(Isolation level) {
  switch (level) {
    case Isolation::kRepeatableRead:
      return "repeatable-read";
    case Isolation::kSerializable:
      return "serializable";
    case Isolation::kReadCommitted:
      break;
  }
  return "read-committed";
}

ScopedTransaction::ScopedTransaction(Session& session, TransactionKind kind) : session_(session) {
  session_.Begin(kind);
}

ScopedTransaction::~ScopedTransaction() {
  if (state_ != State::kActive) return;
  state_ = State::kRolledBack;
  try {
    session_.Rollback();
  } catch (...) {
    // A destructor must not throw; the database rolls back on close anyway.
  }
}

void ScopedTransaction::Commit() {
  if (state_ != State::kActive) throw DatabaseError("commit of a transaction that is not active");
  session_.Commit();
  state_ = State::kCommitted;
}

void ScopedTransaction::Rollback() {
  if (state_ != State::kActive) return;
  state_ = State::kRolledBack;
  session_.Rollback();
}

}  // namespace dedupsim
