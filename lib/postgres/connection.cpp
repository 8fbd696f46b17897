#include "postgres/connection.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "postgres/connect.h"
#include "postgres/error.h"
#include "postgres/lock_watch.h"
#include "postgres/statement_shape.h"
#include "trace/trace.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

// How often a statement still running is looked at from the side connection.
constexpr int kWatchPollMs = 1;

}  // namespace

std::string QuoteLiteral(std::string_view text) {
  std::string out = "E'";  // an escape string: read the same whatever standard_conforming_strings
  for (char c : text) {
    if (c == '\0') throw DatabaseError("PostgreSQL: a literal with a NUL character");
    if (c == '\'' || c == '\\') out += c;
    out += c;
  }
  return out + "'";
}

std::string QuoteIdentifier(std::string_view name) {
  std::string quoted = "\"";
  for (char c : name) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

void PgStepGate::Answered(PgConnection&, std::string_view) {}

PgConnectionStart::PgConnectionStart(const std::string& conninfo, std::string search_path)
    : conn_(PQconnectStart(conninfo.c_str())),
      polling_(PGRES_POLLING_WRITING),
      conninfo_(conninfo),
      search_path_(std::move(search_path)) {
  if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD) return;  // Open says why
  // Up to the start-up message: from then on the server works on its own.
  while (polling_ == PGRES_POLLING_WRITING) {
    pollfd p{PQsocket(conn_), POLLOUT, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return;
    polling_ = PQconnectPoll(conn_);
  }
}

PgConnectionStart::~PgConnectionStart() {
  if (conn_) PQfinish(conn_);
}

PgConnectionStart::PgConnectionStart(PgConnectionStart&& other) noexcept {
  *this = std::move(other);
}

PgConnectionStart& PgConnectionStart::operator=(PgConnectionStart&& other) noexcept {
  if (this != &other) {
    if (conn_) PQfinish(conn_);
    conn_ = std::exchange(other.conn_, nullptr);
    polling_ = other.polling_;
    conninfo_ = std::move(other.conninfo_);
    search_path_ = std::move(other.search_path_);
  }
  return *this;
}

PgConnection PgConnectionStart::Open() {
  if (conn_ == nullptr) throw DatabaseError("PostgreSQL: out of memory connecting");
  while (polling_ == PGRES_POLLING_READING || polling_ == PGRES_POLLING_WRITING) {
    pollfd p{PQsocket(conn_), static_cast<short>(polling_ == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) break;
    polling_ = PQconnectPoll(conn_);
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = LibpqMessage(PQerrorMessage(conn_));
    throw DatabaseError(fmt::format("PostgreSQL: cannot connect ({}): {}", conninfo_, message));
  }
  return PgConnection(std::exchange(conn_, nullptr), search_path_);
}

PgConnection::PgConnection(const std::string& conninfo, const std::string& search_path)
    : PgConnection(ConnectOrThrow(conninfo), search_path) {}

PgConnection::PgConnection(pg_conn* conn, const std::string& search_path) : conn_(conn) {
  pid_ = PQbackendPID(conn_);
  const char* host = PQhost(conn_);
  const char* port = PQport(conn_);
  const char* db = PQdb(conn_);
  server_key_ = fmt::format("postgresql://{}:{}/{}", host ? host : "", port ? port : "",
                            db ? db : "");
  // Server notices (e.g. "there is no transaction in progress") are not ours to print.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  if (!search_path.empty()) ExecScript("SET search_path TO " + QuoteIdentifier(search_path));
}

PgConnection::~PgConnection() { Close(); }

// Every member moves: the raw handles are taken (the other is left closed), the rest moved.
PgConnection::PgConnection(PgConnection&& other) noexcept { *this = std::move(other); }

PgConnection& PgConnection::operator=(PgConnection&& other) noexcept {
  if (this != &other) {
    Close();
    conn_ = std::exchange(other.conn_, nullptr);
    watch_ = std::move(other.watch_);
    gate_ = std::exchange(other.gate_, nullptr);
    pid_ = other.pid_;
    sent_ = other.sent_;
    changes_ = other.changes_;
    statements_ = std::move(other.statements_);
    by_text_ = std::move(other.by_text_);
    params_ = std::move(other.params_);
    values_ = std::move(other.values_);
    recorder_ = std::exchange(other.recorder_, nullptr);
    server_key_ = std::move(other.server_key_);
    instance_ = std::move(other.instance_);
    actor_ = std::move(other.actor_);
    target_ = std::move(other.target_);
    delivery_ = std::move(other.delivery_);
    watched_ = std::move(other.watched_);
  }
  return *this;
}

void PgConnection::Close() noexcept {
  if (conn_) PQfinish(conn_);
  conn_ = nullptr;
  watch_.reset();
}

int PgConnection::backend_pid() const { return pid_; }

bool PgConnection::InTransaction() const {
  if (!conn_) return false;
  PGTransactionStatusType status = PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

void PgConnection::SetTrace(Recorder* recorder, std::string instance) {
  recorder_ = recorder;
  instance_ = std::move(instance);
}

void PgConnection::SetTraceRole(std::string actor, std::string target) {
  actor_ = std::move(actor);
  target_ = std::move(target);
}

void PgConnection::SetDelivery(DeliveryRef delivery) { delivery_ = std::move(delivery); }

void PgConnection::Stamp(TraceEvent& e) const {
  e.instance = instance_;
  e.pid = static_cast<int>(getpid());
  e.backend = pid_;
  e.actor = actor_;
  e.target = target_;
  e.key = delivery_.key;
  e.delivery = delivery_.number;
  e.copy = delivery_.copy;
}

std::string PgConnection::HolderKey(int backend_pid) const {
  return fmt::format("{}#{}", server_key_, backend_pid);
}

// Each connection stamps its step when its answer is in, so a holder preempted between the
// server's release of its locks and its own stamp would be stamped after the waiter it let
// go on. A step that waited for a lock and went on (it did not give up) records its stamp
// in the recorder's table of takes (as a SQLite lock take is), once under each backend that
// blocked it (HolderKey). Every step is stamped no later than just before the first take
// recorded under its own backend since the step was sent: a waiter this backend blocked
// went on during the step, so the step had freed what it waited for (a COMMIT or ROLLBACK,
// an error that aborted the transaction, a write on its own) before the waiter's step
// could end.
int64_t PgConnection::StepStamp(const std::vector<int>* blocked_by, int64_t sent_us) {
  int64_t at = recorder_->MicrosSinceOrigin();
  int64_t earliest = sent_us;
  if (blocked_by != nullptr) {
    for (int holder : *blocked_by) at = recorder_->LockTaken(HolderKey(holder), conn_);
    earliest = at;
  }
  return recorder_->ReleaseStamp(HolderKey(pid_), conn_, earliest, at);
}

void PgConnection::Note(const std::string& kind, const std::string& detail,
                        const std::string& result) {
  if (recorder_ == nullptr) return;
  TraceEvent e;
  Stamp(e);
  RecordNote(*recorder_, std::move(e), kind, detail, result);
}

void PgConnection::NoteOutcome(const std::string& outcome, const std::string& verdict) {
  if (recorder_ == nullptr) return;
  TraceEvent e;
  Stamp(e);
  e.verdict = verdict;
  RecordNote(*recorder_, std::move(e), "outcome", outcome, "");
}

void PgConnection::WatchWaits(const std::string& conninfo) {
  if (watch_ == nullptr) watch_ = std::make_shared<PgLockWatch>(conninfo);
}

void PgConnection::WatchWaits(std::shared_ptr<PgLockWatch> watch) { watch_ = std::move(watch); }

void PgConnection::ExecScript(const std::string& sql) {
  if (!conn_) throw DatabaseError("PostgreSQL: the connection is closed");
  pg_result* result = PQexec(conn_, sql.c_str());
  ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    try {
      ThrowFromResult(result, conn_);
    } catch (...) {
      if (result) PQclear(result);
      throw;
    }
  }
  PQclear(result);
}

int PgConnection::DescribeColumns(const std::string& sql) {
  if (!conn_) throw DatabaseError("PostgreSQL: the connection is closed");
  for (int call = 0; call < 2; ++call) {
    pg_result* result = call == 0 ? PQprepare(conn_, "", sql.c_str(), 0, nullptr)
                                  : PQdescribePrepared(conn_, "");
    if (result == nullptr || PQresultStatus(result) != PGRES_COMMAND_OK) {
      try {
        ThrowFromResult(result, conn_);
      } catch (...) {
        if (result) PQclear(result);
        throw;
      }
    }
    const int columns = PQnfields(result);
    PQclear(result);
    if (call == 1) return columns;
  }
  return 0;
}

// Reads the side connection's look once its answer has come (PgLockWatch::Receive); the
// first look that finds the statement waiting notes the wait on the trace, stamped when the
// wait began: the moment the look was read less how long the server said it had waited
// (pg_locks.waitstart), never before the statement was sent nor after the look saw it; the
// moment the look saw it when the server did not say (the note then carries no seen_us).
// True when the look found the statement waiting.
bool PgConnection::CheckWait(WatchedStatement& wait, std::string_view target, int64_t sent_us) {
  const bool first = !wait.waited;
  const std::optional<bool> waits = watch_->Receive(wait, target);
  if (!waits.value_or(false)) return false;
  if (first && recorder_ != nullptr) {
    TraceEvent e;
    Stamp(e);
    const int64_t seen_us = recorder_->MicrosSinceOrigin();
    int64_t at_us = seen_us;
    if (wait.waited_when_seen) {
      at_us = std::clamp(seen_us - wait.waited_when_seen->count(), std::min(sent_us, seen_us),
                         seen_us);
      e.seen_us = seen_us;
    }
    e.waited_on = wait.waited_on;
    e.wait_event = wait.wait_event;
    e.lock_mode = wait.lock_mode;
    e.blocked_by = wait.blocking_pids.front();
    wait_at_us_ = at_us;
    RecordNote(*recorder_, std::move(e), "wait",
               fmt::format("server: {} waits ({}) on {}, held by pid {}", pid_, wait.wait_event,
                           wait.waited_on, wait.blocking_pids.front()),
               "waiting", at_us);
  }
  return true;
}

void PgConnection::CancelAndDrain() noexcept {
  if (PGcancel* cancel = PQgetCancel(conn_)) {
    char message[256];
    PQcancel(cancel, message, sizeof message);
    PQfreeCancel(cancel);
  }
  while (pg_result* r = PQgetResult(conn_)) PQclear(r);  // blocks until the server answers
}

void PgConnection::CloseAndAwaitExit() {
  if (watch_ == nullptr || conn_ == nullptr || PQtransactionStatus(conn_) == PQTRANS_IDLE) {
    Close();
    return;
  }
  PQfinish(conn_);
  conn_ = nullptr;
  watch_->AwaitExit(pid_);
  watch_.reset();
}

PgStatement PgConnection::Statement(std::string_view sql) {
  if (auto found = by_text_.find(sql); found != by_text_.end()) return PgStatement(found->second);
  const auto index = static_cast<int>(statements_.size());
  statements_.push_back(Prepared{std::string(sql), "s" + std::to_string(index + 1), false});
  by_text_.emplace(statements_.back().sql, index);
  return PgStatement(index);
}

size_t PgConnection::Resolve(PgStatement statement) const {
  if (statement.index_ < 0 || static_cast<size_t>(statement.index_) >= statements_.size()) {
    throw DatabaseError("PostgreSQL: a statement of another connection");
  }
  return static_cast<size_t>(statement.index_);
}

void PgConnection::CopyParams(std::initializer_list<std::string_view> params) {
  params_.clear();
  for (std::string_view p : params) {
    params_.append(p);
    params_.push_back('\0');
  }
  values_.clear();
  const char* at = params_.data();
  for (std::string_view p : params) {
    values_.push_back(at);
    at += p.size() + 1;
  }
}

PgResult PgConnection::Run(size_t index, int n_params, std::string_view target,
                           bool duplicate_is_value, bool* duplicate) {
  if (!conn_) throw DatabaseError("PostgreSQL: the connection is closed");
  if (gate_ != nullptr) gate_->BeforeStatement(*this, statements_[index].sql);
  Prepared& statement = statements_[index];  // after the gate: it may have made statements
  const std::string& text = statement.sql;
  if (!statement.on_server) {
    const int64_t prepare_sent_us = recorder_ != nullptr ? recorder_->MicrosSinceOrigin() : 0;
    pg_result* prepared = PQprepare(conn_, statement.name.c_str(), text.c_str(), n_params, nullptr);
    ExecStatusType status = prepared ? PQresultStatus(prepared) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK) {
      // The statement failed before it ran (in an aborted transaction the server refuses to
      // prepare it: 25P02): the step is recorded as the statement's, with its code.
      const char* state = prepared ? PQresultErrorField(prepared, PG_DIAG_SQLSTATE) : nullptr;
      if (recorder_ != nullptr) {
        TraceEvent e;
        e.at_us = StepStamp(nullptr, prepare_sent_us);
        Stamp(e);
        e.kind = "sql";
        e.detail = text;
        StatementShape shape = ShapeOf(text);
        e.op = std::move(shape.op);
        e.table = target.empty() ? std::move(shape.table) : std::string(target);
        e.error = state ? state : "";
        e.result = "sqlstate " + e.error;
        recorder_->Record(std::move(e));
      }
      try {
        ThrowFromResult(prepared, conn_);
      } catch (...) {
        if (prepared) PQclear(prepared);
        throw;
      }
    }
    PQclear(prepared);
    statement.on_server = true;
  }

  // What is kept of the statement: only for a watched connection (its record) or a traced
  // one (the wait on its trace line); an unwatched, untraced one (the bench) keeps nothing.
  const bool watched = watch_ != nullptr;
  WatchedStatement wait;
  SteadyClock::time_point started;
  if (watched) {
    wait.sql = text;
    started = SteadyClock::now();
  }
  const int64_t sent_us = recorder_ != nullptr ? recorder_->MicrosSinceOrigin() : 0;
  wait_at_us_ = -1;
  if (PQsendQueryPrepared(conn_, statement.name.c_str(), n_params, values_.data(), nullptr, nullptr,
                          0) == 0) {
    throw PgError("", LibpqMessage(PQerrorMessage(conn_)));
  }
  ++sent_;
  bool gated_wait = false;  // the gate was told this statement is blocked
  if (watched) {
    // Poll the statement's socket and the side connection's together: a look is sent a
    // millisecond after the last one answered (or after the statement was sent), and read
    // when its answer comes. The statement's answer is read the moment it arrives, a look
    // in flight or not (that look is then dropped): watching never delays the watched.
    const int fd = PQsocket(conn_);
    auto next_look = SteadyClock::now() + std::chrono::milliseconds(kWatchPollMs);
    for (;;) {
      if (PQconsumeInput(conn_) == 0) throw PgError("", LibpqMessage(PQerrorMessage(conn_)));
      if (PQisBusy(conn_) == 0) break;
      const bool looking = watch_->busy();
      int timeout = -1;
      if (!looking && next_look != SteadyClock::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(next_look - SteadyClock::now());
        timeout = static_cast<int>(std::max<int64_t>(0, left.count()));
      }
      pollfd p[2] = {{fd, POLLIN, 0}, {watch_->socket(), POLLIN, 0}};
      int ready = ::poll(p, looking ? 2 : 1, timeout);
      if (ready < 0 && errno != EINTR) throw PgError("", std::strerror(errno));
      if (ready > 0 && p[0].revents != 0) continue;  // the statement's answer first
      if (looking) {
        if (ready > 0 && p[1].revents != 0) {
          bool resumed = false;  // back from the gate: other statements ran meanwhile
          if (CheckWait(wait, target, sent_us) && gate_ != nullptr) {
            gated_wait = true;
            if (!gate_->Blocked(*this)) {
              CancelAndDrain();
              throw PgError("57014", "the statement was given up while it waited for a lock");
            }
            resumed = true;
          }
          // Back from the gate, the statement is looked at again at once (is it still
          // waiting?), not a millisecond later: the scheduler asks after every step.
          if (!watch_->busy()) {
            next_look = SteadyClock::now() +
                        (resumed ? SteadyClock::duration::zero()
                                 : std::chrono::milliseconds(kWatchPollMs));
          }
        }
        continue;
      }
      if (SteadyClock::now() >= next_look && !watch_->Send(pid_)) {
        next_look = SteadyClock::time_point::max();  // a broken side connection sees no wait
      }
    }
    watch_->Abandon();
  }
  // Unwatched, nothing can be learnt while the statement runs (no side connection: no
  // gate is ever told of a wait): PQgetResult waits for the answer on the socket itself.
  if (gated_wait) gate_->Released(*this);
  pg_result* error = nullptr;
  pg_result* ok = nullptr;
  while (pg_result* r = PQgetResult(conn_)) {
    ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
      if (ok) PQclear(ok);
      ok = r;
    } else if (error == nullptr) {
      error = r;
    } else {
      PQclear(r);
    }
  }
  if (watched) {
    wait.answered = SteadyClock::now();
    wait.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(wait.answered - started);
    if (wait.waited) wait.waited_for = wait.elapsed;  // untraced; the trace's span below
  }
  if (gate_ != nullptr) gate_->Answered(*this, text);
  const char* sqlstate = "";
  if (error) {
    const char* state = PQresultErrorField(error, PG_DIAG_SQLSTATE);
    sqlstate = state ? state : "";
  }
  if (recorder_ != nullptr) {
    TraceEvent e;
    const bool went_on = wait.waited && !GaveUpWaiting(sqlstate);
    e.at_us = StepStamp(went_on ? &wait.blocking_pids : nullptr, sent_us);
    Stamp(e);
    e.kind = "sql";
    e.detail = text;
    StatementShape shape = ShapeOf(text);
    e.op = std::move(shape.op);
    e.table = target.empty() ? std::move(shape.table) : std::string(target);
    if (error) {
      e.result = std::string("sqlstate ") + sqlstate;
      e.error = sqlstate;
    } else if (ok && PQresultStatus(ok) == PGRES_TUPLES_OK) {
      e.rows = PQntuples(ok);
      e.result = e.rows > 0 ? "row" : "ok";
      // A value: one column, or values the statement computed (no table's column).
      const int columns = PQnfields(ok);
      bool computed = true;
      for (int i = 0; i < columns; ++i) computed = computed && PQftable(ok, i) == 0;
      if (e.rows == 1 && (columns == 1 || computed)) {
        for (int i = 0; i < columns; ++i) {
          e.value += fmt::format("{}{} = {}", i > 0 ? ", " : "", PQfname(ok, i),
                                 PQgetisnull(ok, 0, i) ? "NULL" : PQgetvalue(ok, 0, i));
        }
      }
    } else {
      e.result = "ok";
      const char* changed = ok ? PQcmdTuples(ok) : nullptr;
      if (changed != nullptr && *changed != '\0') e.rows = std::strtoll(changed, nullptr, 10);
      // "INSERT 0 1" for a row inserted and for one its ON CONFLICT ... DO UPDATE updated
      // alike: which, the server does not say (RETURNING would, in the consumer's SQL).
      if (e.op == "INSERT" && shape.may_update && e.rows > 0) e.inserted_or_updated = true;
    }
    if (wait.waited) {
      // The wait as the pictures draw it: from when the server says it began (the wait
      // event's stamp) to this statement's stamp, one measurement for the figure and the
      // bar, and for the lines that say it (WatchedStatement::waited_for).
      e.waited_us = wait_at_us_ >= 0 ? std::max<int64_t>(0, e.at_us - wait_at_us_)
                                     : wait.elapsed.count();
      wait.waited_for = std::chrono::microseconds(e.waited_us);
      e.waited_on = wait.waited_on;
      e.wait_event = wait.wait_event;
      e.lock_mode = wait.lock_mode;
      e.blocked_by = wait.blocking_pids.front();
      e.result += fmt::format(" (server: waited on {}, blocked by pid {})", wait.waited_on,
                              wait.blocking_pids.front());
    }
    recorder_->Record(std::move(e));
  }
  if (ok != nullptr && PQresultStatus(ok) == PGRES_COMMAND_OK) {
    // The command tag's count ("INSERT 0 1", "UPDATE 0"): 0 for an ON CONFLICT DO NOTHING
    // that met the key. Read for a write, and for every statement of a watched connection
    // (its record keeps the count of any command that has one).
    const std::string_view tag = PQcmdStatus(ok);
    const bool write =
        tag.rfind("INSERT", 0) == 0 || tag.rfind("UPDATE", 0) == 0 || tag.rfind("DELETE", 0) == 0;
    const char* changed = (write || watched) ? PQcmdTuples(ok) : nullptr;
    if (changed != nullptr && *changed != '\0') {
      const int64_t rows = std::strtoll(changed, nullptr, 10);
      wait.rows = rows;
      if (rows >= 0 && write) changes_ = rows;
    }
  }
  if (watched) {
    wait.error_code = sqlstate;
    watched_.push_back(std::move(wait));
  }
  if (error) {
    if (ok) PQclear(ok);
    if (duplicate_is_value && ClassifySqlstate(sqlstate) == StoreErrorKind::kDuplicateKey) {
      PQclear(error);
      *duplicate = true;
      return PgResult();
    }
    try {
      ThrowFromResult(error, conn_);
    } catch (...) {
      PQclear(error);
      throw;
    }
  }
  return PgResult(ok);
}

