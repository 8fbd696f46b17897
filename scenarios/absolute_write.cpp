// absolute-write: natural idempotency without a key. Upserting the order's reservation row
// to an absolute quantity is safe to repeat; adding the quantity is not. And the limit:
// an absolute value written to a row two orders share, the book's Reserved, lets the
// second order overwrite the first.
#include "consumers/absolute_write.h"

#include <fmt/format.h>

#include "common.h"
#include "consumers/naive.h"
#include "scenarios.h"

namespace dedupsim {
namespace absolute_write_file {
namespace {

Outcome Run(ScenarioEnv& env) {
  const int deliveries = env.options.deliveries;
  // The order's own row, written absolutely, on every delivery.
  env.recorder.BeginPart("absolute write, delivered again");
  StockItem dune = Restock(env);
  OrderPlaced order = NewOrder(env, dune);
  for (int i = 0; i < deliveries; ++i) {
    std::unique_ptr<Store> store = OpenStore(env, "A");
    AbsoluteReserveStock(*store, env.clock).Handle(order);
  }
  const int64_t rows = CurrentRows(env, "StockReservations");
  const int64_t absolute_reserved = ReservedByRows(*OpenUntraced(env), dune.book_id);

  // The increment, on every delivery.
  env.recorder.BeginPart("increment, delivered again");
  dune = Restock(env);
  order = NewOrder(env, dune);
  for (int i = 0; i < deliveries; ++i) {
    std::unique_ptr<Store> store = OpenStore(env, "A");
    NaiveReserveStock(*store).Handle(order);
  }
  const int64_t increment_reserved = CurrentStock(env, dune).reserved;

  // Two different orders, each writing its quantity to the book's one row.
  env.recorder.BeginPart("two orders setting the book's one row");
  dune = Restock(env);
  OrderPlaced first = NewOrder(env, dune);
  OrderPlaced second = NewOrder(env, dune);
  second.quantity = first.quantity + 1;
  for (const OrderPlaced& m : {first, second}) {
    std::unique_ptr<Store> store = OpenStore(env, "A");
    SetBookReserved(*store).Handle(m);
  }
  const int64_t shared_reserved = CurrentStock(env, dune).reserved;

  Outcome out;
  out.figures["deliveries"] = deliveries;
  out.figures["reservationRows"] = rows;
  out.figures["absoluteReserved"] = absolute_reserved;
  out.figures["incrementReserved"] = increment_reserved;
  out.figures["twoOrders"] = {first.quantity, second.quantity};
  out.figures["sharedRowReserved"] = shared_reserved;
  out.figures["reserved"] = absolute_reserved;
  out.line = fmt::format(
      "{}{} -> absolute (Quantity = {}): {}; increment: {}; two orders ({} and {}) setting "
      "the book's Reserved: {}",
      TagColumn("absolute-write"), DeliveredPhrase(deliveries), order.quantity,
      // The absolute write's figure is its StockReservations rows' sum, not StockItems'
      // Reserved (which it never writes): named so, beside the table a class sees.
      Judged(fmt::format("Dune's StockReservations: {}", absolute_reserved),
             absolute_reserved == order.quantity),
      JudgedReserved("Dune", increment_reserved, order.quantity), first.quantity,
      second.quantity,
      // Two orders on one row: both must count; the second's write replaced the first's.
      Judged(fmt::format("{}", shared_reserved),
             shared_reserved == first.quantity + second.quantity));
  return out;
}

nlohmann::ordered_json Expected(const RunOptions& o) {
  return {{"deliveries", o.deliveries},
          {"reservationRows", 1},
          {"absoluteReserved", o.quantity},
          {"incrementReserved", o.deliveries * o.quantity},
          {"twoOrders", {o.quantity, o.quantity + 1}},
          {"sharedRowReserved", o.quantity + 1},  // the second order's, not the sum
          {"reserved", o.quantity}};
}

}  // namespace
}  // namespace absolute_write_file

const Scenario kAbsoluteWriteScenario{
    .name = "absolute-write",
    .tag = "absolute-write",
    .summary = "no key at all: an absolute write is safe to repeat, an increment is not",
    .in_post = false,
    .traits = kRepeatsDelivery | kAnyBackend,
    .run = &absolute_write_file::Run,
    .expected = &absolute_write_file::Expected,
    .lesson =
        "Some work needs no dedup record, because doing it twice leaves the same state as doing it "
        "once. The consumer upserts the order's own reservation row with an absolute value "
        "(Quantity = the order's quantity, keyed on OrderId and BookId): delivered --deliveries "
        "times, there is still one row, and the book's reserved total, the sum of its rows, is the "
        "order's quantity.\n"
        "\n"
        "The post's consumer adds the quantity to Reserved instead. An increment depends on the "
        "state before it, so every delivery adds again: Reserved grows with the number of "
        "deliveries.\n"
        "\n"
        "The limit: an absolute write is only idempotent for a value that belongs to one message. "
        "Two different orders that each set the book's Reserved to their own quantity overwrite "
        "each other; the total is the last order's quantity, not the sum. Absolute writes work "
        "where each message owns its row (natural-key is the same idea with the key made "
        "explicit).",
    .hook_points = "none: repeated deliveries drive the lesson",
    .try_next =
        "More deliveries: the absolute total stays, the increment grows:\n"
        "  dedupsim run absolute-write --deliveries 5 --trace\n"
        "The reservation row as a dedup record in one transaction with the increment:\n"
        "  dedupsim run natural-key",
};
const LessonRegistration kAbsoluteWriteLesson{kAbsoluteWriteScenario,
                                              {.rank = 250, .theme = Theme::kSideEffects}};

}  // namespace dedupsim
