// Errors of the PostgreSQL layer: a failed statement keeps its SQLSTATE, classified by the
// store's one funnel (23505 duplicate key, 40001/40P01 retryable, 25P02 aborted).
#pragma once

#include <string>

#include "store/error.h"

namespace dedupsim {

class PgError : public StoreError {
 public:
  PgError(const std::string& sqlstate, const std::string& message)
      : StoreError(ClassifySqlstate(sqlstate), sqlstate, message) {}
  const std::string& sqlstate() const { return backend_code(); }
};

}  // namespace dedupsim
