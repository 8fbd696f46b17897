#include "sqlite/explore_database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sqlite/database.h"
#include "sqlite/error.h"
#include "sqlite/sandbox.h"
#include "sqlite/side_records.h"
#include "sqlite/statement.h"
#include "sqlite/store.h"
#include "sqlite/table_probe.h"

namespace dedupsim {

namespace {

// A row's second file: a side store's tables and the statements that empty them, or a
// test's own; null where it keeps none.
const char* AuxSchema(const ExploreTables& t) {
  return t.test_aux_schema != nullptr ? t.test_aux_schema : SideStoreTables(t.side);
}
const char* AuxReset(const ExploreTables& t) {
  return t.test_aux_schema != nullptr ? t.test_aux_reset : SideStoreReset(t.side);
}

// The statements of a script, each as its own text, so each can be prepared once.
std::vector<std::string> SplitScript(Connection& connection, const char* script) {
  std::vector<std::string> out;
  if (script == nullptr) return out;
  const char* rest = script;
  while (*rest != '\0') {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(connection.handle(), rest, -1, &stmt, &tail);
    if (rc != SQLITE_OK) {
      throw SqliteError(
          rc, fmt::format("prepare failed: {} in: {}", sqlite3_errmsg(connection.handle()), rest));
    }
    if (stmt != nullptr) {
      out.emplace_back(sqlite3_sql(stmt));
      sqlite3_finalize(stmt);
    }
    if (tail == nullptr || tail == rest) break;
    rest = tail;
  }
  return out;
}

// A connection's StepGate: reports to the instance's ExploreGate with the file it is on.
class FileGate final : public StepGate {
 public:
  FileGate(ExploreGate& gate, uint8_t file) : gate_(gate), file_(file) {}
  void BeforeStatement(Connection& c, std::string_view sql) override {
    gate_.BeforeStatement(file_, sql, c.InTransaction());
  }
  void BeforeHook(Connection&, std::string_view name) override { gate_.BeforeHook(name); }
  bool OnBusy(Connection&, int) override { return gate_.OnBusy(file_); }

 private:
  ExploreGate& gate_;
  const uint8_t file_;
};

class SqliteAttempt final : public ExploreAttempt {
 public:
  SqliteAttempt(Connection& db, Connection* aux) : store_(db) {
    if (aux != nullptr) side_.emplace(*aux);
  }
  Store& store() override { return store_; }
  SideRecords* side() override { return side_ ? &*side_ : nullptr; }

 private:
  SqliteStore store_;
  std::optional<SqliteSideRecords> side_;
};

class SqliteExploreSession final : public ExploreSession {
 public:
  SqliteExploreSession(const DatabaseFile& db, const DatabaseFile* aux_db, ExploreGate& gate)
      : db_file_(db), aux_file_(aux_db), main_gate_(gate, kExploreMainFile),
        aux_gate_(gate, kExploreSecondFile) {}
  ~SqliteExploreSession() override {
    db_.reset();
    aux_.reset();
  }

  void Open(bool second_file, Recorder* recorder, const std::string& instance,
            const char* target) override {
    if (!db_ || !db_->is_open()) OpenGated(db_, db_file_, main_gate_);
    db_->SetTrace(recorder, instance);
    if (second_file && aux_file_ != nullptr) {
      if (!aux_ || !aux_->is_open()) OpenGated(aux_, *aux_file_, aux_gate_);
      aux_->SetTrace(recorder, instance);
      if (recorder != nullptr) aux_->SetTraceRole(kActorConsumer, target);
    }
  }
  void Forget() override {
    db_.reset();
    aux_.reset();
  }
  void SetDelivery(const DeliveryRef& delivery) override {
    if (db_) db_->SetDelivery(delivery);
    if (aux_) aux_->SetDelivery(delivery);
  }
  std::unique_ptr<ExploreAttempt> Attempt() override {
    return std::make_unique<SqliteAttempt>(*db_, aux_ && aux_->is_open() ? &*aux_ : nullptr);
  }
  uint8_t WriteLocks() const override {
    auto holds = [](const std::optional<Connection>& c) { return c && c->HoldsWriteLock(); };
    return static_cast<uint8_t>((holds(db_) ? kExploreMainFile : 0) |
                                (holds(aux_) ? kExploreSecondFile : 0));
  }
  uint8_t OpenFiles() const override {
    return static_cast<uint8_t>((db_ && db_->is_open() ? kExploreMainFile : 0) |
                                (aux_ && aux_->is_open() ? kExploreSecondFile : 0));
  }
  void Close() override {
    if (db_) db_->Close();
    if (aux_) aux_->Close();
  }
  void Unwind() override { Close(); }

 private:
  static void OpenGated(std::optional<Connection>& slot, const DatabaseFile& file,
                        FileGate& gate) {
    Connection c = file.Connect();
    c.SetGate(&gate);
    slot.emplace(std::move(c));
    slot->SetGate(&gate);  // the move rebinds the busy handler; the gate goes with it
  }

  const DatabaseFile& db_file_;
  const DatabaseFile* aux_file_;
  FileGate main_gate_;
  FileGate aux_gate_;
  std::optional<Connection> db_;
  std::optional<Connection> aux_;
};

class SqliteExploreDatabase final : public ExploreDatabase {
 public:
  SqliteExploreDatabase(const DatabaseSettings& settings, std::span<const ExploreRow> rows)
      : db_(DatabaseFile::CreateTemporary(settings)), control_(db_.Connect()) {
    bool any_aux = false;
    for (const ExploreRow& row : rows) {
      const ExploreTables& t = *row.tables;
      if (t.schema != nullptr) RunSchema(control_, t.schema, {});  // a file's: sandboxed
      if (t.KeepsSecondFile()) any_aux = true;
    }
    if (any_aux) {
      aux_db_.emplace(DatabaseFile::CreateTemporary(settings));
      aux_control_.emplace(aux_db_->Connect());
      for (const ExploreRow& row : rows) {
        if (row.tables->KeepsSecondFile()) aux_control_->ExecScript(AuxSchema(*row.tables));
      }
    }
    for (const ExploreRow& row : rows) {
      order_.push_back(row.tables);
      reset_sql_[row.tables] = Split(*row.tables);
    }
    ReadMainTables();
  }

