// Opening a libpq connection and turning libpq's failures into ours: the one place in the
// PostgreSQL layer where a PGconn is opened (a session's connection and its lock watch's
// side connection both come from here) and where a failed result becomes a PgError that
// keeps the SQLSTATE. Private to lib/postgres; callers above use PgConnection.
#pragma once

#include <string>

struct pg_conn;
struct pg_result;

namespace dedupsim {

// Connects with a libpq conninfo string. The caller owns the connection (PQfinish). Throws
// DatabaseError naming conninfo and libpq's reason when the server cannot be reached.
pg_conn* ConnectOrThrow(const std::string& conninfo);

// libpq's message text without its trailing newline and spaces ("" for null).
std::string LibpqMessage(const char* text);

// Throws PgError with result's SQLSTATE and message (the connection's message when the
// result has none, or is null: libpq ran out of memory or lost the server). Does not free
// result: the caller clears it.
[[noreturn]] void ThrowFromResult(pg_result* result, pg_conn* conn);

}  // namespace dedupsim
