// The bench's strategies on PostgreSQL: the registry's consumers on a PgStore (the
// storage seam, PgSession), and the raw baseline, the inbox's SQL written by hand on libpq. Each
// handler opens its own connection to the PgDatabase (in the thread or process that uses
// it, after any fork), sets the session's synchronous_commit and reads it back from the
// server. Also what a run does to the schema before and after: stock the workload's books
// (every table of the run emptied first) and read back what was applied.
#pragma once

#include <memory>
#include <string>

#include "bench/strategy.h"
#include "bench/workload.h"

namespace dedupsim {

class PgDatabase;

// Every strategy runs on PostgreSQL: a consumer of the registry on a PgStore, the raw
// baseline on libpq. Throws DatabaseError (PgError) when the server cannot be reached.
std::unique_ptr<StrategyHandler> MakePgHandler(BenchStrategy strategy, const PgDatabase& db,
                                               bool synchronous_commit);

// Empties Inbox, InboxByMessageId, StockReservations and StockItems of db's schema (all
// dedupsim's own, checked when db was opened) and stocks the workload's books.
void StockBooks(const PgDatabase& db, const Workload& workload);

// What db's StockItems say was applied, as CheckEffects reads a SQLite file.
EffectCheck CheckEffects(const PgDatabase& db, const Workload& workload,
                         const std::unordered_set<std::string>* unacked_orders = nullptr);

// A text[] literal of the values, for one statement that takes many rows (unnest($1)).
std::string PgTextArray(const std::vector<std::string>& values);

}  // namespace dedupsim
