#include "explore/scheduler.h"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "clock.h"
#include "consumers/email.h"
#include "explore/step_label.h"
#include "hooks.h"
#include "schema.h"
#include "sqlite/error.h"
#include "sqlite/statement.h"

namespace dedupsim::explore {

namespace {

constexpr int kScheduler = -1;

// The one permission to run. Whoever holds it runs; everyone else waits on their own
// condition variable, so a hand-off wakes exactly one thread. Every change to shared
// state happens while holding the baton, and the mutex orders those changes.
class Baton {
 public:
  explicit Baton(size_t workers) {
    for (size_t i = 0; i < workers; ++i) workers_.push_back(std::make_unique<std::condition_variable>());
  }

  // Scheduler: gives the baton to worker and waits until it is handed back.
  void Give(int worker) {
    std::unique_lock<std::mutex> lock(mu_);
    holder_ = worker;
    workers_[Slot(worker)]->notify_one();
    scheduler_.wait(lock, [&] { return holder_ == kScheduler; });
  }

  // Worker: hands the baton back and waits until it is given again.
  void Yield(int worker) {
    std::unique_lock<std::mutex> lock(mu_);
    holder_ = kScheduler;
    scheduler_.notify_one();
    workers_[Slot(worker)]->wait(lock, [&] { return holder_ == worker; });
  }

  // Worker: waits for the baton (between runs).
  void Await(int worker) {
    std::unique_lock<std::mutex> lock(mu_);
    workers_[Slot(worker)]->wait(lock, [&] { return holder_ == worker; });
  }

  // Worker: hands the baton back and goes on without it (to Await, or to exit).
  void Return() {
    std::lock_guard<std::mutex> lock(mu_);
    holder_ = kScheduler;
    scheduler_.notify_one();
  }

 private:
  static size_t Slot(int worker) { return static_cast<size_t>(worker); }

  std::mutex mu_;
  std::condition_variable scheduler_;
  std::vector<std::unique_ptr<std::condition_variable>> workers_;
  int holder_ = kScheduler;
};

enum class WorkerState { kIdle, kWaiting, kAtGate, kBlocked, kRunning, kDone };

// What the deliveries of one (order, subscriber) pair came to.
struct Tally {
  bool acked = false;
  bool flagged = false;
};

const TimePoint kEpoch = std::chrono::sys_days{std::chrono::year{2026} / 1 / 5} + std::chrono::hours{9};

}  // namespace

class Worker;

struct Scheduler::Impl {
  Impl(std::span<const Strategy* const> strategies, SchedulerOptions options);
  ~Impl();

  void Reset(const Plan& plan);
  void Abort();
  Figures Measure(const Plan& plan, ScheduleResult& result);
  void RecordResult(const Delivery& delivery, DeliveryResult r);
  size_t TallySlot(const Delivery& delivery) const;

  SchedulerOptions options;
  std::vector<const Strategy*> strategies;
  DatabaseFile db;
  std::optional<DatabaseFile> aux_db;
  Connection control;  // set-up and read-back; never scheduled
  std::optional<Connection> aux_control;
  ManualClock clock{kEpoch};
  Baton baton{kMaxInstances};
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;

  // Per run; touched only by the baton holder.
  const Plan* plan = nullptr;
  bool abort = false;
  std::vector<std::string> sent;  // idempotency keys (message ids) the provider accepted
  std::unordered_map<std::string, size_t> order_of_message;
  std::vector<Tally> tallies;  // orders x subscribers
  int64_t crashes = 0;
  int64_t attempts = 0;
  std::string failure;  // a consumer failed in a way the explorer does not model
};

// One consumer instance: a thread, its connections, and the gate they call.
class Worker final : public StepGate {
 public:
  Worker(Scheduler::Impl& owner, int index) : owner_(owner), index_(index), name_(InstanceName(index)) {}

  // Scheduler side, while the worker waits for the baton.
  void Assign(const InstanceScript* script, Recorder* recorder) {
    script_ = script;
    recorder_ = recorder;
    state_ = script ? WorkerState::kWaiting : WorkerState::kIdle;
    blocked_at_ = 0;
  }
  void Quit() { quit_ = true; }

  WorkerState state() const { return state_; }
  const std::string& pending() const { return pending_; }
  const std::string& name() const { return name_; }
  bool crashed_last_step() const { return crashed_now_; }
  void clear_crashed() { crashed_now_ = false; }
  int64_t blocked_at() const { return blocked_at_; }
  void set_blocked_at(int64_t progress) { blocked_at_ = progress; }
  void MarkDone() { state_ = WorkerState::kDone; }

