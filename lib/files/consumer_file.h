// A consumer written in a file: the steps of its handler (begin, SQL, hooks, commit, an
// email, a publish) read from TOML, checked once when the file is loaded, and run by
// RunConsumer (files/run_consumer.h) on a real connection through the same statements, trace
// and hooks as the consumers written in C++. The format is documented by example in docs/files.md.
//
// Loading only reads the file. Its SQL is prepared by the check of untrusted SQL
// (store/untrusted_sql.h: SQLite's sandbox) against a scratch dedupsim database to find
// mistakes early (FileError, "FILE:LINE:COLUMN: ...", at the failing character of the SQL),
// and later runs only on the database it is given, which is always one dedupsim created,
// under the rules the check found.
//
// A ConsumerFile is plain data; RunConsumer keeps no state between calls.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "consumers/email.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/input_error.h"
#include "core/message.h"
#include "store/store.h"
#include "store/untrusted_sql.h"
#include "world/email_provider.h"

namespace dedupsim::files {

// A bad file: what() is "FILE:LINE:COLUMN: what is wrong and what was expected".
class FileError : public InputError {
 public:
  using InputError::InputError;
};

struct Position {
  std::string file;
  int line = 0;
  int column = 0;
};

// "FILE:LINE:COLUMN: message".
FileError ErrorAt(const Position& at, const std::string& message);

// What a step does when its condition holds. Every action but kContinue ends the delivery;
// an open transaction is rolled back first (as leaving a handler with one open does).
enum class Action {
  kContinue,        // go on with the next step
  kSkipAndAck,      // a duplicate: ack, nothing more to do
  kRollbackAndAck,  // roll back the open transaction, then ack as a duplicate
  kReconcile,       // ack, flagged for a person (the consumer cannot know)
  kThrow,           // fail the delivery: not acked, the broker redelivers
  kGoTo,            // go on at a labelled step further down ("go-to settle")
};

std::string_view ToString(Action action);  // the file's spelling: "skip-and-ack", ...

// An action as written for one result of a step.
struct Reaction {
  Action action = Action::kContinue;
  std::string label;  // kGoTo: the label of the step to go on at
  size_t target = 0;  // kGoTo: that step's index, set once the whole file is read
};

// The values a statement or an idempotency key may name.
enum class Parameter { kMessageId, kConsumer, kBookId, kQuantity, kOrderId, kNow };

enum class Result { kProcessed, kSkipped, kNeedsReconciliation };

struct Step {
  enum class Kind {
    kBegin,
    kCommit,
    kRollback,
    kSql,
    kHook,
    kSendEmail,
    kPublish,
    kAskProvider,  // did the provider send under this idempotency key? on-sent / on-not-sent
    kEnd,          // the delivery ends here with `end`'s result
  };
  Kind kind = Kind::kSql;
  Position at;        // where the step's table starts
  std::string label;  // a name a go-to action may jump to, or ""

  TransactionKind begin = TransactionKind::kDeferred;  // kBegin

  // kSql: the statement for SQLite (on one line, without its comments: SqlOneLine), its
  // parameters by index (1-based; index i-1 here), and what to do with its result.
  std::string sql;
  Position sql_at;  // where the statement's first token is written
  SqlRules rules;   // what it may touch when it runs (the check found them)
  std::map<std::string, std::string> other_dialects;  // "postgres" -> its text as written
  // On PostgreSQL (check --backend postgres): the `postgres` text where the file gives one,
  // else the SQLite text, with each :Name parameter written $1, $2 ... (pg_parameters, by
  // index), and where that text is written. pg_query is learnt from the server when the file
  // is set up there (files/file_database.h): its statement returns rows.
  std::string pg_sql;
  Position pg_sql_at;
  std::vector<Parameter> pg_parameters;
  bool pg_query = false;
  std::vector<Parameter> parameters;
  bool query = false;                            // returns rows (SELECT, RETURNING)
  Reaction on_duplicate{Action::kThrow, "", 0};  // a write that hit an existing key
  Reaction on_zero_rows;
  Reaction on_row;                         // a query that found a row ...
  std::optional<Reaction> on_row_if_null;  // ... whose first column is NULL
  Reaction on_no_row;
  Reaction on_sent;      // kAskProvider: the provider sent under the key
  Reaction on_not_sent;  // kAskProvider: it never did

  std::string name;  // kHook: the hook point; kPublish: the topic
  // kSendEmail: sent through a provider that honours it; kAskProvider: the key asked about
  std::optional<Parameter> idempotency_key;
  bool on_second_store = false;     // kSql: runs on the second store (store = "cache")
  Result end = Result::kProcessed;  // kEnd

  // The reactions written in the file ("on-duplicate", "on-row if-null" ...), where, and
  // their action as written: what a grader can say no schedule ever took.
  struct Written {
    std::string reaction;
    Position at;
    std::string action;
  };
  std::vector<Written> written;
};

struct ConsumerFile {
  std::string path;
  std::string name;      // kebab-case; the file's stem unless it says otherwise
  std::string summary;   // one line
  std::string effect;    // what exactly-once is counted on: "stock" or "email"
  std::string consumer;  // the value of :Consumer
  std::string partner;   // the second subscriber's built-in name, or "" for the default
  Position partner_at;
  std::string dialect = "sqlite";
  std::string schema;               // CREATE statements for the file's own tables, or ""
  Position schema_at;               // where the schema's text is written
  std::vector<std::string> tables;  // the tables the schema creates (emptied between runs)
  // A second store the consumer writes to through `store = "..."` sql steps: "" or "cache"
  // (a dedup cache kept in its own file: table CacheKeys (Key, SetAt)).
  std::string second_store;
  std::vector<Step> steps;

  // Some send-email step has an idempotency key, or some step asks the provider: the
  // provider that honours keys (its records in the second file) is used.
  bool SendsWithKey() const;
  bool Publishes() const;  // some step is a publish
  // The statements that empty the file's own tables ("DELETE FROM ...;" each, the names
  // quoted as identifiers, a quote inside doubled: no name can end the statement and start
  // another), or "" when it has none.
  std::string EmptyTablesSql() const;
};

// Reads and checks path. Throws FileError for a file that cannot be read or is wrong in any
// way (unknown key or step, unknown parameter, hook named twice, SQL that does not prepare,
// a transaction not closed ...). Never writes anything.
ConsumerFile LoadConsumerFile(const std::string& path);
// The same for text already read; path is only used in messages.
ConsumerFile ParseConsumerFile(std::string_view text, const std::string& path);

}  // namespace dedupsim::files
