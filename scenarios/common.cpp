#include "common.h"

#include <fmt/format.h>

#include <stdexcept>

#include "world/broker/broker.h"
#include "store/lesson_tables.h"
#include "trace/trace.h"
#include "world/broker/simulated_broker.h"

namespace dedupsim {

namespace {

// A verdict is read back on a connection of its own once the delivery's transaction has
// ended: inside it the read would judge the state before the delivery's work, and under a
// rollback journal (--journal delete) it could wait on the locks the delivery holds.
void RefuseJudgedInsideTransaction(Session& store, std::string_view outcome, const char* verdict) {
  if (*verdict != '\0' && store.InTransaction()) {
    throw std::logic_error(fmt::format("outcome {} judged while its transaction is open", outcome));
  }
}

// Runs f on the scenario's backend.
template <typename F>
auto WithBackend(ScenarioEnv& env, F f) {
  return f(env.backend);
}

}  // namespace

std::vector<StockItem> Restock(ScenarioEnv& env, const std::vector<std::string>& more_titles,
                               const std::vector<std::string>& also_emptied) {
  std::vector<StockItem> books{{env.ids.Next(), "Dune", 10, 0}};
  for (const std::string& title : more_titles) books.push_back({env.ids.Next(), title, 10, 0});
  std::vector<std::string> emptied =
      WithBackend(env, [&](const Backend& b) { return b.ResetInventory(books.front()); });
  emptied.insert(emptied.end(), also_emptied.begin(), also_emptied.end());
  for (size_t i = 1; i < books.size(); ++i) {
    WithBackend(env, [&](const Backend& b) {
      b.AddStock(books[i]);
      return 0;
    });
  }
  // What the reset did, as the database counted it: the tables it emptied (a side store,
  // such as the cache's CacheKeys, is not the database's and keeps its rows), and every
  // book it stocked, in one step.
  std::string tables;
  for (size_t i = 0; i < emptied.size(); ++i) {
    tables += (i == 0 ? "" : i + 1 == emptied.size() ? " and " : ", ") + emptied[i];
  }
  std::string stocked;
  for (const StockItem& book : books) {
    stocked += fmt::format(", {} stocked with {}", book.title, book.on_hand);
  }
  env.recorder.NoteReset((tables.empty() ? "no table held a row" : tables + " emptied") + stocked);
  return books;
}

StockItem Restock(ScenarioEnv& env) { return Restock(env, {}).front(); }

std::unique_ptr<Broker> OpenBroker(ScenarioEnv& env, const BrokerOptions& options,
                                   Clock* clock) {
  const BrokerFactory& brokers = env.brokers != nullptr ? *env.brokers : SimulatedBrokers();
  return brokers.Open(clock != nullptr ? *clock : env.clock, options, &env.recorder);
}

Delivery ReceiveNext(Broker& broker, const std::string& what) {
  std::optional<Delivery> d = broker.Receive();
  if (!d) {
    throw BrokerError(fmt::format("{} said it has nothing more to deliver, where the lesson waits for {}",
                                  broker.server(), what));
  }
  return *d;
}

void DeliveryLog::Add(const Delivery& d) {
  counts_.push_back(d.delivery_count);
  redelivered_.push_back(d.redelivered);
  tags_.push_back(d.delivery_tag);
}

nlohmann::ordered_json DeliveryLog::Figures(const Broker& broker) const {
  return {{"server", broker.server()},
          {"deliveryCounts", counts_},
          {"redelivered", redelivered_},
          {"deliveryTags", tags_}};
}

std::unique_ptr<Store> OpenStore(ScenarioEnv& env, const std::string& instance,
                                 DeliveryRef delivery) {
  std::unique_ptr<Store> store =
      WithBackend(env, [&](const Backend& b) { return b.Open(&env.recorder, instance); });
  if (delivery.number == 0) delivery = env.recorder.TakeOfferedDelivery();
  store->SetDelivery(std::move(delivery));
  // Each delivery opens its own connection; the views start a delivery at this step.
  store->Note("open", "new connection", "ok");
  return store;
}

std::unique_ptr<Store> OpenUntraced(ScenarioEnv& env) {
  return WithBackend(env, [](const Backend& b) { return b.Open(nullptr, ""); });
}

std::unique_ptr<Store> OpenActorStore(ScenarioEnv& env, const std::string& instance,
                                      const std::string& actor) {
  std::unique_ptr<Store> store =
      WithBackend(env, [&](const Backend& b) { return b.Open(&env.recorder, instance); });
  store->SetTraceRole(actor, "database");
  return store;
}

std::unique_ptr<Store> OpenProbeStore(ScenarioEnv& env) {
  return OpenActorStore(env, "check", kActorProbe);
}

int64_t ProbeRows(ScenarioEnv& env, std::string_view table) {
  return OpenProbeStore(env)->tables().CountRows(table);
}

OrderPlaced NewOrder(ScenarioEnv& env, const StockItem& book) {
  return OrderPlaced{env.ids.Next(), env.ids.Next(), book.book_id, env.options.quantity};
}

std::unique_ptr<SideRecords> OpenTraced(ScenarioEnv& env, const SideStore& store,
                                        const std::string& instance, const std::string& target,
                                        DeliveryRef delivery) {
  std::unique_ptr<SideRecords> records = store.Open(&env.recorder, instance);
  records->SetTraceRole(kActorConsumer, target);
  records->SetDelivery(std::move(delivery));
  return records;
}

std::unique_ptr<SideRecords> OpenProvider(ScenarioEnv& env, const SideStore& store) {
  std::unique_ptr<SideRecords> records = store.Open(&env.recorder, "provider");
  records->SetTraceRole(kActorEmailProvider, "email provider");
  return records;
}

void BeginDelivery(Store& store, DeliveryRef delivery) {
  store.SetDelivery(std::move(delivery));
  store.Note("open", "new connection", "ok");
}

std::unique_ptr<Store> OpenQuietStore(ScenarioEnv& env, const std::string& instance) {
  return WithBackend(env, [&](const Backend& b) { return b.Open(&env.recorder, instance); });
}

DeliveryRef Delivered(const OrderPlaced& message, int n) { return {message.message_id, n}; }

void NoteOutcome(Session& store, std::string_view outcome, const char* verdict) {
  RefuseJudgedInsideTransaction(store, outcome, verdict);
  store.NoteOutcome(std::string(outcome), verdict);
}

void NoteOutcomeSeenNow(ScenarioEnv& env, Session& store, std::string_view outcome,
                        const char* verdict) {
  RefuseJudgedInsideTransaction(store, outcome, verdict);
  TraceEvent e;
  store.StampTrace(e);  // who: the delivery's instance, process and key
  if (e.instance.empty()) return;  // not traced
  e.verdict = verdict;
  RecordNote(env.recorder, std::move(e), "outcome", std::string(outcome), "",
             env.recorder.MicrosSinceOrigin());
}

int64_t CurrentRows(ScenarioEnv& env, std::string_view table) {
  return WithBackend(env, [&](const Backend& b) { return b.CountRows(table); });
}

std::string BoolList(const std::vector<bool>& values) {
  std::vector<std::string> words;
  for (bool v : values) words.emplace_back(CsBool(v));
  return fmt::format("{}", fmt::join(words, ", "));
}

const char* ReservedVerdict(ScenarioEnv& env, const StockItem& book, int64_t once) {
  return CurrentStock(env, book).reserved == once ? kVerdictRight : kVerdictWrong;
}

const char* ReservedVerdictApart(ScenarioEnv& env, const std::string& book_id, int64_t once) {
  return OpenUntraced(env)->ReadStock(book_id).reserved == once ? kVerdictRight : kVerdictWrong;
}

OneOrder SendOneOrder(ScenarioEnv& env, const std::string& what) {
  OneOrder out;
  out.book = Restock(env);
  out.message = NewOrder(env, out.book);
  out.broker = OpenBroker(env, {});
  out.broker->Send(out.message);
  out.first = ReceiveNext(*out.broker, what);
  out.log.Add(out.first);
  return out;
}

void DeliverWithLostAcks(ScenarioEnv& env, const OrderPlaced& message, int deliveries,
                         const std::function<void(Store& store, int delivery)>& handle) {
  // The simulation's broker: a lesson that delivers this way takes no real one (kRealBroker).
  SimulatedBroker broker(env.clock, BrokerOptions{.max_delivery_count = deliveries}, &env.recorder);
  broker.Send(message);
  Drain(broker, [&](const Delivery& d) {
    std::unique_ptr<Store> store = OpenStore(env, "A");  // takes the broker's delivery
    handle(*store, d.delivery_count);
    return d.delivery_count < deliveries ? Verdict{Disposition::kAckLost}
                                         : Verdict{Disposition::kAck};
  });
}

std::string CrashPhrase(bool crashed, std::string_view planned, std::string_view point) {
  if (crashed) return std::string(planned);
  return fmt::format("no crash at {} (the delivery ended first)", point);
}

StockItem CurrentStock(ScenarioEnv& env, const StockItem& book) {
  return WithBackend(env, [&](const Backend& b) { return b.ReadStock(book.book_id); });
}

}  // namespace dedupsim
