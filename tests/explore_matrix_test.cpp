// The matrix against the post's argument, and the counterexamples against brute force:
// every shortest failing schedule replays to the same failure, and trying every sequence
// of choices shorter than it finds no failing schedule.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/report.h"
#include "explore/strategies.h"

namespace explore_matrix_test {

using namespace dedupsim;
using namespace dedupsim::explore;
// dedupsim has an Outcome and a Delivery of its own (a unity batch may see them too).
using dedupsim::explore::Delivery;
using dedupsim::explore::Outcome;

namespace {

Explorer& SharedExplorer() {
  static Explorer explorer;
  return explorer;
}

// Every interleaving, a blocked instance retrying after any other step: what the
// counterexamples and counts are checked against.
Explorer& BruteForceExplorer() {
  static Explorer explorer(ExploreOptions{.reduce = false});
  return explorer;
}

const MatrixResult& FullMatrix() {
  static const MatrixResult matrix = SharedExplorer().ExploreMatrix(AllStrategies(), AllFaults());
  return matrix;
}

const CellResult& Cell(std::string_view strategy, std::string_view fault) {
  const MatrixResult& m = FullMatrix();
  for (const CellResult& c : m.cells) {
    if (c.strategy->name == strategy && c.fault->name == fault) return c;
  }
  throw std::logic_error("no such cell");
}

const VariantResult& Variant(const CellResult& cell, std::string_view variant) {
  for (const VariantResult& v : cell.variants) {
    if (v.variant == variant) return v;
  }
  throw std::logic_error("no such variant");
}

int64_t Count(const OutcomeCounts& counts, Outcome o) { return counts[Index(o)]; }

// The one run of a single-instance plan.
ScheduleResult RunAlone(const Plan& plan) {
  REQUIRE(plan.instances.size() == 1);
  for (size_t length = 1; length < 100; ++length) {
    if (auto run = SharedExplorer().RunExactly(plan, std::vector<int>(length, 0))) return *run;
  }
  FAIL("the plan did not finish");
  return {};
}

Plan FindPlan(std::string_view strategy, std::string_view fault, std::string_view variant) {
  for (Plan& p : SharedExplorer().Plans(*FindStrategy(strategy), *FindFault(fault))) {
    if (p.variant == variant) return p;
  }
  throw std::logic_error("no such plan");
}

// Takes exactly the given choices and tells why a run stopped short: when it wanted one
// more, which instances could have taken it.
class ProbeChooser final : public Chooser {
 public:
  explicit ProbeChooser(const std::vector<int>& picks) : picks_(picks) {}
  std::optional<int> Choose(size_t depth, uint32_t eligible) override {
    if (depth >= picks_.size()) {
      ran_out = true;
      next_eligible = eligible;
      return std::nullopt;
    }
    if ((eligible & (1u << picks_[depth])) == 0) return std::nullopt;  // not a schedule
    return picks_[depth];
  }
  bool ran_out = false;
  uint32_t next_eligible = 0;

