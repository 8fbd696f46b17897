#include "common.h"

namespace dedupsim {

StockItem Restock(ScenarioEnv& env) {
  StockItem dune{env.ids.Next(), "Dune", 10, 0};
  Connection connection = env.db.Connect();
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

StockItem CurrentStock(ScenarioEnv& env, const StockItem& book) {
  Connection connection = env.db.Connect();
  return ReadStock(connection, book.book_id);
}

}  // namespace dedupsim
