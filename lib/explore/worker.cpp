#include "explore/worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <exception>
#include <stdexcept>

#include "core/input_error.h"
#include "explore/scheduler_impl.h"
#include "explore/step_label.h"
#include "world/broker/broker.h"

namespace dedupsim::explore {

static_assert(kExploreMainFile == kMainFile && kExploreSecondFile == kAuxFile,
              "a session's files are the footprints' files");

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

uint8_t Worker::WriteLocks() const { return session_ ? session_->WriteLocks() : 0; }

void Worker::Main() {
  // Started by the scheduler's first Give; each later Give after a run starts the next.
  while (!quit_) {
    state_ = WorkerState::kRunning;
    RunScript();
    state_ = WorkerState::kDone;
    owner_.baton.Yield(index_);
  }
  session_.reset();
}  // the fiber's end hands the turn back for the last time

bool Worker::Blocked() {
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

void Worker::Released() {
  released_ = true;
  owner_.baton.Yield(index_);
  released_ = false;
  footprint_ = Footprint{.all = true};  // the resumed statement's effect
  state_ = WorkerState::kRunning;
}

void Worker::BeforeStatement(uint8_t file, std::string_view sql, bool in_transaction) {
  std::string label = StepLabel(sql);
  if (owner_.waits_in_server) {
    next_footprint_ = PgStatementFootprint(label);
    Arrive(label, true);
    return;
  }
  last_file_ = file;
  const uint8_t tables = last_file_ == kMainFile && !in_transaction
                             ? MainTableBits(sql, owner_.database->main_tables())
                             : 0;
  next_footprint_ = owner_.options.retry == RetryRule::kAfterRelease
                        ? WalStatementFootprint(label, last_file_, tables)
                        : StatementFootprint(label, last_file_, tables);
  Arrive(label, true);
}

void Worker::BeforeHook(std::string_view name) {
  next_footprint_ = Footprint{};
  Arrive(std::string(name), false);
}

bool Worker::OnBusy(uint8_t file) {
  if (dead_ || owner_.abort) return false;
  state_ = WorkerState::kBlocked;
  Note("wait", current_ + ": the database is locked; blocked until scheduled again", "busy");
  blocked_file_ = file;
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
                                "the consumer's connection closed without a commit",
                                "back in the queue"));
}

void Worker::EnsureOpen(const Strategy& subscriber) {
  if (!session_) session_ = owner_.database->NewSession(*this, owner_.options.isolation);
  session_->Open(subscriber.KeepsSecondFile(), recorder_, name_, subscriber.aux_target);
}

uint16_t Worker::OpenFiles() const {
  const uint8_t open = session_ ? session_->OpenFiles() : 0;
  if (owner_.waits_in_server) return open != 0 ? kEveryTable : 0;
  return static_cast<uint16_t>(((open & kMainFile) != 0 ? kMainWhole : 0) |
                               ((open & kAuxFile) != 0 ? kAuxWhole : 0));
}

void Worker::CloseAll() {
  if (session_) session_->Close();
}

void Worker::Unwind() {
  if (session_) session_->Unwind();
}

void Worker::RunScript() {
  if (!owner_.options.reuse_connections && session_) session_->Forget();
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
  if (recorder_ != nullptr) session_->SetDelivery(delivery_);
  Note("deliver",
       fmt::format("message {} (order {}) to {}, attempt {}", Short(d.message.message_id),
                   Short(d.message.order_id), d.subscriber->name, attempt),
       "");
  try {
    GatedProvider provider(*this);
    // The one handler, on this instance's store for the attempt (with the second file's
    // records, when the row keeps one).
    const std::unique_ptr<ExploreAttempt> on = session_->Attempt();
    Store& store = on->store();
    StoreContext context{store, on->side(), clock_,
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
  if (!owner_.waits_in_server && store != nullptr &&
      (store->backend_code() == "5" || store->backend_code() == "517")) {
    ++owner_.stale_refusals;
  }
  if (!owner_.waits_in_server && store != nullptr && store->backend_code() == "5") {
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
