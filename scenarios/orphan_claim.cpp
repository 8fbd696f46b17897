// orphan-claim: a claim committed ahead of the work, with a lease. Its owner is killed (a
// real SIGKILL of a child process) holding the claim: a redelivery before the lease expires
// backs off, one after takes the claim over and finishes the work. A live owner that renews
// its lease keeps it. An owner that is only paused past its lease loses the claim to a
// takeover and, when it resumes, sends the email a second time; the Owner guard keeps its
// reservation out.
//
// Time is a ManualClock, so the story does not depend on the machine: the redeliveries and
// the pause happen at fixed times after the claim, and --lock-max-age decides which of them
// find the lease expired.
#include <fmt/format.h>
#include <unistd.h>

#include <vector>

#include "common.h"
#include "consumers/leased_claim.h"
#include "core/duration.h"
#include "lesson/crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace orphan_claim_file {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// After the owner's death, the broker redelivers at these times after the claim.
constexpr milliseconds kRedeliveries[] = {seconds(10), seconds(60)};
// The live owner's work takes this long; a redelivery comes in the middle of it.
constexpr milliseconds kLongWork = seconds(45);
constexpr milliseconds kDuringLongWork = seconds(40);
// The paused owner stops this long (a stop signal, a long GC pause); a redelivery comes
// while it is stopped.
constexpr milliseconds kPause = seconds(90);
constexpr milliseconds kDuringPause = seconds(60);

std::string Owner(const char* instance) { return fmt::format("{} (pid {})", instance, ::getpid()); }

// The claim's owner renews its lease this often while it works.
milliseconds RenewEvery(milliseconds lease) { return lease / 3; }

struct Part {
  std::vector<std::string> redeliveries;  // what each later delivery did
  int64_t takeovers = 0;
  int64_t emails = 0;
  int64_t reserved = 0;
  std::string first_outcome;  // the first owner's, when it finished
};

nlohmann::ordered_json ToJson(const Part& p) {
  return {{"redeliveries", p.redeliveries},
          {"takeovers", p.takeovers},
          {"emailsSent", p.emails},
          {"reserved", p.reserved},
          {"firstOwner", p.first_outcome}};
}

std::string Describe(const LeaseReport& r) {
  return r.took_over && r.outcome == LeaseOutcome::kDone ? "TakenOver"
                                                         : std::string(ToString(r.outcome));
}

// The business's verdict once a delivery is over: right while the order's email went out at
// most once and its stock was reserved at most once, read back now.
const char* SoFar(ScenarioEnv& env, const InMemoryEmailProvider& provider, const StockItem& book) {
  return provider.sent_count() <= 1 && CurrentStock(env, book).reserved <= env.options.quantity
             ? kVerdictRight
             : kVerdictWrong;
}

// One delivery (the broker's number `delivery`) by instance B at the clock's time.
LeaseReport DeliverB(ScenarioEnv& env, ManualClock& clock, InMemoryEmailProvider& provider,
                     const OrderPlaced& m, const StockItem& book, int delivery, Part& part) {
  std::unique_ptr<Store> store = OpenStore(env, "B", Delivered(m, delivery));
  LeaseReport r =
      LeasedReserveAndNotify(*store, provider, clock, Owner("B"), env.options.lock_max_age)
          .Handle(m);
  part.redeliveries.push_back(Describe(r));
  if (r.took_over) part.takeovers++;
  NoteOutcome(*store, Describe(r), SoFar(env, provider, book));
  return r;
}

// The owner is killed holding the claim, before its send.
Part DeadOwner(ScenarioEnv& env, ManualClock& clock) {
  env.recorder.BeginPart("owner killed");
  StockItem dune = Restock(env);
  OrderPlaced m = NewOrder(env, dune);
  InMemoryEmailProvider provider;
  RunOptions kill_options = env.options;
  kill_options.crash_mode = CrashMode::kKill;  // the death is real, whatever --crash-mode says
  ScenarioEnv kill_env{kill_options, env.backend, env.sides, env.clock, env.recorder, env.ids};
  const TimePoint claimed_at = clock.Now();
  RunCrashingDelivery(
      kill_env, "A", "BeforeSend",
      [&](const Hook& crash) {
        std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(m, 1));
        LeasedReserveAndNotify consumer(*store, provider, clock, Owner("A"),
                                        env.options.lock_max_age);
        consumer.before_send = crash;
        consumer.Handle(m);
      },
      &provider);
  Part part;
  int delivery = 1;
  for (milliseconds at : kRedeliveries) {
    clock.Set(claimed_at + at);
    // Each mark is the simulated time since A's claim, t=0, said as a time, not a step: "t=1m"
    // after "t=10s" is 50 s later (a bare "+1m" read as a further minute; "A's claim +1m" did
    // not fit the timeline's axis beside "+10s", which dropped its label).
    env.recorder.MarkTime("t=" + FormatDuration(at));
    LeaseReport r = DeliverB(env, clock, provider, m, dune, ++delivery, part);
    if (r.outcome != LeaseOutcome::kBackedOff) break;  // acked; no more redeliveries
  }
  part.emails = provider.sent_count();
  part.reserved = CurrentStock(env, dune).reserved;
  part.first_outcome = "Killed";
  return part;
}

