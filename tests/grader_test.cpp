// The grader against consumers a student would write (issue 25): each wrong consumer of
// tests/data/consumers/wrong fails at the fault of the class world that exposes it, with the
// outcome that says why; each consumer of tests/data/consumers/right (a shape of
// docs/files.md unlike the examples) passes every fault. Each verdict was predicted before the
// file was first run; the line over each row names the one mutation of the class world it
// catches.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "explore/explorer.h"
#include "explore/faults.h"
#include "files/consumer_file.h"
#include "files/file_strategy.h"
#include "files/grade.h"
#include "support.h"

namespace dedupsim::testing::grader_test {

namespace {

using explore::Outcome;

std::string Data(const std::string& name) {
  return std::string(DEDUPSIM_SOURCE_DIR) + "/tests/data/consumers/" + name;
}

// Grades the file in the class world (what `dedupsim check` does) under the faults named,
// every graded fault when none.
files::Grade GradeFile(const std::string& path, const std::vector<std::string>& names = {}) {
  static std::vector<std::unique_ptr<files::FileStrategy>> keep;  // outlive the explorer
  keep.push_back(std::make_unique<files::FileStrategy>(files::LoadConsumerFile(path)));
  files::FileStrategy& file = *keep.back();
  const explore::Strategy* extra[] = {&file.strategy()};
  explore::ExploreOptions options;
  options.graded = true;
  explore::Explorer explorer(options, extra);
  file.LearnCrashPoints(explorer);
  std::vector<const explore::Fault*> faults;
  for (const std::string& n : names) faults.push_back(explore::FindFault(n, explore::GradedFaults()));
  if (faults.empty()) faults.assign(explore::GradedFaults().begin(), explore::GradedFaults().end());
  return files::GradeStrategy(explorer, file.strategy(), faults, {});
}

const files::GradedCell& CellOf(const files::Grade& g, const std::string& fault) {
  for (const files::GradedCell& c : g.cells) {
    if (c.cell.fault->name == fault) return c;
  }
  throw std::logic_error("no cell " + fault);
}

// The schedules of the cell whose plan's variant starts with `variant` that ended so.
int64_t EndedIn(const files::GradedCell& c, const std::string& variant, Outcome o) {
  int64_t n = 0;
  for (const explore::VariantResult& v : c.cell.variants) {
    if (v.variant.rfind(variant, 0) == 0) n += v.counts[Index(o)];
  }
  return n;
}

struct Wrong {
  const char* file;
  const char* fault;    // the fault that exposes it
  const char* variant;  // the plan of that fault that does ("" any)
  Outcome outcome;      // how its schedules end there
};

}  // namespace

TEST_CASE("each wrong consumer fails at the fault that exposes it", "[grader]") {
  const Wrong wrong[] = {
      // The trigger keeps Dune's first reservation only: the second order of Dune is lost.
      // Mutation: a plan of one order per book (no orders fault).
      {"1-trigger-undoes.toml", "orders", "", Outcome::kLost},
      // Flags a clean delivery. Mutation: reconcile accepted where nothing called for it.
      {"2-always-reconcile.toml", "clean", "", Outcome::kReconcile},
      // Every redelivery throws on the key and is given up. Mutation: given up counted once.
      {"3-duplicate-throws.toml", "duplicate", "again 2 s later", Outcome::kError},
      // Its key holds :Now. Mutation: one clock for every delivery of a plan.
      {"4a-key-receive-time.toml", "duplicate", "again 2 s later", Outcome::kTwice},
      // Its key holds the day. Mutation: no redelivery across midnight.
      {"4b-key-day.toml", "duplicate", "again 5 s later, across midnight", Outcome::kTwice},
      // Overwrites Reserved. Mutation: stock starting at zero reserved.
      {"5-overwrite.toml", "clean", "", Outcome::kWrong},
      // InboxByMessageId, the shared table keyed on MessageId alone. Mutation: the partner
      // that shares InboxByMessageId runs only when the file names it.
      {"6-shared-key.toml", "second-subscriber", "with shared-key-email", Outcome::kLost},
      // One book per delivery. Mutation: the effect read by integer division (1/3 = 0:
      // lost, not wrong).
      {"7a-one-per-delivery.toml", "clean", "", Outcome::kWrong},
      // A fixed 3: right for the message under test, 3 for the order of 2. Mutation: the
      // order of 2 read as 3/2 = 1 reservation.
      {"7b-fixed-three.toml", "orders", "", Outcome::kWrong},
      // Looks for any consumer's record. Mutation: no partner writing Inbox.
      {"9-check-ignores-consumer.toml", "second-subscriber", "with email", Outcome::kLost},
      // Keyed on the book. Mutation: no second order of one book.
      {"10-key-by-book.toml", "orders", "", Outcome::kLost},
      // No WHERE. Mutation: one book on the shelf.
      {"11-no-where.toml", "clean", "", Outcome::kWrong},
      // Forgets its records after an hour. Mutation: no redelivery hours later.
      {"12-retention-one-hour.toml", "duplicate", "again 3 h later", Outcome::kTwice},
      // Flags a completed record. Mutation: a sequential duplicate not strict.
      {"13-reconcile-completed.toml", "duplicate", "again 2 s later", Outcome::kReconcile},
      {"14-duplicate-continues.toml", "duplicate", "again 2 s later", Outcome::kTwice},
      {"15-send-before-record.toml", "crash", "crash at INSERT Inbox", Outcome::kTwice},
      // A read-modify-write outside a transaction. Mutation: no two orders of one book at once.
      {"16-lost-update.toml", "concurrent", "two orders of Dune at once", Outcome::kLost},
  };
  for (const Wrong& w : wrong) {
    INFO(w.file);
    files::Grade g = GradeFile(Data(std::string("wrong/") + w.file), {w.fault});
    const files::GradedCell& cell = CellOf(g, w.fault);
    INFO(files::FormatGrade(g, false));
    CHECK_FALSE(g.Passed());
    CHECK_FALSE(cell.passed);
    CHECK(EndedIn(cell, w.variant, w.outcome) > 0);
  }
}

TEST_CASE("a redelivery may crash too, at a step of its own", "[grader]") {
  // Counts its attempts and skips from the third on: only a crash on the redelivery as well
  // brings a third attempt. Mutation caught: no follow-up plans (only the first attempt dies).
  files::Grade g = GradeFile(Data("wrong/17-quiet-after-two-tries.toml"), {"crash"});
  const files::GradedCell& crash = CellOf(g, "crash");
  CHECK_FALSE(crash.passed);
  CHECK(EndedIn(crash, "crash at SELECT Attempts, then crash at", Outcome::kLost) > 0);
  // Every failing plan is a second crash's: one crash alone never loses the order.
  for (const explore::VariantResult& v : crash.cell.variants) {
    if (v.variant.find(", then ") == std::string::npos) CHECK(v.counts[Index(Outcome::kLost)] == 0);
  }
  REQUIRE(crash.shown() != nullptr);
  CHECK(crash.shown()->variant ==
        "crash at SELECT Attempts, then crash at SELECT Attempts on the redelivery");
}

TEST_CASE("a correct consumer in each shape of docs/files.md passes every fault", "[grader]") {
  // Mutation caught (any of): a strict plan where a concurrent copy may rightly flag, a
  // stock row read back whole against a consumer's own column, a redelivery that is refused
  // while the lock holder sits parked.
  for (const char* file :
       {"immediate-check-then-insert.toml", "insert-or-ignore.toml", "own-reservations-table.toml",
        "guarded-update.toml", "two-phase-own-table.toml", "provider-key-by-order.toml",
        "cache-prefilter.toml", "dialects-and-labels.toml"}) {
    INFO(file);
    files::Grade g = GradeFile(Data(std::string("right/") + file));
    INFO(files::FormatGrade(g, false));
    CHECK(g.Passed());
  }
}

TEST_CASE("the lock that saves a deferred check on SQLite does not fail it there", "[grader]") {
  // The copy whose write finds the lock taken is refused (SQLITE_BUSY) and redelivered; the
  // redelivery waits for the holder's commit, then finds the record. Mutation caught: the
  // redelivery let run while the holder sits parked (refused five times: error).
  files::Grade g = GradeFile(Data("wrong/8-deferred-check.toml"), {"concurrent"});
  CHECK(g.Passed());
}

}  // namespace dedupsim::testing::grader_test
