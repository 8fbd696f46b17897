// Running a consumer file's steps for one delivery (RunConsumer, run_consumer.h): each sql
// step in the sandbox with the rules its check found, each hook, send and publish a step of
// the connection's gate. Reading and checking the file is consumer_file.cpp's.
#include "files/run_consumer.h"

#include <fmt/format.h>

#include "explore/strategy.h"
#include "postgres/error.h"
#include "sqlite/sql_text.h"
#include "sqlite/error.h"
#include "sqlite/sandbox.h"
#include "sqlite/side_records.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"

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

// The same on PostgreSQL: the step's pg_sql as the file's role. What the server stopped for
// the file's own doing (its statement_timeout, a privilege it lacks) is the file's fault.
SqlResult RunPgSqlStep(const ConsumerFile& file, const Step& s, PgConnection& db, Clock& clock,
                       const OrderPlaced& m) {
  PgParams params;
  for (Parameter p : s.pg_parameters) params.emplace_back(ParameterValue(p, file, m, clock));
  try {
    if (s.pg_query) {
      PgResult r = db.Exec(s.pg_sql, params);
      if (r.rows() == 0) return SqlResult::kNoRow;
      return r.Get(0, 0) ? SqlResult::kRow : SqlResult::kRowWithNull;
    }
    if (s.on_duplicate.action == Action::kThrow) {
      db.Exec(s.pg_sql, params);  // a duplicate key is the PgError itself
    } else if (db.ExecInsert(s.pg_sql, params) == InsertResult::kDuplicateKey) {
      return SqlResult::kDuplicate;
    }
    return db.changes() == 0 ? SqlResult::kZeroRows : SqlResult::kChanged;
  } catch (const PgError& e) {
    std::string what = e.what();
    if (size_t nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    if (what.rfind("ERROR:  ", 0) == 0) what.erase(0, 8);
    if (e.sqlstate() == "57014" && what.find("statement timeout") != std::string::npos) {
      throw ErrorAt(s.pg_sql_at,
                    fmt::format("on PostgreSQL, the statement ran past its statement_timeout "
                                "and was stopped: {}",
                                SqlForMessage(s.pg_sql)));
    }
    if (e.sqlstate() == "42501") {  // insufficient_privilege: outside what the file may do
      throw ErrorAt(s.pg_sql_at, fmt::format("refused when it ran on PostgreSQL: {} (in: {})", what,
                                             SqlForMessage(s.pg_sql)));
    }
    throw;
  }
}

}  // namespace

Result RunConsumer(const ConsumerFile& file, RunContext& c, const OrderPlaced& m) {
  // Which backend the store is: each runs the file's steps on its own connection, SQLite's
  // in the sandbox (exactly one of the two is set).
  PgStore* pg = dynamic_cast<PgStore*>(&c.store);
  auto* sqlite = dynamic_cast<SqliteStore*>(&c.store);
  if ((pg == nullptr) == (sqlite == nullptr)) {
    throw std::logic_error("RunConsumer needs one database: SQLite's or PostgreSQL's");
  }
  Connection* db = sqlite != nullptr ? &sqlite->connection() : nullptr;
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
            if (pg != nullptr) {
              PgConnection& pc = pg->connection();
              if (pc.gate() != nullptr) pc.gate()->BeforeHook(pc, "Broker.Publish");
            } else if (db->gate() != nullptr) {
              db->gate()->BeforeHook(*db, "Broker.Publish");
            }
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
            if (pg != nullptr && !s.on_second_store) {
              result = RunPgSqlStep(file, s, pg->connection(), c.clock, m);
            } else {
              if (db == nullptr && c.second_store == nullptr) {
                throw std::logic_error(file.name + " ran without its database");
              }
              result = RunSqlStep(file, s, s.on_second_store ? SqliteConnectionOf(*c.second_store) : *db,
                                  c.clock, m);
            }
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
