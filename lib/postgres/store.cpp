#include "postgres/store.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <thread>

#include "postgres/error.h"
#include "postgres/tables_reader.h"
#include "postgres/lesson_tables.h"

namespace dedupsim {

namespace {

// Every table as this version has it, each marked as dedupsim's. Unquoted names: the
// server folds them to lower case, and every statement of ours spells them the same way.
constexpr const char* kTables[][2] = {
    {"StockItems",
     "CREATE TABLE StockItems ("
     " BookId text NOT NULL PRIMARY KEY,"
     " Title text NOT NULL,"
     " OnHand bigint NOT NULL,"
     " Reserved bigint NOT NULL DEFAULT 0)"},
    {"Inbox",
     "CREATE TABLE Inbox ("
     " MessageId text NOT NULL CHECK (length(MessageId) <= 100),"
     " Consumer text NOT NULL CHECK (length(Consumer) <= 100),"
     " ReceivedAt text NOT NULL,"
     " CompletedAt text,"
     " PayloadHash text,"
     " ReceiveCount bigint NOT NULL DEFAULT 1,"
     " LastReceivedAt text,"
     " Owner text,"
     " LeaseExpiresAt text,"
     " PRIMARY KEY (MessageId, Consumer))"},
    {"InboxByMessageId",
     "CREATE TABLE InboxByMessageId ("
     " MessageId text NOT NULL PRIMARY KEY CHECK (length(MessageId) <= 100),"
     " Consumer text NOT NULL CHECK (length(Consumer) <= 100),"
     " ReceivedAt text NOT NULL,"
     " CompletedAt text)"},
    {"StockReservations",
     "CREATE TABLE StockReservations ("
     " OrderId text NOT NULL,"
     " BookId text NOT NULL,"
     " Quantity bigint NOT NULL,"
     " ReservedAt text NOT NULL,"
     " PRIMARY KEY (OrderId, BookId))"},
    // The lessons' other tables (store/lesson_tables.h).
    {"Outbox",
     "CREATE TABLE Outbox ("
     " MessageId text NOT NULL PRIMARY KEY,"
     " SourceMessageId text NOT NULL,"
     " Type text NOT NULL,"
     " OrderId text NOT NULL,"
     " BookId text NOT NULL,"
     " Quantity bigint NOT NULL,"
     " CreatedAt text NOT NULL,"
     " DispatchedAt text)"},
    {"AuditLog",
     "CREATE TABLE AuditLog ("
     " Id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
     " OrderId text NOT NULL,"
     " Entry text NOT NULL,"
     " At text NOT NULL)"},
    {"ShipmentRequests",
     "CREATE TABLE ShipmentRequests ("
     " Id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
     " OrderId text NOT NULL,"
     " RequestedAt text NOT NULL)"},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::string SchemaSpelling(const std::string& folded) {
  const std::string wanted = Lower(folded);
  for (const auto& table : kTables) {
    const std::string_view ddl = table[1];
    size_t at = 0;
    while (at < ddl.size()) {  // each identifier-like word of the statement
      const size_t begin = ddl.find_first_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_", at);
      if (begin == std::string_view::npos) break;
      size_t end = begin;
      while (end < ddl.size() && (std::isalnum(static_cast<unsigned char>(ddl[end])) != 0 ||
                                  ddl[end] == '_')) {
        ++end;
      }
      const std::string_view word = ddl.substr(begin, end - begin);
      if (word.size() == wanted.size() && Lower(word) == wanted) return std::string(word);
      at = end;
    }
  }
  return folded;
}

namespace {

std::string Literal(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += '\'';
    quoted += c;
  }
  return quoted + "'";
}

bool IsOurTable(std::string_view table) {
  for (const auto& t : kTables) {
    if (Lower(t[0]) == table) return true;
  }
  return false;
}

}  // namespace

PgDatabase PgDatabase::Open(const std::string& conninfo, const std::string& schema,
                            IfMissing if_missing) {
  PgConnection c(conninfo);
  // One opener at a time per schema name, so two dedupsim processes cannot both create it.
  c.ExecScript("BEGIN");
  c.Exec("SELECT pg_advisory_xact_lock(hashtext($1))", {"dedupsim:" + schema});
  PgResult found = c.Exec(
      "SELECT obj_description(n.oid, 'pg_namespace') FROM pg_namespace n WHERE n.nspname = $1",
      {schema});
  if (found.rows() == 0 && if_missing == IfMissing::kFail) {
    throw DatabaseError(fmt::format(
        "PostgreSQL schema \"{}\" does not exist; nothing was created (choose the --pg-schema "
        "a dedupsim run created)",
        schema));
  }
  if (found.rows() == 0) {
    c.ExecScript("CREATE SCHEMA " + QuoteIdentifier(schema));
    c.ExecScript(
        fmt::format("COMMENT ON SCHEMA {} IS {}", QuoteIdentifier(schema), Literal(kPgMarker)));
  } else if (found.Get(0, 0) != std::optional<std::string>(kPgMarker)) {
    throw DatabaseError(fmt::format(
        "PostgreSQL schema \"{}\" exists and was not created by dedupsim (no dedupsim marker); "
        "dedupsim leaves it untouched: choose another --pg-schema",
        schema));
  }
  // Every table in the schema must carry the marker: one dedupsim did not create is refused.
  PgResult tables = c.Exec(
      "SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c "
      "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN "
      "('r', 'p', 'v', 'm', 'f')",
      {schema});
  std::vector<std::string> present;
  for (int row = 0; row < tables.rows(); ++row) {
    std::string name = tables.Text(row, 0);
    if (tables.Get(row, 1) != std::optional<std::string>(kPgMarker)) {
      throw DatabaseError(fmt::format(
          "PostgreSQL table \"{}\".\"{}\" was not created by dedupsim; dedupsim leaves it "
          "untouched: choose another --pg-schema",
          schema, name));
    }
    present.push_back(name);
  }
  c.ExecScript("SET LOCAL search_path TO " + QuoteIdentifier(schema));
  for (const auto& t : kTables) {
    bool exists = false;
    for (const auto& p : present) exists |= p == Lower(t[0]);
    if (exists) continue;
    if (if_missing == IfMissing::kFail) {
      throw DatabaseError(fmt::format(
          "PostgreSQL schema \"{}\" has no table {}; nothing was created", schema, t[0]));
    }
    c.ExecScript(t[1]);
    c.ExecScript(fmt::format("COMMENT ON TABLE {} IS {}", t[0], Literal(kPgMarker)));
  }
  // An Inbox of ours made before the receipt and lease columns gets them (our own table,
  // marked; altered only when a column is missing, so a schema in use is not locked).
  if (c.Exec("SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND "
             "table_name = 'inbox' AND column_name = 'leaseexpiresat'",
             {schema})
          .rows() == 0) {
    c.ExecScript(
        "ALTER TABLE Inbox ADD COLUMN IF NOT EXISTS ReceiveCount bigint NOT NULL DEFAULT 1, "
        "ADD COLUMN IF NOT EXISTS LastReceivedAt text, ADD COLUMN IF NOT EXISTS Owner text, "
        "ADD COLUMN IF NOT EXISTS LeaseExpiresAt text");
  }
  c.ExecScript("COMMIT");
  return PgDatabase(conninfo, schema);
}

PgConnection PgDatabase::Connect() const { return PgConnection(conninfo_, schema_); }

PgConnectionStart PgDatabase::StartConnect() const { return PgConnectionStart(conninfo_, schema_); }

void PgStore::Begin(TransactionKind) {
  static constexpr const char* kBegin[] = {"BEGIN", "BEGIN ISOLATION LEVEL REPEATABLE READ",
                                           "BEGIN ISOLATION LEVEL SERIALIZABLE"};
  static_assert(static_cast<int>(Isolation::kReadCommitted) == 0 &&
                static_cast<int>(Isolation::kRepeatableRead) == 1 &&
                static_cast<int>(Isolation::kSerializable) == 2);
  const auto level = static_cast<size_t>(isolation_);
  db_.Exec(Hot(hot_.begin[level], kBegin[level]));
}

void PgStore::Commit() {
  PgResult result = db_.Exec(Hot(hot_.commit, "COMMIT"));
  if (result.command() == "ROLLBACK") {
    throw PgError("25P02", "COMMIT rolled back: the transaction had already failed");
  }
}

void PgStore::Savepoint(std::string_view name) { db_.Exec("SAVEPOINT " + std::string(name)); }

void PgStore::RollbackToSavepoint(std::string_view name) {
  db_.Exec("ROLLBACK TO SAVEPOINT " + std::string(name));
}

void PgStore::ReleaseSavepoint(std::string_view name) {
  db_.Exec("RELEASE SAVEPOINT " + std::string(name));
}

void PgStore::Rollback() {
  if (db_.is_open() && db_.InTransaction()) db_.Exec(Hot(hot_.rollback, "ROLLBACK"));
}

void PgStore::SchedulingPoint(std::string_view name) {
  if (db_.gate() != nullptr) db_.gate()->BeforeHook(db_, name);
}

void PgStore::RunHook(const char* name, const Hook& hook) {
  RunNotedHook([this](const std::string& kind, const std::string& detail,
                      const std::string& result) { db_.Note(kind, detail, result); },
               name, hook_faults_ ? WithFault(hook_faults_, name, hook) : hook,
               [this, name] {
                 if (db_.gate() != nullptr) db_.gate()->BeforeHook(db_, name);
               });
}

namespace {

// A gate that only tells: each look that finds the statement waiting calls on_wait, and the
// statement goes on waiting.
class WaitListenerGate final : public PgStepGate {
 public:
  explicit WaitListenerGate(std::function<void()> on_wait) : on_wait_(std::move(on_wait)) {}
  void BeforeStatement(PgConnection&, std::string_view) override {}
  bool Blocked(PgConnection&) override {
    on_wait_();
    return true;
  }
  void Released(PgConnection&) override {}
  void BeforeHook(PgConnection&, std::string_view) override {}

