#include "views/event_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cctype>

#include "store/error.h"

namespace dedupsim {

namespace {

// SQLite's extended result codes are numbers below 10000 (at most 4 digits); a SQLSTATE is
// always 5 characters, some of them all digits ("23505", "40001"): a 5-character code is
// PostgreSQL's, whatever its characters.
bool IsSqliteCode(std::string_view s) {
  if (s.empty() || s.size() >= 5) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string RowsWord(int64_t n) { return n == 1 ? "1 row" : fmt::format("{} rows", n); }


StepWords SqlWords(const TraceEvent& e, ShortIds& ids, const WordOptions& options) {
  StepWords w;
  w.what = StepLabel(e);
  // A side store's statement says which store, unless the store is the one who made it.
  if (!e.target.empty() && e.target != "database" && e.target != ActorOf(e)) {
    w.what += " (" + e.target + ")";
  }
  w.result = StatementResult(e, ids, options);
  w.result = ids.Shorten(w.result);
  w.failed = !e.error.empty();
  return w;
}

// A settle's result, as the broker observed it when it was recorded (Broker::Note): the
// simulation, which is the queue, says where the message went; a real broker's client says
// what it sent and what the server answered, as recorded, and the server's later act is a
// step of its own (a redelivery, a dead letter arriving, a give-up).
std::string SettleResult(const TraceEvent& e, ShortIds& ids) {
  if (e.result.rfind("dead-lettered", 0) == 0) return "dead-lettered (max deliveries)";
  if (e.result.rfind("back in the queue", 0) == 0) return "back in the queue";
  if (e.result == "removed") return "removed from the queue";
  return ids.Shorten(e.result);
}

// The words of a broker step. The sender of a send is the actor who sent it (the producer,
// a dispatcher, a consumer); every other step is the broker's own.
StepWords BrokerWords(const TraceEvent& e, ShortIds& ids) {
  StepWords w;
  const std::string m = ids.Message(e);  // "m2 copy 2" where the broker stored several
  if (e.op == "send") {
    w.what = fmt::format("send {}", m);
    w.result = "accepted";
  } else if (e.op == "drop") {
    w.what = fmt::format("send {}", m);
    w.result = "dropped as a duplicate send";
  } else if (e.op == "deliver") {
    w.what = fmt::format("deliver {} (delivery {})", m, e.delivery);
  } else if (e.op == "ack") {
    w.what = fmt::format("ack {}", m);
    w.result = SettleResult(e, ids);
  } else if (e.op == "abandon") {
    w.what = fmt::format("nack {}", m);
    w.result = SettleResult(e, ids);
  } else if (e.op == "ack-lost") {
    w.what = fmt::format("ack for {} lost on the way", m);
    w.result = SettleResult(e, ids);
  } else if (e.op == "unacked") {
    // The broker's own release: no ack came from anyone (Broker::ReleaseUnacked).
    w.what = fmt::format("no ack for {} (delivery {})", m, e.delivery);
    w.result = SettleResult(e, ids);
  } else if (e.op == "dead-letter") {
    w.what = fmt::format("dead-letter {}", m);
    w.result = ids.Shorten(e.result);
  } else if (e.op == "dead-lettered") {
    // The queue's own dead-lettering, seen as the message arrived in its dead letters.
    w.what = fmt::format("{} arrives in the dead-letter queue", m);
    w.result = ids.Shorten(e.result);
  } else if (e.op == "give-up") {
    // NATS's MAX_DELIVERIES advisory: the server's own word that it stopped delivering.
    w.what = fmt::format("advisory MAX_DELIVERIES for {}", m);
    w.result = ids.Shorten(e.result);
  } else if (e.op == "replay") {
    w.what = fmt::format("replay {} from the dead-letter queue", m);
  } else {
    // A broker step this file does not know yet: said as recorded.
    w.what = ids.Shorten(e.op.empty() ? e.detail : e.op + (m.empty() ? "" : " " + m));
    w.result = ids.Shorten(e.result);
  }
  return w;
}

}  // namespace

bool SettleIsQueuesAct(const TraceEvent& e) {
  return e.result.rfind("dead-lettered", 0) == 0 || e.result.rfind("back in the queue", 0) == 0 ||
         e.result == "removed";
}

Tone ToneOf(const TraceEvent& e) {
  if (e.verdict == kVerdictRight) return Tone::kRight;
  if (e.verdict == kVerdictWrong) return Tone::kWrong;
  return Tone::kPlain;
}

const char* ToneMark(Tone tone) {
  if (tone == Tone::kRight) return " ✓";
  if (tone == Tone::kWrong) return " ✗";
  return "";
}

const char* ToneClass(Tone tone) {
  switch (tone) {
    case Tone::kRight:
      return "right";
    case Tone::kWrong:
      return "wrong";
    case Tone::kPlain:
      break;
  }
  return "";
}

std::string StepWords::Text() const { return result.empty() ? what : what + ": " + result; }

std::string ErrorMeaning(std::string_view code) {
  if (code.empty()) return "";
  std::string meaning;
  if (IsSqliteCode(code)) {
    const int n = std::stoi(std::string(code));
    switch (n & 0xff) {
      case 5:
        meaning = n == 517 ? "busy: stale read snapshot" : "database is locked";
        break;
      case 6:
        meaning = "table is locked";
        break;
      case 19:
        meaning = ClassifySqliteCode(n) == StoreErrorKind::kDuplicateKey ? "duplicate key"
                                                                          : "constraint failed";
        break;
      default:
        break;
    }
  } else {
    if (code == "23505") meaning = "duplicate key";
    if (code == "40001") meaning = "serialization failure";
    if (code == "40P01") meaning = "deadlock";
    if (code == "25P02") meaning = "transaction aborted";
    if (code == "55P03") meaning = "lock not available";
    if (code == "57014") meaning = "canceled";
    if (code == "25P03") meaning = "idle-in-transaction timeout";
    if (code == "57P01") meaning = "terminated by the server";
  }
  return meaning.empty() ? fmt::format("error {}", code) : fmt::format("{} ({})", meaning, code);
}

std::string WaitTarget(const TraceEvent& e, const ShortIds& ids, const WordOptions& options) {
  if (e.waited_on.empty()) return "a lock";
  if (e.lock_mode.empty() && e.wait_event.empty() && e.blocked_by == 0) return e.waited_on;
  std::vector<std::string> how;
  if (!e.lock_mode.empty()) how.push_back(e.lock_mode);
  if (!e.wait_event.empty()) how.push_back("wait event " + e.wait_event);
  if (e.blocked_by != 0) {
    // The holder by the actor whose connection the backend is, as the pictures name it;
    // with pids (--trace) its backend's pid beside it, or the pid alone when no step of
    // one actor ran on that backend.
    const std::string owner = ids.BackendOwner(e.blocked_by);
    if (!options.pids) {
      how.push_back("held by " + ids.Process(e.blocked_by));
    } else if (owner.empty()) {
      how.push_back(fmt::format("held by pid {}", e.blocked_by));
    } else {
      how.push_back(fmt::format("held by {}, backend pid {}", owner, e.blocked_by));
    }
  }
  std::string out = e.waited_on + " (";
  for (size_t i = 0; i < how.size(); ++i) out += (i ? ", " : "") + how[i];
  return out + ")";
}

std::string StatementResult(const TraceEvent& e, const ShortIds& ids, const WordOptions& options) {
  std::string result;
  if (!e.error.empty()) {
    result = ErrorMeaning(e.error);
  } else if (e.op == "SELECT") {
    if (!e.value.empty()) {
      result = e.value;
    } else if (e.rows >= 0) {
      result = e.rows == 0 ? "no row" : RowsWord(e.rows);
    } else {
      result = e.result == "row" ? "a row" : "no row";  // recorded before rows were counted
    }
  } else if (e.op == "INSERT" || e.op == "UPDATE" || e.op == "DELETE") {
    static const std::map<std::string, std::string> kDone = {
        {"INSERT", "inserted"}, {"UPDATE", "updated"}, {"DELETE", "deleted"}};
    const std::string& done = kDone.at(e.op);
    // An INSERT's rows are "inserted" only as far as the database said so: an ON CONFLICT
    // ... DO UPDATE's row is counted the same (sqlite3_changes, "INSERT 0 1"), and SQLite's
    // preupdate hook saw which rows updated instead (e.updated); where nothing saw it, the
    // words say no more than "inserted or updated".
    if (e.rows == 0) {
      result = fmt::format("no row {}", done);
    } else if (e.rows < 0) {
      result = e.result.empty() ? "ok" : e.result;
    } else if (e.op == "INSERT" && e.inserted_or_updated) {
      result = fmt::format("{} inserted or updated", RowsWord(e.rows));
    } else {
      // Of an INSERT's rows: those that went in, those that took a key's row's place (OR
      // REPLACE), those that updated the key's row instead (ON CONFLICT ... DO UPDATE).
      const int64_t updated = e.op == "INSERT" ? std::clamp<int64_t>(e.updated, 0, e.rows) : 0;
      const int64_t replaced =
          e.op == "INSERT" ? std::clamp<int64_t>(e.replaced, 0, e.rows - updated) : 0;
      const int64_t plain = e.rows - updated - replaced;
      std::vector<std::pair<int64_t, std::string>> parts;
      if (plain > 0) parts.emplace_back(plain, done);
      if (replaced > 0) parts.emplace_back(replaced, "replaced");
      if (updated > 0) parts.emplace_back(updated, "updated");
      for (size_t i = 0; i < parts.size(); ++i) {
        result += i == 0 ? fmt::format("{} {}", RowsWord(parts[i].first), parts[i].second)
                         : fmt::format(", {} {}", parts[i].first, parts[i].second);
      }
      // Updated rows written back with the values they held: the table's diff shows none.
      const int64_t rewritten = e.op == "UPDATE" ? e.rows : updated;
      const int64_t unchanged = std::clamp<int64_t>(e.unchanged, 0, rewritten);
      if (unchanged > 0 && unchanged == rewritten) {
        result += ", no value changed";
      } else if (unchanged > 0) {
        result += fmt::format(", {} of them with no value changed", unchanged);
      }
    }
  } else {
    result = "ok";
  }
  if (e.busy_calls > 0 || (!e.waited_on.empty() && e.waited_us > 0)) {
    result += options.timings ? fmt::format(", after waiting {} for {}", MsWord(e.waited_us),
                                            WaitTarget(e, ids, options))
                              : fmt::format(", after waiting for {}", WaitTarget(e, ids, options));
  }
  return result;
}

std::string ActorName(const TraceEvent& e) {
  const std::string actor = ActorOf(e);
  if (actor == kActorConsumer) {
    std::string name = e.instance.size() == 1 ? "Consumer " + e.instance
                       : e.instance.empty()   ? std::string("Consumer")
                                              : "Consumer " + e.instance;
    if (e.incarnation > 1) name += " (restarted)";
    return name;
  }
  if (actor == kActorBroker) {
    if (e.op == "replay") return "Operator";
    return "Broker";
  }
  if (actor == kActorProducer) return "Producer";
  if (actor == kActorDispatcher) return "Dispatcher";
  if (actor == kActorOperator) return "Operator";
  if (actor == kActorEmailProvider) return "Email provider";
  if (actor == kActorProbe) return "scenario check";
  if (actor == kActorSetup) return "set-up";
  if (actor == kActorDatabase) return "Database";
  if (actor == kActorScenario) return "scenario";
  if (!e.instance.empty()) {
    std::string name = e.instance;
    name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    return name;
  }
  return actor;
}

StepWords DescribeStep(const TraceEvent& e, ShortIds& ids, const WordOptions& options) {
  StepWords w;
  const std::string& kind = e.kind;
  if (kind == "sql") {
    w = SqlWords(e, ids, options);
  } else if (kind == "broker") {
    w = BrokerWords(e, ids);
  } else if (kind == "outcome") {
    w.what = "outcome";
    w.result = e.detail;
    if (!e.result.empty() && e.result != "ok") w.result += " (" + ids.Shorten(e.result) + ")";
  } else if (kind == "open") {
    w.what = e.delivery > 0 ? fmt::format("receives {}, delivery {}", ids.Message(e), e.delivery)
                            : std::string("opens a connection");
  } else if (kind == "fold") {
    w.what = e.detail;  // FoldRepeatedDeliveries: "deliveries 2 to 9 of m1, each as delivery 1"
    w.result = e.result;
  } else if (kind == "part") {
    w.what = "sub-run: " + e.detail;
  } else if (kind == "clock") {
    w.what = "simulated time: " + e.detail;
  } else if (kind == "waited") {
    w.what = "real time: " + e.detail;  // Recorder::MarkRealWait
  } else if (kind == "reset") {
    w.what = "reset the database";
    w.result = ids.Shorten(e.detail);
  } else if (kind == "wait") {
    w.what = "waits for " + WaitTarget(e, ids, options);
  } else if (kind == "lock") {
    w.what = e.detail;  // "write lock taken", "write lock released"
    // How long it was held ("held 504.2 ms"): a timing.
    if (options.timings && !e.result.empty() && e.result != "holding") w.result = e.result;
  } else if (kind == "hook") {
    w.what = "hook " + e.detail;
  } else if (kind == "crash") {
    w.what = "crash at " + e.detail;
    if (!e.result.empty() && e.result != "crash") w.result = e.result;
  } else if (kind == "stopped") {
    w.what = "stopped at " + e.detail;  // SIGSTOP, seen in the child's wait status
    w.result = options.pids ? e.result : ids.NameProcesses(e.result);
  } else if (kind == "stand") {
    // A child standing at its hook point, alive: what came next (killed, stopped) is the
    // parent's note, read from the child's wait status.
    w.what = "stands at " + e.detail;
    w.result = e.result;
  } else if (kind == "died") {
    w.what = "died at " + e.detail;
    w.result = options.pids ? e.result : ids.NameProcesses(e.result);
  } else if (kind == "session-ended") {
    // The server ended a session (a timeout) while its process lived on, stopped: the
    // database's step, about that session (its backend), never the process's own (older
    // traces put it on the process's lane: said as before there).
    if (ActorOf(e) == kActorDatabase) {
      std::string whose = ids.BackendOwner(e.backend);
      if (whose.empty()) whose = e.detail.empty() ? fmt::format("backend {}", e.backend) : e.detail;
      w.what = "ended the session of " + whose;
    } else {
      w.what = "session ended by the server";
    }
    w.result = options.pids ? e.result : ids.NameProcesses(e.result);
  } else if (kind == "recover") {
    // When the database undid the dead transaction: SQLite on the next open of the file,
    // PostgreSQL's server when the connection closed.
    w.what = e.op.empty() ? "on the next open" : e.op;
    w.result = ids.Shorten(options.pids ? e.detail : ids.NameProcesses(e.detail));
  } else if (kind == "fail") {
    w.what = "handler failed: " + ids.Shorten(e.detail);  // the handler's exception, as thrown
    w.result = e.result;
  } else if (kind == "send" || kind == "reconcile") {
    w.what = ids.Shorten(e.detail);
    w.result = ids.Shorten(e.result);
  } else {
    w.what = ids.Shorten(e.detail.empty() ? e.kind : e.kind + " " + e.detail);
    w.result = ids.Shorten(options.pids ? e.result : ids.NameProcesses(e.result));
  }
  if (kind != "sql" && !options.pids) w.what = ids.NameProcesses(w.what);
  w.tone = ToneOf(e);
  return w;
}

}  // namespace dedupsim