  void Main() {
    for (;;) {
      owner_.baton.Await(index_);
      if (quit_) break;
      state_ = WorkerState::kRunning;
      RunScript();
      state_ = WorkerState::kDone;
      owner_.baton.Return();
    }
    db_.reset();
    aux_.reset();
    owner_.baton.Return();
  }

  // StepGate: every statement and hook is a step the scheduler hands out.
  void BeforeStatement(Connection&, std::string_view sql) override { Arrive(StepLabel(sql), true); }
  // RunHook notes a crash at a hook itself.
  void BeforeHook(Connection&, std::string_view name) override { Arrive(std::string(name), false); }
  bool OnBusy(Connection&, int) override {
    if (dead_ || owner_.abort) return false;
    state_ = WorkerState::kBlocked;
    Note("wait", current_ + ": the database is locked; blocked until scheduled again", "busy");
    owner_.baton.Yield(index_);
    state_ = WorkerState::kRunning;
    if (!owner_.abort) return true;  // retry the statement
    dead_ = true;  // the statement fails with SQLITE_BUSY; nothing more runs
    return false;
  }

  // Parks until the scheduler picks this instance to take the step `label`, then lets it
  // run, or dies there when it is this attempt's crash point. Called by the gate methods
  // above, and directly for a step that is neither a statement nor a hook (an email send).
  void Arrive(const std::string& label, bool note_crash) {
    // Unwinding after a crash (a Transaction's destructor rolling back): a dead process
    // runs nothing more.
    if (dead_) throw SimulatedCrash(label);
    state_ = WorkerState::kAtGate;
    pending_ = label;
    owner_.baton.Yield(index_);
    state_ = WorkerState::kRunning;
    current_ = label;
    if (owner_.abort) {
      dead_ = true;
      throw SimulatedCrash("abort");
    }
    if (!crash_at_.empty() && crash_at_ == label) {
      crash_at_.clear();
      dead_ = true;
      crashed_now_ = true;
      if (note_crash) Note("crash", label, "crash");
      throw SimulatedCrash(label);
    }
  }

 private:
  // Sends go through the gate: the instance may crash just before the provider accepts.
  class GatedProvider final : public EmailProvider {
   public:
    explicit GatedProvider(Worker& worker) : worker_(worker) {}
    void Send(const std::string& idempotency_key, const std::string&) override {
      worker_.Arrive("EmailProvider.Send", true);
      worker_.owner_.sent.push_back(idempotency_key);
    }

   private:
    Worker& worker_;
  };

  void Note(const std::string& kind, const std::string& detail, const std::string& result) {
    if (recorder_ != nullptr) recorder_->Note(name_, kind, detail, result);
  }

  Connection OpenGated(const DatabaseFile& file) {
    Connection c = file.Connect();
    c.SetGate(this);
    return c;
  }

  void EnsureOpen(const Strategy& subscriber) {
    if (!db_ || !db_->is_open()) {
      db_.emplace(OpenGated(owner_.db));
      db_->SetGate(this);  // the move rebinds the busy handler; the gate goes with it
    }
    db_->SetTrace(recorder_, name_);
    if (subscriber.aux_schema != nullptr && owner_.aux_db) {
      if (!aux_ || !aux_->is_open()) {
        aux_.emplace(OpenGated(*owner_.aux_db));
        aux_->SetGate(this);
      }
      aux_->SetTrace(recorder_, name_);
    }
  }

  void CloseAll() {
    if (db_) db_->Close();
    if (aux_) aux_->Close();
  }

  static std::string Short(const std::string& id) { return id.substr(0, 8); }

  void RunScript() {
    if (!owner_.options.reuse_connections) {
      db_.reset();
      aux_.reset();
    }
    for (const Delivery& d : script_->deliveries) {
      if (d.arrives_after.count() > 0) owner_.clock.Advance(d.arrives_after);
      for (int attempt = 1;; ++attempt) {
        if (!Attempt(d, attempt)) return;  // aborted
        if (done_) break;
      }
    }
  }

