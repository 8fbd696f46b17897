#include "lesson/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/duration.h"
#include "world/broker/broker.h"

namespace dedupsim {

namespace {

using std::chrono::milliseconds;

constexpr std::array<std::string_view, 3> kCrashModes{"throw", "exit", "kill"};
constexpr std::array<std::string_view, 2> kInstanceModes{"threads", "processes"};

std::string Ms(milliseconds d) { return std::to_string(d.count()); }

const LessonOption kOptions[] = {
    {.flag = "--quantity",
     .help = "Books in the order (default {})",
     .min = 1,
     .max = 1000000,
     .set = [](RunOptions& o, int64_t v) { o.quantity = v; },
     .show = [](const RunOptions& o) { return std::to_string(o.quantity); }},
    {.flag = "--deliveries",
     .help = "deliveries of the same message; a lesson with a crash point counts the crashed "
             "one (default {})",
     .trait = kRepeatsDelivery,
     .lessons = "lessons that deliver one message several times",
     .refusal = "its deliveries are fixed by the lesson",
     .min = 1,
     .max = 1000,
     .set = [](RunOptions& o, int64_t v) { o.deliveries = static_cast<int>(v); },
     .show = [](const RunOptions& o) { return std::to_string(o.deliveries); }},
    {.flag = "--hold-ms",
     .help = "the first copy holds this long before going on (default {})",
     .trait = kHasHold,
     .lessons = "lessons that run two deliveries at once",
     .refusal = "it runs no instances at the same time",
     .misfit_flag = "--hold-ms/--stagger-ms",
     .min = 0,
     .max = 60000,
     .set = [](RunOptions& o, int64_t v) { o.hold = milliseconds(v); },
     .show = [](const RunOptions& o) { return Ms(o.hold); }},
    {.flag = "--stagger-ms",
     .help = "the second copy starts this long after the first (default {})",
     .trait = kHasHold,
     .lessons = "lessons that run two deliveries at once",
     .refusal = "it runs no instances at the same time",
     .misfit_flag = "--hold-ms/--stagger-ms",
     .min = 0,
     .max = 60000,
     .set = [](RunOptions& o, int64_t v) { o.stagger = milliseconds(v); },
     .show = [](const RunOptions& o) { return Ms(o.stagger); }},
    {.flag = "--crash-mode",
     .help = "how the crashing delivery dies, throw (an exception, as the post), exit (a child "
             "process calls _exit) or kill (SIGKILL to the child)",
     .trait = kHasCrash,
     .lessons = "lessons with a crash point",
     // True of orphan-claim too, whose owner is always killed, its own way (fourteenth
     // walkthrough: "it has no crash point" for a lesson that kills its child at a hook).
     .refusal = "it has no crash point whose way of dying --crash-mode chooses",
     .kind = OptionKind::kChoice,
     .choices = kCrashModes,
     .set = [](RunOptions& o, int64_t v) { o.crash_mode = static_cast<CrashMode>(v); },
     .show = [](const RunOptions& o) { return std::string(ToString(o.crash_mode)); }},
    {.flag = "--instances",
     .help = "the two consumer instances as threads or processes",
     .trait = kHasInstances,
     .lessons = "lessons that run two consumer instances",
     .refusal = "it runs a single consumer instance",
     .kind = OptionKind::kChoice,
     .choices = kInstanceModes,
     .set = [](RunOptions& o, int64_t v) { o.instances = static_cast<InstanceMode>(v); },
     .show = [](const RunOptions& o) { return std::string(ToString(o.instances)); }},
    {.flag = "--max-deliveries",
     .help = "deliveries before the broker dead-letters a message (default {})",
     .trait = kHasMaxDeliveries,
     .lessons = "lessons with a broker delivery limit",
     .refusal = "it has no broker delivery limit to reach",
     .min = 1,
     .max = 1000,
     .set = [](RunOptions& o, int64_t v) { o.max_deliveries = static_cast<int>(v); },
     .show = [](const RunOptions& o) { return std::to_string(o.max_deliveries); }},
    {.flag = "--retention-days",
     .help = "days Inbox records are kept before the nightly cleanup deletes them (default {})",
     .trait = kHasRetention,
     .lessons = "lessons that run the Inbox cleanup",
     .refusal = "it runs no Inbox cleanup",
     .min = 1,
     .max = 3650,
     .set = [](RunOptions& o, int64_t v) { o.retention = std::chrono::days(v); },
     .show = [](const RunOptions& o) { return std::to_string(o.retention.count()); }},
    {.flag = "--dedup-window",
     .help = "the broker's duplicate detection window, as 10m, 36h, 7d (default {}, at most 7d)",
     .trait = kHasDedupWindow,
     .lessons = "lessons whose broker detects duplicate sends",
     .refusal = "its broker does no send-side duplicate detection",
     .kind = OptionKind::kDuration,
     .duration_problem = [](milliseconds window) -> std::string {
       if (window.count() == 0) return "the window must be longer than zero";
       if (window > kMaxDuplicateDetectionWindow) return "the window is at most 7d";
       return "";
     },
     .set = [](RunOptions& o, int64_t v) { o.dedup_window = milliseconds(v); },
     .show = [](const RunOptions& o) { return FormatDuration(o.dedup_window); }},
    {.flag = "--lock-max-age",
     .help = "how long a claim's lease holds before another delivery may take it over, as 5s, "
             "30s, 2m (default {}, at most 1d)",
     .trait = kHasLockMaxAge,
     .lessons = "lessons that take a leased claim",
     .refusal = "it takes no leased claim",
     .kind = OptionKind::kDuration,
     .duration_problem = [](milliseconds age) -> std::string {
       if (age < std::chrono::seconds(1)) return "the lease is at least 1s";
       if (age > std::chrono::hours(24)) return "the lease is at most 1d";
       return "";
     },
     .set = [](RunOptions& o, int64_t v) { o.lock_max_age = milliseconds(v); },
     .show = [](const RunOptions& o) { return FormatDuration(o.lock_max_age); }},
    {.flag = "--store-size",
     .help = "keys the in-memory dedup store has room for (default {})",
     .trait = kHasStoreSize,
     .lessons = "lessons with a bounded dedup store",
     .refusal = "it keeps no bounded dedup store",
     .min = 1,
     .max = 1000,
     .set = [](RunOptions& o, int64_t v) { o.store_size = static_cast<int>(v); },
     .show = [](const RunOptions& o) { return std::to_string(o.store_size); }},
    {.flag = "--idle-timeout-ms",
     .help = "PostgreSQL's idle_in_transaction_session_timeout on the hung consumer's session "
             "(default {})",
     .trait = kHasServerTimeouts,
     .lessons = "lessons where a consumer hangs holding a key",
     .refusal = "no consumer of it hangs holding a key",
     .min = 1,
     .max = 60000,
     .set = [](RunOptions& o, int64_t v) { o.idle_timeout = milliseconds(v); },
     .show = [](const RunOptions& o) { return Ms(o.idle_timeout); }},
    {.flag = "--lock-timeout-ms",
     .help = "lock_timeout on the waiting consumer's session; 0: none (default {}; on SQLite its "
             "busy timeout, 1000 when 0)",
     .trait = kHasServerTimeouts,
     .lessons = "lessons where a consumer hangs holding a key",
     .refusal = "no consumer of it hangs holding a key",
     .min = 0,
     .max = 60000,
     .set = [](RunOptions& o, int64_t v) { o.lock_timeout = milliseconds(v); },
     .show = [](const RunOptions& o) { return Ms(o.lock_timeout); }},
};

}  // namespace

std::span<const LessonOption> LessonOptions() { return kOptions; }

const LessonOption* FindLessonOption(std::string_view flag) {
  for (const LessonOption& o : kOptions) {
    if (o.flag == flag) return &o;
  }
  return nullptr;
}

std::string LessonOptionMeaning(const LessonOption& option) {
  std::string help(option.help);
  if (const size_t at = help.find("{}"); at != std::string::npos) {
    help.replace(at, 2, option.show(RunOptions{}));
  }
  return help;
}

std::string LessonOptionHelp(const LessonOption& option) {
  const std::string meaning = LessonOptionMeaning(option);
  if (option.trait == 0) return meaning;
  return fmt::format("{}: {}", option.lessons, meaning);
}

std::vector<const LessonOption*> LessonOptionsOf(const Scenario& s) {
  std::vector<const LessonOption*> taken;
  for (const LessonOption& o : kOptions) {
    if (o.trait != 0 && (s.traits & o.trait) != 0) taken.push_back(&o);
  }
  return taken;
}

std::optional<std::string> OptionMisfit(const Scenario& s, const std::vector<std::string>& given) {
  for (const LessonOption& o : kOptions) {
    if (o.trait == 0 || (s.traits & o.trait) != 0) continue;
    if (std::find(given.begin(), given.end(), o.flag) == given.end()) continue;
    const std::string_view name = o.misfit_flag.empty() ? o.flag : o.misfit_flag;
    return fmt::format("{} does not apply to scenario '{}': {}", name, s.name, o.refusal);
  }
  return std::nullopt;
}

}  // namespace dedupsim
