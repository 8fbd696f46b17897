// The partial-order reduction against brute force: on every small cell, the schedules the
// reduced search runs end in the same set of final states (outcome and figures) as every
// interleaving does, the verdict and the shortest failing length are the same, and the
// reduced search runs exactly one schedule per class of schedules that differ only in the
// order of independent steps. Plus what a step's footprint says, step by step.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <tuple>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "explore/strategies.h"
#include "files/consumer_file.h"
#include "files/file_strategy.h"
#include "support.h"

namespace explore_reduction_test {

using namespace dedupsim;
using namespace dedupsim::explore;

namespace {

Explorer& Reduced() {
  static Explorer explorer(ExploreOptions{.reduce = true});
  return explorer;
}

// Every interleaving, a blocked instance retrying after any other step (the matrix's
// search before the reduction).
Explorer& BruteForce() {
  static Explorer explorer(ExploreOptions{.reduce = false});
  return explorer;
}

// Every interleaving under the reduced search's retry rule: the classes to compare with.
Explorer& BruteForceSameRule() {
  static Explorer explorer(
      ExploreOptions{.reduce = false, .retry = RetryRuleFor(ExploreOptions{})});
  return explorer;
}

using FinalState = std::tuple<dedupsim::explore::Outcome, int64_t, int64_t, int64_t, int64_t,
                              int64_t, int64_t, int64_t>;

FinalState Final(const ScheduleResult& run) {
  const Figures& f = run.figures;
  return {run.outcome,   f.reserved, f.reserved_expected, f.inbox_rows,
          f.emails_sent, f.flagged,  f.crashes,           f.deliveries};
}

// One schedule's steps as (instance, footprint), in its order.
struct Event {
  int instance = 0;
  Footprint footprint;
};

std::vector<Event> Events(const ScheduleResult& run) {
  std::vector<Event> events;
  for (size_t i = 0; i < run.picks.size(); ++i) events.push_back({run.picks[i], run.footprints[i]});
  return events;
}

// The representative of a schedule's class: among the steps no earlier remaining step
// must precede (the same instance's, or a dependent one), always take the lowest
// instance's. Two schedules are equivalent (differ only in the order of independent
// steps) exactly when their representatives are equal.
std::vector<int> Canonical(std::vector<Event> events) {
  std::vector<int> out;
  while (!events.empty()) {
    size_t best = events.size();
    for (size_t k = 0; k < events.size(); ++k) {
      bool first = true;
      for (size_t j = 0; j < k && first; ++j) {
        first = events[j].instance != events[k].instance &&
                Independent(events[j].footprint, events[k].footprint);
      }
      if (first && (best == events.size() || events[k].instance < events[best].instance)) best = k;
    }
    out.push_back(events[best].instance);
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return out;
}

// Takes exactly these choices, then stops the run.
class Picks final : public Chooser {
 public:
  explicit Picks(std::vector<int> picks) : picks_(std::move(picks)) {}
  std::optional<int> Choose(size_t depth, uint32_t) override {
    if (depth >= picks_.size()) return std::nullopt;
    return picks_[depth];
  }

 private:
  std::vector<int> picks_;
};

struct Survey {
  std::set<FinalState> finals;
  std::set<std::vector<int>> classes;
  int64_t schedules = 0;
  size_t shortest_failing = 0;  // 0: none
  int64_t futile_retries = 0;   // retries that found the lock still held
};

Survey Explore(Explorer& explorer, const Plan& plan) {
  Survey s;
  explorer.ForEachSchedule(plan, [&](const ScheduleResult& run) {
    ++s.schedules;
    s.finals.insert(Final(run));
    s.classes.insert(Canonical(Events(run)));
    for (const std::string& step : run.steps) {
      if (step.find("  retry ") != std::string::npos && step.ends_with(": busy"))
        ++s.futile_retries;
    }
    if (IsFailing(run.outcome) &&
        (s.shortest_failing == 0 || run.picks.size() < s.shortest_failing)) {
      s.shortest_failing = run.picks.size();
    }
  });
  return s;
}

std::vector<Plan> PlansOf(const Strategy& strategy, const Fault& fault, WorldSize world = {}) {
  IdGenerator ids(1);
  if (fault.sized_plans != nullptr) return fault.sized_plans(strategy, ids, world);
  return fault.plans(strategy, ids);
}

void CheckEquivalent(const Plan& plan) {
  Survey brute = Explore(BruteForce(), plan);
  Survey reduced = Explore(Reduced(), plan);
  CHECK(reduced.finals == brute.finals);
  CHECK(reduced.shortest_failing == brute.shortest_failing);
  CHECK(reduced.schedules <= brute.schedules);
  // One schedule per class, and every class of the same rule's brute force among them.
  Survey same_rule = Explore(BruteForceSameRule(), plan);
  CHECK(same_rule.finals == brute.finals);
  CHECK(reduced.classes == same_rule.classes);
  CHECK(reduced.schedules == static_cast<int64_t>(reduced.classes.size()));
}

}  // namespace

TEST_CASE("reduced and brute force reach the same final states, one schedule per class",
          "[explore][reduction]") {
  for (const Strategy* s : AllStrategies()) {
    for (const Fault* f : AllFaults()) {
      // The two largest cells (thousands of interleavings) are left to the matrix below.
      if (s->name == "email-reconcile" &&
          (f->name == "concurrent" || f->name == "second-subscriber")) {
        continue;
      }
      std::vector<Plan> plans = PlansOf(*s, *f);
      for (const Plan& plan : plans) {
        INFO(s->name << " under " << f->name << " " << plan.variant);
        CheckEquivalent(plan);
      }
    }
  }
}

TEST_CASE("three copies: reduced and brute force reach the same final states",
          "[explore][reduction]") {
  for (auto [strategy, instances, deliveries] :
       {std::tuple{"naive", 3, 3}, std::tuple{"cache-set-if-absent", 3, 3},
        std::tuple{"record-first", 2, 3}, std::tuple{"email", 2, 3}}) {
    INFO(strategy << ": " << deliveries << " copies in " << instances << " instances");
    std::vector<Plan> plans = PlansOf(*FindStrategy(strategy), *FindFault("concurrent"),
                                      WorldSize{instances, deliveries});
    REQUIRE(plans.size() == 1);
    CheckEquivalent(plans[0]);
  }
}

TEST_CASE("a crash beside a concurrent copy: reduced and brute force reach the same final states",
          "[explore][reduction]") {
  // A dies at each of its crash points (inside its transaction or not) while B handles a
  // copy: the crash's closing of the connection is what releases A's lock. The cache
  // consumer has two files open from the start of its delivery, so its first two points
  // (a read of the cache file, a hook) already make a crash that writes both files; its
  // later points only add steps before the crash (thousands more interleavings, the test's
  // longest part) and hold no lock across the crash (its writes are autocommit).
  for (std::string_view strategy : {"inbox", "check-then-process", "cache-check-then-set"}) {
    const Strategy& s = *FindStrategy(strategy);
    std::vector<std::string_view> points = s.crash_points;
    if (strategy == "cache-check-then-set") {
      points = {"SELECT CacheKeys", "AfterCacheCheck"};
      for (std::string_view point : points) REQUIRE(std::ranges::count(s.crash_points, point) == 1);
    }
    for (std::string_view point : points) {
      INFO(strategy << ", A crashes at " << point);
      Plan plan = PlansOf(s, *FindFault("concurrent")).at(0);
      plan.instances[0].deliveries[0].crash_at = {std::string(point)};
      CheckEquivalent(plan);
    }
  }
}

TEST_CASE("the class world's plans: reduced and brute force reach the same final states",
          "[explore][reduction][grader]") {
  // Each delivery's own clock (a copy arriving a second later), books shared by two orders,
  // two partners: none of it makes a step depend on more than its footprint. And a copy
  // refused for a lock another holds is redelivered only after that lock's release, under
  // either retry rule. Mutation caught: the refused copy's redelivery let go by the retry
  // rule's marks instead of the lock's release (the brute force, which lets it go after any
  // step, then gives copies up that the reduced search never does).
  static files::FileStrategy deferred_check(files::LoadConsumerFile(
      std::string(DEDUPSIM_SOURCE_DIR) + "/tests/data/consumers/wrong/8-deferred-check.toml"));
  static files::FileStrategy key_now(files::LoadConsumerFile(
      std::string(DEDUPSIM_SOURCE_DIR) + "/tests/data/consumers/wrong/4a-key-receive-time.toml"));
  for (const Strategy* s :
       {FindStrategy("check-then-process"), &deferred_check.strategy(), &key_now.strategy()}) {
    for (std::string_view fault : {"concurrent", "second-subscriber", "lost-ack"}) {
      IdGenerator ids(1);
      for (const Plan& plan : FindFault(fault, GradedFaults())->graded_plans(*s, ids)) {
        INFO(s->name << " under " << fault << " " << plan.variant);
        CheckEquivalent(plan);
      }
    }
  }
}

TEST_CASE("a blocked copy retries only after a step released the lock it waits for",
          "[explore][reduction]") {
  // email-reconcile's two copies queue on the provider's BEGIN IMMEDIATE (the second
  // file), and claim-last's on the database's write lock, held across several statements.
  // Retrying after any step on the file gives futile retries (the holder's INSERT released
  // nothing); retrying after a release gives none, and the same final states and shortest
  // failing length, in fewer schedules.
  Explorer on_file(ExploreOptions{.reduce = false, .retry = RetryRule::kAfterStepOnItsFile});
  Explorer on_release(ExploreOptions{.reduce = false, .retry = RetryRule::kAfterRelease});
  for (std::string_view strategy : {"email-reconcile", "claim-last"}) {
    INFO(strategy);
    Plan plan = PlansOf(*FindStrategy(strategy), *FindFault("concurrent")).at(0);
    Survey before = Explore(on_file, plan);
    Survey after = Explore(on_release, plan);
    CHECK(after.finals == before.finals);
    CHECK(after.shortest_failing == before.shortest_failing);
    CHECK(after.schedules < before.schedules);
    CHECK(before.futile_retries > 0);
    CHECK(after.futile_retries == 0);
    // And the reduced search under it: one schedule per class, the same final states as
    // every interleaving (email-reconcile's thousands are left to the matrix test).
    if (strategy == "claim-last") CheckEquivalent(plan);
  }
}

TEST_CASE("the matrix's verdicts and shortest counterexamples do not change with the reduction",
          "[explore][reduction]") {
  MatrixResult reduced = Reduced().ExploreMatrix(AllStrategies(), AllFaults());
  MatrixResult brute = BruteForce().ExploreMatrix(AllStrategies(), AllFaults());
  REQUIRE(reduced.cells.size() == brute.cells.size());
  CHECK(reduced.schedules < brute.schedules);
  CHECK(brute.pruned == 0);
  for (size_t i = 0; i < brute.cells.size(); ++i) {
    const CellResult& r = reduced.cells[i];
    const CellResult& b = brute.cells[i];
    INFO(b.strategy->name << " under " << b.fault->name);
    for (size_t o = 0; o < kOutcomeCount; ++o) CHECK((r.counts[o] > 0) == (b.counts[o] > 0));
    CHECK(r.Safe() == b.Safe());
    CHECK(r.schedules <= b.schedules);
    REQUIRE(r.shortest.has_value() == b.shortest.has_value());
    if (b.shortest) {
      CHECK(r.shortest->picks.size() == b.shortest->picks.size());
      CHECK(r.shortest->outcome == b.shortest->outcome);
    }
  }
}

TEST_CASE("source sets: email-reconcile's copies start no run that ends cut short",
          "[explore][reduction]") {
  // Mutation caught: the reduced search falling back to the sleep sets alone
  // (ExploreOptions::search defaulting to kSleepSets, or ForEachSchedule ignoring it): its
  // runs cut short are then counted (26 on this cell at two copies; more at three).
  static Explorer sleep_sets(
      ExploreOptions{.reduce = true, .search = ExploreOptions::Search::kSleepSets});
  for (auto [instances, deliveries] : {std::pair{2, 2}, std::pair{2, 3}}) {
    INFO(deliveries << " copies in " << instances << " instances");
    std::vector<Plan> plans = PlansOf(*FindStrategy("email-reconcile"), *FindFault("concurrent"),
                                      WorldSize{instances, deliveries});
    REQUIRE(plans.size() == 1);
    std::set<std::vector<int>> optimal;
    std::set<std::vector<int>> asleep;
    const int64_t cut_short = Reduced().ForEachSchedule(plans[0], [&](const ScheduleResult& run) {
      CHECK(optimal.insert(Canonical(Events(run))).second);  // no class run twice
    });
    const int64_t cut_short_before =
        sleep_sets.ForEachSchedule(plans[0], [&](const ScheduleResult& run) {
          asleep.insert(Canonical(Events(run)));
        });
    CHECK(cut_short == 0);
    CHECK(cut_short_before > 0);  // the cell has runs for the sleep sets to cut short
    CHECK(optimal == asleep);     // the same classes, each run once
  }
}

TEST_CASE("source sets against every interleaving: email-reconcile's two copies",
          "[explore][reduction]") {
  // The one cell of the matrix's concurrent column the first test leaves out, against
  // every interleaving under the same retry rule: the same classes and final states.
  // Mutation caught (applied once): the races whose reversal is a single step left out of
  // the wakeup tree (`if (v.size() > 1) Insert(...)` in SourceSetSearch::Race): classes,
  // final states and the shortest failing length are lost.
  Plan plan = PlansOf(*FindStrategy("email-reconcile"), *FindFault("concurrent")).at(0);
  Survey reduced = Explore(Reduced(), plan);
  Survey same_rule = Explore(BruteForceSameRule(), plan);
  CHECK(reduced.finals == same_rule.finals);
  CHECK(reduced.shortest_failing == same_rule.shortest_failing);
  CHECK(reduced.classes == same_rule.classes);
  CHECK(reduced.schedules == static_cast<int64_t>(reduced.classes.size()));
}

TEST_CASE("the sleep sets alone still run one schedule per class, as the source sets do",
          "[explore][reduction]") {
  // The older search stays selectable (ExploreOptions::Search::kSleepSets): on each row's
  // concurrent cell at two copies, the same classes as the source sets, and as many runs.
  static Explorer sleep_sets(
      ExploreOptions{.reduce = true, .search = ExploreOptions::Search::kSleepSets});
  for (const Strategy* s : AllStrategies()) {
    INFO(s->name);
    Plan plan = PlansOf(*s, *FindFault("concurrent")).at(0);
    Survey optimal = Explore(Reduced(), plan);
    Survey asleep = Explore(sleep_sets, plan);
    CHECK(optimal.classes == asleep.classes);
    CHECK(optimal.finals == asleep.finals);
    CHECK(optimal.schedules == asleep.schedules);
  }
}

TEST_CASE("independent steps: different files, hooks, sends, reads of one file",
          "[explore][reduction]") {
  const Footprint none{};
  const Footprint read_main{.reads = 1};
  const Footprint write_main{.writes = 1};
  const Footprint read_aux{.reads = 2};
  const Footprint write_aux{.writes = 2};
  const Footprint blocked{.all = true};
  CHECK(Independent(none, write_main));
  CHECK(Independent(read_main, read_main));
  CHECK(Independent(write_main, write_aux));
  CHECK(Independent(write_main, read_aux));
  CHECK_FALSE(Independent(read_main, write_main));
  CHECK_FALSE(Independent(write_main, read_main));
  CHECK_FALSE(Independent(write_main, write_main));
  CHECK_FALSE(Independent(blocked, none));
  CHECK_FALSE(Independent(none, blocked));
}

TEST_CASE("each step's footprint: what its statement touches, on which file",
          "[explore][reduction]") {
  auto clean = [](std::string_view strategy) {
    const Strategy& s = *FindStrategy(strategy);
    IdGenerator ids(1);
    Plan plan = FindFault("duplicate")->plans(s, ids).at(0);
    plan.instances[0].deliveries.resize(1);
    std::optional<ScheduleResult> run;
    for (size_t n = 1; n < 40 && !run; ++n)
      run = Reduced().RunExactly(plan, std::vector<int>(n, 0));
    REQUIRE(run);
    std::map<std::string, std::tuple<int, int, bool>> by_step;
    for (size_t i = 0; i < run->steps.size(); ++i) {
      const Footprint& f = run->footprints[i];
      by_step[run->steps[i]] = {f.reads, f.writes, f.all};
    }
    return by_step;
  };
  // Inside a transaction a statement touches every table of the service file
  // (kMainTables) and reads its lock; the step that takes the lock (the first write) and
  // the one that releases it (COMMIT) also write the lock's bit (kMainFile); a statement of
  // its own touches its tables' bits (an autocommit write also reads the lock's bit). On the
  // second file the rows (kAuxData) and the lock (kAuxFile) are apart the same way.
  // Mutations caught: every autocommit statement given the whole file (the email and cache
  // rows' bits), a statement inside a transaction given its table's bit only (inbox's), or
  // the lock's bit written by a statement that neither takes nor releases it.
  const int whole = kMainWhole;
  const int tables = kMainTables;
  auto inbox = clean("inbox");
  CHECK(inbox["A  BEGIN"] == std::tuple{0, 0, false});
  CHECK(inbox["A  INSERT Inbox"] == std::tuple{kMainFile, whole, false});       // takes the lock
  CHECK(inbox["A  UPDATE StockItems"] == std::tuple{kMainFile, tables, false});  // holds it
  CHECK(inbox["A  BeforeCommit"] == std::tuple{0, 0, false});
  CHECK(inbox["A  COMMIT"] == std::tuple{kMainFile, whole, false});  // releases it
  auto cache = clean("cache-check-then-set");
  CHECK(cache["A  SELECT CacheKeys"] == std::tuple{kAuxData, 0, false});
  CHECK(cache["A  INSERT CacheKeys"] == std::tuple{kAuxFile, kAuxData, false});
  const auto [stock_reads, stock_writes, stock_all] = cache["A  UPDATE StockItems"];
  CHECK(stock_reads == kMainFile);
  CHECK(stock_writes != 0);
  CHECK((stock_writes & ~kMainTables) == 0);  // one table's bit, not the file's lock
  CHECK_FALSE(stock_all);
  auto email = clean("email");
  const auto [inbox_reads, inbox_writes, inbox_all] = email["A  SELECT Inbox"];
  CHECK(inbox_reads != 0);
  CHECK((inbox_reads & ~kMainTables) == 0);
  CHECK(inbox_writes == 0);
  CHECK((inbox_reads & stock_writes) == 0);  // Inbox and StockItems: two bits
  CHECK(email["A  EmailProvider.Send"] == std::tuple{0, 0, false});
}

TEST_CASE("a crash writes the files it had open, a step that finds the lock held is dependent",
          "[explore][reduction]") {
  IdGenerator ids(1);
  const Strategy& inbox = *FindStrategy("inbox");
  // Dies at a hook inside its transaction: the hook touches nothing, but closing the
  // connection rolls back and releases the lock on the main file.
  int seen = 0;
  for (const Plan& plan : FindFault("crash")->plans(inbox, ids)) {
    if (plan.variant != "crash at BeforeCommit") continue;
    ++seen;
    std::optional<ScheduleResult> run;
    for (size_t n = 1; n < 40 && !run; ++n)
      run = Reduced().RunExactly(plan, std::vector<int>(n, 0));
    REQUIRE(run);
    auto at = std::find(run->steps.begin(), run->steps.end(), "A  crash at BeforeCommit");
    REQUIRE(at != run->steps.end());
    const Footprint& f = run->footprints[static_cast<size_t>(at - run->steps.begin())];
    CHECK(f.writes == kMainWhole);  // every table of the file, and its lock
    CHECK_FALSE(f.all);
  }
  CHECK(seen == 1);
  // Two copies: B's INSERT while A holds the write lock finds it locked. Retrying after
  // any step, that depends on every step; retrying after a release (the reduced search),
  // it only read the lock: it commutes with A's statements that hold the lock (A's UPDATE)
  // and depends on those that take or release it (A's INSERT, A's COMMIT).
  Plan two = PlansOf(inbox, *FindFault("concurrent")).at(0);
  for (Explorer* explorer : {&BruteForce(), &Reduced()}) {
    Picks chooser({0, 0, 1, 1});
    ScheduleResult run = explorer->scheduler().Run(two, chooser);
    REQUIRE(run.steps.size() == 4);
    REQUIRE(run.steps.back() == "B  INSERT Inbox: busy");
    const bool any_step = explorer == &BruteForce();
    const Footprint& blocked = run.footprints.back();
    CHECK(blocked.all == any_step);
    CHECK(((blocked.reads | blocked.writes) & kMainFile) != 0);  // it waits for the file's lock
    CHECK(run.footprints[1].writes == kMainWhole);  // A's INSERT, in its transaction: the file
    CHECK_FALSE(run.footprints[1].all);
  }
  // Mutation caught: BlockedFootprint writing the lock's bit (the step then depends on A's
  // UPDATE, and the classes that differ only in where B found the lock held stay apart).
  Picks longer({0, 0, 1, 1, 0, 0, 0});
  ScheduleResult run = Reduced().scheduler().Run(two, longer);
  REQUIRE(run.steps.size() >= 7);
  REQUIRE(run.steps[3] == "B  INSERT Inbox: busy");
  REQUIRE(run.steps[4] == "A  UPDATE StockItems");
  REQUIRE(run.steps[6] == "A  COMMIT");
  CHECK(run.footprints[3].reads == kMainFile);
  CHECK(run.footprints[3].writes == 0);
  CHECK(Independent(run.footprints[3], run.footprints[4]));       // A holds the lock
  CHECK_FALSE(Independent(run.footprints[3], run.footprints[1]));  // A took it
  CHECK_FALSE(Independent(run.footprints[3], run.footprints[6]));  // A releases it
}

TEST_CASE("explore --instances 3 --deliveries 3: three copies in three instances, reduced",
          "[explore][reduction][cli]") {
  using dedupsim::testing::RunCli;
  auto r = RunCli({"explore", "--strategy", "inbox", "--strategy", "check-then-process", "--fault",
                   "concurrent", "--instances", "3", "--deliveries", "3"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("concurrent: 3 copies in 3 instances\n") != std::string::npos);
  CHECK(r.out.find("schedules that differ only in the order of independent steps are run once") !=
        std::string::npos);
  CHECK(r.out.find("inbox               once (48)") != std::string::npos);
  CHECK(r.out.find("check-then-process  twice \u00d7") != std::string::npos);

  auto brute = RunCli(
      {"explore", "--strategy", "check-then-process", "--fault", "concurrent", "--no-reduction"});
  REQUIRE(brute.exit_code == 0);
  CHECK(brute.out.find("twice \u00d768 (70)") != std::string::npos);
  CHECK(brute.out.find("independent steps") == std::string::npos);

  auto bad = RunCli({"explore", "--instances", "3", "--deliveries", "2"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--deliveries 2 is fewer than --instances 3") != std::string::npos);
}

}  // namespace explore_reduction_test
