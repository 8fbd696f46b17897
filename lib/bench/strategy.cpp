#include "bench/strategy.h"

#include "core/clock.h"

namespace dedupsim {

std::string_view ToString(BenchStrategy strategy) { return strategy.name(); }

const std::vector<BenchStrategy>& AllBenchStrategies() {
  static const std::vector<BenchStrategy> all = [] {
    std::vector<BenchStrategy> strategies{BenchStrategy()};
    for (const ConsumerEntry* c : AllConsumers()) {
      if (c->bench != BenchRole::kNotRun) strategies.emplace_back(*c);
    }
    return strategies;
  }();
  return all;
}

std::optional<BenchStrategy> ParseBenchStrategy(std::string_view name) {
  for (BenchStrategy s : AllBenchStrategies()) {
    if (s.name() == name) return s;
  }
  return std::nullopt;
}

std::vector<BenchStrategy> ConsumerStrategies() {
  std::vector<BenchStrategy> consumers;
  for (BenchStrategy s : AllBenchStrategies()) {
    if (!s.raw()) consumers.push_back(s);
  }
  return consumers;
}

std::string BenchStrategyNames() {
  std::string names;
  for (BenchStrategy s : AllBenchStrategies()) {
    if (!names.empty()) names += ", ";
    names += s.name();
  }
  return names;
}

std::string ExactlyOnceStrategyNames() {
  std::vector<std::string_view> names;
  for (BenchStrategy s : AllBenchStrategies()) {
    if (s.promises_exactly_once()) names.push_back(s.name());
  }
  std::string said;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) said += i + 1 == names.size() ? " or " : ", ";
    said += names[i];
  }
  return said;
}

namespace {

// A registry entry's handler on a session, whatever its backend.
class ConsumerHandler final : public StrategyHandler {
 public:
  ConsumerHandler(const ConsumerEntry& consumer, std::unique_ptr<MeasuredSession> session)
      : consumer_(consumer), session_(std::move(session)) {}

  bool Handle(const OrderPlaced& m) override {
    ConsumerEnv env{session_->store(), clock_, nullptr, nullptr};
    return consumer_.handle(env, m) == DeliveryResult::kProcessed;
  }
  const MeasuredConnection& measured() const override { return *session_; }
  void OnTransactionChange(std::function<void(bool open)> callback) override {
    session_->OnTransactionChange(std::move(callback));
  }

 private:
  const ConsumerEntry& consumer_;
  std::unique_ptr<MeasuredSession> session_;
  SystemClock clock_;
};

class RawHandler final : public StrategyHandler {
 public:
  explicit RawHandler(std::unique_ptr<RawInbox> raw) : raw_(std::move(raw)) {}
  bool Handle(const OrderPlaced& m) override { return raw_->Handle(m); }
  const MeasuredConnection& measured() const override { return *raw_; }
  void OnTransactionChange(std::function<void(bool open)> callback) override {
    raw_->OnTransactionChange(std::move(callback));
  }

 private:
  std::unique_ptr<RawInbox> raw_;
};

}  // namespace

std::unique_ptr<StrategyHandler> HandlerOn(const ConsumerEntry& consumer,
                                           std::unique_ptr<MeasuredSession> session) {
  return std::make_unique<ConsumerHandler>(consumer, std::move(session));
}

std::unique_ptr<StrategyHandler> HandlerOn(std::unique_ptr<RawInbox> raw) {
  return std::make_unique<RawHandler>(std::move(raw));
}

std::unique_ptr<StrategyHandler> MakeHandler(BenchStrategy strategy, const WorkloadDatabase& db) {
  if (strategy.raw()) return HandlerOn(db.OpenRawInbox());
  return HandlerOn(*strategy.consumer(), db.OpenSession());
}

}  // namespace dedupsim
