// What a scenario is: a named lesson that runs consumers against a real database and
// returns an Outcome (its text line and the figures behind it). The text line, the JSON
// object and the trace are all views of one run; a scenario prints nothing itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/message.h"
#include "store/side_store.h"
#include "store/store.h"
#include "trace/trace.h"
#include "world/broker/broker.h"

namespace dedupsim {

enum class CrashMode { kThrow, kExit, kKill };
enum class InstanceMode { kThreads, kProcesses };

std::string_view ToString(CrashMode mode);
std::string_view ToString(InstanceMode mode);

struct RunOptions {
  int64_t quantity = 2;  // books in the order
  int deliveries = 2;    // deliveries of the same message, where a scenario repeats one
  std::chrono::milliseconds hold{500};     // concurrent: first copy's wait before commit
  std::chrono::milliseconds stagger{100};  // concurrent: second copy's start after the first
  CrashMode crash_mode = CrashMode::kThrow;
  InstanceMode instances = InstanceMode::kThreads;
  int max_deliveries = 10;               // broker: deliveries before the dead-letter queue
  std::chrono::days retention{14};       // retention: how long Inbox records are kept
  std::chrono::milliseconds dedup_window{// broker-dedup: send-side duplicate detection
                                         std::chrono::minutes(10)};
  std::chrono::milliseconds lock_max_age{// orphan-claim: a claim's lease
                                         std::chrono::seconds(30)};
  int store_size = 3;  // bounded-store: keys the dedup store has room for
  // hung-consumer (PostgreSQL): idle_in_transaction_session_timeout on the holder's session,
  // and lock_timeout on the waiter's (0: none; on SQLite, the waiter's busy timeout).
  std::chrono::milliseconds idle_timeout{1000};
  std::chrono::milliseconds lock_timeout{0};
  // The broker the lessons' messages go through (--broker): what some figures expect.
  BrokerKind broker = BrokerKind::kSimulated;
};

// What a scenario runs with. All of it is injected; scenarios hold no global state.
struct ScenarioEnv {
  const RunOptions& options;
  // The database the lesson runs on: SQLite's (a SqliteBackend over the run's file), or a
  // server's for the scenarios on the store seam (kAnyBackend).
  const Backend& backend;
  // Where the lesson's side stores go (the dedup cache, the email provider), on either
  // backend: a run that makes none leaves no trace of them.
  SideStores& sides;
  Clock& clock;
  Recorder& recorder;
  IdGenerator& ids;
  // Where the lessons' brokers come from (--broker); null: the simulated broker.
  const BrokerFactory* brokers = nullptr;
};

// True when the lesson runs on a server database (PostgreSQL), not on a SQLite file.
bool OnServer(const ScenarioEnv& env);

// A figure on the line judged by its value, whatever the lesson expects: correct (the
// order took effect once, nothing doubled or lost) or wrong (doubled or lost). The colored
// line paints it green or red; begin and size are byte offsets into Outcome::line.
struct FigureMark {
  size_t begin = 0;
  size_t size = 0;
  bool correct = false;
};

struct Outcome {
  std::string line;                // the text line, in the post's format
  nlohmann::ordered_json figures;  // every figure of the line (camelCase), plus more
  std::vector<FigureMark> marks;   // the judged figures of line, in order
  // What --check compares with, when the scenario works it out from its own run (a
  // scenario file's expectations may name figures); null: Scenario::expected(options).
  nlohmann::ordered_json expected;
};

// Text for a line with its verdict attached (invisible markers): a scenario writes
// Judged(fmt::format("Dune reserved: {}", r), r == once) into its line, and
// TakeMarks (the runner calls it) turns the markers into Outcome::marks.
std::string Judged(std::string_view text, bool correct);
// "Dune reserved: N", judged correct when reserved is what once-per-order makes.
std::string JudgedReserved(std::string_view title, int64_t reserved, int64_t once);
// "emails sent: N", judged correct when one email went out.
std::string JudgedEmails(int64_t sent);
// Removes Judged's markers from out.line and records them in out.marks.
void TakeMarks(Outcome& out);

// Capabilities a scenario has, so options that do not fit can be refused.
enum ScenarioTraits : unsigned {
  kHasCrash = 1u << 0,          // takes --crash-mode
  kHasInstances = 1u << 1,      // takes --instances
  kRepeatsDelivery = 1u << 2,   // takes --deliveries
  kHasHold = 1u << 3,           // takes --hold-ms, --stagger-ms
  kHasMaxDeliveries = 1u << 4,  // takes --max-deliveries
  kHasRetention = 1u << 5,      // takes --retention-days
  kHasDedupWindow = 1u << 6,    // takes --dedup-window
  kHasLockMaxAge = 1u << 7,     // takes --lock-max-age
  kHasStoreSize = 1u << 8,      // takes --store-size
  kAnyBackend = 1u << 9,        // runs through env.backend: takes --backend postgres
  kHasServerTimeouts = 1u << 10,  // takes --idle-timeout-ms, --lock-timeout-ms
  // Its deliveries come from env.brokers: runs on --broker nats and rabbitmq (unless
  // Scenario::refuses_broker says why not on one). Without it a lesson runs its deliveries
  // through a simulated broker of its own and refuses a real broker.
  kRealBroker = 1u << 11,
};

// One lesson. Defined in its own file under scenarios/ with designated initializers, and
// registered in the table from that same file (scenarios/scenarios.h).
struct Scenario {
  std::string_view name;     // kebab-case, used on the command line
  std::string_view tag;      // printed as [tag]
  std::string_view summary;  // one line for `list`
  bool in_post = false;      // one of the post's six lines (`run all`)
  unsigned traits = 0;       // ScenarioTraits
  // A function object so that a scenario read from a file (lib/files/) can carry it.
  std::function<Outcome(ScenarioEnv& env)> run;
  // The figures the post says must come out for these options; fields absent here are
  // not checked (e.g. a wait too close to call).
  nlohmann::ordered_json (*expected)(const RunOptions& options) = nullptr;
  // For `dedupsim explain`: the lesson in a few paragraphs (our own words), the hook
  // points it uses, and what to try next (an option that changes the outcome, with the
  // command).
  std::string_view lesson;
  std::string_view hook_points;
  std::string_view try_next;
  // For a kRealBroker lesson: why it cannot run on that broker ("" or null: it can).
  std::string_view (*refuses_broker)(BrokerKind kind) = nullptr;
};

// Why scenario cannot run on the broker kind, or "" when it can.
std::string BrokerMisfit(const Scenario& scenario, BrokerKind kind);

// "[tag]" padded to 21 columns, as the post's lines are.
std::string TagColumn(std::string_view tag);
// C#'s spelling of a bool, as the post prints it.
const char* CsBool(bool value);
// "delivered once", "delivered twice", "delivered 3 times".
std::string DeliveredPhrase(int deliveries);

}  // namespace dedupsim
