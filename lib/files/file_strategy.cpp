#include "files/file_strategy.h"

#include <fmt/format.h>

#include "explore/strategies.h"
#include "world/email_provider.h"

namespace dedupsim::files {

namespace {

explore::DeliveryResult ToDelivery(Result r) {
  switch (r) {
    case Result::kProcessed:
      return explore::DeliveryResult::kProcessed;
    case Result::kSkipped:
      return explore::DeliveryResult::kSkipped;
    case Result::kNeedsReconciliation:
      break;
  }
  return explore::DeliveryResult::kNeedsReconciliation;
}

}  // namespace

FileStrategy::FileStrategy(ConsumerFile file) : file_(std::move(file)) {
  reset_ = file_.EmptyTablesSql();
  std::string partner = file_.partner;
  if (partner.empty()) partner = file_.effect == "stock" ? "email" : "inbox";
  const explore::Strategy* p = explore::FindStrategy(partner);
  if (p == nullptr || p->effect == file_.effect) {
    throw ErrorAt(file_.partner_at,
                  fmt::format("partner '{}' is no built-in consumer of the other effect (expected "
                              "one of {})",
                              partner, explore::StrategyNames()));
  }
  const bool keyed = file_.SendsWithKey();
  strategy_.name = file_.name;
  strategy_.summary = file_.summary.empty() ? file_.path : file_.summary;
  strategy_.effect = file_.effect;
  strategy_.partner = p->name;
  strategy_.tables.schema = file_.schema.empty() ? nullptr : file_.schema.c_str();
  strategy_.tables.reset = reset_.empty() ? nullptr : reset_.c_str();
  if (keyed) {
    strategy_.tables.side = SideStoreKind::kEmailProvider;
  } else if (file_.second_store == "cache") {
    strategy_.tables.side = SideStoreKind::kCache;
  }
  if (strategy_.tables.side != SideStoreKind::kNone) {
    strategy_.aux_target = SideStoreTarget(strategy_.tables.side);
  }
  const bool cache = file_.second_store == "cache";
  // Each reaction a delivery took (UntakenBranches lists the others).
  auto record_taken = [this](size_t step, const char* reaction) {
    std::lock_guard<std::mutex> lock(taken_mutex_);
    taken_.emplace(step, reaction);
  };
  // On either backend, on the instance's store. On PostgreSQL the file's own database, set
  // up by files/file_database.h (no second store there: a file that needs one is refused
  // before it runs).
  strategy_.handle = [this, keyed, cache, record_taken](explore::StoreContext& c, const OrderPlaced& m) {
    if (cache && c.side == nullptr) throw std::logic_error(file_.name + " ran without its cache's file");
    std::optional<IdempotentEmailProvider> provider;
    if (keyed) {
      if (c.side == nullptr) throw std::logic_error(file_.name + " ran without its provider's file");
      provider.emplace(*c.side, c.clock);
    }
    RunContext run{.store = c.store,
                   .clock = c.clock,
                   .email = c.email,
                   .keyed_email = provider ? &*provider : nullptr,
                   .second_store = cache ? c.side : nullptr,
                   .publish = c.publish,
                   .taken = record_taken};
    return ToDelivery(RunConsumer(file_, run, m));
  };
  // What a publish step publishes is an effect too: it must go out exactly once with the
  // stock or the email (EveryEffectOnce).
  if (!file_.Publishes()) {
    if (file_.effect == "stock") {
      strategy_.applied = &explore::StockApplied;
    } else {
      strategy_.applied = keyed ? &explore::ProviderEmailsApplied : &explore::EmailApplied;
    }
  } else if (file_.effect == "stock") {
    strategy_.applied = [](explore::EffectProbe& probe, const explore::LogicalOrder& o) {
      return explore::EveryEffectOnce(explore::StockApplied(probe, o), probe.PublishedFor(o));
    };
  } else if (keyed) {
    strategy_.applied = [](explore::EffectProbe& probe, const explore::LogicalOrder& o) {
      return explore::EveryEffectOnce(explore::ProviderEmailsApplied(probe, o), probe.PublishedFor(o));
    };
  } else {
    strategy_.applied = [](explore::EffectProbe& probe, const explore::LogicalOrder& o) {
      return explore::EveryEffectOnce(explore::EmailApplied(probe, o), probe.PublishedFor(o));
    };
  }
}

void FileStrategy::SetPostgresReset(std::string reset) {
  pg_reset_ = std::move(reset);
  strategy_.tables.pg_reset = pg_reset_.empty() ? nullptr : pg_reset_.c_str();
}

void FileStrategy::LearnCrashPoints(explore::Explorer& explorer) {
  points_ = explorer.CleanDeliverySteps(strategy_);
  strategy_.crash_points.assign(points_.begin(), points_.end());
}

std::vector<std::string> FileStrategy::UntakenBranches() const {
  std::lock_guard<std::mutex> lock(taken_mutex_);
  std::vector<std::string> out;
  for (size_t i = 0; i < file_.steps.size(); ++i) {
    for (const Step::Written& w : file_.steps[i].written) {
      if (taken_.count({i, w.reaction}) > 0) continue;
      // An on-row table with `otherwise` and no `if-null` is taken as plain on-row.
      if (w.reaction == "on-row otherwise" && taken_.count({i, "on-row"}) > 0) continue;
      out.push_back(fmt::format("{}:{}:{} {} = \"{}\"", w.at.file, w.at.line, w.at.column,
                                w.reaction, w.action));
    }
  }
  return out;
}

}  // namespace dedupsim::files
