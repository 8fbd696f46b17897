#include "file_scenario.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "common.h"
#include "concurrency.h"
#include "explore/strategy.h"
#include "files/scenario_line.h"
#include "lesson/crash.h"
#include "lesson/instances.h"
#include "store/error.h"
#include "store/untrusted_sql.h"

namespace dedupsim {

namespace {

using files::Fault;
using files::ScenarioConsumer;
using files::ScenarioFigure;
using files::ScenarioFile;

// What one delivery did: processed, skipped, needs-reconciliation (the consumer's own
// answer), failed (it threw: not acked), crashed (the fault killed it), finished (it ran in
// a child process to its end without reaching its crash point: its answer stayed there).
// waited: in a race, B was blocked while A held the write lock (WaitedFor).
struct DeliveryRecord {
  std::string consumer;
  std::string result;
  bool waited = false;
};

std::string_view TraceWord(const std::string& result) {
  if (result == "processed") return "Processed";
  if (result == "skipped") return "Skipped";
  if (result == "needs-reconciliation") return "NeedsReconciliation";
  return "Failed";
}

// The second stores of the consumers that keep one (a dedup cache, the records of the
// provider that honours an idempotency key), each a side store next to the database, as
// the built-in lessons keep them: created when the scenario starts, removed when it ends.
struct SecondStores {
  std::unique_ptr<SideStore> cache;
  std::unique_ptr<SideStore> provider;

  SecondStores(const ScenarioFile& file, SideStores& sides) {
    for (const ScenarioConsumer& c : file.consumers) {
      const SideStoreKind side = c.strategy().tables.side;
      if (side == SideStoreKind::kCache && !cache) cache = sides.Create(SideStoreKind::kCache);
      if (side == SideStoreKind::kEmailProvider && !provider) {
        provider = sides.Create(SideStoreKind::kEmailProvider);
      }
    }
  }

  // The consumer's second store with its trace target, or null.
  std::pair<const SideStore*, const char*> Of(const ScenarioConsumer& c) const {
    switch (c.strategy().tables.side) {
      case SideStoreKind::kCache:
        return {cache.get(), "cache"};
      case SideStoreKind::kEmailProvider:
        return {provider.get(), "email provider"};
      case SideStoreKind::kNone:
        break;
    }
    return {nullptr, ""};
  }