  // One delivery attempt. Sets done_ when the message needs no more deliveries; returns
  // false when the run is being aborted.
  bool Attempt(const Delivery& d, int attempt) {
    done_ = false;
    dead_ = false;
    EnsureOpen(*d.subscriber);
    size_t slot = static_cast<size_t>(attempt - 1);
    crash_at_ = slot < d.crash_at.size() ? d.crash_at[slot] : "";
    owner_.attempts++;
    Note("deliver",
         fmt::format("message {} (order {}) to {}, attempt {}", Short(d.message.message_id),
                     Short(d.message.order_id), d.subscriber->name, attempt),
         "");
    try {
      GatedProvider provider(*this);
      DeliveryContext context{*db_, aux_ && aux_->is_open() ? &*aux_ : nullptr, owner_.clock, provider};
      DeliveryResult r = d.subscriber->handle(context, d.message);
      if (db_->InTransaction()) {
        throw std::logic_error(fmt::format("strategy {} returned with a transaction still open",
                                           d.subscriber->name));
      }
      owner_.RecordResult(d, r);
      Note("ack", std::string(ToString(r)), d.ack_lost ? "lost" : "ok");
      done_ = true;
      return true;
    } catch (const SimulatedCrash&) {
      CloseAll();
      dead_ = false;
      if (owner_.abort) return false;
      owner_.crashes++;
      Note("restart", "the process died: connection closed without commit; redelivered", "");
      return true;
    } catch (const SqliteError& e) {
      return Refused(e, attempt);
    } catch (const DeliveryFailed& e) {
      return Refused(e, attempt);
    } catch (const std::exception& e) {
      CloseAll();
      if (owner_.failure.empty()) {
        owner_.failure = fmt::format("instance {} ({}): {}", name_, d.subscriber->name, e.what());
      }
      return false;
    }
  }

  // The database refused the delivery, or the consumer gave up on it: not acked, and the
  // broker redelivers it, up to max_attempts.
  bool Refused(const std::exception& e, int attempt) {
    if (owner_.abort) {
      CloseAll();
      return false;
    }
    Note("error", e.what(), "not acked");
    if (attempt >= owner_.options.max_attempts) done_ = true;  // given up, never acked
    return true;
  }

  Scheduler::Impl& owner_;
  const int index_;
  const std::string name_;
  const InstanceScript* script_ = nullptr;
  Recorder* recorder_ = nullptr;
  std::optional<Connection> db_;
  std::optional<Connection> aux_;
  WorkerState state_ = WorkerState::kIdle;
  std::string pending_;     // the step it waits to take
  std::string current_;     // the step it is taking
  std::string crash_at_;    // where this attempt dies, or ""
  bool dead_ = false;       // crashed: unwinding, nothing more runs
  bool crashed_now_ = false;
  bool done_ = false;
  bool quit_ = false;
  int64_t blocked_at_ = 0;  // progress count when it found the database locked
};

Scheduler::Impl::Impl(std::span<const Strategy* const> list, SchedulerOptions opts)
    : options(opts),
      strategies(list.begin(), list.end()),
      db(DatabaseFile::CreateTemporary(DatabaseSettings{opts.journal, opts.synchronous,
                                                        std::chrono::milliseconds(2000)})),
      control(db.Connect()) {
  bool any_aux = false;
  for (const Strategy* s : strategies) {
    if (s->schema != nullptr) control.ExecScript(s->schema);
    if (s->aux_schema != nullptr) any_aux = true;
  }
  if (any_aux) {
    aux_db.emplace(DatabaseFile::CreateTemporary(
        DatabaseSettings{opts.journal, opts.synchronous, std::chrono::milliseconds(2000)}));
    aux_control.emplace(aux_db->Connect());
    for (const Strategy* s : strategies) {
      if (s->aux_schema != nullptr) aux_control->ExecScript(s->aux_schema);
    }
  }
  for (int i = 0; i < kMaxInstances; ++i) {
    workers.push_back(std::make_unique<Worker>(*this, i));
  }
  for (int i = 0; i < kMaxInstances; ++i) {
    threads.emplace_back([w = workers[static_cast<size_t>(i)].get()] { w->Main(); });
  }
}

Scheduler::Impl::~Impl() {
  for (size_t i = 0; i < workers.size(); ++i) {
    workers[i]->Quit();
    baton.Give(static_cast<int>(i));
  }
  for (std::thread& t : threads) t.join();
}

void Scheduler::Impl::Reset(const Plan& p) {
  plan = &p;
  abort = false;
  sent.clear();
  crashes = 0;
  attempts = 0;
  failure.clear();
  clock.Set(kEpoch);
  order_of_message.clear();
  for (const InstanceScript& script : p.instances) {
    for (const Delivery& d : script.deliveries) order_of_message[d.message.message_id] = d.order;
  }
  tallies.assign(p.orders.size() * p.subscribers.size(), Tally{});

  control.Cached("BEGIN IMMEDIATE").Execute();
  control.Cached("DELETE FROM Inbox").Execute();
  control.Cached("DELETE FROM StockItems").Execute();
  int n = 0;
  for (const LogicalOrder& order : p.orders) {
    static constexpr const char* kTitles[] = {"Dune", "Solaris", "Hyperion", "Foundation"};
    control.Cached("INSERT INTO StockItems (BookId, Title, OnHand, Reserved) VALUES (?1, ?2, 10, 0)")
        .Bind(1, order.book_id)
        .Bind(2, kTitles[n++ % 4])
        .Execute();
  }
  for (const Strategy* s : strategies) {
    if (s->reset != nullptr) control.ExecScript(s->reset);
  }
  control.Cached("COMMIT").Execute();
  if (aux_control) {
    for (const Strategy* s : strategies) {
      if (s->aux_reset != nullptr) aux_control->ExecScript(s->aux_reset);
    }
  }
}

size_t Scheduler::Impl::TallySlot(const Delivery& d) const {
  size_t subscriber = 0;
  while (subscriber < plan->subscribers.size() && plan->subscribers[subscriber] != d.subscriber) {
    ++subscriber;
  }
  if (subscriber == plan->subscribers.size()) {
    throw std::logic_error(fmt::format("plan delivers to {}, which is not among its subscribers",
                                       d.subscriber->name));
  }
  return d.order * plan->subscribers.size() + subscriber;
}

void Scheduler::Impl::RecordResult(const Delivery& d, DeliveryResult r) {
  Tally& t = tallies[TallySlot(d)];
  t.acked = true;
  if (r == DeliveryResult::kNeedsReconciliation) t.flagged = true;
}

void Scheduler::Impl::Abort() {
  abort = true;
  for (;;) {
    bool any = false;
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = *workers[i];
      if (w.state() == WorkerState::kWaiting) {
        w.MarkDone();  // never started: nothing to unwind
      } else if (w.state() == WorkerState::kAtGate || w.state() == WorkerState::kBlocked) {
        baton.Give(static_cast<int>(i));
        any = true;
      }
    }
    if (!any) break;
  }
  abort = false;
}

