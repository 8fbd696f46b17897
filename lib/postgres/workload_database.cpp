#include "postgres/workload_database.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <charconv>
#include <stdexcept>
#include <unordered_map>

#include "postgres/durable_queue.h"
#include "postgres/error.h"
#include "postgres/store.h"

namespace dedupsim {

namespace {

const char* OnOff(bool on) { return on ? "on" : "off"; }

// A Store that hands every call to a PgStore and sees each transaction begin and end: it
// counts what ended (a COMMIT the server answered with ROLLBACK is a rollback) and tells
// the soak while one is open, as the SQLite connection's hooks do.
class CountingStore final : public Store {
 public:
  explicit CountingStore(PgStore& inner) : inner_(inner) {}

  void Begin(TransactionKind kind) override {
    inner_.Begin(kind);
    Opened(true);
  }
  void Commit() override {
    try {
      inner_.Commit();
    } catch (const StoreError&) {
      counts.rollbacks++;
      Opened(false);
      throw;
    }
    counts.commits++;
    Opened(false);
  }
  void Rollback() override {
    const bool open = inner_.InTransaction();
    inner_.Rollback();
    if (open) {
      counts.rollbacks++;
      Opened(false);
    }
  }
  bool InTransaction() const override { return inner_.InTransaction(); }
  void Savepoint(std::string_view name) override { inner_.Savepoint(name); }
  void RollbackToSavepoint(std::string_view name) override { inner_.RollbackToSavepoint(name); }
  void ReleaseSavepoint(std::string_view name) override { inner_.ReleaseSavepoint(name); }
  Isolation isolation() const override { return inner_.isolation(); }
  void SetIsolation(Isolation level) override { inner_.SetIsolation(level); }
  void RunHook(const char* name, const Hook& hook) override { inner_.RunHook(name, hook); }
  void SetHookFaults(HookFaults faults) override { inner_.SetHookFaults(std::move(faults)); }
  void SchedulingPoint(std::string_view name) override { inner_.SchedulingPoint(name); }
  void Note(const std::string& kind, const std::string& detail,
            const std::string& result) override {
    inner_.Note(kind, detail, result);
  }
  void SetDelivery(DeliveryRef delivery) override { inner_.SetDelivery(std::move(delivery)); }
  void SetTraceRole(std::string actor, std::string target) override {
    inner_.SetTraceRole(std::move(actor), std::move(target));
  }
  void StampTrace(TraceEvent& e) const override { inner_.StampTrace(e); }
  void NoteOutcome(const std::string& outcome, const std::string& verdict) override {
    inner_.NoteOutcome(outcome, verdict);
  }
  LessonTables& tables() override { return inner_.tables(); }  // not counted: no lesson table here
  // natural-key's reservation: written inside the consumer's transaction, counted there.
  KeyedStores& keyed() override { return inner_.keyed(); }
  // A write outside BEGIN is a transaction of its own on the server (autocommit), as on
  // SQLite, whose hooks count it: committed, or rolled back when it failed.
  void AddReserved(std::string_view book_id, int64_t quantity) override {
    Write([&] {
      inner_.AddReserved(book_id, quantity);
      return true;
    });
  }
  InsertResult ClaimCompleted(InboxKey key, std::string_view message_id, std::string_view consumer,
                              TimePoint now) override {
    return Claim([&] { return inner_.ClaimCompleted(key, message_id, consumer, now); });
  }
  StockItem ReadStock(std::string_view book_id) override { return inner_.ReadStock(book_id); }
  InsertResult ClaimCompletedIfAbsent(InboxKey key, std::string_view message_id,
                                      std::string_view consumer, TimePoint now) override {
    return Claim([&] { return inner_.ClaimCompletedIfAbsent(key, message_id, consumer, now); });
  }
  InsertResult ClaimInProgress(InboxKey key, std::string_view message_id, std::string_view consumer,
                               TimePoint now) override {
    return Claim([&] { return inner_.ClaimInProgress(key, message_id, consumer, now); });
  }
  void Complete(InboxKey key, std::string_view message_id, std::string_view consumer,
                TimePoint now) override {
    Write([&] {
      inner_.Complete(key, message_id, consumer, now);
      return true;
    });
  }
  std::optional<InboxRow> Find(InboxKey key, std::string_view message_id,
                               std::string_view consumer) override {
    return inner_.Find(key, message_id, consumer);
  }

  TransactionCounts counts;
  std::function<void(bool open)> on_change;