 private:
  std::function<void()> on_wait_;
};

}  // namespace

void PgStore::SetWaitListener(std::function<void()> on_wait) {
  wait_listener_ = std::make_unique<WaitListenerGate>(std::move(on_wait));
  db_.SetGate(wait_listener_.get());
}

void PgStore::Note(const std::string& kind, const std::string& detail, const std::string& result) {
  db_.Note(kind, detail, result);
}

StockItem PgStore::ReadStock(std::string_view book_id) {
  PgResult r =
      db_.Exec(Hot(hot_.read_stock,
                   "SELECT BookId, Title, OnHand, Reserved FROM StockItems WHERE BookId = $1"),
               {book_id});
  if (r.rows() == 0) throw DatabaseError("no stock item " + std::string(book_id));
  return StockItem{r.Text(0, 0), r.Text(0, 1), r.Int(0, 2), r.Int(0, 3)};
}

void PgStore::AddReserved(std::string_view book_id, int64_t quantity) {
  char text[24];
  const auto end = std::to_chars(text, text + sizeof text, quantity).ptr;
  db_.Exec(
      Hot(hot_.add_reserved, "UPDATE StockItems SET Reserved = Reserved + $1 WHERE BookId = $2"),
      {std::string_view(text, static_cast<size_t>(end - text)), book_id}, "StockItems");
}

namespace {

// Each statement for the Inbox, by InboxKey: (MessageId, Consumer), then MessageId only.
constexpr const char* kClaimCompleted[] = {
    "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES ($1, $2, $3, $4)",
    "INSERT INTO InboxByMessageId (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES ($1, $2, "
    "$3, $4)"};
constexpr const char* kClaimIfAbsent[] = {
    "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES ($1, $2, $3, $4) ON "
    "CONFLICT DO NOTHING",
    "INSERT INTO InboxByMessageId (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES ($1, $2, "
    "$3, $4) ON CONFLICT DO NOTHING"};
constexpr const char* kClaimInProgress[] = {
    "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES ($1, $2, $3, NULL)",
    "INSERT INTO InboxByMessageId (MessageId, Consumer, ReceivedAt, CompletedAt) VALUES ($1, $2, "
    "$3, NULL)"};
constexpr const char* kComplete[] = {
    "UPDATE Inbox SET CompletedAt = $1 WHERE MessageId = $2 AND Consumer = $3",
    "UPDATE InboxByMessageId SET CompletedAt = $1 WHERE MessageId = $2 AND Consumer = $3"};
static_assert(static_cast<int>(InboxKey::kMessageIdAndConsumer) == 0 &&
              static_cast<int>(InboxKey::kMessageIdOnly) == 1);

size_t Index(InboxKey key) { return static_cast<size_t>(key); }

}  // namespace

InsertResult PgStore::ClaimCompleted(InboxKey key, std::string_view message_id,
                                     std::string_view consumer, TimePoint now) {
  const std::string_view stamp = stamp_.Format(now);  // valid until the next Format
  return db_.ExecInsert(Hot(hot_.claim_completed[Index(key)], kClaimCompleted[Index(key)]),
                        {message_id, consumer, stamp, stamp}, InboxTable(key));
}

InsertResult PgStore::ClaimCompletedIfAbsent(InboxKey key, std::string_view message_id,
                                             std::string_view consumer, TimePoint now) {
  const std::string_view stamp = stamp_.Format(now);
  PgResult r = db_.Exec(Hot(hot_.claim_if_absent[Index(key)], kClaimIfAbsent[Index(key)]),
                        {message_id, consumer, stamp, stamp}, InboxTable(key));
  return r.affected() == 0 ? InsertResult::kDuplicateKey : InsertResult::kInserted;
}

InsertResult PgStore::ClaimInProgress(InboxKey key, std::string_view message_id,
                                      std::string_view consumer, TimePoint now) {
  return db_.ExecInsert(Hot(hot_.claim_in_progress[Index(key)], kClaimInProgress[Index(key)]),
                        {message_id, consumer, stamp_.Format(now)}, InboxTable(key));
}

void PgStore::Complete(InboxKey key, std::string_view message_id, std::string_view consumer,
                       TimePoint now) {
  db_.Exec(Hot(hot_.complete[Index(key)], kComplete[Index(key)]),
           {stamp_.Format(now), message_id, consumer});
}

std::optional<InboxRow> PgStore::Find(InboxKey key, std::string_view message_id,
                                      std::string_view consumer) {
  PgResult r =
      key == InboxKey::kMessageIdOnly
          ? db_.Exec(Hot(hot_.find[Index(key)],
                         "SELECT MessageId, Consumer, ReceivedAt, CompletedAt, NULL, 1, NULL, "
                         "NULL FROM InboxByMessageId WHERE MessageId = $1"),
                     {message_id})
          : db_.Exec(Hot(hot_.find[Index(key)],
                         "SELECT MessageId, Consumer, ReceivedAt, CompletedAt, PayloadHash, "
                         "ReceiveCount, Owner, LeaseExpiresAt FROM Inbox WHERE MessageId = $1 "
                         "AND Consumer = $2"),
                     {message_id, consumer});
  if (r.rows() == 0) return std::nullopt;
  InboxRow row;
  row.message_id = r.Text(0, 0);
  row.consumer = r.Text(0, 1);
  row.received_at = r.Text(0, 2);
  row.completed_at = r.Get(0, 3);
  row.payload_hash = r.Get(0, 4);
  row.receive_count = r.Int(0, 5);
  row.owner = r.Get(0, 6);
  row.lease_expires_at = r.Get(0, 7);
  return row;
}

std::unique_ptr<Store> PgBackend::Open(Recorder* recorder, const std::string& instance) const {
  PgConnection connection = db_.Connect();
  connection.WatchWaits(db_.conninfo());
  if (recorder != nullptr) connection.SetTrace(recorder, instance);
  return std::make_unique<PgStore>(std::move(connection), isolation_);
}

std::vector<std::string> PgBackend::ResetInventory(const StockItem& item) const {
  PgConnection c = db_.Connect();
  c.ExecScript("BEGIN");
  std::vector<std::string> emptied;  // in the order SQLite's reset names them
  for (const char* table : {"StockItems", "Inbox", "InboxByMessageId", "StockReservations",
                            "Outbox", "AuditLog", "ShipmentRequests"}) {
    if (c.Exec(fmt::format("DELETE FROM {}", table)).affected() > 0) emptied.emplace_back(table);
  }
  c.Exec("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES ($1, $2, $3, $4)",
         {item.book_id, item.title, std::to_string(item.on_hand), std::to_string(item.reserved)});
  c.ExecScript("COMMIT");
  return emptied;
}

void PgBackend::AddStock(const StockItem& item) const {
  PgConnection c = db_.Connect();
  c.Exec("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES ($1, $2, $3, $4)",
         {item.book_id, item.title, std::to_string(item.on_hand), std::to_string(item.reserved)});
}

StockItem PgBackend::ReadStock(std::string_view book_id) const {
  PgConnection c = db_.Connect();
  PgResult r = c.Exec("SELECT BookId, Title, OnHand, Reserved FROM StockItems WHERE BookId = $1",
                      {std::string(book_id)});
  if (r.rows() == 0) throw DatabaseError("no stock item " + std::string(book_id));
  return StockItem{r.Text(0, 0), r.Text(0, 1), r.Int(0, 2), r.Int(0, 3)};
}

int64_t CountTableRows(PgConnection& connection, std::string_view table) {
  if (!IsOurTable(Lower(table))) throw DatabaseError("not a dedupsim table: " + std::string(table));
  return connection.Exec(fmt::format("SELECT count(*) FROM {}", table)).Int(0, 0);
}

int64_t PgBackend::CountRows(std::string_view table) const {
  PgConnection c = db_.Connect();
  return CountTableRows(c, table);
}

std::unique_ptr<TablesReader> PgBackend::OpenTablesReader(const SideStores* sides) const {
  return OpenPgTablesReader(db_, sides);
}

bool PgBackend::AwaitSessionGone(int server_pid, std::chrono::milliseconds wait) const {
  PgConnection side(db_.conninfo());
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (side.Exec("SELECT 1 FROM pg_stat_activity WHERE pid = $1::int", {std::to_string(server_pid)})
            .rows() == 0) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void PgStore::SetLockTimeout(std::chrono::milliseconds timeout) {
  db_.ExecScript(fmt::format("SET lock_timeout = {}", timeout.count()));
}

void PgStore::SetIdleInTransactionTimeout(std::chrono::milliseconds timeout) {
  db_.ExecScript(fmt::format("SET idle_in_transaction_session_timeout = {}", timeout.count()));
}

}  // namespace dedupsim
