#include "soak/soak_db.h"

#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <unordered_set>

#include "backends/databases.h"
#include "os/child_process.h"
#include "os/pipe_io.h"
#include "os/process_error.h"
#include "os/unique_fd.h"
#include "soak/nats_queue.h"
#include "store/databases.h"
#include "world/broker/broker.h"

namespace dedupsim {

void DatabaseSoakDb::SetUp(const Workload& workload) const {
  db_.StockBooks(workload.books);  // what a run before left goes first
  db_.FillQueue(workload.deliveries);
}

std::unique_ptr<StrategyHandler> DatabaseSoakDb::OpenHandler(BenchStrategy strategy) const {
  return MakeHandler(strategy, db_);
}

std::unique_ptr<BrokerQueue> DatabaseSoakDb::OpenBroker(
    std::chrono::milliseconds lease, int64_t consumer,
    const std::function<void(bool open)>& count_open) const {
  return db_.OpenQueue(lease, consumer, count_open);
}

void DatabaseSoakDb::Read(SoakReport& report, const Workload& workload) const {
  report.broker = db_.ReadQueueCounts();
  const std::unordered_set<std::string> unacked = db_.UnackedOrders();
  report.check = CheckEffects(db_, workload, &unacked);
}

void DatabaseSoakDb::ReadEffects(SoakReport& report, const Workload& workload) const {
  report.check = CheckEffects(db_, workload);
}

void RunOnDatabase(const SoakOptions& options, const std::function<void(const SoakDb&)>& run) {
  std::unique_ptr<Databases> sqlite;  // no databases given: SQLite's file
  if (options.databases == nullptr) sqlite = OpenDatabases(DatabaseChoice{.path = options.db_path});
  const Databases& databases = sqlite ? *sqlite : *options.databases;
  const std::unique_ptr<WorkloadDatabase> db =
      databases.CreateWorkload(WorkloadSettings{.file = options.settings});
  DatabaseSoakDb soak_db(*db);
  try {
    run(soak_db);
  } catch (const BrokerError&) {
    throw;  // the broker's errors name the broker
  } catch (const DatabaseError& e) {
    db->Rethrow(e);  // SQLite: every database error names the file
  }
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
