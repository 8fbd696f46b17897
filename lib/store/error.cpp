#include "store/error.h"

namespace dedupsim {

std::string_view ToString(StoreErrorKind kind) {
  switch (kind) {
    case StoreErrorKind::kDuplicateKey:
      return "duplicate-key";
    case StoreErrorKind::kRetryable:
      return "retryable";
    case StoreErrorKind::kTransactionAborted:
      return "transaction-aborted";
    case StoreErrorKind::kBusy:
      return "busy";
    case StoreErrorKind::kOther:
      break;
  }
  return "other";
}

StoreErrorKind ClassifySqliteCode(int extended_code) {
  if (extended_code == 1555 || extended_code == 2067) return StoreErrorKind::kDuplicateKey;
  if ((extended_code & 0xff) == 5) return StoreErrorKind::kBusy;
  return StoreErrorKind::kOther;
}

StoreErrorKind ClassifySqlstate(std::string_view sqlstate) {
  if (sqlstate == "23505") return StoreErrorKind::kDuplicateKey;
  if (sqlstate == "40001" || sqlstate == "40P01") return StoreErrorKind::kRetryable;
  if (sqlstate == "25P02") return StoreErrorKind::kTransactionAborted;
  if (sqlstate == "55P03") return StoreErrorKind::kBusy;  // lock_timeout
  return StoreErrorKind::kOther;
}

}  // namespace dedupsim
