#include "store/side_store.h"

#include "store/error.h"

namespace dedupsim {

UntrustedSql& SideRecords::untrusted() {
  throw DatabaseError("this side store runs no SQL of a file (no UntrustedSql on its connection)");
}

}  // namespace dedupsim