namespace {

// The probe the adapters read their effects through.
class Probe final : public EffectProbe {
 public:
  explicit Probe(Scheduler::Impl& impl) : impl_(impl) {}
  Connection& db() override { return impl_.control; }
  Connection* aux() override { return impl_.aux_control ? &*impl_.aux_control : nullptr; }
  int64_t EmailsSentFor(const LogicalOrder& order) override {
    int64_t n = 0;
    for (const std::string& key : impl_.sent) {
      auto it = impl_.order_of_message.find(key);
      if (it != impl_.order_of_message.end() && impl_.plan->orders[it->second].order_id == order.order_id) ++n;
    }
    return n;
  }

 private:
  Scheduler::Impl& impl_;
};

}  // namespace

Figures Scheduler::Impl::Measure(const Plan& p, ScheduleResult& result) {
  Figures f;
  Probe probe(*this);
  bool reserves = false;
  for (const Strategy* s : p.subscribers) reserves = reserves || s->effect == "stock";
  for (size_t o = 0; o < p.orders.size(); ++o) {
    Statement& q = control.Cached("SELECT Reserved FROM StockItems WHERE BookId = ?1");
    q.Bind(1, p.orders[o].book_id);
    if (q.Step()) f.reserved += q.ColumnInt(0);
    q.Reset();
    if (reserves) f.reserved_expected += p.orders[o].quantity;
    for (size_t s = 0; s < p.subscribers.size(); ++s) {
      const Tally& t = tallies[o * p.subscribers.size() + s];
      int64_t applied = p.subscribers[s]->applied(probe, p.orders[o]);
      if (t.flagged) f.flagged++;
      if (result.outcome != Outcome::kDeadlock && result.outcome != Outcome::kError) {
        result.outcome = Worse(result.outcome, Classify(applied, t.flagged, t.acked));
      }
    }
  }
  Statement& rows = control.Cached("SELECT count(*) FROM Inbox");
  rows.Step();
  f.inbox_rows = rows.ColumnInt(0);
  rows.Reset();
  f.emails_sent = static_cast<int64_t>(sent.size());
  f.crashes = crashes;
  f.deliveries = attempts;
  return f;
}

