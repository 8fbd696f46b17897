#include "store/store.h"

#include <fmt/format.h>

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

void Session::SetLockTimeout(std::chrono::milliseconds) {
  throw DatabaseError("this session sets no lock timeout");
}

void Session::SetIdleInTransactionTimeout(std::chrono::milliseconds) {
  throw DatabaseError("this database has no timeout for a session idle in a transaction");
}

bool Backend::AwaitSessionGone(int, std::chrono::milliseconds) const {
  throw DatabaseError(fmt::format("{}: the database has no sessions of its own to wait for", name()));
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
