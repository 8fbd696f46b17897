#include "consumers/absolute_write.h"

#include "store/keyed_stores.h"

namespace dedupsim {

void AbsoluteReserveStock::Handle(const OrderPlaced& m) {
  store_.keyed().UpsertReservation(m.order_id, m.book_id, m.quantity, clock_.Now());
}

void SetBookReserved::Handle(const OrderPlaced& m) {
  store_.keyed().SetReserved(m.book_id, m.quantity);
}

int64_t ReservedByRows(Store& store, std::string_view book_id) {
  return store.keyed().ReservedByRows(book_id);
}

}  // namespace dedupsim