 private:
  template <typename F>
  void Write(F write) {
    const bool autocommit = !inner_.InTransaction();
    bool kept = false;
    try {
      kept = write();
    } catch (...) {
      if (autocommit) counts.rollbacks++;
      throw;
    }
    if (autocommit) (kept ? counts.commits : counts.rollbacks)++;
  }
  // A claim is kept (counted as a commit outside BEGIN) only when it inserted the row.
  template <typename F>
  InsertResult Claim(F claim) {
    InsertResult result = InsertResult::kInserted;
    Write([&] {
      result = claim();
      return result == InsertResult::kInserted;
    });
    return result;
  }
  void Opened(bool open) {
    if (on_change) on_change(open);
  }
  PgStore& inner_;
};

// Sets the session's synchronous_commit and reads back what the server now says.
bool SetSynchronousCommit(PgConnection& c, bool on) {
  c.ExecScript(fmt::format("SET synchronous_commit TO {}", OnOff(on)));
  PgResult r = c.Exec("SHOW synchronous_commit");
  return r.Text(0, 0) != "off";
}

// A connection of its own to the schema, the consumer's store over it, counted.
class PgMeasuredSession final : public MeasuredSession {
 public:
  PgMeasuredSession(const PgDatabase& db, bool synchronous_commit)
      : store_(db.Connect(), Isolation::kReadCommitted), counting_(store_) {
    synchronous_commit_ = SetSynchronousCommit(store_.connection(), synchronous_commit);
    base_statements_ = store_.connection().statements_sent();
  }

  Store& store() override { return counting_; }
  TransactionCounts transactions() const override { return counting_.counts; }
  void OnTransactionChange(std::function<void(bool open)> callback) override {
    counting_.on_change = std::move(callback);
  }
  int64_t statements() const override {
    return store_.connection().statements_sent() - base_statements_;
  }
  std::optional<bool> synchronous_commit() const override { return synchronous_commit_; }

 private:
  mutable PgStore store_;
  CountingStore counting_;
  bool synchronous_commit_ = true;
  int64_t base_statements_ = 0;
};

// The inbox's SQL by hand on libpq: one connection, the five statements prepared once,
// run with PQexecPrepared (one round trip each: BEGIN, INSERT, UPDATE, COMMIT, or BEGIN,
// INSERT, ROLLBACK for a duplicate), the consumer's name and the timestamp's text made
// without allocation, a duplicate key read from the result's SQLSTATE, no trace, no
// exception on the duplicate path. It writes the rows IdempotentReserveStock writes.
class PgRawInbox final : public RawInbox {
 public:
  PgRawInbox(const PgDatabase& db, bool synchronous_commit) {
    conn_ = PQconnectdb(db.conninfo().c_str());
    if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      std::string message = conn_ ? PQerrorMessage(conn_) : "out of memory";
      PQfinish(conn_);
      conn_ = nullptr;
      throw DatabaseError(
          fmt::format("PostgreSQL: cannot connect ({}): {}", db.conninfo(), message));
    }
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    Simple("SET search_path TO " + QuoteIdentifier(db.schema()));
    Simple(fmt::format("SET synchronous_commit TO {}", OnOff(synchronous_commit)));
    PGresult* shown = PQexec(conn_, "SHOW synchronous_commit");
    synchronous_commit_ =
        PQresultStatus(shown) == PGRES_TUPLES_OK && std::string(PQgetvalue(shown, 0, 0)) != "off";
    PQclear(shown);
    Prepare("b", "BEGIN", 0);
    Prepare("i",
            "INSERT INTO Inbox (MessageId, Consumer, ReceivedAt, CompletedAt) "
            "VALUES ($1, $2, $3, $4)",
            4);
    Prepare("u", "UPDATE StockItems SET Reserved = Reserved + $1 WHERE BookId = $2", 2);
    Prepare("c", "COMMIT", 0);
    Prepare("r", "ROLLBACK", 0);
  }
  ~PgRawInbox() override { PQfinish(conn_); }
  PgRawInbox(const PgRawInbox&) = delete;
  PgRawInbox& operator=(const PgRawInbox&) = delete;

  bool Handle(const OrderPlaced& m) override {
    Command("b", 0, nullptr, "BEGIN");
    const char* stamp = stamp_.Now();
    const char* insert[4] = {m.message_id.c_str(), kRawInboxConsumer, stamp, stamp};
    PGresult* r = Send("i", 4, insert);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      if (state == nullptr || std::string_view(state) != "23505") Fail(r, "INSERT INTO Inbox");
      PQclear(r);
      Command("r", 0, nullptr, "ROLLBACK");
      counts_.rollbacks++;
      return false;
    }
    PQclear(r);
    char quantity[24];
    auto end = std::to_chars(quantity, quantity + sizeof quantity - 1, m.quantity).ptr;
    *end = '\0';
    const char* update[2] = {quantity, m.book_id.c_str()};
    Command("u", 2, update, "UPDATE StockItems");
    PGresult* c = Send("c", 0, nullptr);
    const bool committed =
        PQresultStatus(c) == PGRES_COMMAND_OK && std::string_view(PQcmdStatus(c)) == "COMMIT";
    if (!committed) Fail(c, "COMMIT");
    PQclear(c);
    counts_.commits++;
    return true;
  }
  TransactionCounts transactions() const override { return counts_; }
  int64_t statements() const override { return sent_; }
  std::optional<bool> synchronous_commit() const override { return synchronous_commit_; }

