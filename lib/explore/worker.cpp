#include "explore/worker.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <stdexcept>

#include "core/hooks.h"
#include "explore/step_label.h"

namespace dedupsim::explore {

uint8_t Worker::WriteLocks() const {
  if (pg_) return 0;
  auto holds = [](const std::optional<Connection>& c) {
    return c && c->is_open() && sqlite3_txn_state(c->handle(), nullptr) == SQLITE_TXN_WRITE;
  };
  return static_cast<uint8_t>((holds(db_) ? kMainFile : 0) | (holds(aux_) ? kAuxFile : 0));
}

void Worker::Main() {
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
  pg_.reset();
  owner_.baton.Return();
}

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
  next_footprint_ = StatementFootprint(label, aux_ && &c == &*aux_ ? kAuxFile : kMainFile);
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
  // Ends blocked. Under kAfterAnyStep when it may retry depends on every other step;
  // under kAfterStepOnItsFile only on the steps on that file.
  if (any_step) {
    footprint_.all = true;
  } else {
    footprint_.writes |= blocked_file_;
  }
  owner_.baton.Yield(index_);
  footprint_ = any_step ? Footprint{.all = true} : Footprint{.writes = blocked_file_};  // a retry
  state_ = WorkerState::kRunning;
  if (!owner_.abort) return true;  // retry the statement
  dead_ = true;                    // the statement fails with SQLITE_BUSY; nothing more runs
  return false;
}

void Worker::Arrive(const std::string& label, bool note_crash) {
  // Unwinding after a crash (a Transaction's destructor rolling back): a dead process
  // runs nothing more.
  if (dead_) throw SimulatedCrash(label);
  state_ = WorkerState::kAtGate;
  pending_ = label;
  owner_.baton.Yield(index_);
  state_ = WorkerState::kRunning;
  footprint_ = next_footprint_;
  next_footprint_ = Footprint{};
  current_ = label;
  if (owner_.abort) {
    dead_ = true;
    throw SimulatedCrash("abort");
  }
  if (!crash_at_.empty() && crash_at_ == label) {
    crash_at_.clear();
    dead_ = true;
    crashed_now_ = true;
    footprint_.writes |= OpenFiles();  // closing ends its transaction, releases its locks
    if (note_crash) Note("crash", label, "crash");
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

Connection Worker::OpenGated(const DatabaseFile& file) {
  Connection c = file.Connect();
  c.SetGate(this);
  return c;
}

void Worker::EnsureOpen(const Strategy& subscriber) {
  if (owner_.options.postgres != nullptr) {
    if (!pg_ || !pg_->connection().is_open()) {
      pg_ =
          std::make_unique<PgStore>(owner_.options.postgres->Connect(), owner_.options.isolation);
      pg_->connection().WatchWaits(owner_.options.postgres->conninfo());
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
  if (subscriber.aux_schema != nullptr && owner_.aux_db) {
    if (!aux_ || !aux_->is_open()) {
      aux_.emplace(OpenGated(*owner_.aux_db));
      aux_->SetGate(this);
    }
    aux_->SetTrace(recorder_, name_);
    if (recorder_ != nullptr) aux_->SetTraceRole(kActorConsumer, subscriber.aux_target);
  }
}

uint8_t Worker::OpenFiles() const {
  if (pg_) return pg_->connection().is_open() ? kEveryTable : 0;
  return static_cast<uint8_t>((db_ && db_->is_open() ? kMainFile : 0) |
                              (aux_ && aux_->is_open() ? kAuxFile : 0));
}

void Worker::CloseAll() {
  // A dead process's backend rolls back when the server sees the socket close; wait for
  // it, so its locks are gone before another instance moves.
  if (pg_) pg_->connection().CloseAndAwaitExit();
  if (db_) db_->Close();
  if (aux_) aux_->Close();
}

void Worker::RunScript() {
  if (!owner_.options.reuse_connections) {
    db_.reset();
    aux_.reset();
  }
  for (const Delivery& d : script_->deliveries) {
    if (d.arrives_after.count() > 0) {
      owner_.clock.Advance(d.arrives_after);
      footprint_.all = true;  // every later timestamp depends on it
    }
    for (int attempt = 1;; ++attempt) {
      if (!Attempt(d, attempt)) return;  // aborted
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
    DeliveryResult r = DeliveryResult::kProcessed;
    bool open_transaction = false;
    if (pg_) {
      StoreContext context{*pg_, owner_.clock, provider};
      r = d.subscriber->handle_store(context, d.message);
      open_transaction = pg_->InTransaction();
    } else {
      DeliveryContext context{*db_, aux_ && aux_->is_open() ? &*aux_ : nullptr, owner_.clock,
                              provider,
                              [this](const std::string&, const OrderPlaced& m) {
                                owner_.published.push_back(m.message_id);
                              }};
      r = d.subscriber->handle(context, d.message);
      open_transaction = db_->InTransaction();
    }
    if (open_transaction) {
      throw std::logic_error(
          fmt::format("strategy {} returned with a transaction still open", d.subscriber->name));
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
  } catch (const StoreError& e) {  // SQLite's and PostgreSQL's refusals
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

bool Worker::Refused(const std::exception& e, int attempt) {
  if (owner_.abort) {
    CloseAll();
    return false;
  }
  Note("error", e.what(), "not acked");
  if (attempt >= owner_.options.max_attempts) done_ = true;  // given up, never acked
  return true;
}

}  // namespace dedupsim::explore
