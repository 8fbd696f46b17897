#include "postgres/connect.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include "postgres/error.h"

namespace dedupsim {

std::string LibpqMessage(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void ThrowFromResult(pg_result* result, pg_conn* conn) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = LibpqMessage(result ? PQresultErrorMessage(result) : PQerrorMessage(conn));
  if (message.empty()) message = LibpqMessage(PQerrorMessage(conn));
  throw PgError(state ? state : "", message);
}

pg_conn* ConnectOrThrow(const std::string& conninfo) {
  pg_conn* conn = PQconnectdb(conninfo.c_str());
  if (conn == nullptr) throw DatabaseError("PostgreSQL: out of memory connecting");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = LibpqMessage(PQerrorMessage(conn));
    PQfinish(conn);
    throw DatabaseError(fmt::format("PostgreSQL: cannot connect ({}): {}", conninfo, message));
  }
  return conn;
}

}  // namespace dedupsim
