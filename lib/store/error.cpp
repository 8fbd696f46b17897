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
    case StoreErrorKind::kEnvironment:
      return "environment";
    case StoreErrorKind::kOther:
      break;
  }
  return "other";
}

StoreErrorKind ClassifySqliteCode(int extended_code) {
  if (extended_code == 1555 || extended_code == 2067) return StoreErrorKind::kDuplicateKey;
  if ((extended_code & 0xff) == 5) return StoreErrorKind::kBusy;
  switch (extended_code & 0xff) {
    case 7:   // SQLITE_NOMEM
    case 8:   // SQLITE_READONLY
    case 10:  // SQLITE_IOERR
    case 11:  // SQLITE_CORRUPT
    case 13:  // SQLITE_FULL
    case 14:  // SQLITE_CANTOPEN
    case 26:  // SQLITE_NOTADB
      return StoreErrorKind::kEnvironment;
    default:
      return StoreErrorKind::kOther;
  }
}

StoreErrorKind ClassifySqlstate(std::string_view sqlstate) {
  if (sqlstate == "23505") return StoreErrorKind::kDuplicateKey;
  if (sqlstate == "40001" || sqlstate == "40P01") return StoreErrorKind::kRetryable;
  if (sqlstate == "25P02") return StoreErrorKind::kTransactionAborted;
  if (sqlstate == "55P03") return StoreErrorKind::kBusy;  // lock_timeout
  // 53: insufficient resources (53100 disk full, 53200 out of memory); 58: system error.
  if (sqlstate.substr(0, 2) == "53" || sqlstate.substr(0, 2) == "58") {
    return StoreErrorKind::kEnvironment;
  }
  return StoreErrorKind::kOther;
}

}  // namespace dedupsim
