#include "postgres/lock_watch.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cstdlib>
#include <vector>

#include "postgres/connect.h"
#include "postgres/result.h"
#include "postgres/statement_shape.h"

namespace dedupsim {

namespace {

// Parses pg_blocking_pids' text form "{123,456}".
std::vector<int> ParsePidArray(const std::string& text) {
  std::vector<int> pids;
  std::string number;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      number += c;
    } else if (!number.empty()) {
      pids.push_back(std::atoi(number.c_str()));
      number.clear();
    }
  }
  if (!number.empty()) pids.push_back(std::atoi(number.c_str()));
  return pids;
}

// The look (see lock_watch.h), prepared once per side connection: its views (pg_stat_activity,
// pg_locks) and sub-selects cost the server more to parse and plan than to run, and it is
// sent after every statement that has not answered within a millisecond.
constexpr const char* kLookName = "dedupsim_look";
// The look's text for a server: the wait's age in microseconds from pg_locks.waitstart
// (PostgreSQL 14 and later), NULL before 14, which does not date a wait.
std::string LookText(bool dated_waits) {
  return std::string(
             "SELECT a.wait_event_type, a.wait_event, "
             "(SELECT coalesce(array_agg(b.pid), '{}')::text FROM pg_stat_activity b "
             " WHERE b.pid = ANY (pg_blocking_pids(a.pid)) AND b.backend_type = 'client backend'), "
             "(SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
             " WHERE l.pid = a.pid AND l.locktype = 'tuple' LIMIT 1), "
             "(SELECT l.mode FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted LIMIT 1), ") +
         (dated_waits ? "(SELECT (extract(epoch FROM clock_timestamp() - l.waitstart) * 1000000)::bigint "
                        " FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted AND l.waitstart IS NOT NULL "
                        "LIMIT 1) "
                      : "NULL::bigint ") +
         "FROM pg_stat_activity a WHERE a.pid = $1";
}

}  // namespace

bool GaveUpWaiting(std::string_view sqlstate) {
  return sqlstate == "55P03" || sqlstate == "57014" || sqlstate == "40P01";
}

PgLockWatch::PgLockWatch(const std::string& conninfo)
    : side_(ConnectOrThrow(conninfo)),
      look_(LookText(PQserverVersion(side_) >= 140000)) {
  // Not prepared (a server that refuses): each look sends its text, as before.
  pg_result* prepared = PQprepare(side_, kLookName, look_.c_str(), 1, nullptr);
  prepared_ = prepared != nullptr && PQresultStatus(prepared) == PGRES_COMMAND_OK;
  PQclear(prepared);
}

PgLockWatch::~PgLockWatch() { PQfinish(side_); }

int PgLockWatch::socket() const { return PQsocket(side_); }

void PgLockWatch::Drain() {
  if (!in_flight_) return;
  while (pg_result* r = PQgetResult(side_)) PQclear(r);
  in_flight_ = false;
  abandoned_ = false;
}

bool PgLockWatch::Send(int pid) {
  Drain();
  std::string pid_text = std::to_string(pid);
  const char* values[1] = {pid_text.c_str()};
  in_flight_ = (prepared_ ? PQsendQueryPrepared(side_, kLookName, 1, values, nullptr, nullptr, 0)
                          : PQsendQueryParams(side_, look_.c_str(), 1, nullptr, values, nullptr, nullptr,
                                              0)) == 1;
  return in_flight_;
}

std::optional<bool> PgLockWatch::Receive(WatchedStatement& wait, std::string_view target) {
  if (!in_flight_) return std::nullopt;
  if (PQconsumeInput(side_) == 0) {  // a broken side connection sees no wait
    in_flight_ = abandoned_ = false;
    return false;
  }
  if (PQisBusy(side_) == 1) return std::nullopt;
  PgResult result(PQgetResult(side_));
  while (pg_result* r = PQgetResult(side_)) PQclear(r);
  in_flight_ = false;
  if (abandoned_) {
    abandoned_ = false;
    return std::nullopt;
  }
  if (result.rows() != 1 || result.Text(0, 0) != "Lock") return false;
  std::vector<int> blockers = ParsePidArray(result.Text(0, 2));
  if (blockers.empty()) return false;
  if (!wait.waited) {
    if (auto age = result.Get(0, 5)) {
      wait.waited_when_seen = std::chrono::microseconds(std::strtoll(age->c_str(), nullptr, 10));
    }
  }
  wait.waited = true;
  wait.wait_event = result.Text(0, 1);
  wait.blocking_pids = blockers;
  if (auto mode = result.Get(0, 4)) wait.lock_mode = *mode;
  if (auto relation = result.Get(0, 3)) {
    wait.waited_on = "row " + CanonicalTableName(*relation);
  } else if (wait.waited_on.empty()) {
    wait.waited_on = "key " + std::string(target);
  }
  return true;
}

void PgLockWatch::AwaitExit(int pid) {
  // The server notices the closed socket and ends the backend, rolling back; until then
  // its locks are held.
  Drain();
  std::string pid_text = std::to_string(pid);
  const char* values[1] = {pid_text.c_str()};
  for (;;) {
    PgResult found(PQexecParams(side_, "SELECT 1 FROM pg_stat_activity WHERE pid = $1", 1, nullptr,
                                values, nullptr, nullptr, 0));
    if (PQstatus(side_) != CONNECTION_OK || found.rows() == 0) break;
    ::poll(nullptr, 0, 1);
  }
}

}  // namespace dedupsim
