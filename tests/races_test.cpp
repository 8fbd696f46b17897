// Races that follow the options, not the scheduler (lib/lesson/instances.h), and waits that are
// read from lock intervals, not from busy-handler calls (Connection::lock_history).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <vector>

#include "common.h"
#include "concurrency.h"
#include "consumers/idempotent.h"
#include "lesson/runner.h"
#include "views/mermaid.h"
#include "scenarios.h"
#include "support.h"

namespace races_test {

using namespace dedupsim;
using dedupsim::testing::CpuHog;
using dedupsim::testing::Fixture;
using dedupsim::testing::NotInOrder;

namespace {

RunOptions Timing(int hold_ms, int stagger_ms, InstanceMode mode) {
  RunOptions o;
  o.hold = std::chrono::milliseconds(hold_ms);
  o.stagger = std::chrono::milliseconds(stagger_ms);
  o.instances = mode;
  return o;
}

// Runs the scenario `times` times on one database and counts the runs whose line is `line`
// and whose --check held.
int CountLines(const char* name, const RunOptions& options, const std::string& line, int times) {
  Fixture fx(options);
  const Scenario* s = FindScenario(name);
  REQUIRE(s != nullptr);
  int matched = 0;
  for (int i = 0; i < times; ++i) {
    fx.recorder.Clear();
    ScenarioResult r = RunScenario(*s, fx.env, true);
    if (r.outcome.line == line && r.differences.empty()) {
      matched++;
    } else {
      UNSCOPED_INFO(name << " run " << i << ": " << r.outcome.line << " "
                         << r.outcome.figures.dump());
    }
  }
  return matched;
}

const std::string kConcurrentWaited =
    "[inbox]              two copies at once -> processed: True, False; Dune reserved: 2; second "
    "waited for the first: True";
const std::string kConcurrentApart =
    "[inbox]              two copies at once -> processed: True, False; Dune reserved: 2; second "
    "waited for the first: False";
const std::string kDifferentWaited =
    "[concurrent-different] two different messages at once -> same book: processed: True, True; "
    "Dune "
    "reserved: 4; second waited for the first: True; different books: processed: True, True; "
    "Dune reserved: 2, Emma reserved: 2; second waited for the first: True";

}  // namespace

// Mutation caught: SecondWaited() back to `second.busy.calls > 0` (a WAL-index busy call
// after A's commit counts as waiting), or B released by the clock alone.
TEST_CASE("a second copy started after the first committed never waited for it", "[races]") {
  Fixture fx(Timing(90, 100, InstanceMode::kThreads));
  const Scenario* s = FindScenario("concurrent");
  for (int i = 0; i < 20; ++i) {
    ScenarioResult r = RunScenario(*s, fx.env, true);
    INFO(r.outcome.figures.dump());
    REQUIRE(r.outcome.figures["secondWaited"] == false);
    // Every blocked stretch of B lies after A's hold ended.
    double held_until = r.outcome.figures["firstLockHeldMs"].back()[1].get<double>();
    for (const auto& w : r.outcome.figures["secondBlockedMs"])
      CHECK(w[0].get<double>() >= held_until);
  }
}

// The flake seen under load (B: "database is locked (code 5)"): B's busy timeout was a
// wall-clock budget from its first busy call, so a hold longer than it, or a first instance
// stalled that long by a loaded machine, made B give up. Here the busy timeout (50 ms) is
// far shorter than the hold (300 ms), as a 5 s stall is to the default timeout. B waits the
// hold less the stagger from the moment it was blocked, however late a loaded machine ran it
// (the next test; once, at load 11 to 16, it waited 6 ms when A held from its own hold point).
// Mutation caught: RunSecond not calling KeepWaitingWhile, or OnBusy counting the timeout
// while the first instance still holds.
TEST_CASE("the second waits out a hold longer than its busy timeout", "[races]") {
  for (InstanceMode mode : {InstanceMode::kThreads, InstanceMode::kProcesses}) {
    INFO("instances " << ToString(mode));
    Fixture fx(Timing(300, 0, mode),
               DatabaseSettings{.busy_timeout = std::chrono::milliseconds(50)});
    ScenarioResult r = RunScenario(*FindScenario("concurrent"), fx.env, true);
    INFO(r.outcome.figures.dump());
    CHECK(r.outcome.line == kConcurrentWaited);
    CHECK(r.differences.empty());
    CHECK(r.outcome.figures["waitMs"].get<int64_t>() >= 250);  // B waited the hold through
  }
}

// A second instance that a loaded machine runs late (here it sleeps 200 ms after its release
// before its delivery, as a starved thread or process would) still waits the hold through:
// the first holds from the moment the second reported it was blocked (instances.h), not
// from its own hold point, so the wait follows the events, not the scheduler.
// Mutation caught: RunFirst going on at its hold point + hold once the second is blocked,
// ignoring when it was blocked (lib/lesson/instances.cpp: the second sleep_until removed;
// the second then waits about 100 ms).
TEST_CASE("a second instance that meets the lock late still waits the hold through", "[races]") {
  using std::chrono::milliseconds;
  for (InstanceMode mode : {InstanceMode::kThreads, InstanceMode::kProcesses}) {
    INFO("instances " << ToString(mode));
    Fixture fx(Timing(300, 0, mode), DatabaseSettings{.busy_timeout = milliseconds(50)});
    const OrderPlaced message = NewOrder(fx.env, Restock(fx.env));
    auto handle = [&fx, &message](milliseconds late) {
      return [&fx, &message, late](Store& store, const Hook& hold_point) -> nlohmann::json {
        std::this_thread::sleep_for(late);
        IdempotentReserveStock consumer(store, fx.env.clock);
        consumer.before_commit = hold_point;
        return {{"processed", consumer.Handle(message)}};
      };
    };
    PairOutcome pair = RunStorePair(fx.env, {"A", Delivered(message, 1), handle(milliseconds(0))},
                                    {"B", Delivered(message, 2), handle(milliseconds(200))});
    CHECK(pair.first.value["processed"] == true);
    CHECK(pair.second.value["processed"] == false);
    CHECK(pair.SecondWaited());
    REQUIRE(pair.second.locks.waits.size() >= 1);
    const BlockedWait& wait = pair.second.locks.waits.front();
    const double waited_ms =
        std::chrono::duration<double, std::milli>(wait.resumed - wait.blocked).count();
    INFO("B blocked for " << waited_ms << " ms");
    CHECK(waited_ms >= 300.0);  // hold - stagger, from the moment B was blocked
  }
}

// A second that meets no lock of the first's (PairTiming::second_blocks false: cache-arbiter,
// optimistic-email) and starts late, as a starved thread or process would, still does what
// comes before its hold point before the first goes on: the first waits for that event, not
// for its own hold to run out (cache-arbiter's check-then-set gave "True, False" under load,
// A's key set before B's check). Here B starts 200 ms late, reads Reserved at its hold
// point; A reserves once its hold of 50 ms is over. Mutation caught: RunFirst waiting for
// the second only where it blocks (`&& timing.second_blocks` in its hold point, as before:
// B's read then finds A's reservation).
TEST_CASE("a second that meets no lock reaches its hold point before the first goes on",
          "[races]") {
  using std::chrono::milliseconds;
  for (InstanceMode mode : {InstanceMode::kThreads, InstanceMode::kProcesses}) {
    INFO("instances " << ToString(mode));
    Fixture fx(Timing(50, 0, mode));
    const StockItem dune = Restock(fx.env);
    const OrderPlaced message = NewOrder(fx.env, dune);
    StoreTask first{"A", Delivered(message, 1),
                    [&dune](Store& store, const Hook& hold_point) -> nlohmann::json {
                      hold_point();
                      store.AddReserved(dune.book_id, 2);
                      return true;
                    }};
    StoreTask second{"B", Delivered(message, 2),
                     [&dune](Store& store, const Hook& hold_point) -> nlohmann::json {
                       std::this_thread::sleep_for(milliseconds(200));
                       const int64_t before = store.ReadStock(dune.book_id).reserved;
                       if (hold_point) hold_point();
                       return before;
                     }};
    PairOutcome pair = RunStorePair(
        fx.env, first, second,
        PairTiming{.hold = milliseconds(50), .stagger = milliseconds(0), .second_blocks = false});
    CHECK(pair.second.value == 0);  // A had not gone on when B reached its hold point
    CHECK(CurrentStock(fx.env, dune).reserved == 2);
  }
}

// Mutation caught: the hold measured from the wrong moment (firstLockHeldMs empty or after
// B's block), or secondWaited true without an overlapping hold.
TEST_CASE("a wait is B blocked inside A's lock-holding interval, resuming after it", "[races]") {
  Fixture fx(Timing(120, 20, InstanceMode::kThreads));
  ScenarioResult r = RunScenario(*FindScenario("concurrent"), fx.env, true);
  const auto& f = r.outcome.figures;
  INFO(f.dump());
  REQUIRE(f["secondWaited"] == true);
  REQUIRE(f["firstLockHeldMs"].size() == 1);
  REQUIRE(f["secondBlockedMs"].size() >= 1);
  double from = f["firstLockHeldMs"][0][0].get<double>();
  double to = f["firstLockHeldMs"][0][1].get<double>();
  double blocked = f["secondBlockedMs"][0][0].get<double>();
  double resumed = f["secondBlockedMs"][0][1].get<double>();
  CHECK(from < blocked);
  CHECK(blocked < to);
  CHECK(resumed >= to - 1.0);  // resumed once A's COMMIT had released the lock
  CHECK(to - from >= 120.0);   // A held at BeforeCommit for --hold-ms with the lock
  CHECK(f["waitMs"].get<int64_t>() > 0);
  // The trace shows the hold too.
  bool taken = false;
  bool released = false;
  for (const TraceEvent& e : r.events) {
    if (e.instance == "A" && e.kind == "lock" && e.detail == "write lock taken") taken = true;
    if (e.instance == "A" && e.kind == "lock" && e.detail == "write lock released") released = true;
  }
  CHECK(taken);
  CHECK(released);
}

// The target: under a CPU hog of 4x the cores, the documented line every time, in
// threads and processes, and False whenever B is released after A's hold.
// Mutation caught: B released at start + stagger by the clock (no hold-point event), or A
// committing at hold without waiting for B to block.
TEST_CASE("races follow the options under a CPU hog", "[races][hog]") {
  CpuHog hog;
  REQUIRE(hog.size() >= 4);
  for (InstanceMode mode : {InstanceMode::kThreads, InstanceMode::kProcesses}) {
    INFO("instances " << ToString(mode));
    CHECK(CountLines("concurrent", Timing(8, 2, mode), kConcurrentWaited, 50) == 50);
    CHECK(CountLines("concurrent-different", Timing(8, 2, mode), kDifferentWaited, 50) == 50);
    CHECK(CountLines("concurrent", Timing(2, 52, mode), kConcurrentApart, 50) == 50);
  }
}

// hung-consumer on SQLite, the killed half: B blocked on A's write lock, then A was killed,
// then B's INSERT went on and B committed. Every picture must say so in that order, on every
// run: the death is stamped at the kill (an event after B's wait is on the trace, before B
// could go on), not when A was reaped. Mutations caught: the death stamped at the reap
// (drawn after B's COMMIT, every run); the connection telling the scenario it blocked
// before its wait is recorded (A's death drawn before B's wait, 16 of 20 runs at load 9;
// the deterministic check is sqlite_test's "a wait is on the trace before ...").
TEST_CASE("hung-consumer draws A's death after B blocked and before B went on", "[races]") {
  RunOptions o;
  o.lock_timeout = std::chrono::milliseconds(50);  // the hung half's busy timeout: short
  Fixture fx(o);
  const Scenario* s = FindScenario("hung-consumer");
  REQUIRE(s != nullptr);
  for (int run = 0; run < 10; ++run) {
    INFO("run " << run);
    fx.recorder.Clear();
    ScenarioResult r = RunScenario(*s, fx.env, true);
    REQUIRE(r.differences.empty());
    const std::vector<TraceEvent> events = fx.recorder.Events();
    // The killed half: the events before the second sub-run.
    std::vector<std::string> steps;
    int parts = 0;
    for (const TraceEvent& e : events) {
      if (e.kind == "part" && ++parts == 2) break;
      if (e.instance == "B" && e.kind == "wait") steps.push_back("B waits");
      if (e.instance == "A" && e.kind == "died") steps.push_back("A died");
      if (e.instance == "B" && IsSqlOp(e, "INSERT") && e.busy_calls > 0) steps.push_back("B goes on");
      if (e.instance == "B" && IsSqlOp(e, "COMMIT")) steps.push_back("B commits");
    }
    CHECK(steps == std::vector<std::string>{"B waits", "A died", "B goes on", "B commits"});
    // The diagram draws them in that order (CausalOrder moves none of them).
    MermaidOptions plain;
    plain.timings = false;
    const std::string d = MermaidDiagram(events, plain);
    CHECK(NotInOrder(d, {"Note over CB,DB: waits for the write lock", ": died at BeforeCommit",
                         "DB-->>CB: 1 row inserted, after waiting", "CB->>DB: COMMIT"}) == "");
  }
}

// SQLite's busy handler is armed on every connection and counts its calls: each of the
// pair's statements carries its count in the JSON events (0 where the handler never ran),
// and B's waiting statement a count above 0, threads and processes alike (a child sends its
// events and its busy figures to the parent). Mutations caught: EventToJson dropping the
// measured count (trace_json.cpp: `if (e.busy_calls)` -> `if (false)`), and a child's busy
// figures not sent (instances.cpp: `if (r.busy)` -> `if (false)`: busyRetries gone).
TEST_CASE("SQLite's concurrent lesson keeps the busy calls it counted", "[races][cli]") {
  for (const char* instances : {"threads", "processes"}) {
    INFO(instances);
    auto r = dedupsim::testing::RunCli({"run", "concurrent", "--format", "json", "--trace",
                                        "--hold-ms", "150", "--stagger-ms", "20", "--instances",
                                        instances});
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["secondWaited"] == true);
    CHECK(j.value("busyRetries", int64_t{0}) > 0);
    int statements = 0;
    int64_t b_calls = 0;
    for (const auto& e : j["events"]) {
      if (e["kind"] != "sql" || (e["instance"] != "A" && e["instance"] != "B")) continue;
      INFO(e.dump());
      REQUIRE(e.contains("busyCalls"));
      ++statements;
      if (e["instance"] == "B") b_calls += e["busyCalls"].get<int64_t>();
    }
    CHECK(statements >= 6);
    CHECK(b_calls > 0);
  }
}