// The owner works longer than its lease, renewing it; a redelivery comes meanwhile.
Part LiveOwner(ScenarioEnv& env, ManualClock& clock, int64_t* renewals) {
  env.recorder.BeginPart("owner renewing its lease");
  StockItem dune = Restock(env);
  OrderPlaced m = NewOrder(env, dune);
  InMemoryEmailProvider provider;
  Part part;
  std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(m, 1));
  LeasedReserveAndNotify consumer(*store, provider, clock, Owner("A"), env.options.lock_max_age);
  const TimePoint claimed_at = clock.Now();
  consumer.before_send = [&] {
    const milliseconds every = RenewEvery(env.options.lock_max_age);
    bool redelivered = false;
    for (milliseconds t = every; t <= kLongWork; t += every) {
      if (!redelivered && t > kDuringLongWork) {
        clock.Set(claimed_at + kDuringLongWork);
        env.recorder.MarkTime("t=" + FormatDuration(kDuringLongWork));
        DeliverB(env, clock, provider, m, dune, 2, part);
        redelivered = true;
      }
      clock.Set(claimed_at + t);
      env.recorder.MarkTime("t=" + FormatDuration(t));
      if (consumer.Renew(m)) ++*renewals;
    }
    if (!redelivered) {
      // The last renewal may have set the clock there already: one mark for one moment.
      if (clock.Now() != claimed_at + kDuringLongWork) {
        clock.Set(claimed_at + kDuringLongWork);
        env.recorder.MarkTime("t=" + FormatDuration(kDuringLongWork));
      }
      DeliverB(env, clock, provider, m, dune, 2, part);
    }
    clock.Set(claimed_at + kLongWork);
    env.recorder.MarkTime("t=" + FormatDuration(kLongWork));
  };
  part.first_outcome = std::string(ToString(consumer.Handle(m).outcome));
  NoteOutcome(*store, part.first_outcome, SoFar(env, provider, dune));
  part.emails = provider.sent_count();
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

// The owner stops before its send, past its lease, renewing nothing; then resumes.
Part PausedOwner(ScenarioEnv& env, ManualClock& clock) {
  env.recorder.BeginPart(fmt::format("owner paused {}", FormatDuration(kPause)));
  StockItem dune = Restock(env);
  OrderPlaced m = NewOrder(env, dune);
  InMemoryEmailProvider provider;
  Part part;
  std::unique_ptr<Store> store = OpenStore(env, "A", Delivered(m, 1));
  LeasedReserveAndNotify consumer(*store, provider, clock, Owner("A"), env.options.lock_max_age);
  const TimePoint claimed_at = clock.Now();
  consumer.before_send = [&] {
    store->Note("pause", FormatDuration(kPause), "stopped, renewing nothing");
    clock.Set(claimed_at + kDuringPause);
    env.recorder.MarkTime("t=" + FormatDuration(kDuringPause));
    DeliverB(env, clock, provider, m, dune, 2, part);
    clock.Set(claimed_at + kPause);
    env.recorder.MarkTime("t=" + FormatDuration(kPause));
    store->Note("resume", "after " + FormatDuration(kPause), "goes on where it stopped");
  };
  part.first_outcome = std::string(ToString(consumer.Handle(m).outcome));
  NoteOutcome(*store, part.first_outcome, SoFar(env, provider, dune));
  part.emails = provider.sent_count();
  part.reserved = CurrentStock(env, dune).reserved;
  return part;
}