  bool waits_in_server() const override { return false; }

  void Add(const ExploreRow& row) override {
    const ExploreTables& t = *row.tables;
    if (reset_sql_.count(&t) != 0) return;
    if (t.KeepsSecondFile() && !aux_control_) {
      throw std::logic_error(fmt::format(
          "strategy {} needs a second file, and the scheduler was set up without one",
          row.name));
    }
    if (t.schema != nullptr) RunSchema(control_, t.schema, {});  // a file's: sandboxed
    if (t.KeepsSecondFile()) aux_control_->ExecScript(AuxSchema(t));
    ResetSql r = Split(t);
    ReadMainTables();
    order_.push_back(&t);
    reset_sql_.emplace(&t, std::move(r));
  }

  void Reset(const std::vector<BookRow>& books,
             std::span<const ExploreRow> subscribers) override {
    for (const ExploreRow& row : subscribers) Add(row);  // a row met for the first time
    control_.Cached("BEGIN IMMEDIATE").Execute();
    control_.Cached("DELETE FROM Inbox").Execute();
    control_.Cached("DELETE FROM StockItems").Execute();
    for (const BookRow& book : books) {
      control_
          .Cached(
              "INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, ?3, ?4)")
          .Bind(1, book.book_id)
          .Bind(2, book.title)
          .Bind(3, book.on_hand)
          .Bind(4, book.reserved)
          .Execute();
    }
    // Every known row's tables, not only the plan's: a row may write tables another one
    // declares (a consumer file reserving through StockReservations), and a table left
    // with a previous plan's rows would change this plan's outcome. The statements are
    // prepared once, so an empty table costs little.
    bool aux_used = false;
    for (const ExploreTables* id : order_) {
      const ResetSql& r = reset_sql_.at(id);
      for (const std::string& sql : r.main) control_.Cached(sql).Execute();
      aux_used = aux_used || !r.aux.empty();
    }
    control_.Cached("COMMIT").Execute();
    if (aux_used && aux_control_) {
      aux_control_->Cached("BEGIN IMMEDIATE").Execute();
      for (const ExploreTables* id : order_) {
        for (const std::string& sql : reset_sql_.at(id).aux) aux_control_->Cached(sql).Execute();
      }
      aux_control_->Cached("COMMIT").Execute();
    }
  }

  std::vector<BookRow> ReadBooks() override {
    std::vector<BookRow> out;
    Statement& q =
        control_.Cached("SELECT BookId, Title, OnHand, Reserved FROM StockItems ORDER BY BookId");
    while (q.Step()) {
      out.push_back({q.ColumnText(0), q.ColumnText(1), q.ColumnInt(2), q.ColumnInt(3)});
    }
    q.Reset();
    return out;
  }

  int64_t InboxRows() override {
    Statement& rows = control_.Cached("SELECT count(*) FROM Inbox");
    rows.Step();
    const int64_t n = rows.ColumnInt(0);
    rows.Reset();
    return n;
  }

  int64_t ProviderEmailsSent(const std::string& text) override {
    if (!aux_control_) return 0;
    Statement query = aux_control_->Prepare("SELECT count(*) FROM SentEmails WHERE Text = ?1");
    query.Bind(1, text);
    query.Step();
    return query.ColumnInt(0);
  }

  const std::vector<std::string>& main_tables() const override { return main_tables_; }

  std::unique_ptr<TablesReader> OpenTablesReader(bool second_file) const override {
    std::vector<std::pair<std::string, std::string>> stores = {{"database", db_.path()}};
    if (second_file && aux_db_) stores.emplace_back("second file", aux_db_->path());
    return std::make_unique<TableProbe>(std::move(stores));
  }

  std::unique_ptr<ExploreSession> NewSession(ExploreGate& gate, Isolation) override {
    return std::make_unique<SqliteExploreSession>(db_, aux_db_ ? &*aux_db_ : nullptr, gate);
  }

 private:
  // A row's reset scripts, split into statements prepared once on the controls.
  struct ResetSql {
    std::vector<std::string> main;
    std::vector<std::string> aux;
  };

  ResetSql Split(const ExploreTables& t) {
    ResetSql r;
    r.main = SplitScript(control_, t.reset);
    if (aux_control_) r.aux = SplitScript(*aux_control_, AuxReset(t));
    return r;
  }

  // The service file's tables, in the order of its schema; read again whenever a schema
  // is run.
  void ReadMainTables() {
    main_tables_.clear();
    Statement& q = control_.Cached(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY rowid");
    while (q.Step()) main_tables_.push_back(q.ColumnText(0));
    q.Reset();
  }

  DatabaseFile db_;
  Connection control_;  // set-up and read-back; never scheduled
  std::optional<DatabaseFile> aux_db_;
  std::optional<Connection> aux_control_;
  std::vector<const ExploreTables*> order_;  // the rows, in the order they were met
  std::unordered_map<const ExploreTables*, ResetSql> reset_sql_;
  std::vector<std::string> main_tables_;
};

}  // namespace

std::unique_ptr<ExploreDatabase> OpenSqliteExploreDatabase(const DatabaseSettings& settings,
                                                          std::span<const ExploreRow> rows) {
  return std::make_unique<SqliteExploreDatabase>(settings, rows);
}

}  // namespace dedupsim
