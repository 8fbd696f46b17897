#include "soak/soak.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <optional>
#include <climits>
#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>

#include "os/child_process.h"
#include "os/pause_point.h"
#include "os/pipe_io.h"
#include "soak/soak_db.h"
#include "store/error.h"
#include "world/broker/broker.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kExitBusy = 75;   // a consumer's SQLITE_BUSY outlasted the busy timeout
constexpr int kExitError = 70;  // any other failure in a consumer
// The machine's error in a consumer (StoreErrorKind::kEnvironment: a full disk, an I/O
// error): no restart helps, so the supervisor stops the run with it (exit 3).
constexpr int kExitEnvironment = 74;
constexpr size_t kMaxSlots = 32;
constexpr int64_t kMaxErrors = 50;  // a consumer that keeps failing stops the run

// Shared with the consumers (mapped before fork): what the progress display shows, and
// each slot's last error text. The report itself is read from the database.
struct Shared {
  std::atomic<int64_t> acked{0};
  // The consumers' own count of their accepted acks, by what they did (a broker that is not
  // a table of ours does not know it).
  std::atomic<int64_t> acked_processed{0};
  std::atomic<int64_t> acked_skipped{0};
  // Per slot: transactions its consumer has open (handler and broker connections), kept
  // by the connections themselves; read after a kill to tell a death mid-transaction.
  std::atomic<int> open_transactions[kMaxSlots] = {};
  // Per slot: 1 once its consumer has its connections and starts receiving (0: starting).
  std::atomic<int> receiving[kMaxSlots] = {};
  // Per slot: 1 while the supervisor sleeps on open_transactions (a futex) until the
  // consumer opens one; the consumer then wakes it.
  std::atomic<int> awaited[kMaxSlots] = {};
  char errors[kMaxSlots][1024] = {};  // room for a path, a statement and what to do
};

static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free,
              "the futex calls below treat std::atomic<int> as an int");

// The word is in memory shared between processes (MAP_SHARED), so no FUTEX_PRIVATE_FLAG.
int* FutexWord(std::atomic<int>& word) { return reinterpret_cast<int*>(&word); }

