// A retry loop around one delivery's transaction, as a consumer on REPEATABLE READ or
// SERIALIZABLE needs: when the database says the transaction must be retried (SQLSTATE
// 40001 serialization failure, 40P01 deadlock: StoreError::IsRetryable), the work is rolled
// back and run again from the start, up to max_attempts times in all. Every retry is noted
// on the session's trace with the SQLSTATE that caused it. Any other error, or a retryable
// one on the last attempt, is thrown to the caller (the delivery fails: nack, redelivery).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "store/store.h"

namespace dedupsim {

struct RetryReport {
  int attempts = 0;                    // runs of the work, the last one included
  std::vector<std::string> sqlstates;  // the retryable codes met, in order
};

// Runs work(session) until it returns, or fails in a way not worth retrying. The work
// begins and ends its own transaction (a ScopedTransaction rolls back as it unwinds).
template <typename Result>
Result RunWithRetries(Session& session, int max_attempts, RetryReport& report,
                      const std::function<Result()>& work);

// Records a retry on the session's trace: "retry 2 after 40001".
void NoteRetry(Session& session, int next_attempt, const std::string& sqlstate);

}  // namespace dedupsim

#include "store/error.h"

namespace dedupsim {

template <typename Result>
Result RunWithRetries(Session& session, int max_attempts, RetryReport& report,
                      const std::function<Result()>& work) {
  for (;;) {
    ++report.attempts;
    try {
      return work();
    } catch (const StoreError& e) {
      if (!e.IsRetryable() || report.attempts >= max_attempts) throw;
      report.sqlstates.push_back(e.backend_code());
      session.Rollback();  // nothing, when the work's own transaction already ended
      NoteRetry(session, report.attempts + 1, e.backend_code());
    }
  }
}

}  // namespace dedupsim
