// Pieces every scenario uses: stocking Dune, making the order, opening a traced
// connection, reading the figures back.
#pragma once

#include <string>
#include <vector>

#include "core/message.h"
#include "lesson/scenario.h"
#include "world/broker/broker.h"
#include "sqlite/connection.h"
#include "sqlite/schema.h"
#include "sqlite/side_store.h"
#include "store/store.h"

namespace dedupsim {

// Empties the database and stocks one book, Dune, 10 on hand (as the post's ResetAsync).
StockItem Restock(ScenarioEnv& env);
// Stocks one more book beside the restocked one, on the scenario's backend.
void AddStock(ScenarioEnv& env, const StockItem& item);
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
// A new connection whose statements are traced under `instance`, for one delivery: its
// "open" step marks where the delivery begins in the diagram and the timeline. Its steps
// carry `delivery` (the scenario playing the broker numbers it), or else the delivery a
// Broker just handed out (Recorder::OfferDelivery), or none.
Connection OpenTraced(ScenarioEnv& env, const std::string& instance, DeliveryRef delivery = {});
// A new connection of a non-consumer actor (cleanup, operator, ...) traced under instance.
Connection OpenActor(ScenarioEnv& env, const std::string& instance, const std::string& actor);
// A new connection to a side store (cache, provider), traced under `instance`; target
// names the store in pictures ("cache", "email provider"); delivery as for the database.
Connection OpenTraced(ScenarioEnv& env, const SideStore& store, const std::string& instance,
                      const std::string& target, DeliveryRef delivery = {});
// The scenario's own connection for its checks (counting rows, reading Reserved while the
// story goes on): traced as the probe, never as a consumer step.
Connection OpenProbe(ScenarioEnv& env);
// Marks db (opened by RunInstances) as working on delivery: its "open" step and the rest.
void BeginDelivery(Connection& db, DeliveryRef delivery);
// "delivery n of message", for scenarios that deliver by hand (no Broker).
DeliveryRef Delivered(const OrderPlaced& message, int n);
// The same through the scenario's backend (env.backend): a store on a
// new connection, traced under `instance`, with the same "open" step and delivery.
std::unique_ptr<Store> OpenStore(ScenarioEnv& env, const std::string& instance,
                                 DeliveryRef delivery = {});
// A store on the scenario's backend whose statements are not traced: for reading figures
// back (the run's own connection, never a consumer's step).
std::unique_ptr<Store> OpenUntraced(ScenarioEnv& env);
// A store of a non-consumer actor (cleanup, operator, ...) traced under instance, on the
// scenario's backend: OpenActor's store.
std::unique_ptr<Store> OpenActorStore(ScenarioEnv& env, const std::string& instance,
                                      const std::string& actor);
// The scenario's own store for its checks, traced as the probe: OpenProbe's store.
std::unique_ptr<Store> OpenProbeStore(ScenarioEnv& env);
// The number of rows in a table of the scenario's backend, read by the scenario's probe
// (traced as the probe on SQLite, as OpenProbe).
int64_t ProbeRows(ScenarioEnv& env, std::string_view table);
// Records what the consumer made of its delivery ("Processed", "Skipped",
// "NeedsReconciliation", "AlreadySent"), on its connection or store.
void NoteOutcome(Connection& db, std::string_view outcome);
void NoteOutcome(Session& store, std::string_view outcome);
inline void NoteProcessed(Connection& db, bool processed) {
  NoteOutcome(db, processed ? "Processed" : "Skipped");
}
inline void NoteProcessed(Session& store, bool processed) {
  NoteOutcome(store, processed ? "Processed" : "Skipped");
}
// The book's row as it is in the database now.
StockItem CurrentStock(ScenarioEnv& env, const StockItem& book);
// Rows in a table of the scenario's database now (its backend's), read untraced.
int64_t CurrentRows(ScenarioEnv& env, std::string_view table);
// "True, False, False": C#'s spelling, as the post prints a list of results.
std::string BoolList(const std::vector<bool>& values);

}  // namespace dedupsim