// Mutation caught: the trace recording waited_us = 0 (or busy_calls = 0) for the statement
// that waited: the JSON event and the Mermaid result lose the wait ("waited 0 ms"); and
// waited_us back to the busy handler's sum of sleeps (statement.cpp: `wait_at >= 0 ?` ->
// `false ?`), 2 to 18 ms short of the bar the timeline draws for the same wait. The SVG
// draws B's wait from its first busy call to the statement's end, so it keeps it; its label
// is checked whole, however the layout wrapped it.
TEST_CASE("the trace's waited time is the wait that happened, in every view", "[races][cli]") {
  dedupsim::testing::TempDir dir;
  std::string svg_path = dir.File("t.svg");
  auto r = dedupsim::testing::RunCli({"run", "concurrent", "--format", "json", "--trace",
                                      "--diagram", "mermaid", "--timeline", svg_path, "--hold-ms",
                                      "150", "--stagger-ms", "20", "--check"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["secondWaited"] == true);
  int64_t waited_us = 0;
  int64_t wait_at_us = -1;  // B's wait event: where the timeline's wait bar begins
  int waits = 0;
  for (const auto& e : j["events"]) {
    if (e["instance"] == "B" && e["kind"] == "wait") wait_at_us = e["atUs"].get<int64_t>();
    if (e["instance"] == "B" && e["kind"] == "sql" && e["busyCalls"].get<int64_t>() > 0) {
      waited_us += e["waitedUs"].get<int64_t>();
      // The figure is the bar: from the wait event to the statement's own stamp, one
      // measurement (values, not timing thresholds).
      INFO(e.dump());
      REQUIRE(wait_at_us >= 0);
      CHECK(e["waitedUs"].get<int64_t>() == e["atUs"].get<int64_t>() - wait_at_us);
      ++waits;
    }
  }
  CHECK(waits == 1);
  CHECK(waited_us > 0);  // B was released 20 ms after A's hold point, A held 150 ms
  // The busy handler's own sleeps (the line's waitMs) lie inside that span.
  CHECK(j["waitMs"].get<int64_t>() <= (waited_us + 999) / 1000 + 1);
  // Mermaid: B's insert comes back with the time it waited, more than 0 ms.
  std::string diagram = j["diagram"].get<std::string>();
  std::smatch waited;
  REQUIRE(std::regex_search(diagram, waited,
                            std::regex("duplicate key \\(1555\\), after waiting ([0-9.]+) ms")));
  CHECK(std::stod(waited[1].str()) > 0);
  // SVG: a hatched wait bar on B's lane.
  std::string svg = dedupsim::testing::ReadFile(svg_path);
  CHECK(svg.find("<rect class=\"wait\" x=") != std::string::npos);
  // B's card carries the time it waited, the figure and its unit on one line however the
  // card wrapped: a figure above 0.
  auto lane = svg.find(">Consumer B</text>");
  REQUIRE(lane != std::string::npos);
  auto lane_end = svg.find("</g>", lane);
  REQUIRE(lane_end != std::string::npos);
  const std::string b = svg.substr(lane, lane_end - lane);
  std::smatch figure;
  REQUIRE(std::regex_search(b, figure, std::regex("after waiting ([0-9.]+) ms")));
  CHECK(std::stod(figure[1].str()) > 0);
}

// Mutation caught: --check that never exits 1 (differences ignored, or the exit status
// dropped). The hidden test-only option compares with another --hold-ms's expectation.
TEST_CASE("run --check exits 1 when the run does not meet the expectation", "[races][cli]") {
  auto r = dedupsim::testing::RunCli(
      {"run", "concurrent", "--check", "--hold-ms", "0", "--test-only-expect-hold-ms", "200"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("second waited for the first: False") != std::string::npos);
  CHECK(r.err.find("dedupsim: check failed: concurrent: secondWaited is false, expected true") !=
        std::string::npos);
  // Hidden from help.
  auto help = dedupsim::testing::RunCli({"run", "--help"});
  CHECK(help.out.find("test-only") == std::string::npos);
}

// A verdict is read back once the delivery's transaction has ended, never inside it: there
// it would judge the state before the delivery's work, and under a rollback journal could
// wait on the delivery's own locks (common.h NoteOutcome). A judged outcome noted while the
// transaction is open is refused; an unjudged one, or one noted after the commit, is not.
// Mutation caught: common.cpp RefuseJudgedInsideTransaction's `store.InTransaction()` as
// `false`.
TEST_CASE("a judged outcome is noted only once its transaction has ended", "[races]") {
  Fixture fx;
  StockItem dune = Restock(fx.env);
  std::unique_ptr<Store> store = OpenStore(fx.env, "A");
  store->Begin(TransactionKind::kImmediate);
  CHECK_THROWS_AS(NoteProcessed(*store, true, ReservedVerdict(fx.env, dune, 0)), std::logic_error);
  CHECK_NOTHROW(NoteProcessed(*store, true));
  store->Commit();
  CHECK_NOTHROW(NoteProcessed(*store, true, ReservedVerdict(fx.env, dune, 0)));
}

}  // namespace races_test
