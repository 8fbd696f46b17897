#include "soak/soak_db.h"

#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <unordered_set>

#include "os/child_process.h"
#include "os/pipe_io.h"
#include "os/process_error.h"
#include "os/unique_fd.h"
#include "postgres/store.h"
#include "postgres/workload_database.h"
#include "soak/nats_queue.h"
#include "soak/pg_broker.h"
#include "sqlite/database.h"
#include "sqlite/schema.h"
#include "sqlite/workload_database.h"
#include "world/broker/broker.h"

namespace dedupsim {

void SqliteSoakDb::SetUp(const Workload& workload) const {
  Connection setup = db_.Connect();
  CreateSchema(setup);  // a --db file made by an older dedupsim may lack a table
  setup.ExecScript(
      "BEGIN IMMEDIATE; DELETE FROM Inbox; DELETE FROM StockItems; "
      "DELETE FROM StockReservations; COMMIT;");
  ResetBroker(setup);
  StockBooks(setup, workload.books);
  Enqueue(setup, workload.deliveries);
}

std::unique_ptr<StrategyHandler> SqliteSoakDb::OpenHandler(BenchStrategy strategy) const {
  return MakeHandler(strategy, SqliteWorkloadDatabase(db_));
}

std::unique_ptr<BrokerQueue> SqliteSoakDb::OpenBroker(
    std::chrono::milliseconds lease, int64_t consumer,
    const std::function<void(bool open)>& count_open) const {
  // The broker owns its connection.
  class Owned final : public BrokerQueue {
   public:
    Owned(Connection c, std::chrono::milliseconds lease, int64_t consumer)
        : c_(std::move(c)), broker_(c_, lease, consumer) {}
    std::optional<LeasedDelivery> Receive() override { return broker_.Receive(); }
    bool Ack(const LeasedDelivery& d, bool processed) override {
      return broker_.Ack(d, processed);
    }
    bool AllAcked() override { return broker_.AllAcked(); }
    Connection& connection() { return c_; }

   private:
    Connection c_;
    DurableBroker broker_;
  };
  auto owned = std::make_unique<Owned>(db_.Connect(), lease, consumer);
  owned->connection().OnTransactionChange(count_open);
  return owned;
}

void SqliteSoakDb::Read(SoakReport& report, const Workload& workload) const {
  Connection check = db_.Connect();
  report.broker = ReadBrokerCounts(check);
  const std::unordered_set<std::string> unacked = UnackedOrders(check);
  report.check = CheckEffects(ReadReserved(check), workload, &unacked);
}

void SqliteSoakDb::ReadEffects(SoakReport& report, const Workload& workload) const {
  Connection check = db_.Connect();
  report.check = CheckEffects(ReadReserved(check), workload);
}

void RunOnSqlite(const SoakOptions& options, const std::function<void(const SoakDb&)>& run) {
  DatabaseFile file = options.db_path.empty()
                          ? DatabaseFile::CreateTemporary(options.settings)
                          : DatabaseFile::Open(options.db_path, options.settings);
  SqliteSoakDb db(file);
  try {
    run(db);
  } catch (const BrokerError&) {
    throw;  // the broker's errors name the broker
  } catch (const DatabaseError& e) {
    throw InDatabase(file.path(), e);  // every database error names the file
  }
}

void PgSoakDb::SetUp(const Workload& workload) const {
  PgWorkloadDatabase(db_, true).StockBooks(workload.books);
  ResetBroker(db_);
  Enqueue(db_, workload.deliveries);
}

std::unique_ptr<StrategyHandler> PgSoakDb::OpenHandler(BenchStrategy strategy) const {
  return MakeHandler(strategy, PgWorkloadDatabase(db_, true));
}

std::unique_ptr<BrokerQueue> PgSoakDb::OpenBroker(
    std::chrono::milliseconds lease, int64_t consumer,
    const std::function<void(bool open)>& /*count_open*/) const {
  // Each broker call is one statement in its own transaction: never open between calls.
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

void PgSoakDb::Read(SoakReport& report, const Workload& workload) const {
  report.broker = ReadBrokerCounts(db_);
  const std::unordered_set<std::string> unacked = UnackedOrders(db_);
  report.check = CheckEffects(PgWorkloadDatabase(db_, true), workload, &unacked);
}

void PgSoakDb::ReadEffects(SoakReport& report, const Workload& workload) const {
  report.check = CheckEffects(PgWorkloadDatabase(db_, true), workload);
}

void NatsSoakDb::SetUp(const Workload& workload) const {
  inner_.SetUp(workload);
  Pipe pipe = MakePipe();  // ProcessError when the system refuses, as Fork below
  ChildProcess child = ChildProcess::Fork();
  if (child.in_child()) {
    pipe.read.reset();
    std::string error;
    try {
      SetUpNatsSoakStream(options_.nats_url, options_.nats_stream, options_.lease,
                          workload.deliveries);
    } catch (const std::exception& e) {
      error = e.what();
    }
    WriteAll(pipe.write.get(), error);
    ::_exit(error.empty() ? 0 : 1);
  }
  pipe.write.reset();
  const std::string error = ReadAll(pipe.read.get());
  const std::optional<int> status = child.Wait();
  if (!error.empty()) throw BrokerError(error);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    // Not the broker's answer: the child ended before it could give one.
    throw ProcessError("NATS: the child that fills the soak's stream " +
                       DescribeWaitStatus(status));
  }
}

std::unique_ptr<StrategyHandler> NatsSoakDb::OpenHandler(BenchStrategy strategy) const {
  return inner_.OpenHandler(strategy);
}

std::unique_ptr<BrokerQueue> NatsSoakDb::OpenBroker(
    std::chrono::milliseconds /*lease: the consumer's AckWait*/, int64_t /*consumer*/,
    const std::function<void(bool open)>& /*count_open*/) const {
  return std::make_unique<NatsSoakQueue>(options_.nats_url, options_.nats_stream);
}

void NatsSoakDb::ReadEffects(SoakReport& report, const Workload& workload) const {
  inner_.ReadEffects(report, workload);
}

void NatsSoakDb::Read(SoakReport& report, const Workload& workload) const {
  inner_.ReadEffects(report, workload);  // its broker table was not used
  report.broker = ReadNatsSoakCounts(options_.nats_url, options_.nats_stream);
  // The server counts acks, but does not say which orders' copies were acked: with
  // entries left unacked, an order never applied may be lost or not reached.
  report.reach_unknown = report.broker.acked != report.broker.entries;
  // With --role, consumers elsewhere may still fetch from it: the next supervisor's
  // SetUp deletes and makes it anew.
  if (!report.supervisor_only) DeleteNatsSoakStream(options_.nats_url, options_.nats_stream);
}

}  // namespace dedupsim
