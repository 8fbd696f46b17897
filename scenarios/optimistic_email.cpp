// optimistic-email: the email consumer with the key deciding at commit (optimistic
// concurrency, as claim-last). Two copies at once both send; the loser's insert fails and
// rolls back, but its email is out. The claim-first email consumer, run the same way, sends
// once and flags the second copy.
#include "consumers/optimistic_email.h"

#include <fmt/format.h>

#include <thread>

#include "common.h"
#include "concurrency.h"
#include "consumers/email.h"
#include "lesson/instances.h"
#include "scenarios.h"

namespace dedupsim {
namespace optimistic_email_file {
namespace {

// What one copy did, as its instance reports it (its own provider counts its sends, so the
// count is right in a child process too).
nlohmann::json Report(EmailOutcome outcome, const InMemoryEmailProvider& provider) {
  return {{"outcome", ToString(outcome)}, {"emailsSent", provider.sent_count()}};
}

// Two copies: A holds its work for --hold-ms at the hook handle installs, B starts after
// --stagger-ms. `handle(db, provider, hook)` runs one copy with the hook installed.
template <typename Handle>
PairOutcome RunCopies(ScenarioEnv& env, Handle handle) {
  auto task = [handle](const char* name) {
    return StoreTask{name, {}, [handle](Store& db, const Hook& hold_point) -> nlohmann::json {
                       InMemoryEmailProvider provider;
                       const EmailOutcome outcome = handle(db, provider, hold_point);
                       // Right when the copy's sends, read back from its provider, are what
                       // its outcome says: one email for Sent, none for a copy that found
                       // another's record (the optimistic loser sent one, then said
                       // AlreadySent: the order's second email).
                       const bool right =
                           provider.sent_count() == (outcome == EmailOutcome::kSent ? 1 : 0);
                       NoteOutcome(db, ToString(outcome), right ? kVerdictRight : kVerdictWrong);
                       return Report(outcome, provider);
                     }};
  };
  // B need not meet a lock of A's here: A goes on at its hold point + --hold-ms regardless.
  PairOutcome pair = RunStorePair(
      env, task("A"), task("B"),
      PairTiming{.hold = env.options.hold, .stagger = env.options.stagger, .second_blocks = false});
  pair.first_processed = pair.first.value["outcome"] == ToString(EmailOutcome::kSent);
  pair.second_processed = pair.second.value["outcome"] == ToString(EmailOutcome::kSent);
  return pair;
}

int64_t Emails(const PairOutcome& p) {
  return p.first.value["emailsSent"].get<int64_t>() + p.second.value["emailsSent"].get<int64_t>();
}

nlohmann::json Outcomes(const PairOutcome& p) {
  return {p.first.value["outcome"], p.second.value["outcome"]};
}

Outcome Run(ScenarioEnv& env) {
  // Optimistic: each copy sends, then inserts its completed row; A holds before commit.
  env.recorder.BeginPart("optimistic: send, then insert the key");
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  PairOutcome optimistic =
      RunCopies(env, [&env, message](Store& db, EmailProvider& provider, const Hook& hold) {
        OptimisticEmailSender consumer(db, provider, env.clock);
        consumer.before_commit = hold;
        return consumer.Handle(message).outcome;
      });
  const int64_t optimistic_rows = CurrentRows(env, "Inbox");

  // Claim first (the post's email consumer): A holds after its send, before completing.
  env.recorder.BeginPart("claim first, then send");
  OrderPlaced second = NewOrder(env, Restock(env));
  PairOutcome claim_first =
      RunCopies(env, [&env, second](Store& db, EmailProvider& provider, const Hook& hold) {
        SendStockReservedEmail consumer(db, provider, env.clock);
        consumer.after_send = hold;
        return consumer.Handle(second);
      });

  Outcome out;
  out.figures["instances"] = ToString(env.options.instances);
  out.figures["holdMs"] = env.options.hold.count();
  out.figures["staggerMs"] = env.options.stagger.count();
  out.figures["optimisticOutcomes"] = Outcomes(optimistic);
  out.figures["optimisticEmails"] = Emails(optimistic);
  out.figures["optimisticInboxRows"] = optimistic_rows;
  out.figures["claimFirstOutcomes"] = Outcomes(claim_first);
  out.figures["claimFirstEmails"] = Emails(claim_first);
  out.figures["emailsSent"] = Emails(optimistic);
  AddWaitFigures(env, optimistic, out.figures);
  out.line = fmt::format(
      "{}two copies at once -> key decides at commit: {}, {}, {}; claim first: {}, {}, {}",
      TagColumn("optimistic-email"), optimistic.first.value["outcome"].get<std::string>(),
      // The second copy's outcome, right when the order's email went out once: counted by
      // each copy's provider, read back after both.
      Judged(optimistic.second.value["outcome"].get<std::string>(), Emails(optimistic) == 1),
      JudgedEmails(Emails(optimistic)), claim_first.first.value["outcome"].get<std::string>(),
      Judged(claim_first.second.value["outcome"].get<std::string>(), Emails(claim_first) == 1),
      JudgedEmails(Emails(claim_first)));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  nlohmann::ordered_json expected = {{"optimisticInboxRows", 1}, {"claimFirstEmails", 1}};
  auto margin = std::chrono::milliseconds(50);
  if (o.hold >= o.stagger + margin) {
    // B looks while A's row is uncommitted: both send; B loses at commit.
    expected["optimisticOutcomes"] = {"Sent", "AlreadySent"};
    expected["optimisticEmails"] = 2;
    expected["claimFirstOutcomes"] = {"Sent", "NeedsReconciliation"};
    expected["emailsSent"] = 2;
  }
  if (o.stagger >= o.hold + margin) {
    // A has committed before B looks: B finds the row and sends nothing, either way.
    expected["optimisticOutcomes"] = {"Sent", "AlreadySent"};
    expected["optimisticEmails"] = 1;
    expected["claimFirstOutcomes"] = {"Sent", "AlreadySent"};
    expected["emailsSent"] = 1;
  }
  expected.update(ExpectedWait(o));
  return expected;
}

}  // namespace
}  // namespace optimistic_email_file

const Scenario kOptimisticEmailScenario{
    .name = "optimistic-email",
    .tag = "optimistic-email",
    .summary = "optimistic concurrency around an email: both copies send, the key decides too late",
    .in_post = false,
    .traits = kHasInstances | kHasHold | kAnyBackend,
    .run = &optimistic_email_file::Run,
    .expected = &optimistic_email_file::Expected,
    .lesson =
        "Optimistic concurrency lets every copy run the handler and leaves the decision to the "
        "commit: the email consumer looks for a completed Inbox row, and if there is none it sends "
        "the email and inserts its completed row in one transaction. claim-last does the same for "
        "the stock, and there it is harmless, because the loser's stock update rolls back with its "
        "transaction.\n"
        "\n"
        "An email does not roll back. Two copies reach instances A and B; A sends, inserts its row "
        "and holds before commit (--hold-ms); B starts later (--stagger-ms), finds no committed "
        "row, sends too, and waits at its insert. When A commits, B's insert fails on the key and "
        "B rolls back: the Inbox holds one row, and the customer has two emails.\n"
        "\n"
        "The scenario then runs the post's email consumer the same way. It claims first: its \"in "
        "progress\" row is committed before the send, so B finds it and reports "
        "NeedsReconciliation instead of sending. One email. For a side effect outside the "
        "database, the claim must be taken, and seen by others, before the effect happens.",
    .hook_points =
        "BeforeCommit (optimistic) and AfterSend (claim first): instance A holds there for "
        "--hold-ms",
    .try_next =
        "Let A commit before B looks, and both consumers send once:\n"
        "  dedupsim run optimistic-email --hold-ms 0 --trace\n"
        "Let the explorer find every schedule that sends twice:\n"
        "  dedupsim explore --strategy optimistic-email --strategy email --fault concurrent",
};
const LessonRegistration kOptimisticEmailLesson{kOptimisticEmailScenario,
                                                {.rank = 220, .theme = Theme::kSideEffects}};

}  // namespace dedupsim
