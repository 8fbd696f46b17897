#include "store/keyed_stores.h"

#include "store/error.h"
#include "store/store.h"

namespace dedupsim {

KeyedStores& Store::keyed() {
  throw DatabaseError("this store has no reservation, hashed, receipt or lease tables");
}

}  // namespace dedupsim
