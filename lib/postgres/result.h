// One answer of the server: RAII over libpq's PGresult. A PgResult owns its result and
// clears it when destroyed; it moves, never copies. Used by the thread that holds its
// connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct pg_result;

namespace dedupsim {

// A result: rows of text values (NULL as nullopt), or the rows an INSERT/UPDATE changed.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* result);  // takes ownership (null: an empty result)
  ~PgResult();
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const;
  std::optional<std::string> Get(int row, int column) const;
  std::string Text(int row, int column) const;  // "" for NULL
  int64_t Int(int row, int column) const;
  int64_t affected() const;          // rows changed (PQcmdTuples)
  std::string_view command() const;  // the command tag: "COMMIT", "ROLLBACK", "INSERT 0 1"

 private:
  pg_result* result_ = nullptr;
};

}  // namespace dedupsim
