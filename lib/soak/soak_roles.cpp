// soak --role supervisor and --role consumer (soak.h): one PostgreSQL server, its durable
// broker table (or a NATS stream), any number of consumer processes started separately,
// sharing a run through the database (store/durable_queue.h's SharedRun).
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include "soak/nats_queue.h"
#include "soak/soak.h"
#include "soak/soak_db.h"
#include "store/databases.h"
#include "store/durable_queue.h"

namespace dedupsim {

namespace {
using SteadyClock = std::chrono::steady_clock;
}  // namespace

namespace {

void ValidateRole(const SoakOptions& options) {
  ValidateSoakOptions(options);
  if (!options.postgres()) {
    throw std::invalid_argument("--role supervisor and consumer need --backend postgres");
  }
}

}  // namespace

SoakReport RunSoakSupervisor(const SoakOptions& options, SoakProgress* progress,
                             const std::function<bool()>& interrupted) {
  ValidateRole(options);
  Workload workload = MakeWorkload(options.workload);
  SoakReport report;
  report.options = options;
  report.distinct_orders = static_cast<int64_t>(workload.orders.size());
  report.duplicates = workload.duplicates;
  // The roles share a run through the server's control table (SharedRun).
  const std::unique_ptr<WorkloadDatabase> workload_db =
      options.databases->CreateWorkload(WorkloadSettings{});
  DatabaseSoakDb pg_db(*workload_db);
  NatsSoakDb nats_db(pg_db, options);
  const bool nats = !options.nats_url.empty();
  const SoakDb& db = nats ? static_cast<const SoakDb&>(nats_db) : pg_db;
  const std::unique_ptr<SharedRun> run = options.databases->OpenSharedRun();
  run->EnsureTables();
  run->End();  // consumers of an earlier run stop before its tables are emptied
  db.SetUp(workload);
  const auto started = SteadyClock::now();
  run->Start();
  {
    for (;;) {
      int64_t acked = 0;
      int64_t entries = 0;
      if (nats) {  // the server's counts: no fork follows, cnats may run here
        BrokerCounts counts = ReadNatsSoakCounts(options.nats_url, options.nats_stream);
        acked = counts.acked;
        entries = counts.entries;
      } else {
        const SharedRun::Progress p = run->ReadProgress();
        acked = p.acked;
        entries = p.entries;
      }
      const auto now = SteadyClock::now();
      if (progress != nullptr) {
        progress->Update(acked, entries, 0, now - started);
      }
      if (acked == entries) break;
      if (interrupted && interrupted()) {
        report.interrupted = true;
        break;
      }
      if (now - started >= options.timeout) {
        report.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  run->End();
  report.elapsed = SteadyClock::now() - started;
  if (progress != nullptr) progress->Finished();
  report.supervisor_only = true;
  db.Read(report, workload);
  if (nats) {
    report.consumers_seen = -1;  // one shared NATS consumer: the server does not say who
  } else {
    report.consumers_seen = run->ConsumersSeen();
  }
  return report;
}

SoakConsumerReport RunSoakConsumer(const SoakOptions& options,
                                   const std::function<bool()>& interrupted) {
  ValidateRole(options);
  const std::unique_ptr<SharedRun> run = options.databases->OpenSharedRun();
  run->EnsureTables();
  SoakConsumerReport report;
  // Consumers on several machines may share a pid: a random id names this one.
  std::random_device device;
  report.consumer = static_cast<int64_t>(((static_cast<uint64_t>(device()) << 31) ^ device()) &
                                         0x3fffffffffffffffULL);
  const std::unique_ptr<WorkloadDatabase> workload_db =
      options.databases->CreateWorkload(WorkloadSettings{});
  DatabaseSoakDb pg_db(*workload_db);
  NatsSoakDb nats_db(pg_db, options);
  const SoakDb& db = options.nats_url.empty() ? static_cast<const SoakDb&>(pg_db) : nats_db;
  std::unique_ptr<StrategyHandler> handler = db.OpenHandler(options.strategy);
  std::unique_ptr<BrokerQueue> broker;  // NATS: once a run is going (its stream is made then)
  const auto deadline = SteadyClock::now() + options.timeout;
  bool running = false;  // seen a run going: from then on, a run done is ours to end on
  for (;;) {
    if (interrupted && interrupted()) {
      report.interrupted = true;
      break;
    }
    if (SteadyClock::now() >= deadline) {
      report.timed_out = true;
      break;
    }
    if (!running) {
      std::optional<bool> done = run->Done();
      if (!done.has_value() || *done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // no run going yet
        continue;
      }
      running = true;
      broker = db.OpenBroker(options.lease, report.consumer, nullptr);
    }
    std::optional<LeasedDelivery> delivery = broker->Receive();
    if (!delivery) {
      if (run->Done().value_or(false)) {
        report.run_done = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // leases still running
      continue;
    }
    report.received++;
    bool processed = handler->Handle(delivery->message);
    (processed ? report.processed : report.skipped)++;
    if (!broker->Ack(*delivery, processed)) report.acks_refused++;
  }
  return report;
}

}  // namespace dedupsim
