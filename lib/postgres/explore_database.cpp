// PostgreSQL's explorer database (store/explore_database.h), opened by
// PgDatabase::OpenExploreDatabase (postgres/store.h): the schema's tables, reset by one
// script on a control connection that is never scheduled; each instance's session one
// connection (a PgStore) with a lock watch kept across its reconnections, its PgStepGate
// reporting to the instance's ExploreGate. Rows that keep a second file do not run here.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "postgres/connection.h"
#include "postgres/lock_watch.h"
#include "postgres/result.h"
#include "postgres/store.h"
#include "postgres/tables_reader.h"
#include "store/explore_database.h"

namespace dedupsim {

namespace {

class PgExploreDatabase;

class PgAttempt final : public ExploreAttempt {
 public:
  explicit PgAttempt(PgStore& store) : store_(store) {}
  Store& store() override { return store_; }
  SideRecords* side() override { return nullptr; }

 private:
  PgStore& store_;
};

class PgExploreSession final : public ExploreSession, private PgStepGate {
 public:
  PgExploreSession(PgExploreDatabase& database, ExploreGate& gate, Isolation isolation)
      : database_(database), gate_(gate), isolation_(isolation) {}
  ~PgExploreSession() override {
    pg_.reset();
    watch_.reset();
  }

  void Open(bool, Recorder* recorder, const std::string& instance, const char*) override;
  void Forget() override {}  // the spare connection (NewConnection) makes reconnecting cheap
  void SetDelivery(const DeliveryRef& delivery) override {
    if (pg_) pg_->connection().SetDelivery(delivery);
  }
  std::unique_ptr<ExploreAttempt> Attempt() override { return std::make_unique<PgAttempt>(*pg_); }
  uint8_t WriteLocks() const override { return 0; }
  uint8_t OpenFiles() const override {
    return pg_ && pg_->connection().is_open() ? kExploreMainFile : 0;
  }
  // A dead process's backend rolls back when the server sees the socket close; wait for
  // it, so its locks are gone before another instance moves.
  void Close() override {
    if (pg_) pg_->connection().CloseAndAwaitExit();
  }
  // The connection is kept, its transaction rolled back, as one kept after a finished run
  // is (a statement that waited was cancelled on the way here): reconnecting cost a new
  // backend and a new lock watch per instance per abandoned run.
  void Unwind() override {
    if (pg_ && pg_->connection().is_open()) {
      try {
        pg_->connection().ExecScript("ROLLBACK");
        if (!pg_->InTransaction()) return;
      } catch (const std::exception&) {
      }
    }
    Close();
  }

 private:
  void BeforeStatement(PgConnection&, std::string_view sql) override {
    gate_.BeforeStatement(kExploreMainFile, sql, false);
  }
  void BeforeHook(PgConnection&, std::string_view name) override { gate_.BeforeHook(name); }
  bool Blocked(PgConnection&) override { return gate_.Blocked(); }
  void Released(PgConnection&) override { gate_.Released(); }

  PgExploreDatabase& database_;
  ExploreGate& gate_;
  const Isolation isolation_;
  std::unique_ptr<PgStore> pg_;
  // pg_'s lock watch, kept across the instance's reconnections: it only looks, so a crash
  // that closes pg_ need not cost a second new connection.
  std::shared_ptr<PgLockWatch> watch_;
};

class PgExploreDatabase final : public ExploreDatabase {
 public:
  explicit PgExploreDatabase(const PgDatabase& database)
      : database_(database), control_(database.Connect()) {}

  bool waits_in_server() const override { return true; }
  void Add(const ExploreRow&) override {}  // made where the schema is

