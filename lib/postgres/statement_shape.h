// What a statement of ours does, read from its text, for the trace: its operation (BEGIN,
// COMMIT, ROLLBACK, SELECT, INSERT, UPDATE, DELETE, OTHER) and the table it writes, else the
// first it reads. SQLite's authorizer tells the SQLite layer this at prepare time; libpq has
// no such hook, and the PostgreSQL layer's statements are fixed texts of its own, never a
// user's SQL: this reading is for them only. Pure functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace dedupsim {

struct StatementShape {
  std::string op;     // BEGIN, COMMIT, ROLLBACK, SELECT, INSERT, UPDATE, DELETE, OTHER
  std::string table;  // the table it writes, else the first it reads; "" for none
  bool may_update = false;  // an INSERT with ON CONFLICT ... DO UPDATE
};

// The shape of sql. START TRANSACTION reads as BEGIN; ROLLBACK TO (a savepoint's), SAVEPOINT,
// RELEASE, SET and any other command as OTHER, as SQLite's reading has them.
StatementShape ShapeOf(std::string_view sql);

// One of our tables' names as the schema spells it ("StockItems") for the name the server
// reports, folded to lower case ("stockitems"); any other name as it came.
std::string CanonicalTableName(const std::string& folded);

}  // namespace dedupsim
