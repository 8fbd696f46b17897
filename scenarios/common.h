// Pieces every scenario uses: stocking Dune, making the order, opening a traced
// connection, reading the figures back.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/message.h"
#include "lesson/scenario.h"
#include "world/broker/broker.h"
#include "store/side_store.h"
#include "store/store.h"

namespace dedupsim {

// Empties the database and stocks one book, Dune, 10 on hand (as the post's ResetAsync).
StockItem Restock(ScenarioEnv& env);
// The same, with one more book of each title beside Dune, 10 on hand each, in one reset
// step: Dune first, then the others in order. also_emptied: what the lesson emptied outside
// the database for this reset, as it read it back ("the key store (3 keys)"), said with the
// tables the reset emptied.
std::vector<StockItem> Restock(ScenarioEnv& env, const std::vector<std::string>& more_titles,
                               const std::vector<std::string>& also_emptied = {});
// A new OrderPlaced for the book, with fresh message and order ids.
OrderPlaced NewOrder(ScenarioEnv& env, const StockItem& book);
// A new queue on the scenario's broker (env.brokers, or the simulated one), empty, with these
// options; clock: the simulation's time, when the lesson runs on a clock of its own.
std::unique_ptr<Broker> OpenBroker(ScenarioEnv& env, const BrokerOptions& options,
                                   Clock* clock = nullptr);
// The next delivery the lesson waits for; throws BrokerError when the broker says none will
// come (a lesson's story needs it: its absence is the broker's behaviour, reported).
Delivery ReceiveNext(Broker& broker, const std::string& what);
// What the broker said about each delivery a lesson received, for the figures.
class DeliveryLog {
 public:
  void Add(const Delivery& d);
  size_t size() const { return counts_.size(); }
  // {"server", "deliveryCounts", "redelivered", "deliveryTags"}: the broker's own words.
  nlohmann::ordered_json Figures(const Broker& broker) const;

