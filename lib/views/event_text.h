// The words for one recorded step, one formatter per kind of event, shared by every view:
// the --trace lines, the SVG timeline, the step-through page and the Mermaid diagram all
// say a step through DescribeStep, so a read that found no row is "no row" in each of them,
// never "ok" in one and "row" in another. The words come from what the event recorded about
// itself (op, table, rows, value, error code, the wait the database reported, the verdict
// the scenario gave), never from its SQL text.
//
// An event kind this file does not know (a new broker's step, say) is still said, from its
// kind, detail and result: the model stays open.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"
#include "views/step_text.h"

namespace dedupsim {

// What a colour says in every picture and on the run's lines: right or wrong for the
// business (docs/pictures.md, "Colour"). Plain steps are neither.
enum class Tone { kPlain, kRight, kWrong };

// The tone of the verdict an event carries (TraceEvent::verdict).
Tone ToneOf(const TraceEvent& e);
// Whether a settle's result is the simulated queue's own act, where it put the message at
// once ("back in the queue", "dead-lettered", "removed"), rather than a real broker's
// client's words about what it sent ("sent (no reply)", "nothing reached the server").
bool SettleIsQueuesAct(const TraceEvent& e);
// "right", "wrong", "": the class name a picture gives a tone.
const char* ToneClass(Tone tone);
// " ✓" (right), " ✗" (wrong) or "": the mark every picture puts after a judged step, for
// readers who do not see colour (docs/pictures.md, "Colour").
const char* ToneMark(Tone tone);

struct StepWords {
  std::string what;    // "INSERT Inbox", "deliver m1 (delivery 2)", "crash at AfterSend"
  std::string result;  // "1 row inserted", "duplicate key (1555)", "count(*) = 0"; "" none
  Tone tone = Tone::kPlain;
  bool failed = false;  // the step failed (a statement's error): drawn as such, not as wrong
  // "what: result", or what alone.
  std::string Text() const;
};

struct WordOptions {
  // Waits with their milliseconds ("after waiting 398 ms"); without, the words do not change
  // from run to run ("after waiting").
  bool timings = true;
  // Pids as they were (--trace); without, each process named by its role in the run
  // (ShortIds::Process: "main process", "child process 1", "backend 1"), so pictures of two
  // runs with the same --seed say the same.
  bool pids = true;
};

// The words of the pictures (timeline, page, diagram): timings, processes by their role.
inline constexpr WordOptions kPictureWords{.timings = true, .pids = false};

// The words for e. ids shortens the message ids and other UUIDs it names.
StepWords DescribeStep(const TraceEvent& e, ShortIds& ids, const WordOptions& options = {});

// A statement's result alone: "no row", "1 row", "count(*) = 0", "1 row inserted", "no row
// changed", "duplicate key (1555)", "serialization failure (40001)", with ", after waiting
// N ms for the write lock" when it waited. An upsert's row is "updated" where the database
// said so (TraceEvent::updated), "inserted or updated" where it did not say which
// (TraceEvent::inserted_or_updated): never "inserted" on the statement's verb alone.
std::string StatementResult(const TraceEvent& e, const ShortIds& ids,
                            const WordOptions& options = {});

// What a database's error code means: "duplicate key", "serialization failure",
// "transaction aborted", "database is locked", "lock not available", ...; the code alone
// when it is not one the lessons meet.
std::string ErrorMeaning(std::string_view code);

// What a wait was for, as the database reported it: "the write lock" (SQLite), or "key
// Inbox (ShareLock, wait event transactionid, held by Consumer A, backend pid 123)"
// (PostgreSQL: the holder named by ShortIds::BackendOwner, "held by pid 123" when no one
// actor's step ran on that backend; without pids, "held by Consumer A" or "held by
// backend 1").
std::string WaitTarget(const TraceEvent& e, const ShortIds& ids, const WordOptions& options = {});

// Who did e, as pictures name actors: "Consumer A", "Producer", "Broker", "Dispatcher",
// "Email provider", "scenario check", "Database", "set-up", "Operator"; "Consumer A
// (restarted)" only for a process started again after the first died (incarnation > 1).
std::string ActorName(const TraceEvent& e);

}  // namespace dedupsim
