#include "common.h"

#include <fmt/format.h>

#include "database_setup.h"

namespace dedupsim {

StockItem Restock(ScenarioEnv& env) {
  StockItem dune{env.ids.Next(), "Dune", 10, 0};
  Connection connection = env.db.Connect();
  SetUpWithoutFsync(connection, env.db.temporary());  // dedupsim's set-up, not the lesson's
  ResetInventory(connection, dune);
  return dune;
}

OrderPlaced NewOrder(ScenarioEnv& env, const StockItem& book) {
  return OrderPlaced{env.ids.Next(), env.ids.Next(), book.book_id, env.options.quantity};
}

Connection OpenTraced(ScenarioEnv& env, const std::string& instance, DeliveryRef delivery) {
  Connection connection = env.db.Connect();
  connection.SetTrace(&env.recorder, instance);
  if (delivery.number == 0) delivery = env.recorder.TakeOfferedDelivery();
  connection.SetDelivery(std::move(delivery));
  // Each delivery opens its own connection; the views start a delivery at this step.
  connection.Note("open", "new connection", "ok");
  return connection;
}

Connection OpenActor(ScenarioEnv& env, const std::string& instance, const std::string& actor) {
  Connection connection = env.db.Connect();
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
  Connection connection = env.db.Connect();
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

int64_t CurrentRows(ScenarioEnv& env, std::string_view table) {
  Connection connection = env.db.Connect();
  return CountRows(connection, table);
}

std::string BoolList(const std::vector<bool>& values) {
  std::vector<std::string> words;
  for (bool v : values) words.emplace_back(CsBool(v));
  return fmt::format("{}", fmt::join(words, ", "));
}

StockItem CurrentStock(ScenarioEnv& env, const StockItem& book) {
  Connection connection = env.db.Connect();
  return ReadStock(connection, book.book_id);
}

}  // namespace dedupsim
