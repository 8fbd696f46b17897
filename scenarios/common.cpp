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

Connection OpenTraced(ScenarioEnv& env, const std::string& instance) {
  Connection connection = env.db.Connect();
  connection.SetTrace(&env.recorder, instance);
  // Each delivery opens its own connection; the views start a delivery at this step.
  connection.Note("open", "new connection", "ok");
  return connection;
}

Connection OpenTraced(ScenarioEnv& env, const SideStore& store, const std::string& instance) {
  Connection connection = store.Connect();
  connection.SetTrace(&env.recorder, instance);
  return connection;
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
