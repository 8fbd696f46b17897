#include "explore/worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <exception>
#include <stdexcept>

#include "core/input_error.h"
#include "explore/scheduler_impl.h"
#include "explore/step_label.h"
#include "postgres/error.h"
#include "postgres/lock_watch.h"
#include "postgres/store.h"
#include "sqlite/error.h"
#include "sqlite/side_records.h"
#include "sqlite/store.h"
#include "world/broker/broker.h"

namespace dedupsim::explore {

// Sends go through the gate: the instance may crash just before the provider accepts.
class Worker::GatedProvider final : public EmailProvider {
 public:
  explicit GatedProvider(Worker& worker) : worker_(worker) {}
  void Send(const std::string& idempotency_key, const std::string&) override {
    worker_.next_footprint_ = Footprint{};  // the provider's count: order does not matter
    worker_.Arrive("EmailProvider.Send", true);
    worker_.owner_.sent.push_back({idempotency_key, worker_.subscriber_});
  }

 private:
  Worker& worker_;
};

void Worker::Assign(const InstanceScript* script, Recorder* recorder) {
  script_ = script;
  recorder_ = recorder;
  state_ = script ? WorkerState::kWaiting : WorkerState::kIdle;
  blocked_at_ = 0;
  touched_at_ = 0;
  delivery_ = {};
  attempt_seq_ = 0;
  released_ = false;
}

uint8_t Worker::WriteLocks() const {
  if (pg_) return 0;
  auto holds = [](const std::optional<Connection>& c) {
    return c && c->HoldsWriteLock();
  };
  return static_cast<uint8_t>((holds(db_) ? kMainFile : 0) | (holds(aux_) ? kAuxFile : 0));
}

void Worker::Main() {
  // Started by the scheduler's first Give; each later Give after a run starts the next.
  while (!quit_) {
    state_ = WorkerState::kRunning;
    RunScript();
    state_ = WorkerState::kDone;
    owner_.baton.Yield(index_);
  }
  db_.reset();
  aux_.reset();
  pg_.reset();
  pg_watch_.reset();
}  // the fiber's end hands the turn back for the last time

void Worker::BeforeStatement(PgConnection&, std::string_view sql) {
  std::string label = StepLabel(sql);
  next_footprint_ = PgStatementFootprint(label);
  Arrive(label, true);
}

void Worker::BeforeHook(PgConnection&, std::string_view name) {
  next_footprint_ = Footprint{};
  Arrive(std::string(name), false);
}

bool Worker::Blocked(PgConnection&) {
  if (dead_ || owner_.abort) {
    dead_ = true;
    return false;
  }
  state_ = WorkerState::kBlocked;
  released_ = false;
  footprint_.all = true;  // what it does once released depends on who released it
  owner_.baton.Yield(index_);
  if (owner_.abort) {
    dead_ = true;  // cancelled: the statement fails, nothing more runs
    return false;
  }
  return true;  // Settle: look again
}

void Worker::Released(PgConnection&) {
  released_ = true;
  owner_.baton.Yield(index_);
  released_ = false;
  footprint_ = Footprint{.all = true};  // the resumed statement's effect
  state_ = WorkerState::kRunning;
}

void Worker::BeforeStatement(Connection& c, std::string_view sql) {
  std::string label = StepLabel(sql);
  last_file_ = aux_ && &c == &*aux_ ? kAuxFile : kMainFile;
  const uint8_t tables =
      last_file_ == kMainFile && !c.InTransaction() ? MainTableBits(sql, owner_.main_tables) : 0;
  next_footprint_ = owner_.options.retry == RetryRule::kAfterRelease
                        ? WalStatementFootprint(label, last_file_, tables)
                        : StatementFootprint(label, last_file_, tables);
  Arrive(label, true);
}

void Worker::BeforeHook(Connection&, std::string_view name) {
  next_footprint_ = Footprint{};
  Arrive(std::string(name), false);
}

bool Worker::OnBusy(Connection& c, int) {
  if (dead_ || owner_.abort) return false;
  state_ = WorkerState::kBlocked;
  Note("wait", current_ + ": the database is locked; blocked until scheduled again", "busy");
  blocked_file_ = aux_ && &c == &*aux_ ? kAuxFile : kMainFile;
  const bool any_step = owner_.options.retry == RetryRule::kAfterAnyStep;
  const bool on_release = owner_.options.retry == RetryRule::kAfterRelease;
  // Ends blocked. Under kAfterAnyStep when it may retry depends on every other step;
  // under kAfterStepOnItsFile only on the steps on that file; under kAfterRelease on the
  // steps that take or release its lock.
  if (any_step) {
    footprint_.all = true;
  } else if (on_release) {
    footprint_ = BlockedFootprint(blocked_file_);
  } else {
    footprint_.writes |= blocked_file_;
  }
  owner_.baton.Yield(index_);
  // A retry: under kAfterRelease it runs the statement, with what the statement touches.
  footprint_ = any_step     ? Footprint{.all = true}
               : on_release ? statement_footprint_
                            : Footprint{.writes = blocked_file_};
  state_ = WorkerState::kRunning;
  if (!owner_.abort) return true;  // retry the statement
  dead_ = true;                    // the statement fails with SQLITE_BUSY; nothing more runs
  return false;
}

void Worker::Arrive(const std::string& label, bool note_crash) {
  // Unwinding after a crash (a Transaction's destructor rolling back): a dead process
  // runs nothing more.
  if (dead_) throw SimulatedCrash(label);
  // A redelivery after the database refused a write for a lock another instance holds
  // waits, like a blocked statement, until that lock is released: the broker's
  // redelivery comes later than a transaction lasts.
  if (awaits_release_ && !AnotherHoldsWriteLock(blocked_file_)) awaits_release_ = false;
  state_ = awaits_release_ ? WorkerState::kBlocked : WorkerState::kAtGate;
  redelivery_wait_ = awaits_release_;
  awaits_release_ = false;
  pending_ = label;
  owner_.baton.Yield(index_);
  redelivery_wait_ = false;
  state_ = WorkerState::kRunning;
  footprint_ = next_footprint_;
  statement_footprint_ = footprint_;
  next_footprint_ = Footprint{};
  current_ = label;
  if (owner_.abort) {
    dead_ = true;
    throw SimulatedCrash("abort");
  }
  ++steps_in_attempt_;
  if ((!crash_at_.empty() && crash_at_ == label) ||
      (crash_step_ > 0 && steps_in_attempt_ == crash_step_)) {
    crash_at_.clear();
    crash_step_ = 0;
    dead_ = true;
    crashed_now_ = true;
    footprint_.writes |= OpenFiles();  // closing ends its transaction, releases its locks
    if (note_crash) Note("crash", label, "SimulatedCrash thrown");
    throw SimulatedCrash(label);
  }
}

void Worker::Note(const std::string& kind, const std::string& detail, const std::string& result) {
  if (recorder_ == nullptr) return;
  TraceEvent e;
  e.instance = name_;
  e.pid = static_cast<int>(getpid());
  e.actor = kActorConsumer;
  e.key = delivery_.key;
  e.delivery = delivery_.number;
  RecordNote(*recorder_, std::move(e), kind, detail, result);
}

void Worker::NoteUnacked(const DeliveryRef& released) {
  if (recorder_ == nullptr) return;
  // The broker's step, not the consumer's: no ack came for this delivery, so the message
  // goes back to the queue (the same event as Broker::ReleaseUnacked records in a lesson).
  recorder_->Record(BrokerEvent(*recorder_, "unacked", released,
                                "the consumer's connection closed without a commit"));
}

Connection Worker::OpenGated(const DatabaseFile& file) {
  Connection c = file.Connect();
  c.SetGate(this);
  return c;
}

void Worker::EnsureOpen(const Strategy& subscriber) {
  if (owner_.options.postgres != nullptr) {
    if (!pg_ || !pg_->connection().is_open()) {
      pg_ =
          std::make_unique<PgStore>(owner_.NewPgConnection(), owner_.options.isolation);
      if (pg_watch_ == nullptr) {
        pg_watch_ = std::make_shared<PgLockWatch>(owner_.options.postgres->conninfo());
      }
      pg_->connection().WatchWaits(pg_watch_);
      pg_->connection().SetGate(this);
    }
    pg_->connection().SetTrace(recorder_, name_);
    return;
  }
  if (!db_ || !db_->is_open()) {
    db_.emplace(OpenGated(owner_.db));
    db_->SetGate(this);  // the move rebinds the busy handler; the gate goes with it
  }
  db_->SetTrace(recorder_, name_);
  if (subscriber.KeepsSecondFile() && owner_.aux_db) {
    if (!aux_ || !aux_->is_open()) {
      aux_.emplace(OpenGated(*owner_.aux_db));
      aux_->SetGate(this);
    }
    aux_->SetTrace(recorder_, name_);
    if (recorder_ != nullptr) aux_->SetTraceRole(kActorConsumer, subscriber.aux_target);
  }
}

uint16_t Worker::OpenFiles() const {
  if (pg_) return pg_->connection().is_open() ? kEveryTable : 0;
  return static_cast<uint16_t>((db_ && db_->is_open() ? kMainWhole : 0) |
                               (aux_ && aux_->is_open() ? kAuxWhole : 0));
}

void Worker::CloseAll() {
  // A dead process's backend rolls back when the server sees the socket close; wait for
  // it, so its locks are gone before another instance moves.
  if (pg_) pg_->connection().CloseAndAwaitExit();
  if (db_) db_->Close();
  if (aux_) aux_->Close();
}

void Worker::Unwind() {
  if (pg_ && pg_->connection().is_open()) {
    try {
      pg_->connection().ExecScript("ROLLBACK");
      if (!pg_->InTransaction()) return;
    } catch (const std::exception&) {
    }
  }
  CloseAll();
}

void Worker::RunScript() {
  if (!owner_.options.reuse_connections) {
    db_.reset();
    aux_.reset();
  }
  for (const Delivery& d : script_->deliveries) {
    for (int attempt = 1;; ++attempt) {
      if (!Attempt(d, attempt)) return;  // aborted
      owner_.AfterAttempt(d);
      if (done_) break;
    }
  }
}

bool Worker::Attempt(const Delivery& d, int attempt) {
  done_ = false;
  dead_ = false;
  EnsureOpen(*d.subscriber);
  size_t slot = static_cast<size_t>(attempt - 1);
  crash_at_ = slot < d.crash_at.size() ? d.crash_at[slot] : "";
  crash_step_ = slot < d.crash_step.size() ? d.crash_step[slot] : 0;
  steps_in_attempt_ = 0;
  subscriber_ = d.subscriber;
  // This attempt's own clock: when the broker handed it over. No other step moves it.
  clock_.Set(owner_.start + d.arrives_after + (attempt - 1) * d.redelivered_after);
  owner_.attempts++;
  attempt_seq_ = owner_.attempts;
  delivery_ = DeliveryRef{d.message.message_id, attempt};
  if (recorder_ != nullptr) {
    if (db_) db_->SetDelivery(delivery_);
    if (aux_) aux_->SetDelivery(delivery_);
    if (pg_) pg_->connection().SetDelivery(delivery_);
  }
  Note("deliver",
       fmt::format("message {} (order {}) to {}, attempt {}", Short(d.message.message_id),
                   Short(d.message.order_id), d.subscriber->name, attempt),
       "");
  try {
    GatedProvider provider(*this);
    // The one handler, on this instance's store: PostgreSQL's, or one over its SQLite
    // connection for the attempt (with the second file, when the row keeps one).
    std::optional<SqliteStore> sqlite;
    Store& store = pg_ ? static_cast<Store&>(*pg_) : sqlite.emplace(*db_);
    std::optional<SqliteSideRecords> side;
    if (!pg_ && aux_ && aux_->is_open()) side.emplace(*aux_);
    StoreContext context{store, side ? &*side : nullptr, clock_,
                         provider, [this](const std::string&, const OrderPlaced& m) {
                           owner_.published.push_back({m.message_id, subscriber_});
                         }};
    const DeliveryResult r = d.subscriber->handle(context, d.message);
    if (store.InTransaction()) {
      throw std::logic_error(
          fmt::format("strategy {} returned with a transaction still open", d.subscriber->name));
    }
    owner_.RecordResult(d, r);
    Note("ack", std::string(ToString(r)), d.ack_lost ? "lost" : "ok");
    done_ = true;
    return true;
  } catch (const SimulatedCrash&) {
    if (owner_.abort) {
      Unwind();
      dead_ = false;
      return false;
    }
    const DeliveryRef released = delivery_;  // CloseAll forgets the attempt
    CloseAll();
    dead_ = false;
    owner_.crashes++;
    // The thread threw (the post's crash by exception); its connection is closed without a
    // commit, as a dead process's would be, and the broker delivers the message again.
    NoteUnacked(released);
    return true;
  } catch (const StoreError& e) {  // SQLite's and PostgreSQL's refusals
    if (e.kind() == StoreErrorKind::kEnvironment) {
      CloseAll();
      if (owner_.failure.empty()) {
        owner_.failure = e.what();
        owner_.input_failure = std::current_exception();
      }
      return false;
    }
    return Refused(d, e, attempt);
  } catch (const DeliveryFailed& e) {
    return Refused(d, e, attempt);
  } catch (const InputError& e) {
    CloseAll();
    if (owner_.failure.empty()) {
      owner_.failure = e.what();
      owner_.input_failure = std::current_exception();
    }
    return false;
  } catch (const std::exception& e) {
    CloseAll();
    if (owner_.failure.empty()) {
      owner_.failure = fmt::format("instance {} ({}): {}", name_, d.subscriber->name, e.what());
    }
    return false;
  }
}

bool Worker::Refused(const Delivery& d, const std::exception& e, int attempt) {
  if (owner_.abort) {
    Unwind();
    return false;
  }
  const bool given_up = attempt >= owner_.options.max_attempts;
  const bool thrown = dynamic_cast<const DeliveryFailed*>(&e) != nullptr;
  Note("error", e.what(),
       std::string(thrown ? "thrown, " : "") + "not acked" + (given_up ? ", given up" : ""));
  // SQLite's plain SQLITE_BUSY with no busy handler called: a deferred transaction that
  // had read could not take the write lock another instance holds. Its redelivery waits
  // for that lock (Arrive). A stale snapshot (517) needs no wait: the writer has committed.
  const auto* store = dynamic_cast<const StoreError*>(&e);
  if (!pg_ && store != nullptr &&
      (store->backend_code() == "5" || store->backend_code() == "517")) {
    ++owner_.stale_refusals;
  }
  if (!pg_ && store != nullptr && store->backend_code() == "5") {
    awaits_release_ = true;
    blocked_file_ = last_file_;
    footprint_.writes |= last_file_;
    if (owner_.options.retry == RetryRule::kAfterAnyStep) footprint_.all = true;
  }
  if (given_up) {  // never acked: dead-lettered
    done_ = true;
    owner_.RecordGivenUp(d);
  }
  return true;
}

bool Worker::AnotherHoldsWriteLock(uint8_t file) const {
  for (const auto& other : owner_.workers) {
    if (other.get() != this && (other->WriteLocks() & file) != 0) return true;
  }
  return false;
}

}  // namespace dedupsim::explore
