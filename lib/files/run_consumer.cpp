// Running a consumer file's steps for one delivery (RunConsumer, run_consumer.h): each sql
// step in the sandbox with the rules its check found, each hook, send and publish a step of
// the connection's gate. Reading and checking the file is consumer_file.cpp's.
#include "files/run_consumer.h"

#include <fmt/format.h>

#include "explore/strategy.h"
#include "sqlite/error.h"
#include "sqlite/run_hook.h"
#include "sqlite/sandbox.h"
#include "sqlite/statement.h"

namespace dedupsim::files {

namespace {

std::string ParameterValue(Parameter p, const ConsumerFile& file, const OrderPlaced& m,
                           Clock& clock) {
  switch (p) {
    case Parameter::kMessageId:
      return m.message_id;
    case Parameter::kConsumer:
      return file.consumer;
    case Parameter::kBookId:
      return m.book_id;
    case Parameter::kQuantity:
      return std::to_string(m.quantity);
    case Parameter::kOrderId:
      return m.order_id;
    case Parameter::kNow:
      return FormatTimestamp(clock.Now());
  }
  return "";
}

// An action ended the delivery.
struct Ended {
  Result result;
};

// What a sql step's statement did, for the step's reactions.
enum class SqlResult { kRow, kRowWithNull, kNoRow, kDuplicate, kZeroRows, kChanged };

// Runs the step's statement in the sandbox, with the rules its check found. A statement the
// sandbox stopped (past its budget, or refused now) is the file's fault: FileError at it.
SqlResult RunSqlStep(const ConsumerFile& file, const Step& s, Connection& db, Clock& clock,
                     const OrderPlaced& m) {
  SandboxScope scope(db, s.rules);
  try {
    Statement& st = db.Cached(s.sql);
    for (size_t i = 0; i < s.parameters.size(); ++i) {
      int index = static_cast<int>(i) + 1;
      if (s.parameters[i] == Parameter::kQuantity) {
        st.Bind(index, m.quantity);
      } else {
        st.Bind(index, ParameterValue(s.parameters[i], file, m, clock));
      }
    }
    if (s.query) {
      bool row = st.Step();
      bool null_first = row && st.ColumnIsNull(0);
      st.Reset();  // a statement left mid-read would keep its read transaction open
      if (!row) return SqlResult::kNoRow;
      return null_first ? SqlResult::kRowWithNull : SqlResult::kRow;
    }
    if (s.on_duplicate.action == Action::kThrow) {
      st.Execute();  // a duplicate key is the SqliteError itself
    } else if (st.ExecuteInsert() == InsertResult::kDuplicateKey) {
      return SqlResult::kDuplicate;
    }
    return db.Changes() == 0 ? SqlResult::kZeroRows : SqlResult::kChanged;
  } catch (const SqliteError&) {
    if (scope.over_budget()) throw ErrorAt(s.sql_at, scope.BudgetMessage());
    if (!scope.refusal().empty()) {
      throw ErrorAt(s.sql_at, fmt::format("refused when it ran: {}", scope.refusal()));
    }
    throw;
  }
}

}  // namespace

Result RunConsumer(const ConsumerFile& file, RunContext& c, const OrderPlaced& m) {
  std::optional<Transaction> tx;
  size_t next = 0;  // the step to run next
  // The last send with an idempotency key was turned away by the provider (an email under
  // that key had gone out already): a delivery that would end processed ends skipped, as
  // the C++ consumers report AlreadySent (FromEmailOutcome: Skipped).
  bool already_sent = false;
  auto outcome = [&](Result r) {
    return r == Result::kProcessed && already_sent ? Result::kSkipped : r;
  };
  // Runs what a result calls for (key: which of the step's reactions it is): returns to go on
  // at `next`, or throws Ended.
  auto act = [&](const Reaction& r, const char* key) {
    const Step& step = file.steps[next - 1];
    if (c.taken) c.taken(next - 1, key);
    switch (r.action) {
      case Action::kContinue:
        return;
      case Action::kGoTo:
        next = r.target;
        return;
      case Action::kRollbackAndAck:
      case Action::kSkipAndAck:
        if (tx && tx->state() == Transaction::State::kActive) tx->Rollback();
        throw Ended{Result::kSkipped};
      case Action::kReconcile:
        if (tx && tx->state() == Transaction::State::kActive) tx->Rollback();
        throw Ended{Result::kNeedsReconciliation};
      case Action::kThrow:
        throw explore::DeliveryFailed(
            fmt::format("line {}: {} = \"throw\"", step.at.line, key));
    }
  };
  try {
    while (next < file.steps.size()) {
      const Step& s = file.steps[next++];
      switch (s.kind) {
        case Step::Kind::kBegin:
          tx.emplace(c.db, s.begin);
          break;
        case Step::Kind::kCommit:
          tx->Commit();
          tx.reset();
          break;
        case Step::Kind::kRollback:
          tx->Rollback();
          tx.reset();
          break;
        case Step::Kind::kHook:
          RunHook(c.db, s.name.c_str(), c.hook ? c.hook(s.name) : Hook{});
          break;
        case Step::Kind::kPublish:
          try {
            if (c.db.gate() != nullptr) c.db.gate()->BeforeHook(c.db, "Broker.Publish");
          } catch (const SimulatedCrash&) {
            c.db.Note("crash", "Broker.Publish", "SimulatedCrash thrown");
            throw;
          }
          if (c.publish) c.publish(s.name, m);
          c.db.Note("publish", s.name, "published");
          break;
        case Step::Kind::kSendEmail: {
          std::string text = StockReservedText(m);
          if (s.idempotency_key) {
            if (c.keyed_email == nullptr) {
              throw std::logic_error("a send with an idempotency key ran without its provider");
            }
            ProviderSend sent = c.keyed_email->SendWithKey(
                ParameterValue(*s.idempotency_key, file, m, c.clock), text);
            already_sent = sent == ProviderSend::kAlreadySent;
            // The C++ consumers' words: the send's EmailOutcome.
            c.db.Note("send", "EmailProvider.Send", already_sent ? "AlreadySent" : "Sent");
          } else {
            c.email.Send(m.message_id, text);  // the provider records which message asked
            c.db.Note("send", "EmailProvider.Send", "sent");
          }
          break;
        }
        case Step::Kind::kAskProvider: {
          if (c.keyed_email == nullptr) {
            throw std::logic_error("an ask-provider step ran without its provider");
          }
          const bool sent =
              c.keyed_email->Find(ParameterValue(*s.idempotency_key, file, m, c.clock)).has_value();
          c.db.Note("reconcile", "EmailProvider.Find", sent ? "sent before" : "never sent");
          act(sent ? s.on_sent : s.on_not_sent, sent ? "on-sent" : "on-not-sent");
          break;
        }
        case Step::Kind::kEnd:
          return outcome(s.end);
        case Step::Kind::kSql: {
          if (s.on_second_store && c.second_store == nullptr) {
            throw std::logic_error(file.name + " ran without its second store");
          }
          Connection& db = s.on_second_store ? *c.second_store : c.db;
          switch (RunSqlStep(file, s, db, c.clock, m)) {
            case SqlResult::kRow:
              act(s.on_row, s.on_row_if_null ? "on-row otherwise" : "on-row");
              break;
            case SqlResult::kRowWithNull:
              if (s.on_row_if_null) {
                act(*s.on_row_if_null, "on-row if-null");
              } else {
                act(s.on_row, "on-row");
              }
              break;
            case SqlResult::kNoRow:
              act(s.on_no_row, "on-no-row");
              break;
            case SqlResult::kDuplicate:
              act(s.on_duplicate, "on-duplicate");
              break;
            case SqlResult::kZeroRows:
              act(s.on_zero_rows, "on-zero-rows");
              break;
            case SqlResult::kChanged:
              break;
          }
          break;
        }
      }
    }
  } catch (const Ended& e) {
    return outcome(e.result);
  }
  return outcome(Result::kProcessed);
}

}  // namespace dedupsim::files
