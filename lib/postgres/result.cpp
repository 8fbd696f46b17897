#include "postgres/result.h"

#include <libpq-fe.h>

#include <cstdlib>

namespace dedupsim {

PgResult::PgResult(pg_result* result) : result_(result) {}
PgResult::~PgResult() {
  if (result_) PQclear(result_);
}
PgResult::PgResult(PgResult&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (result_) PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}
int PgResult::rows() const { return result_ ? PQntuples(result_) : 0; }
std::optional<std::string> PgResult::Get(int row, int column) const {
  if (!result_ || row >= rows() || PQgetisnull(result_, row, column)) return std::nullopt;
  return std::string(PQgetvalue(result_, row, column));
}
std::string PgResult::Text(int row, int column) const { return Get(row, column).value_or(""); }
int64_t PgResult::Int(int row, int column) const {
  return std::strtoll(Text(row, column).c_str(), nullptr, 10);
}
int64_t PgResult::affected() const {
  const char* n = result_ ? PQcmdTuples(result_) : nullptr;
  return (n && *n) ? std::strtoll(n, nullptr, 10) : 0;
}

std::string_view PgResult::command() const { return result_ ? PQcmdStatus(result_) : ""; }

}  // namespace dedupsim
