// Short texts for trace steps, shared by the diagram, the timeline and the step-through
// page, read from what each event recorded about itself (op, table, key, delivery): no
// view parses SQL text.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace dedupsim {

// A duration in milliseconds as every view writes it: one decimal under 10 ms ("0.6 ms",
// "2.4 ms"), where a whole number would say 1 ms of a 0.6 ms bar, else whole ("398 ms").
std::string MsWord(int64_t us);

// "INSERT Inbox", "UPDATE StockItems", "SELECT Inbox", "BEGIN", "COMMIT": the statement's op
// and table. "SQL" for a statement recorded without them.
std::string StepLabel(const TraceEvent& e);

// Transaction control, from the op recorded with the statement.
bool IsBegin(const TraceEvent& e);
bool IsCommit(const TraceEvent& e);
bool IsRollback(const TraceEvent& e);
bool IsWrite(const TraceEvent& e);  // INSERT, UPDATE, DELETE
// Whether statement e ran on the connection whose BEGIN had backend begin_backend: always
// where either is unknown (SQLite's steps, 0), else when the server backends are one. A
// consumer's second connection (second-connection on PostgreSQL) commits on its own, outside
// the transaction its first connection holds open.
bool OnConnectionOf(int begin_backend, const TraceEvent& e);

// A statement's result for a reader: "ok", "no row" / "row" for a SELECT, "constraint
// 1555", with ", waited N ms" after a lock wait (", waited" alone when timings are left
// out, so the text does not change from run to run).
std::string DescribeResult(const TraceEvent& event, bool with_timings);

// Short names for pictures: each MessageId the events carry becomes m1, m2, ... in the
// order it first appears; any other UUID in a text (order and book ids) becomes id-1, ...
// in the order it first appears in the events' texts (detail, result, value, waited_on),
// both in the order the events were recorded (seq), whatever order a view draws them in or
// shortens its texts in: every view of one run names an id alike. A UUID only a view's own
// text holds (a table cell) is named after those, as that view first shortens it.
// Processes are named by their role in the run, not by their pid (which changes from run
// to run): the process that runs the set-up, the broker and the checks (the first step of
// an actor other than a consumer) is "main process", every other process
// that recorded a step is "child process 1", "child process 2", ... in the order it first
// appears, and a PostgreSQL backend a wait was blocked by is named after the actor whose
// connection it is ("Consumer A"; "backend 1", ... when no step names one). So two runs
// with the same --seed name them alike. JSON and --trace keep the full ids and the pids.
class ShortIds {
 public:
  explicit ShortIds(const std::vector<TraceEvent>& events);
  // Names that shorten nothing: every id as it is (the --trace line of one event).
  static ShortIds Full() {
    ShortIds ids({});
    ids.full_ = true;
    return ids;
  }
  // Names as check's text gives them (explore/deliveries.h): a UUID cut to its first 8
  // characters, "…" marking the cut ("78833635…"; "78833635…/StockReserved" for a key that
  // starts with one), so the page and the text use one id for one message.
  static ShortIds Cut(const std::vector<TraceEvent>& events);
  // "m1" for a known key; the key itself otherwise (or "" for "").
  std::string Name(const std::string& key) const;
  // The message e is about, as every picture names it: Name(e.key), and which of the
  // messages the broker stored under that key where it stored more than one ("m2 copy 2":
  // a dispatcher's resend, each copy with its own delivery count; Full(): where copy > 1).
  std::string Message(const TraceEvent& e) const;
  // e.copy where Message names it, else 0: a key the broker stored once is one message, so
  // steps that do not carry its copy (a delivery a lesson numbered itself) are the same.
  int CopyShown(const TraceEvent& e) const;
  // e's delivery, by the broker's count for that stored message: "m1 delivery 2", "m2 copy
  // 2, delivery 1". The one formatter of a delivery for every view.
  std::string DeliveryName(const TraceEvent& e) const;
  // text with every MessageId and UUID replaced by its short name.
  std::string Shorten(std::string_view text);
  // "m1 = <full id>", one per key, in order.
  std::vector<std::string> Legend() const;
  // "main process", "child process 2", "Consumer A" (see above); "pid N" for a pid the
  // events do not name, and "pid <pid>" for Full().
  std::string Process(int pid) const;
  // The actor whose connection a PostgreSQL backend is ("Consumer A", as Process names it),
  // read from the steps that carry it as their backend; "" when no step, or steps of more
  // than one actor, do (and for Full()).
  std::string BackendOwner(int backend) const;
  // text with each "pid <digits>" replaced by Process of it.
  std::string NameProcesses(std::string_view text) const;

 private:
  void NameProcessesOf(const std::vector<TraceEvent>& events);
  void CountCopiesOf(const std::vector<TraceEvent>& events);

  std::map<std::string, std::string> keys_;
  std::map<std::string, int> copies_;  // key -> the messages the broker stored under it
  std::map<int, std::string> processes_;
  std::map<int, std::string> owners_;  // backend -> the actor whose connection it is
  std::map<std::string, std::string> others_;
  std::vector<std::string> longest_first_;  // the keys, longest first (made on first use)
  bool full_ = false;
  bool cut_ = false;
};

}  // namespace dedupsim
