// Pieces every scenario uses: stocking Dune, making the order, opening a traced
// connection, reading the figures back.
#pragma once

#include <string>
#include <vector>

#include "message.h"
#include "scenario.h"
#include "schema.h"
#include "side_store.h"
#include "sqlite/connection.h"
#include "store/store.h"

namespace dedupsim {

// Empties the database and stocks one book, Dune, 10 on hand (as the post's ResetAsync).
StockItem Restock(ScenarioEnv& env);
// Stocks one more book beside the restocked one, on the scenario's backend.
void AddStock(ScenarioEnv& env, const StockItem& item);
// A new OrderPlaced for the book, with fresh message and order ids.
OrderPlaced NewOrder(ScenarioEnv& env, const StockItem& book);
// A new connection whose statements are traced under `instance`, for one delivery: its
// "open" step marks where the delivery begins in the diagram and the timeline.
Connection OpenTraced(ScenarioEnv& env, const std::string& instance);
// The same through the scenario's backend (env.backend, or SQLite on env.db): a store on a
// new connection, traced under `instance`, with the same "open" step.
std::unique_ptr<Store> OpenStore(ScenarioEnv& env, const std::string& instance);
// The number of rows in a table of the scenario's backend.
int64_t BackendRows(ScenarioEnv& env, std::string_view table);
// A new connection to a side store (cache, provider), traced under `instance`.
Connection OpenTraced(ScenarioEnv& env, const SideStore& store, const std::string& instance);
// The book's row as it is in the database now.
StockItem CurrentStock(ScenarioEnv& env, const StockItem& book);
// Rows in a table of the main database now.
int64_t CurrentRows(ScenarioEnv& env, std::string_view table);
// "True, False, False": C#'s spelling, as the post prints a list of results.
std::string BoolList(const std::vector<bool>& values);

}  // namespace dedupsim