 private:
  const std::vector<int>& picks_;
};

// Calls back with every complete schedule of plan shorter than `below` steps, found by
// trying every sequence of choices, length by length: a sequence is extended only while
// the run still wanted more choices, so no search order of the explorer's is involved.
// A sequence is extended only by the instances its run said could move next (the others
// would stop at that choice, not a schedule); each run is deterministic, so the run of an
// extension takes the same steps up to there (checked: its picks are the sequence).
void ForEachScheduleShorterThan(const Plan& plan, size_t below,
                                const std::function<void(const ScheduleResult&)>& each) {
  const int n = static_cast<int>(plan.instances.size());
  // Each sequence to extend, with the instances that could move after it: first the empty
  // one, with those that could take the first step.
  const std::vector<int> none;
  ProbeChooser first(none);
  REQUIRE(BruteForceExplorer().scheduler().Run(plan, first).abandoned);
  REQUIRE(first.ran_out);
  std::vector<std::pair<std::vector<int>, uint32_t>> frontier{{{}, first.next_eligible}};
  while (!frontier.empty()) {
    std::vector<std::pair<std::vector<int>, uint32_t>> next;
    for (const auto& [prefix, eligible] : frontier) {
      if (prefix.size() + 1 >= below) continue;
      for (int i = 0; i < n; ++i) {
        if ((eligible & (1u << i)) == 0) continue;
        std::vector<int> picks = prefix;
        picks.push_back(i);
        ProbeChooser chooser(picks);
        ScheduleResult run = BruteForceExplorer().scheduler().Run(plan, chooser);
        if (!run.abandoned) {
          REQUIRE(run.picks == picks);
          each(run);
        } else {
          // An instance said eligible must take the step.
          REQUIRE(chooser.ran_out);
          next.emplace_back(std::move(picks), chooser.next_eligible);
        }
      }
    }
    frontier = std::move(next);
  }
}

}  // namespace

TEST_CASE("naive: a duplicate delivery reserves twice", "[explore][matrix]") {
  const CellResult& cell = Cell("naive", "duplicate");
  CHECK(CellLabel(cell) == "twice \u00d71");
  REQUIRE(cell.shortest);
  CHECK(cell.shortest->figures.reserved == 4);
  CHECK(cell.shortest->figures.reserved_expected == 2);
  // Two copies at once are the same mistake, in every order.
  CHECK(Count(Cell("naive", "concurrent").counts, Outcome::kTwice) ==
        Cell("naive", "concurrent").schedules);
}

TEST_CASE("check-then-process: a crash after the stock commit reserves twice", "[explore][matrix]") {
  const CellResult& cell = Cell("check-then-process", "crash");
  CHECK(Count(Variant(cell, "crash at AfterStockCommitted").counts, Outcome::kTwice) == 1);
  CHECK(Count(Variant(cell, "crash at INSERT Inbox").counts, Outcome::kTwice) == 1);
  CHECK(Count(Variant(cell, "crash at SELECT Inbox").counts, Outcome::kOnce) == 1);
  CHECK(Count(Variant(cell, "crash at UPDATE StockItems").counts, Outcome::kOnce) == 1);
  REQUIRE(cell.shortest);
  CHECK(cell.shortest->variant == "crash at AfterStockCommitted");
  CHECK(cell.shortest->figures.reserved == 4);
  // And the check cannot settle two copies at once: they can both look before either records.
  CHECK(Count(Cell("check-then-process", "concurrent").counts, Outcome::kTwice) > 0);
}

TEST_CASE("record-first: a crash between its commits loses the order", "[explore][matrix]") {
  const CellResult& cell = Cell("record-first", "crash");
  CHECK(Count(Variant(cell, "crash at AfterRecordCommitted").counts, Outcome::kLost) == 1);
  CHECK(Count(Variant(cell, "crash at INSERT Inbox").counts, Outcome::kOnce) == 1);
  REQUIRE(cell.shortest);
  CHECK(cell.shortest->outcome == Outcome::kLost);
  CHECK(cell.shortest->figures.reserved == 0);
  CHECK(cell.shortest->figures.inbox_rows == 1);
}

TEST_CASE("inbox and claim-last: once in every cell but the producer's resend", "[explore][matrix]") {
  for (std::string_view strategy : {"inbox", "claim-last"}) {
    for (const Fault* fault : AllFaults()) {
      const CellResult& cell = Cell(strategy, fault->name);
      INFO(strategy << " under " << fault->name);
      CHECK(cell.schedules > 0);
      if (fault->name == "producer-duplicate") {
        // A new MessageId is a new key: no consumer-side record can match the two.
        CHECK(CellLabel(cell) == "twice \u00d71");
      } else {
        CHECK(CellLabel(cell) == "once");
      }
    }
  }
}

TEST_CASE("only the keys of the order catch a producer duplicate", "[explore][matrix]") {
  for (const Strategy* s : AllStrategies()) {
    INFO(s->name);
    if (s->name == "natural-key" || s->name == "correlation-key") {
      // The key is the order line or the OrderId, not the MessageId: the resend hits it.
      CHECK(CellLabel(Cell(s->name, "producer-duplicate")) == "once");
    } else {
      CHECK(CellLabel(Cell(s->name, "producer-duplicate")) == "twice \u00d71");
    }
  }
  // And the natural key is as safe as the inbox under every consumer-side fault.
  for (const Fault* fault : AllFaults()) {
    INFO(fault->name);
    CHECK(CellLabel(Cell("natural-key", fault->name)) == "once");
  }
}

TEST_CASE("email: a crash after the send is flagged, with the one email sent", "[explore][matrix]") {
  const CellResult& cell = Cell("email", "crash");
  CHECK(Count(cell.counts, Outcome::kTwice) == 0);
  CHECK(Count(cell.counts, Outcome::kLost) == 0);
  CHECK(Count(Variant(cell, "crash at AfterSend").counts, Outcome::kReconcile) == 1);

  ScheduleResult after_send = RunAlone(FindPlan("email", "crash", "crash at AfterSend"));
  CHECK(after_send.outcome == Outcome::kReconcile);
  CHECK(after_send.figures.emails_sent == 1);
  CHECK(after_send.figures.flagged == 1);
  // Dying before the send: none went out, and that is flagged too, never silent.
  ScheduleResult before_send = RunAlone(FindPlan("email", "crash", "crash at EmailProvider.Send"));
  CHECK(before_send.outcome == Outcome::kReconcile);
  CHECK(before_send.figures.emails_sent == 0);
  // Two copies at once: one email, and a flag whenever the second saw the first in progress.
  const CellResult& concurrent = Cell("email", "concurrent");
  CHECK(Count(concurrent.counts, Outcome::kTwice) == 0);
  CHECK(Count(concurrent.counts, Outcome::kReconcile) > 0);
}

TEST_CASE("a second subscriber on the same Inbox keeps its own record", "[explore][matrix]") {
  for (const Strategy* s : AllStrategies()) {
    if (s->name == "shared-key" || s->name == "shared-key-email") continue;
    INFO(s->name);
    CHECK(CellLabel(Cell(s->name, "second-subscriber")) == "once");
  }
}

TEST_CASE("shared-key: whichever subscriber records first silences the other", "[explore][matrix]") {
  for (std::string_view strategy : {"shared-key", "shared-key-email"}) {
    INFO(strategy);
    const CellResult& cell = Cell(strategy, "second-subscriber");
    // Never a clean once: one of the two effects is always missing. Mostly acked and lost;
    // flagged when the email consumer's INSERT met the stock's row after its own look.
    CHECK(Count(cell.counts, Outcome::kOnce) == 0);
    CHECK(Count(cell.counts, Outcome::kTwice) == 0);
    CHECK(Count(cell.counts, Outcome::kLost) > 0);
    REQUIRE(cell.shortest);
    CHECK(cell.shortest->outcome == Outcome::kLost);
    CHECK(cell.shortest->figures.emails_sent + cell.shortest->figures.reserved / 2 == 1);
    // Alone, the MessageId key is as good as the inbox's.
    CHECK(CellLabel(Cell(strategy, "duplicate")) == "once");
  }
  CHECK(CellLabel(Cell("shared-key", "crash")) == "once");
  CHECK(CellLabel(Cell("shared-key", "concurrent")) == "once");
}

TEST_CASE("the dedup cache: a crash between the two stores, and check-then-set's race",
          "[explore][matrix]") {
  const CellResult& cts = Cell("cache-check-then-set", "crash");
  CHECK(Count(Variant(cts, "crash at AfterStockCommitted").counts, Outcome::kTwice) == 1);
  CHECK(Count(Variant(cts, "crash at INSERT CacheKeys").counts, Outcome::kTwice) == 1);
  CHECK(Count(Variant(cts, "crash at SELECT CacheKeys").counts, Outcome::kOnce) == 1);
  CHECK(Count(Cell("cache-check-then-set", "concurrent").counts, Outcome::kTwice) > 0);
  // Set-if-absent closes the race, and turns the crash window into a loss.
  CHECK(CellLabel(Cell("cache-set-if-absent", "concurrent")) == "once");
  const CellResult& sia = Cell("cache-set-if-absent", "crash");
  CHECK(Count(Variant(sia, "crash at AfterStockCommitted").counts, Outcome::kOnce) == 1);
  CHECK(Count(Variant(sia, "crash at AfterCacheCheck").counts, Outcome::kLost) == 1);
  CHECK(Count(Variant(sia, "crash at UPDATE StockItems").counts, Outcome::kLost) == 1);
  CHECK(Count(sia.counts, Outcome::kTwice) == 0);
}

TEST_CASE("email-reconcile: the provider settles every crash, no reconcile left", "[explore][matrix]") {
  const CellResult& cell = Cell("email-reconcile", "crash");
  CHECK(CellLabel(cell) == "once");
  CHECK(cell.variants.size() == FindStrategy("email-reconcile")->crash_points.size());
  // Where the plain email consumer flags the crash after its send.
  CHECK(Count(Variant(Cell("email", "crash"), "crash at AfterSend").counts, Outcome::kReconcile) == 1);
  CHECK(Count(Variant(cell, "crash at AfterSend").counts, Outcome::kOnce) == 1);
  // Two copies at once never send twice; the copy whose claim meets a record another
  // instance is still working on flags it rather than wait.
  const CellResult& concurrent = Cell("email-reconcile", "concurrent");
  CHECK(Count(concurrent.counts, Outcome::kTwice) == 0);
  CHECK(Count(concurrent.counts, Outcome::kLost) == 0);
}

TEST_CASE("the matrix counts every schedule", "[explore][matrix]") {
  const MatrixResult& m = FullMatrix();
  int64_t total = 0;
  for (const CellResult& c : m.cells) {
    int64_t sum = 0;
    for (int64_t n : c.counts) sum += n;
    CHECK(sum == c.schedules);
    total += c.schedules;
  }
  CHECK(total == m.schedules);
  CHECK(m.cells.size() == AllStrategies().size() * AllFaults().size());
}

TEST_CASE("every counterexample replays to the same failure", "[explore][counterexample]") {
  for (const CellResult& cell : FullMatrix().cells) {
    if (!cell.shortest) continue;
    INFO(cell.strategy->name << " under " << cell.fault->name);
    ScheduleResult replay = SharedExplorer().ReplayShortest(cell, nullptr);
    CHECK(replay.outcome == cell.shortest->outcome);
    CHECK(replay.steps == cell.shortest->steps);
    CHECK(replay.figures.reserved == cell.shortest->figures.reserved);
    CHECK(replay.figures.emails_sent == cell.shortest->figures.emails_sent);
    CHECK(replay.figures.inbox_rows == cell.shortest->figures.inbox_rows);
  }
}

TEST_CASE("no failing schedule is shorter than the counterexample", "[explore][counterexample]") {
  for (const CellResult& cell : FullMatrix().cells) {
    if (!cell.shortest) continue;
    INFO(cell.strategy->name << " under " << cell.fault->name);
    const size_t length = cell.shortest->picks.size();
    // Every plan's schedules shorter than it, and on the counterexample's own plan those of
    // its length too (in the same search): brute force finds it there, and it fails.
    bool found = false;
    std::vector<Plan> plans = SharedExplorer().Plans(*cell.strategy, *cell.fault);
    for (size_t p = 0; p < plans.size(); ++p) {
      const bool own = p == cell.shortest->plan_index;
      ForEachScheduleShorterThan(plans[p], own ? length + 1 : length,
                                 [&](const ScheduleResult& run) {
                                   if (run.picks.size() < length) {
                                     INFO(fmt::format("{}", fmt::join(run.steps, "\n")));
                                     CHECK_FALSE(IsFailing(run.outcome));
                                   } else if (own && run.picks == cell.shortest->picks) {
                                     found = IsFailing(run.outcome);
                                   }
                                 });
    }
    CHECK(found);
  }
}

TEST_CASE("the search finds exactly the schedules brute force finds", "[explore][counterexample]") {
  for (auto [strategy, fault] :
       {std::pair{"check-then-process", "concurrent"}, std::pair{"email", "concurrent"},
        std::pair{"naive", "concurrent"}, std::pair{"record-first", "concurrent"},
        std::pair{"inbox", "concurrent"}, std::pair{"claim-last", "concurrent"},
        std::pair{"inbox", "second-subscriber"}}) {
    INFO(strategy << " under " << fault);
    // Every interleaving: the matrix's reduced search runs one per class (see
    // explore_reduction_test.cpp).
    const CellResult cell =
        BruteForceExplorer().ExploreCell(*FindStrategy(strategy), *FindFault(fault));
    std::vector<Plan> plans = SharedExplorer().Plans(*FindStrategy(strategy), *FindFault(fault));
    REQUIRE(plans.size() == 1);
    int64_t schedules = 0;
    OutcomeCounts counts{};
    // One step past the longest schedule the search saw: brute force would find any longer.
    ForEachScheduleShorterThan(plans[0], cell.variants[0].longest + 2, [&](const ScheduleResult& run) {
      ++schedules;
      counts[Index(run.outcome)]++;
    });
    CHECK(schedules == cell.schedules);
    CHECK(counts == cell.counts);
  }
}

TEST_CASE("optimistic-email sends twice under the concurrent fault, email never does",
          "[explore][matrix]") {
  const CellResult& optimistic = Cell("optimistic-email", "concurrent");
  CHECK(Count(optimistic.counts, Outcome::kTwice) > 0);
  REQUIRE(optimistic.shortest);
  CHECK(optimistic.shortest->outcome == Outcome::kTwice);
  CHECK(Count(Cell("email", "concurrent").counts, Outcome::kTwice) == 0);
  // A duplicate that comes later finds the committed row: one email.
  CHECK(CellLabel(Cell("optimistic-email", "duplicate")) == "once");
  CHECK(CellLabel(Cell("optimistic-email", "lost-ack")) == "once");
}

TEST_CASE("the claim-last row runs the lesson's consumer, reporting read included",
          "[explore][matrix]") {
  // lib/consumers/claim_last.h reads Reserved inside its transaction: that read is a step
  // of the row, so the row can only be the lesson's consumer.
  const CellResult& crash = Cell("claim-last", "crash");
  CHECK(Count(Variant(crash, "crash at SELECT StockItems").counts, Outcome::kOnce) == 1);
  CHECK(crash.schedules == 6);
}

}  // namespace explore_matrix_test