 private:
  void Simple(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK) Fail(r, sql.c_str());
    PQclear(r);
  }
  void Prepare(const char* name, const char* sql, int params) {
    PGresult* r = PQprepare(conn_, name, sql, params, nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) Fail(r, sql);
    PQclear(r);
  }
  PGresult* Send(const char* name, int n, const char* const* values) {
    ++sent_;
    return PQexecPrepared(conn_, name, n, values, nullptr, nullptr, 0);
  }
  void Command(const char* name, int n, const char* const* values, const char* what) {
    PGresult* r = Send(name, n, values);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) Fail(r, what);
    PQclear(r);
  }
  [[noreturn]] void Fail(PGresult* r, const char* what) {
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    std::string message =
        fmt::format("{} in: {}", r ? PQresultErrorMessage(r) : PQerrorMessage(conn_), what);
    std::string code = state ? state : "";
    PQclear(r);
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
    throw PgError(code, message);
  }

  PGconn* conn_ = nullptr;
  RawStamp stamp_;
  TransactionCounts counts_;
  int64_t sent_ = 0;
  bool synchronous_commit_ = true;
};

}  // namespace

std::unique_ptr<MeasuredSession> PgWorkloadDatabase::OpenSession() const {
  return std::make_unique<PgMeasuredSession>(db_, synchronous_commit_);
}

std::unique_ptr<RawInbox> PgWorkloadDatabase::OpenRawInbox() const {
  return std::make_unique<PgRawInbox>(db_, synchronous_commit_);
}

void PgWorkloadDatabase::FillQueue(const std::vector<OrderPlaced>& messages) const {
  ResetBroker(db_);
  Enqueue(db_, messages);
}

std::unique_ptr<BrokerQueue> PgWorkloadDatabase::OpenQueue(
    std::chrono::milliseconds lease, int64_t consumer,
    const std::function<void(bool open)>& /*count_open*/) const {
  // Each queue call is one statement in its own transaction: never open between calls.
  class Owned final : public BrokerQueue {
   public:
    Owned(PgConnection c, std::chrono::milliseconds lease, int64_t consumer)
        : c_(std::move(c)), broker_(c_, lease, consumer) {}
    std::optional<LeasedDelivery> Receive() override { return broker_.Receive(); }
    bool Ack(const LeasedDelivery& d, bool processed) override {
      return broker_.Ack(d, processed);
    }
    bool AllAcked() override { return broker_.AllAcked(); }

   private:
    PgConnection c_;
    PgDurableBroker broker_;
  };
  return std::make_unique<Owned>(db_.Connect(), lease, consumer);
}

BrokerCounts PgWorkloadDatabase::ReadQueueCounts() const { return ReadBrokerCounts(db_); }

std::unordered_set<std::string> PgWorkloadDatabase::UnackedOrders() const {
  return dedupsim::UnackedOrders(db_);
}

PgDatabases::PgDatabases(const std::string& dsn, const std::string& schema) {
  if (dsn.empty()) cluster_.emplace(ThrowawayCluster::Start());
  db_.emplace(PgDatabase::Open(dsn.empty() ? cluster_->conninfo() : dsn, schema));
}

std::unique_ptr<WorkloadDatabase> PgDatabases::CreateWorkload(
    const WorkloadSettings& settings) const {
  return std::make_unique<PgWorkloadDatabase>(*db_, settings.synchronous_commit);
}

std::unique_ptr<SharedRun> PgDatabases::OpenSharedRun() const {
  return std::make_unique<PgSharedRun>(*db_);
}

void PgWorkloadDatabase::Rethrow(const DatabaseError& /*e: the exception being handled*/) const {
  throw;
}

std::string PgTextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (const std::string& v : values) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

void PgWorkloadDatabase::StockBooks(const std::vector<std::string>& books) const {
  PgConnection c = db_.Connect();
  std::vector<std::string> titles;
  titles.reserve(books.size());
  for (size_t n = 1; n <= books.size(); ++n) titles.push_back(fmt::format("Book {}", n));
  c.ExecScript("BEGIN; TRUNCATE Inbox, InboxByMessageId, StockReservations, StockItems");
  c.Exec(
      "INSERT INTO StockItems (BookId, Title, OnHand, Reserved) "
      "SELECT b, t, 1000000, 0 FROM unnest($1::text[], $2::text[]) AS u(b, t)",
      {PgTextArray(books), PgTextArray(titles)});
  c.ExecScript("COMMIT");
  c.ExecScript("ANALYZE StockItems");  // the planner's figures for this run's rows
}

std::unordered_map<std::string, int64_t> PgWorkloadDatabase::ReadReserved() const {
  PgConnection c = db_.Connect();
  PgResult r = c.Exec("SELECT BookId, Reserved FROM StockItems");
  std::unordered_map<std::string, int64_t> reserved;
  for (int row = 0; row < r.rows(); ++row) reserved[r.Text(row, 0)] = r.Int(row, 1);
  return reserved;
}

}  // namespace dedupsim