Outcome Run(ScenarioEnv& env) {
  ManualClock clock(env.clock.Now());
  Part dead = DeadOwner(env, clock);
  clock.Advance(std::chrono::hours(1));
  int64_t renewals = 0;
  Part live = LiveOwner(env, clock, &renewals);
  clock.Advance(std::chrono::hours(1));
  Part paused = PausedOwner(env, clock);

  Outcome out;
  out.figures["lockMaxAge"] = FormatDuration(env.options.lock_max_age);
  out.figures["killed"] = ToJson(dead);
  out.figures["keptAlive"] = ToJson(live);
  out.figures["keptAlive"]["renewals"] = renewals;
  out.figures["paused"] = ToJson(paused);
  out.figures["takeovers"] = dead.takeovers + live.takeovers + paused.takeovers;
  out.figures["emailsSent"] = paused.emails;
  out.figures["reserved"] = paused.reserved;
  auto list = [](const std::vector<std::string>& v) {
    return fmt::format("{}", fmt::join(v, ", "));
  };
  out.line = fmt::format(
      "{}lease {} -> owner killed, redelivered: {}; {}, {}; owner renewing: {}, {}; owner "
      "paused {}: {}, then {}; {}, {}",
      TagColumn("orphan-claim"), FormatDuration(env.options.lock_max_age), list(dead.redeliveries),
      JudgedEmails(dead.emails), JudgedReserved("Dune", dead.reserved, env.options.quantity),
      list(live.redeliveries), JudgedEmails(live.emails), FormatDuration(kPause),
      list(paused.redeliveries), paused.first_outcome, JudgedEmails(paused.emails),
      JudgedReserved("Dune", paused.reserved, env.options.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  const milliseconds lease = o.lock_max_age;
  // Killed: each redelivery backs off until one comes at or after the expiry.
  nlohmann::json redeliveries = nlohmann::json::array();
  bool taken = false;
  for (milliseconds at : kRedeliveries) {
    taken = at >= lease;
    redeliveries.push_back(taken ? "TakenOver" : "BackedOff");
    if (taken) break;
  }
  const int64_t q = o.quantity;
  nlohmann::ordered_json killed = {{"redeliveries", redeliveries},
                                   {"takeovers", taken ? 1 : 0},
                                   {"emailsSent", taken ? 1 : 0},
                                   {"reserved", taken ? q : 0},
                                   {"firstOwner", "Killed"}};
  // Renewing: the lease never lapses, the redelivery backs off.
  nlohmann::ordered_json kept = {{"redeliveries", {"BackedOff"}},
                                 {"takeovers", 0},
                                 {"emailsSent", 1},
                                 {"reserved", q},
                                 {"firstOwner", "Done"},
                                 {"renewals", kLongWork / RenewEvery(lease)}};
  // Paused: taken over if the lease lapsed before the redelivery; then the owner resumes.
  const bool lapsed = kDuringPause >= lease;
  nlohmann::ordered_json paused = {{"redeliveries", {lapsed ? "TakenOver" : "BackedOff"}},
                                   {"takeovers", lapsed ? 1 : 0},
                                   {"emailsSent", lapsed ? 2 : 1},
                                   {"reserved", q},
                                   {"firstOwner", lapsed ? "LeaseLost" : "Done"}};
  return {{"lockMaxAge", FormatDuration(lease)},
          {"killed", killed},
          {"keptAlive", kept},
          {"paused", paused},
          {"takeovers", (taken ? 1 : 0) + (lapsed ? 1 : 0)},
          {"emailsSent", lapsed ? 2 : 1},
          {"reserved", q}};
}

}  // namespace
}  // namespace orphan_claim_file

const Scenario kOrphanClaimScenario{
    .name = "orphan-claim",
    .tag = "orphan-claim",
    .summary = "a claim whose owner died: a lease lets a redelivery take it over, and its hazard",
    .in_post = false,
    .traits = kHasLockMaxAge | kAnyBackend,
    .run = &orphan_claim_file::Run,
    .expected = &orphan_claim_file::Expected,
    .lesson =
        "A claim committed ahead of the work (the email consumer's \"in progress\" row) outlives "
        "an owner that dies: every redelivery finds it in progress and can only report "
        "NeedsReconciliation, forever. Here the claim carries its owner and a lease (Owner, "
        "LeaseExpiresAt, --lock-max-age). The owner completes with one guarded transaction: mark "
        "the row completed where Owner is still itself, and reserve the stock.\n"
        "\n"
        "First the owner, a child process, claims the order and is killed (SIGKILL) before it "
        "sends. The broker redelivers 10 s and 60 s later on the simulated clock. A redelivery "
        "that finds the lease still running backs off; the first one after it expired takes the "
        "claim over (a compare-and-set on the owner and expiry it read), sends the email and "
        "reserves: the order is finished once.\n"
        "\n"
        "Second, a live owner whose work takes 45 s, longer than the lease: it renews the lease as "
        "it goes (keep-alive), so the redelivery at 40 s backs off. Third, the hazard: an owner "
        "that is only paused (stopped for 90 s, renewing nothing) is indistinguishable from a dead "
        "one. The redelivery at 60 s takes the claim over and sends; then the owner resumes where "
        "it stopped and sends again. Its guarded completion fails (LeaseLost), so the stock is "
        "reserved once, but two emails went out. A lease fences what the database can check, not "
        "an email already in flight.",
    .hook_points =
        "BeforeSend: the owner is killed there (a real SIGKILL), works there renewing its lease, "
        "or is paused there",
    .try_next =
        "A lease longer than the pause: the paused owner keeps its claim, one email; but the\n"
        "killed owner's claim now outlasts both redeliveries, and that order is not finished:\n"
        "  dedupsim run orphan-claim --lock-max-age 2m --trace\n"
        "A short lease: the first redelivery after the death already takes over:\n"
        "  dedupsim run orphan-claim --lock-max-age 5s",
};
const LessonRegistration kOrphanClaimLesson{kOrphanClaimScenario,
                                            {.rank = 210, .theme = Theme::kConcurrency}};

}  // namespace dedupsim