  // One transaction on the control connection: every table of ours emptied, the books
  // restocked. DELETE rather than TRUNCATE: cheaper on tables this small, and it takes row
  // locks only, so nothing waits on it. Sent as one script (one round trip, where a
  // statement each cost eight: the reset was the largest share of a schedule's round trips).
  void Reset(const std::vector<BookRow>& books,
             std::span<const ExploreRow> subscribers) override {
    for (const ExploreRow& row : subscribers) {
      if (row.tables->KeepsSecondFile()) {
        throw std::logic_error(fmt::format(
            "strategy {} does not run on PostgreSQL (it keeps a second file)", row.name));
      }
    }
    std::string script =
        "BEGIN; DELETE FROM Inbox; DELETE FROM InboxByMessageId; DELETE FROM StockReservations; "
        "DELETE FROM StockItems;";
    for (const BookRow& book : books) {
      script += fmt::format(
          " INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES ({}, {}, {}, {});",
          QuoteLiteral(book.book_id), QuoteLiteral(book.title), book.on_hand, book.reserved);
    }
    for (const ExploreRow& row : subscribers) {
      if (const char* reset = row.tables->pg_reset) script += fmt::format(" {}", reset);
    }
    script += " COMMIT";
    control_.ExecScript(script);
  }

  std::vector<BookRow> ReadBooks() override {
    std::vector<BookRow> out;
    // One round trip for the books and the Inbox rows (a round trip per figure was a fifth
    // of a schedule's); a row of NULLs carries the count when no book is left.
    PgResult rows = control_.Exec(
        "SELECT BookId, Title, OnHand, Reserved, (SELECT count(*) FROM Inbox) FROM StockItems "
        "UNION ALL SELECT NULL, NULL, NULL, NULL, (SELECT count(*) FROM Inbox) WHERE NOT EXISTS "
        "(SELECT 1 FROM StockItems) ORDER BY 1");
    inbox_rows_ = rows.Int(0, 4);
    for (int r = 0; r < rows.rows(); ++r) {
      if (!rows.Get(r, 0)) continue;
      out.push_back({rows.Text(r, 0), rows.Text(r, 1), rows.Int(r, 2), rows.Int(r, 3)});
    }
    return out;
  }
  int64_t InboxRows() override { return inbox_rows_; }
  int64_t ProviderEmailsSent(const std::string&) override { return 0; }  // no second file
  const std::vector<std::string>& main_tables() const override { return no_tables_; }
  std::unique_ptr<TablesReader> OpenTablesReader(bool) const override {
    return OpenPgTablesReader(database_, nullptr);  // no side store here
  }
  std::unique_ptr<ExploreSession> NewSession(ExploreGate& gate, Isolation isolation) override {
    return std::make_unique<PgExploreSession>(*this, gate, isolation);
  }

  // The next instance connection, started in the background when the last one was taken,
  // so an instance restarted after a crash finds its new backend already started while
  // the run went on.
  PgConnection NewConnection() {
    PgConnectionStart next = spare_ ? std::move(*spare_) : database_.StartConnect();
    spare_.emplace(database_.StartConnect());
    return next.Open();
  }
  const PgDatabase& database() const { return database_; }

 private:
  const PgDatabase& database_;
  PgConnection control_;  // the resets and read-backs; never scheduled
  std::optional<PgConnectionStart> spare_;
  int64_t inbox_rows_ = 0;  // read by ReadBooks with the books (one round trip)
  const std::vector<std::string> no_tables_;
};

void PgExploreSession::Open(bool, Recorder* recorder, const std::string& instance, const char*) {
  if (!pg_ || !pg_->connection().is_open()) {
    pg_ = std::make_unique<PgStore>(database_.NewConnection(), isolation_);
    if (watch_ == nullptr) watch_ = std::make_shared<PgLockWatch>(database_.database().conninfo());
    pg_->connection().WatchWaits(watch_);
    pg_->connection().SetGate(this);
  }
  pg_->connection().SetTrace(recorder, instance);
}

}  // namespace

std::unique_ptr<ExploreDatabase> PgDatabase::OpenExploreDatabase() const {
  return std::make_unique<PgExploreDatabase>(*this);
}

}  // namespace dedupsim
