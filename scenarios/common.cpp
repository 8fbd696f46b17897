#include "common.h"

#include <fmt/format.h>

#include "sqlite/store.h"

namespace dedupsim {

namespace {

// Runs f on the scenario's backend.
template <typename F>
auto WithBackend(ScenarioEnv& env, F f) {
  return f(env.backend);
}

}  // namespace

StockItem Restock(ScenarioEnv& env) {
  StockItem dune{env.ids.Next(), "Dune", 10, 0};
  WithBackend(env, [&](const Backend& b) {
    b.ResetInventory(dune);
    return 0;
  });
  return dune;
}

std::unique_ptr<Broker> OpenBroker(ScenarioEnv& env, const BrokerOptions& options,
                                   Clock* clock) {
  const BrokerFactory& brokers = env.brokers != nullptr ? *env.brokers : SimulatedBrokers();
  return brokers.Open(clock != nullptr ? *clock : env.clock, options, &env.recorder);
}

Delivery ReceiveNext(Broker& broker, const std::string& what) {
  std::optional<Delivery> d = broker.Receive();
  if (!d) {
    throw BrokerError(fmt::format("{} said it has nothing more to deliver, where the lesson waits for {}",
                                  broker.server(), what));
  }
  return *d;
}

void DeliveryLog::Add(const Delivery& d) {
  counts_.push_back(d.delivery_count);
  redelivered_.push_back(d.redelivered);
  tags_.push_back(d.delivery_tag);
}

nlohmann::ordered_json DeliveryLog::Figures(const Broker& broker) const {
  return {{"server", broker.server()},
          {"deliveryCounts", counts_},
          {"redelivered", redelivered_},
          {"deliveryTags", tags_}};
}

std::unique_ptr<Store> OpenStore(ScenarioEnv& env, const std::string& instance,
                                 DeliveryRef delivery) {
  std::unique_ptr<Store> store =
      WithBackend(env, [&](const Backend& b) { return b.Open(&env.recorder, instance); });
  if (delivery.number == 0) delivery = env.recorder.TakeOfferedDelivery();
  store->SetDelivery(std::move(delivery));
  // Each delivery opens its own connection; the views start a delivery at this step.
  store->Note("open", "new connection", "ok");
  return store;
}

std::unique_ptr<Store> OpenUntraced(ScenarioEnv& env) {
  return WithBackend(env, [](const Backend& b) { return b.Open(nullptr, ""); });
}

std::unique_ptr<Store> OpenActorStore(ScenarioEnv& env, const std::string& instance,
                                      const std::string& actor) {
  std::unique_ptr<Store> store =
      WithBackend(env, [&](const Backend& b) { return b.Open(&env.recorder, instance); });
  store->SetTraceRole(actor, "database");
  return store;
}

std::unique_ptr<Store> OpenProbeStore(ScenarioEnv& env) {
  return OpenActorStore(env, "check", kActorProbe);
}

void AddStock(ScenarioEnv& env, const StockItem& item) {
  WithBackend(env, [&](const Backend& b) {
    b.AddStock(item);
    return 0;
  });
}

int64_t ProbeRows(ScenarioEnv& env, std::string_view table) {
  if (!OnServer(env)) {
    Connection db = OpenProbe(env);
    return CountRows(db, table);
  }
  return env.backend.CountRows(table);
}

OrderPlaced NewOrder(ScenarioEnv& env, const StockItem& book) {
  return OrderPlaced{env.ids.Next(), env.ids.Next(), book.book_id, env.options.quantity};
}

Connection OpenTraced(ScenarioEnv& env, const std::string& instance, DeliveryRef delivery) {
  Connection connection = SqliteFile(env).Connect();
  connection.SetTrace(&env.recorder, instance);
  if (delivery.number == 0) delivery = env.recorder.TakeOfferedDelivery();
  connection.SetDelivery(std::move(delivery));
  // Each delivery opens its own connection; the views start a delivery at this step.
  connection.Note("open", "new connection", "ok");
  return connection;
}

Connection OpenActor(ScenarioEnv& env, const std::string& instance, const std::string& actor) {
  Connection connection = SqliteFile(env).Connect();
  connection.SetTrace(&env.recorder, instance);
  connection.SetTraceRole(actor, "database");
  return connection;
}

Connection OpenTraced(ScenarioEnv& env, const SideStore& store, const std::string& instance,
                      const std::string& target, DeliveryRef delivery) {
  Connection connection = store.Connect();
  connection.SetTrace(&env.recorder, instance);
  connection.SetTraceRole(kActorConsumer, target);
  connection.SetDelivery(std::move(delivery));
  return connection;
}

Connection OpenProbe(ScenarioEnv& env) {
  Connection connection = SqliteFile(env).Connect();
  connection.SetTrace(&env.recorder, "check");
  connection.SetTraceRole(kActorProbe, "database");
  return connection;
}

void BeginDelivery(Connection& db, DeliveryRef delivery) {
  db.SetDelivery(std::move(delivery));
  db.Note("open", "new connection", "ok");
}

DeliveryRef Delivered(const OrderPlaced& message, int n) { return {message.message_id, n}; }

void NoteOutcome(Connection& db, std::string_view outcome) {
  db.Note("outcome", std::string(outcome), "");
}

void NoteOutcome(Session& store, std::string_view outcome) {
  store.Note("outcome", std::string(outcome), "");
}

int64_t CurrentRows(ScenarioEnv& env, std::string_view table) {
  return WithBackend(env, [&](const Backend& b) { return b.CountRows(table); });
}

std::string BoolList(const std::vector<bool>& values) {
  std::vector<std::string> words;
  for (bool v : values) words.emplace_back(CsBool(v));
  return fmt::format("{}", fmt::join(words, ", "));
}

StockItem CurrentStock(ScenarioEnv& env, const StockItem& book) {
  return WithBackend(env, [&](const Backend& b) { return b.ReadStock(book.book_id); });
}

}  // namespace dedupsim
