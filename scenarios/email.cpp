// email: a side effect outside the transaction, with a two-phase record. A crash after
// the send leaves the row in progress; the redelivery reports NeedsReconciliation.
#include <fmt/format.h>

#include "common.h"
#include "consumers/email.h"
#include "crash.h"
#include "scenarios.h"

namespace dedupsim {
namespace {

Outcome Run(ScenarioEnv& env) {
  StockItem dune = Restock(env);
  OrderPlaced message = NewOrder(env, dune);
  InMemoryEmailProvider provider;
  CrashReport crash = RunCrashingDelivery(
      env, "A", "AfterSend",
      [&](const Hook& hook) {
        Connection db = OpenTraced(env, "A");
        SendStockReservedEmail consumer(db, provider, env.clock);
        consumer.after_send = hook;
        consumer.Handle(message);
      },
      &provider);
  EmailOutcome redelivered;
  {
    Connection db = OpenTraced(env, "A");
    redelivered = SendStockReservedEmail(db, provider, env.clock).Handle(message);
  }
  Outcome out;
  out.figures["crashed"] = crash.crashed;
  out.figures["crashMode"] = ToString(env.options.crash_mode);
  out.figures["emailsSent"] = provider.sent_count();
  out.figures["secondDelivery"] = ToString(redelivered);
  out.figures["reserved"] = CurrentStock(env, dune).reserved;
  out.line = fmt::format("{}crash after send, redelivered -> emails sent: {}, second delivery: {}",
                         TagColumn("email"), provider.sent_count(), ToString(redelivered));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions&) {
  return {{"crashed", true}, {"emailsSent", 1}, {"secondDelivery", "NeedsReconciliation"}};
}

}  // namespace

const Scenario kEmailScenario{
    "email", "email",
    "two-phase record around an email: a crash after send is flagged, not resent",
    true, kHasCrash, &Run, &Expected};

}  // namespace dedupsim