// Sleeps while word holds expected, at most `limit`; returns early on a wake or a change.
void FutexWait(std::atomic<int>& word, int expected, std::chrono::nanoseconds limit) {
  timespec timeout{static_cast<time_t>(limit.count() / 1'000'000'000),
                   static_cast<long>(limit.count() % 1'000'000'000)};
  ::syscall(SYS_futex, FutexWord(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void FutexWakeAll(std::atomic<int>& word) {
  ::syscall(SYS_futex, FutexWord(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void Validate(const SoakOptions& o) {
  if (o.workload.messages < 1 || o.workload.messages > 1'000'000) {
    throw std::invalid_argument("--messages must be within [1, 1000000]");
  }
  if (!(o.workload.duplicate_rate >= 0.0 && o.workload.duplicate_rate <= 1.0)) {
    throw std::invalid_argument("--duplicate-rate must be within [0, 1]");
  }
  if (o.consumers < 1 || o.consumers > static_cast<int>(kMaxSlots)) {
    throw std::invalid_argument(fmt::format("--consumers must be within [1, {}]", kMaxSlots));
  }
  if (o.strategy.raw()) {
    throw std::invalid_argument("--strategy raw is the bench's baseline, not a soak consumer");
  }
  if (o.kill_every.count() < 0 || o.kill_every.count() > 60000) {
    throw std::invalid_argument("--kill-every-ms must be within [0, 60000]");
  }
  if (o.lease.count() < 10 || o.lease.count() > 60000) {
    throw std::invalid_argument("--lease-ms must be within [10, 60000]");
  }
  if (o.timeout.count() < 1) throw std::invalid_argument("--timeout-s must be at least 1");
}

// A consumer process: opens its own connections, then receives, handles and acks until
// every entry is acked. Never returns.
[[noreturn]] void ConsumerMain(const SoakOptions& options, const SoakDb& db, size_t slot,
                               Shared* shared) {
  ::signal(SIGINT, SIG_IGN);  // Ctrl-C is the supervisor's to handle
  int code = 0;
  try {
    std::unique_ptr<StrategyHandler> handler = db.OpenHandler(options.strategy);
    std::function<void(bool)> count_open = [shared, slot](bool open) {
      shared->open_transactions[slot].fetch_add(open ? 1 : -1);
      // A system call only when the supervisor sleeps on it (once per kill, not per message).
      if (open && shared->awaited[slot].load() != 0) {
        FutexWakeAll(shared->open_transactions[slot]);
      }
    };
    handler->OnTransactionChange(count_open);
    std::unique_ptr<BrokerQueue> broker =
        db.OpenBroker(options.lease, static_cast<int64_t>(::getpid()), count_open);
    PauseHere("soak-consumer-starting");  // the test build only: a consumer slow to start
    shared->receiving[slot].store(1);
    if (shared->awaited[slot].load() != 0) FutexWakeAll(shared->open_transactions[slot]);
    for (;;) {
      std::optional<LeasedDelivery> delivery = broker->Receive();
      if (!delivery) {
        if (broker->AllAcked()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // leases still running
        continue;
      }
      bool processed = handler->Handle(delivery->message);
      if (broker->Ack(*delivery, processed)) {
        shared->acked.fetch_add(1);
        (processed ? shared->acked_processed : shared->acked_skipped).fetch_add(1);
      }
    }
  } catch (const StoreError& e) {  // SQLite's and PostgreSQL's
    code = e.kind() == StoreErrorKind::kBusy          ? kExitBusy
           : e.kind() == StoreErrorKind::kEnvironment ? kExitEnvironment
                                                      : kExitError;
    std::snprintf(shared->errors[slot], sizeof shared->errors[slot], "%s", e.what());
  } catch (const std::exception& e) {
    code = kExitError;
    std::snprintf(shared->errors[slot], sizeof shared->errors[slot], "%s", e.what());
  }
  ::_exit(code);  // no destructors: the supervisor owns the database file
}

class Supervisor {
 public:
  Supervisor(const SoakOptions& options, const SoakDb& db, SoakReport& report, Shared* shared)
      : options_(options),
        db_(db),
        report_(report),
        shared_(shared),
        children_(static_cast<size_t>(options.consumers)),
        rng_(options.workload.seed ^ 0x6b696c6c73ULL) {}

  void Run(SoakProgress* progress, const std::function<bool()>& interrupted) {
    const auto started = SteadyClock::now();
    const auto deadline = started + options_.timeout;
    for (size_t slot = 0; slot < children_.size(); ++slot) Start(slot);
    auto next_kill = started + NextGap();
    auto last_report = started;
    while (Live() > 0) {
      if (interrupted && interrupted()) {
        report_.interrupted = true;
        break;
      }
      auto now = SteadyClock::now();
      if (now >= deadline) {
        report_.timed_out = true;
        break;
      }
      if (report_.busy_errors + report_.other_errors >= kMaxErrors) break;
      ReapExited();
      if (!environment_error_.empty()) break;
      if (options_.kill_every.count() > 0 && !finished_ && now >= next_kill) {
        // Drawn whether or not the slot is live, so the schedule depends on the seed only.
        auto victim = static_cast<size_t>(rng_() % children_.size());
        if (AwaitTransaction(victim, deadline, interrupted)) Kill(victim);
        // The gap counts from this kill: a kill that waited for its victim does not make the
        // next ones come in a burst.
        next_kill = SteadyClock::now() + NextGap();
      }
      if (progress != nullptr && now - last_report >= std::chrono::milliseconds(100)) {
        progress->Update(shared_->acked.load(), static_cast<int64_t>(options_.workload.messages),
                         report_.kills, now - started);
        last_report = now;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    StopAll();
    report_.elapsed = SteadyClock::now() - started;
    if (progress != nullptr) progress->Finished();
    if (!environment_error_.empty()) throw DatabaseError(environment_error_);
  }

 private:
  std::chrono::milliseconds NextGap() {
    // Uniform in [0.5, 1.5] times the mean gap.
    auto mean = options_.kill_every.count();
    if (mean <= 0) return std::chrono::milliseconds(0);
    return std::chrono::milliseconds(
        mean / 2 + static_cast<int64_t>(rng_() % static_cast<uint64_t>(mean + 1)));
  }

  size_t Live() const {
    size_t n = 0;
    for (const ChildProcess& child : children_) {
      if (child.unreaped()) ++n;
    }
    return n;
  }

  void Start(size_t slot) {
    shared_->open_transactions[slot].store(0);  // before the fork: the child counts from 0
    shared_->receiving[slot].store(0);
    ChildProcess child = ChildProcess::Fork();  // dies with the supervisor
    if (child.in_child()) ConsumerMain(options_, db_, slot, shared_);
    children_[slot] = std::move(child);
  }

  // What to do about a consumer that ended by itself.
  void Ended(size_t slot, std::optional<int> known) {
    if (!known) {  // reaped elsewhere: how it ended is unknown, a death nobody planned
      report_.other_errors++;
      if (report_.errors.size() < 5) {
        report_.errors.push_back(
            fmt::format("consumer {}: {}", slot + 1, DescribeWaitStatus(known)));
      }
      if (!finished_) Restart(slot);
      return;
    }
    const int status = *known;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      finished_ = true;  // it saw every entry acked: no more kills, no restart
      return;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitEnvironment) {
      // Its message names the file (DescribeFailure); the other consumers are stopped.
      environment_error_ = fmt::format("consumer {}: {}", slot + 1, shared_->errors[slot]);
      return;
    }
    std::string what;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitBusy) {
      report_.busy_errors++;
      what = fmt::format("SQLITE_BUSY escaped: {}", shared_->errors[slot]);
    } else if (WIFEXITED(status)) {
      report_.other_errors++;
      what = fmt::format("exited with status {}: {}", WEXITSTATUS(status), shared_->errors[slot]);
    } else {
      report_.other_errors++;
      what = fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
    }
    if (report_.errors.size() < 5)
      report_.errors.push_back(fmt::format("consumer {}: {}", slot + 1, what));
    if (!finished_) Restart(slot);
  }

  void Restart(size_t slot) {
    report_.restarts++;
    Start(slot);
  }

  void ReapExited() {
    for (size_t slot = 0; slot < children_.size(); ++slot) {
      ChildProcess& child = children_[slot];
      if (child.unreaped() && child.TryWait()) Ended(slot, child.status());
    }
  }

  // Gives the victim a moment (at most kAimAt) to be inside a transaction, so the kills
  // that matter most (a death between BEGIN and COMMIT) happen however fast the machine
  // runs the consumers: at full speed a transaction lasts tens of microseconds, and a
  // kill at a random instant lands between transactions almost every time. The kill stays
  // a real SIGKILL at a moment the consumer chose by its own progress; whether it was still
  // inside is read after its death (kills_mid_transaction), never assumed.
  //
  // A victim still starting (a consumer just restarted: forking, connecting, preparing) is
  // waited for until it receives, without that limit, and then given its moment:
  // otherwise, on a loaded machine where a restart takes longer than the gap between kills,
  // the kills would land on consumers still starting, each restart would cost more time,
  // and more time more kills. So every kill follows work, and the run's time follows its
  // work, not the machine's load. The supervisor sleeps meanwhile (a futex the consumer
  // wakes as it opens a transaction), so the wait costs no processor time.
  // False when the run ended first (its deadline, an interrupt): then no kill.
  bool AwaitTransaction(size_t slot, SteadyClock::time_point deadline,
                        const std::function<bool()>& interrupted) {
    static constexpr auto kAimAt = std::chrono::milliseconds(20);
    static constexpr auto kLook = std::chrono::milliseconds(10);  // at the victim's life
    const ChildProcess& victim = children_[slot];
    if (!victim.unreaped()) return true;
    std::atomic<int>& open = shared_->open_transactions[slot];
    std::optional<SteadyClock::time_point> until;  // from when it receives
    shared_->awaited[slot].store(1);  // before the reads: either we see it, or it wakes us
    bool kill = true;
    for (;;) {
      const int now_open = open.load();
      const auto now = SteadyClock::now();
      if (now_open > 0) break;
      if (now >= deadline) {
        kill = false;
        break;
      }
      if (shared_->receiving[slot].load() != 0) {
        if (!until) until = now + kAimAt;
        if (now >= *until) break;
        FutexWait(open, now_open, *until - now);
        continue;
      }
      // Still starting: wait until it receives, looking every kLook whether it ended
      // instead (it failed to start) or the run was interrupted.
      if (victim.Ended()) break;  // it ended: the main loop reaps it
      if (interrupted && interrupted()) {
        kill = false;
        break;
      }
      FutexWait(open, now_open, kLook);
    }
    shared_->awaited[slot].store(0);
    return kill;
  }

  void Kill(size_t slot) {
    ChildProcess& victim = children_[slot];
    if (!victim.unreaped()) return;
    const std::optional<int> status = victim.Kill();
    if (status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) {
      report_.kills++;
      // Read once the victim is dead: what it had open when it died.
      if (shared_->open_transactions[slot].exchange(0) > 0) report_.kills_mid_transaction++;
      Restart(slot);
    } else {
      Ended(slot, status);  // it had already ended by itself
    }
  }

  void StopAll() {
    for (ChildProcess& child : children_) child.Kill();
  }

  const SoakOptions& options_;
  const SoakDb& db_;
  SoakReport& report_;
  Shared* shared_;
  // One per slot; a slot whose child is reaped (or never forked) has no live consumer.
  std::vector<ChildProcess> children_;
  std::mt19937_64 rng_;
  bool finished_ = false;  // a consumer saw every entry acked
  std::string environment_error_;  // a consumer's kExitEnvironment: the run stops with it
};

// The shared block, unmapped on scope exit.
class SharedMapping {
 public:
  SharedMapping() {
    void* p =
        ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap: {}", std::strerror(errno)));
    shared_ = new (p) Shared();
  }
  ~SharedMapping() { ::munmap(shared_, sizeof(Shared)); }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  Shared* get() { return shared_; }

 private:
  Shared* shared_;
};

}  // namespace

void ValidateSoakOptions(const SoakOptions& options) { Validate(options); }

SoakReport RunSoak(const SoakOptions& options, SoakProgress* progress,
                   const std::function<bool()>& interrupted) {
  Validate(options);
  Workload workload = MakeWorkload(options.workload);
  SoakReport report;
  report.options = options;
  report.distinct_orders = static_cast<int64_t>(workload.orders.size());
  report.duplicates = workload.duplicates;
  // Through NATS: the consumers' own counts of what they acked, by what they did.
  auto through = [&](const SoakDb& db) {
    if (options.nats_url.empty()) {
      db.SetUp(workload);
      SharedMapping shared;
      Supervisor(options, db, report, shared.get()).Run(progress, interrupted);
      db.Read(report, workload);  // every consumer is gone
      return;
    }
    NatsSoakDb nats(db, options);
    nats.SetUp(workload);
    SharedMapping shared;
    Supervisor(options, nats, report, shared.get()).Run(progress, interrupted);
    nats.Read(report, workload);  // every consumer is gone: cnats may run in this process now
    report.broker.acked_processed = shared.get()->acked_processed.load();
    report.broker.acked_skipped = shared.get()->acked_skipped.load();
  };
  RunOnDatabase(options, through);
  return report;
}

}  // namespace dedupsim