 private:
  std::vector<int> counts_;
  std::vector<bool> redelivered_;
  std::vector<int64_t> tags_;
};
// How a lesson of one message begins: Dune restocked, one order for it sent through a new
// queue of the scenario's broker, and its first delivery received (`what` names it, as
// ReceiveNext) and logged.
struct OneOrder {
  StockItem book;
  OrderPlaced message;
  std::unique_ptr<Broker> broker;
  DeliveryLog log;
  Delivery first;
};
OneOrder SendOneOrder(ScenarioEnv& env, const std::string& what);
// A new connection to a side store (cache, provider), traced under `instance`; target
// names the store in pictures ("cache", "email provider"); delivery as for the database.
std::unique_ptr<SideRecords> OpenTraced(ScenarioEnv& env, const SideStore& store,
                                        const std::string& instance, const std::string& target,
                                        DeliveryRef delivery = {});
// The simulated email provider's own connection to its records (SentEmails, its requests):
// its steps are the provider's (kActorEmailProvider), not those of the consumer calling it.
std::unique_ptr<SideRecords> OpenProvider(ScenarioEnv& env, const SideStore& store);
// Marks store (opened by RunInstances) as working on delivery: its "open" step and the rest.
void BeginDelivery(Store& store, DeliveryRef delivery);
// A store on the scenario's backend traced under instance, working on no delivery yet and
// with no "open" step: for an instance connected before its delivery begins (BeginDelivery).
std::unique_ptr<Store> OpenQuietStore(ScenarioEnv& env, const std::string& instance);
// "delivery n of message", for scenarios that deliver by hand (no Broker).
DeliveryRef Delivered(const OrderPlaced& message, int n);
// A store on the scenario's backend (env.backend), on a new connection whose statements are
// traced under `instance`, for one delivery: its "open" step marks where the delivery begins
// in the diagram and the timeline. Its steps carry `delivery` (the scenario playing the
// broker numbers it), or else the delivery a Broker just handed out
// (Recorder::OfferDelivery), or none.
std::unique_ptr<Store> OpenStore(ScenarioEnv& env, const std::string& instance,
                                 DeliveryRef delivery = {});
// A store on the scenario's backend whose statements are not traced: for reading figures
// back (the run's own connection, never a consumer's step).
std::unique_ptr<Store> OpenUntraced(ScenarioEnv& env);
// A store of a non-consumer actor (cleanup, operator, ...) traced under instance, on the
// scenario's backend.
std::unique_ptr<Store> OpenActorStore(ScenarioEnv& env, const std::string& instance,
                                      const std::string& actor);
// The scenario's own store for its checks (counting rows, reading Reserved while the story
// goes on): traced as the probe, never as a consumer step.
std::unique_ptr<Store> OpenProbeStore(ScenarioEnv& env);
// The number of rows in a table of the scenario's backend, read by the scenario's probe
// (traced as the probe, as OpenProbeStore, on either backend).
int64_t ProbeRows(ScenarioEnv& env, std::string_view table);
// Records what the consumer made of its delivery ("Processed", "Skipped",
// "NeedsReconciliation", "AlreadySent"), on its connection or store, with the business's
// verdict on it where the scenario knows it: kVerdictRight (the order took effect once, a
// duplicate was refused, a half-done send was flagged), kVerdictWrong (it took effect again,
// or a message was lost or silenced), or "" (not judged). A judged outcome is noted only
// once the delivery's transaction ended (its locks released): its verdict was read back on
// an untraced connection of its own, which is no step of the lesson and waits for no lock
// the delivery holds; throws std::logic_error when store is still in a transaction.
void NoteOutcome(Session& store, std::string_view outcome, const char* verdict = "");
// The same for a delivery whose end was seen apart from store's own steps (its work died in
// a child process, or threw), stamped now, when it was seen, not at store's last step.
void NoteOutcomeSeenNow(ScenarioEnv& env, Session& store, std::string_view outcome,
                        const char* verdict);
// "Processed" or "Skipped" for an inbox-style consumer. Right either way when the delivery
// is a copy of one message the key guards: once processed, every other copy skipped. The
// caller that knows the delivery went wrong says so with NoteOutcome.
inline void NoteProcessed(Session& store, bool processed, const char* verdict = "") {
  NoteOutcome(store, processed ? "Processed" : "Skipped", verdict);
}
// The business's verdict on an order for book after a delivery, read from the database now
// (untraced): kVerdictRight when Reserved holds `once` (the order took effect once), else
// kVerdictWrong (reserved again, or lost). From the scenario's own thread only.
const char* ReservedVerdict(ScenarioEnv& env, const StockItem& book, int64_t once);
// The same read through a store of its own (untraced), for a delivery in a thread or a
// forked process of a racing pair.
const char* ReservedVerdictApart(ScenarioEnv& env, const std::string& book_id, int64_t once);
// The same for a delivery of one order m (its copies included): right when m's book holds
// m's quantity, the order taken once.
inline const char* ReservedVerdictApart(ScenarioEnv& env, const OrderPlaced& m) {
  return ReservedVerdictApart(env, m.book_id, m.quantity);
}
// Delivers message `deliveries` times through a simulated broker of its own (a lesson
// without kRealBroker), as the post's lessons do on theirs: each delivery but the last is processed and its ack lost on the way back, so the
// broker delivers it again. handle runs each delivery on a new store traced as A.
void DeliverWithLostAcks(ScenarioEnv& env, const OrderPlaced& message, int deliveries,
                         const std::function<void(Store& store, int delivery)>& handle);
// How a planned crash turned out, for a line: `planned` ("crash after send") when the
// delivery died at its crash point, else "no crash at <point> (the delivery ended first)".
std::string CrashPhrase(bool crashed, std::string_view planned, std::string_view point);
// The book's row as it is in the database now.
StockItem CurrentStock(ScenarioEnv& env, const StockItem& book);
// Rows in a table of the scenario's database now (its backend's), read untraced.
int64_t CurrentRows(ScenarioEnv& env, std::string_view table);
// "True, False, False": C#'s spelling, as the post prints a list of results.
std::string BoolList(const std::vector<bool>& values);

}  // namespace dedupsim
