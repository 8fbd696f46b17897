#include "store/untrusted_sql.h"

#include "os/pause_point.h"
#include "store/error.h"
#include "store/store.h"

namespace dedupsim {

std::chrono::milliseconds StatementBudget() {
  static const long test_only = TestOnlySetting("DEDUPSIM_TEST_ONLY_STATEMENT_BUDGET_MS");
  return test_only > 0 ? std::chrono::milliseconds(test_only) : kStatementBudget;
}

UntrustedSql& Store::untrusted() {
  throw DatabaseError("this store runs no SQL of a file (no UntrustedSql on its connection)");
}

}  // namespace dedupsim