  // Emails the provider sent (0 without one).
  int64_t ProviderSent() const {
    if (!provider) return 0;
    return provider->Open()->ProviderSentCount();
  }
};

// One delivery of m to the consumer on store, traced as instance (and its second store,
// opened for the delivery under the same instance); the consumer's answer, or "failed".
std::string Handle(ScenarioEnv& env, const SecondStores& stores, const ScenarioConsumer& c,
                   Store& store, const std::string& instance, EmailProvider& email,
                   const OrderPlaced& m, int number) {
  std::unique_ptr<SideRecords> aux;
  if (auto [side, target] = stores.Of(c); side != nullptr) {
    aux = OpenTraced(env, *side, instance, target, Delivered(m, number));
  }
  Clock& clock = env.clock;
  explore::StoreContext context{store, aux.get(), clock, email};
  std::string result;
  try {
    switch (c.strategy().handle(context, m)) {
      case explore::DeliveryResult::kProcessed:
        result = "processed";
        break;
      case explore::DeliveryResult::kSkipped:
        result = "skipped";
        break;
      case explore::DeliveryResult::kNeedsReconciliation:
        result = "needs-reconciliation";
        break;
    }
  } catch (const StoreError& e) {
    // A full disk or an I/O error is the machine's, not the delivery's outcome.
    if (e.kind() == StoreErrorKind::kEnvironment) throw;
    store.Note("outcome", "Failed", e.what());
    return "failed";
  } catch (const explore::DeliveryFailed& e) {
    store.Note("outcome", "Failed", e.what());
    return "failed";
  }
  NoteOutcome(store, TraceWord(result));
  return result;
}

HookFaults At(const std::string& point, Hook hook) {
  return [point, hook = std::move(hook)](std::string_view name) -> Hook {
    return name == point ? hook : Hook{};
  };
}

Hook Sleep(std::chrono::milliseconds d) {
  return [d] { std::this_thread::sleep_for(d); };
}

void ReplayEmails(const nlohmann::json& sent, InMemoryEmailProvider& emails) {
  for (const auto& item : sent) {
    std::string s = item.get<std::string>();
    auto colon = s.find(": ");
    emails.Send(s.substr(0, colon), colon == std::string::npos ? "" : s.substr(colon + 2));
  }
}

// A figure's statement on the probe, with the rules its check found: the first column of
// its first row (null when none). Stopped by the database (past its budget, or refused
// now): the file's fault, FileError at the figure.
nlohmann::json SqlFigure(Store& probe, const ScenarioFigure& f, const OrderPlaced& first,
                         const StockItem& book) {
  UntrustedStatement statement{.sql = f.sql, .rules = &f.rules, .values = {}, .query = true};
  for (const std::string& name : f.parameters) {
    if (name == ":BookId") {
      statement.values.emplace_back(book.book_id);
    } else if (name == ":OrderId") {
      statement.values.emplace_back(first.order_id);
    } else if (name == ":MessageId") {
      statement.values.emplace_back(first.message_id);
    } else {
      statement.values.emplace_back(static_cast<int64_t>(first.quantity));
    }
  }
  UntrustedAnswer answer;
  try {
    answer = probe.untrusted().Run(statement);
  } catch (const SqlStopped& e) {
    throw files::ErrorAt(f.sql_at, e.what());
  }
  if (!answer.first) return nullptr;
  if (const int64_t* n = std::get_if<int64_t>(&*answer.first)) return *n;
  return std::get<std::string>(*answer.first);
}
}  // namespace

Outcome RunScenarioFile(const ScenarioFile& file, ScenarioEnv& env,
                        const FileRunOverrides& overrides) {
  StockItem dune = Restock(env);
  const SecondStores stores(file, env.sides);
  {
    std::unique_ptr<Store> setup = OpenUntraced(env);
    for (const ScenarioConsumer& c : file.consumers) {
      const char* schema = c.strategy().tables.schema;
      setup->untrusted().SetUpTables(schema, schema != nullptr ? c.file->file().tables
                                                               : std::vector<std::string>{},
                                     c.strategy().tables.reset);
    }
  }
  std::vector<OrderPlaced> messages;
  for (const files::ScenarioMessage& m : file.messages) {
    if (m.resend_of.empty()) {
      messages.push_back(NewOrder(env, dune));
      continue;
    }
    size_t of = 0;
    while (file.messages[of].name != m.resend_of) ++of;
    OrderPlaced resend = messages[of];
    if (m.new_id) resend.message_id = env.ids.Next();
    messages.push_back(resend);
  }

  const nlohmann::json defaults =
      files::OptionValues(env.options, env.options.hold, env.options.stagger);
  auto option = [&](std::string_view name) -> std::optional<nlohmann::json> {
    if (auto it = defaults.find(std::string(name)); it != defaults.end()) return *it;
    return std::nullopt;
  };
  std::chrono::milliseconds hold_used = env.options.hold;
  std::chrono::milliseconds stagger_used = env.options.stagger;
  std::map<std::string, int> delivered;  // deliveries so far, by MessageId
  std::vector<DeliveryRecord> records;
  InMemoryEmailProvider emails;

  for (const files::ScenarioDelivery& d : file.deliveries) {
    const ScenarioConsumer& consumer = file.consumers[d.consumer];
    const OrderPlaced& message = messages[d.message];
    const std::string instance = d.instance.empty() ? consumer.name : d.instance;
    if (d.delay.count() > 0) {
      env.recorder.Note(instance, "delay", fmt::format("the broker waits {} ms", d.delay.count()),
                        "");
      std::this_thread::sleep_for(d.delay);
    }
    if (d.race) {
      const Fault& fault = *d.fault;
      PairTiming timing;
      timing.hold = overrides.hold ? env.options.hold : fault.hold;
      timing.stagger = overrides.stagger ? env.options.stagger : d.stagger;
      hold_used = timing.hold;
      stagger_used = timing.stagger;
      auto body = [&env, &stores, &consumer, message, &fault](const std::string& instance,
                                                              int number, bool holds) {
        return [&env, &stores, &consumer, message, &fault, instance, number, holds](
                   Store& store, const Hook& hold_point) {
          if (holds) store.SetHookFaults(At(fault.point, hold_point));
          InMemoryEmailProvider sent;
          std::string result =
              Handle(env, stores, consumer, store, instance, sent, message, number);
          return nlohmann::json{{"result", result}, {"emails", sent.sent()}};
        };
      };
      const int first = ++delivered[message.message_id];
      const int second = ++delivered[message.message_id];
      const PairOutcome pair =
          RunStorePair(env, {"A", Delivered(message, first), body("A", first, true)},
                       {"B", Delivered(message, second), body("B", second, false)}, timing);
      for (const InstanceResult* r : {&pair.first, &pair.second}) {
        ReplayEmails(r->value["emails"], emails);
        records.push_back({consumer.name, r->value["result"].get<std::string>(), false});
      }
      records.back().waited = pair.SecondWaited();
      continue;
    }
    nlohmann::json copies = d.copies.Evaluate(option);
    if (!copies.is_number_integer() || copies.get<int64_t>() < 1 || copies.get<int64_t>() > 1000) {
      throw files::ErrorAt(
          d.at, fmt::format("copies is {}, expected an integer from 1 to 1000 ({})", copies.dump(),
                            d.copies.text()));
    }
    for (int64_t copy = 0; copy < copies.get<int64_t>(); ++copy) {
      const int number = ++delivered[message.message_id];
      const bool faulty = copy == 0 && d.fault.has_value();
      if (faulty && d.fault->kind == Fault::Kind::kCrash) {
        std::string result;
        CrashReport report = RunCrashingDelivery(
            env, instance, d.fault->point,
            [&](const Hook& crash) {
              std::unique_ptr<Store> store = OpenStore(env, instance, Delivered(message, number));
              store->SetHookFaults(At(d.fault->point, crash));
              result = Handle(env, stores, consumer, *store, instance, emails, message, number);
            },
            &emails);
        records.push_back({consumer.name,
                           report.crashed   ? "crashed"
                           : result.empty() ? "finished"
                                            : result,
                           false});
        continue;
      }
      std::unique_ptr<Store> store = OpenStore(env, instance, Delivered(message, number));
      if (faulty) store->SetHookFaults(At(d.fault->point, Sleep(d.fault->hold)));
      records.push_back({consumer.name,
                         Handle(env, stores, consumer, *store, instance, emails, message, number),
                         false});
    }
  }

  Outcome out;
  std::unique_ptr<Store> probe = OpenProbeStore(env);
  for (const ScenarioFigure& f : file.figures) {
    if (f.kind == ScenarioFigure::Kind::kSql) {
      out.figures[f.name] = SqlFigure(*probe, f, messages.front(), dune);
    } else if (f.outcome == "emails") {
      // Sent without a key (counted here) or through the provider that honours one.
      out.figures[f.name] = emails.sent_count() + stores.ProviderSent();
    } else if (f.kind == ScenarioFigure::Kind::kCount) {
      int64_t n = 0;
      for (const DeliveryRecord& r : records) {
        if (!f.consumer.empty() && r.consumer != f.consumer) continue;
        if (f.outcome == "deliveries" || (f.outcome == "waited" ? r.waited : r.result == f.outcome))
          ++n;
      }
      out.figures[f.name] = n;
    } else {
      nlohmann::ordered_json each = nlohmann::ordered_json::array();
      for (const DeliveryRecord& r : records) {
        if (!f.consumer.empty() && r.consumer != f.consumer) continue;
        each.push_back(f.outcome == "waited" ? r.waited : r.result == f.outcome);
      }
      out.figures[f.name] = each;
    }
  }
  out.line = files::RenderLine(file, out.figures);
  out.expected = files::ExpectedFigures(file, out.figures,
                                        files::OptionValues(env.options, hold_used, stagger_used));
  return out;
}

Scenario AsScenario(const ScenarioFile& file, const FileRunOverrides& overrides) {
  return Scenario{
      .name = file.name,
      .tag = file.tag,
      .summary = file.summary,
      .in_post = false,
      .traits = file.traits,
      .run = [&file,
              &overrides](ScenarioEnv& env) { return RunScenarioFile(file, env, overrides); },
      .expected = nullptr,
      .lesson = file.lesson,
      .hook_points = file.hook_points_text,
      .try_next = file.try_next,
  };
}

}  // namespace dedupsim