PgResult PgConnection::Exec(PgStatement statement, std::initializer_list<std::string_view> params,
                            std::string_view target) {
  const size_t prepared = Resolve(statement);
  CopyParams(params);
  return Run(prepared, static_cast<int>(params.size()), target, false, nullptr);
}

InsertResult PgConnection::ExecInsert(PgStatement statement,
                                      std::initializer_list<std::string_view> params,
                                      std::string_view target) {
  const size_t prepared = Resolve(statement);
  CopyParams(params);
  bool duplicate = false;
  Run(prepared, static_cast<int>(params.size()), target, true, &duplicate);
  return duplicate ? InsertResult::kDuplicateKey : InsertResult::kInserted;
}

namespace {

// The caller's strings (or null for NULL), pointed at as they are: they outlive the call.
void PointAt(std::vector<const char*>& values, const PgParams& params) {
  values.clear();
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
}

}  // namespace

PgResult PgConnection::Exec(std::string_view sql, const PgParams& params, std::string_view target) {
  const size_t prepared = Resolve(Statement(sql));
  PointAt(values_, params);
  return Run(prepared, static_cast<int>(params.size()), target, false, nullptr);
}

InsertResult PgConnection::ExecInsert(std::string_view sql, const PgParams& params,
                                      std::string_view target) {
  const size_t prepared = Resolve(Statement(sql));
  PointAt(values_, params);
  bool duplicate = false;
  Run(prepared, static_cast<int>(params.size()), target, true, &duplicate);
  return duplicate ? InsertResult::kDuplicateKey : InsertResult::kInserted;
}

}  // namespace dedupsim
