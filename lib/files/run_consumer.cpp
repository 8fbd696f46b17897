// Running a consumer file's steps for one delivery (RunConsumer, run_consumer.h): each sql
// step through the store's UntrustedSql with the rules its check found, each hook, send and
// publish a step of the store's scheduler. Reading and checking the file is
// consumer_file.cpp's.
#include "files/run_consumer.h"

#include <fmt/format.h>

#include "explore/strategy.h"
#include "store/error.h"
#include "store/untrusted_sql.h"

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

// Runs the step's statement on sql, in the text of its dialect (SQLite's with the rules its
// check found; PostgreSQL's as the file's role). A statement the database stopped for the
// file's doing (past its budget or statement_timeout, or refused now) is the file's fault:
// FileError at the text that ran.
SqlResult RunSqlStep(const ConsumerFile& file, const Step& s, UntrustedSql& sql, Clock& clock,
                     const OrderPlaced& m) {
  const bool pg = sql.dialect() == "postgres";
  UntrustedStatement statement{.sql = pg ? s.pg_sql : s.sql,
                               .rules = &s.rules,
                               .values = {},
                               .query = pg ? s.pg_query : s.query,
                               .duplicate_is_error = s.on_duplicate.action == Action::kThrow};
  for (Parameter p : pg ? s.pg_parameters : s.parameters) {
    if (p == Parameter::kQuantity && !pg) {
      statement.values.emplace_back(m.quantity);
    } else {
      statement.values.emplace_back(ParameterValue(p, file, m, clock));
    }
  }
  UntrustedAnswer answer;
  try {
    answer = sql.Run(statement);
  } catch (const SqlStopped& e) {
    throw ErrorAt(pg ? s.pg_sql_at : s.sql_at, e.what());
  }
  if (statement.query) {
    if (!answer.row) return SqlResult::kNoRow;
    return answer.first ? SqlResult::kRow : SqlResult::kRowWithNull;
  }
  if (answer.insert == InsertResult::kDuplicateKey) return SqlResult::kDuplicate;
  return answer.changes == 0 ? SqlResult::kZeroRows : SqlResult::kChanged;
}

}  // namespace

Result RunConsumer(const ConsumerFile& file, RunContext& c, const OrderPlaced& m) {
  // The file's transaction, on the store: the same BEGIN, COMMIT and ROLLBACK on either
  // backend (PostgreSQL takes the three kinds as BEGIN).
  std::optional<ScopedTransaction> tx;
  auto open = [&] { return tx && tx->state() == ScopedTransaction::State::kActive; };
  auto rollback = [&] {
    if (tx) tx->Rollback();
    tx.reset();
  };
  auto note = [&](const std::string& kind, const std::string& detail, const std::string& result) {
    c.store.Note(kind, detail, result);
  };
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
        if (open()) rollback();
        throw Ended{Result::kSkipped};
      case Action::kReconcile:
        if (open()) rollback();
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
          tx.emplace(c.store, s.begin);
          break;
        case Step::Kind::kCommit:
          if (tx) tx->Commit();
          tx.reset();
          break;
        case Step::Kind::kRollback:
          rollback();
          break;
        case Step::Kind::kHook:
          c.store.RunHook(s.name.c_str(), c.hook ? c.hook(s.name) : Hook{});
          break;
        case Step::Kind::kPublish:
          try {
            c.store.SchedulingPoint("Broker.Publish");
          } catch (const SimulatedCrash&) {
            note("crash", "Broker.Publish", "SimulatedCrash thrown");
            throw;
          }
          if (c.publish) c.publish(s.name, m);
          note("publish", s.name, "published");
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
            note("send", "EmailProvider.Send", already_sent ? "AlreadySent" : "Sent");
          } else {
            c.email.Send(m.message_id, text);  // the provider records which message asked
            note("send", "EmailProvider.Send", "sent");
          }
          break;
        }
        case Step::Kind::kAskProvider: {
          if (c.keyed_email == nullptr) {
            throw std::logic_error("an ask-provider step ran without its provider");
          }
          const bool sent =
              c.keyed_email->Find(ParameterValue(*s.idempotency_key, file, m, c.clock)).has_value();
          note("reconcile", "EmailProvider.Find", sent ? "sent before" : "never sent");
          act(sent ? s.on_sent : s.on_not_sent, sent ? "on-sent" : "on-not-sent");
          break;
        }
        case Step::Kind::kEnd:
          return outcome(s.end);
        case Step::Kind::kSql: {
          if (s.on_second_store && c.second_store == nullptr) {
            throw std::logic_error(file.name + " ran without its second store");
          }
          SqlResult result;
          try {
            result = RunSqlStep(file, s,
                                s.on_second_store ? c.second_store->untrusted() : c.store.untrusted(),
                                c.clock, m);
          } catch (const StoreError& e) {
            // on-duplicate = "throw" is the database's error itself: taken all the same.
            if (e.IsDuplicateKey() && c.taken) c.taken(next - 1, "on-duplicate");
            throw;
          }
          switch (result) {
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