Scheduler::Scheduler(std::span<const Strategy* const> strategies, SchedulerOptions options)
    : impl_(std::make_unique<Impl>(strategies, options)) {}

Scheduler::~Scheduler() = default;

const DatabaseFile& Scheduler::database() const { return impl_->db; }
JournalMode Scheduler::journal() const { return impl_->options.journal; }

ScheduleResult Scheduler::Run(const Plan& plan, Chooser& chooser, Recorder* recorder) {
  try {
    return RunUnguarded(plan, chooser, recorder);
  } catch (...) {
    impl_->Abort();  // no instance may stay parked mid-delivery into the next run
    throw;
  }
}

ScheduleResult Scheduler::RunUnguarded(const Plan& plan, Chooser& chooser, Recorder* recorder) {
  Impl& s = *impl_;
  if (plan.instances.size() > s.workers.size()) {
    throw std::logic_error(fmt::format("a plan has {} instances; at most {}", plan.instances.size(),
                                       s.workers.size()));
  }
  s.Reset(plan);
  for (size_t i = 0; i < s.workers.size(); ++i) {
    s.workers[i]->Assign(i < plan.instances.size() ? &plan.instances[i] : nullptr, recorder);
  }

  ScheduleResult result;
  int64_t progress = 0;  // steps that did not end blocked: a blocked instance may retry after one
  auto start_ready = [&] {
    bool started = true;
    while (started) {
      started = false;
      for (size_t i = 0; i < plan.instances.size(); ++i) {
        Worker& w = *s.workers[i];
        int after = plan.instances[i].start_after;
        if (w.state() == WorkerState::kWaiting &&
            (after < 0 || s.workers[static_cast<size_t>(after)]->state() == WorkerState::kDone)) {
          s.baton.Give(static_cast<int>(i));  // runs up to its first step
          started = true;
        }
      }
    }
  };

  for (;;) {
    start_ready();
    uint32_t eligible = 0;
    bool live = false;
    for (size_t i = 0; i < plan.instances.size(); ++i) {
      Worker& w = *s.workers[i];
      switch (w.state()) {
        case WorkerState::kAtGate:
          eligible |= 1u << i;
          live = true;
          break;
        case WorkerState::kBlocked:
          if (w.blocked_at() < progress) eligible |= 1u << i;
          live = true;
          break;
        case WorkerState::kWaiting:
          live = true;
          break;
        default:
          break;
      }
    }
    if (!s.failure.empty()) {
      s.Abort();
      throw std::logic_error(s.failure);
    }
    if (!live) break;
    if (eligible == 0) {
      result.outcome = Outcome::kDeadlock;
      result.note = "every live instance waits for a lock another one holds";
      if (recorder != nullptr) recorder->Note("", "deadlock", result.note, "aborted");
      s.Abort();
      break;
    }
    if (result.picks.size() >= s.options.max_steps) {
      result.outcome = Outcome::kError;
      result.note = fmt::format("no end after {} steps", s.options.max_steps);
      s.Abort();
      break;
    }
    std::optional<int> choice = chooser.Choose(result.picks.size(), eligible);
    if (!choice || *choice < 0 || *choice >= kMaxInstances || (eligible & (1u << *choice)) == 0) {
      result.abandoned = true;
      s.Abort();
      return result;
    }
    Worker& w = *s.workers[static_cast<size_t>(*choice)];
    const bool retry = w.state() == WorkerState::kBlocked;
    const std::string label = w.pending();
    std::string what = (retry ? "retry " : "") + label;
    w.clear_crashed();
    s.baton.Give(*choice);
    if (w.crashed_last_step()) {
      what = "crash at " + label;
      ++progress;
    } else if (w.state() == WorkerState::kBlocked) {
      what += ": busy";
      w.set_blocked_at(progress);
    } else {
      ++progress;
    }
    result.picks.push_back(*choice);
    result.eligible.push_back(eligible);
    result.steps.push_back(w.name() + "  " + what);
  }
  if (!s.failure.empty()) throw std::logic_error(s.failure);

  bool given_up = false;
  for (const Tally& t : s.tallies) given_up = given_up || !t.acked;
  if (given_up && result.outcome == Outcome::kOnce && result.note.empty()) {
    result.note = "a message was given up after repeated database errors";
  }
  result.figures = s.Measure(plan, result);
  return result;
}

}  // namespace dedupsim::explore
