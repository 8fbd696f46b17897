// The scheduler's run loop (Scheduler::Run): who may move, the chooser's pick, the baton
// handed to that worker, and what its step touched and released, step after step; and the
// resets that put the database back before each run. The workers are in worker.cpp, the
// measurement of what a run left in measure.cpp, the baton in baton.h.
#include "explore/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "backends/databases.h"
#include "explore/scheduler_impl.h"
#include "explore/worker.h"

namespace dedupsim::explore {

namespace {

const TimePoint kEpoch =
    std::chrono::sys_days{std::chrono::year{2026} / 1 / 5} + std::chrono::hours{9};

// The plan's books, or one per order when it names none (Dune, Solaris ...: 10 on hand,
// none reserved).
std::vector<BookRow> BooksOf(const Plan& p) {
  if (!p.books.empty()) {
    for (const LogicalOrder& order : p.orders) {
      if (std::none_of(p.books.begin(), p.books.end(),
                       [&](const BookRow& b) { return b.book_id == order.book_id; })) {
        throw std::logic_error("a plan's order names a book the plan does not stock");
      }
    }
    return p.books;
  }
  static constexpr const char* kTitles[] = {"Dune", "Solaris", "Hyperion", "Foundation"};
  std::vector<BookRow> books;
  for (const LogicalOrder& order : p.orders) {
    if (std::any_of(books.begin(), books.end(),
                    [&](const BookRow& b) { return b.book_id == order.book_id; }))
      continue;
    books.push_back({order.book_id, kTitles[books.size() % 4], 10, 0});
  }
  return books;
}

// The rows' tables, as the explorer's database reads them.
std::vector<ExploreRow> RowsOf(std::span<const Strategy* const> strategies) {
  std::vector<ExploreRow> out;
  out.reserve(strategies.size());
  for (const Strategy* s : strategies) out.push_back({s->name, &s->tables});
  return out;
}

}  // namespace

Scheduler::Impl::Impl(std::span<const Strategy* const> list, SchedulerOptions opts)
    : options(opts),
      database(OpenExploreDatabase(
          opts.postgres,
          DatabaseSettings{opts.journal, opts.synchronous, std::chrono::milliseconds(2000)},
          RowsOf(list))),
      waits_in_server(database->waits_in_server()) {
  for (int i = 0; i < kMaxInstances; ++i) {
    workers.push_back(std::make_unique<Worker>(*this, i));
  }
  for (int i = 0; i < kMaxInstances; ++i) {
    baton.Spawn(i, [w = workers[static_cast<size_t>(i)].get()] { w->Main(); });
  }
}

Scheduler::Impl::~Impl() {
  for (size_t i = 0; i < workers.size(); ++i) {
    workers[i]->Quit();
    baton.Give(static_cast<int>(i));  // closes its connections on its own stack, and ends
  }
}

void Scheduler::Impl::Reset(const Plan& p) {
  plan = &p;
  abort = false;
  sent.clear();
  published.clear();
  crashes = 0;
  attempts = 0;
  stale_refusals = 0;
  failure.clear();
  input_failure = nullptr;
  start = p.start.value_or(kEpoch);
  books = BooksOf(p);
  reserved_now.clear();
  for (const BookRow& b : books) reserved_now[b.book_id] = b.reserved;
  moved.assign(p.orders.size() * p.subscribers.size(), {});
  order_of_message.clear();
  for (const InstanceScript& script : p.instances) {
    for (const Delivery& d : script.deliveries) order_of_message[d.message.message_id] = d.order;
  }
  tallies.assign(p.orders.size() * p.subscribers.size(), Tally{});
  database->Reset(books, RowsOf(p.subscribers));
}

void Scheduler::Impl::Settle(int except) {
  if (!waits_in_server) return;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = *workers[i];
      if (static_cast<int>(i) == except || w.state() != WorkerState::kBlocked || w.released())
        continue;
      w.set_settling(true);
      baton.Give(static_cast<int>(i));
      w.set_settling(false);
      changed = changed || w.released();
    }
  }
}

void Scheduler::Impl::Abort() {
  abort = true;
  for (;;) {
    bool any = false;
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = *workers[i];
      if (w.state() == WorkerState::kWaiting) {
        w.MarkDone();  // never started: nothing to unwind
      } else if (w.state() == WorkerState::kAtGate || w.state() == WorkerState::kBlocked) {
        baton.Give(static_cast<int>(i));
        any = true;
      }
    }
    if (!any) break;
  }
  abort = false;
}

Scheduler::Scheduler(std::span<const Strategy* const> strategies, SchedulerOptions options)
    : impl_(std::make_unique<Impl>(strategies, options)) {}

Scheduler::~Scheduler() = default;

std::unique_ptr<TablesReader> Scheduler::OpenTablesReader(bool second_file) const {
  return impl_->database->OpenTablesReader(second_file);
}

void Scheduler::StopAt(std::optional<std::chrono::steady_clock::time_point> deadline) {
  impl_->deadline = deadline;
}
JournalMode Scheduler::journal() const { return impl_->options.journal; }

ScheduleResult Scheduler::Run(const Plan& plan, Chooser& chooser, Recorder* recorder) {
  try {
    return RunUnguarded(plan, chooser, recorder);
  } catch (...) {
    impl_->Abort();  // no instance may stay parked mid-delivery into the next run
    throw;
  }
}

ScheduleResult Scheduler::RunUnguarded(const Plan& plan, Chooser& chooser, Recorder* recorder) {
  Impl& s = *impl_;
  if (plan.instances.size() > s.workers.size()) {
    throw std::logic_error(fmt::format("a plan has {} instances; at most {}", plan.instances.size(),
                                       s.workers.size()));
  }
  s.Reset(plan);
  for (size_t i = 0; i < s.workers.size(); ++i) {
    s.workers[i]->Assign(i < plan.instances.size() ? &plan.instances[i] : nullptr, recorder);
  }

  ScheduleResult result;
  int64_t progress = 0;  // steps that did not end blocked: a blocked instance may retry after one
  // Under RetryRule::kAfterStepOnItsFile: such steps that touched each file.
  const bool any_step = s.options.retry == RetryRule::kAfterAnyStep;
  const bool postgres = s.waits_in_server;
  std::array<int64_t, 2> touched{};
  // Under RetryRule::kAfterRelease: steps that released a write lock held on each file.
  const bool on_release = s.options.retry == RetryRule::kAfterRelease;
  std::array<int64_t, 2> releases{};
  auto released_on = [&](uint8_t files) {
    return ((files & kMainFile) != 0 ? releases[0] : 0) +
           ((files & kAuxFile) != 0 ? releases[1] : 0);
  };
  auto touches = [&](uint8_t files) {
    return ((files & kMainFile) != 0 ? touched[0] : 0) + ((files & kAuxFile) != 0 ? touched[1] : 0);
  };
  auto wait_mark = [&](const Worker& w) {
    if (any_step) return progress;
    return on_release ? released_on(w.blocked_file()) : touches(w.blocked_file());
  };
  auto start_ready = [&] {
    bool started = true;
    while (started) {
      started = false;
      for (size_t i = 0; i < plan.instances.size(); ++i) {
        Worker& w = *s.workers[i];
        int after = plan.instances[i].start_after;
        if (w.state() == WorkerState::kWaiting &&
            (after < 0 || s.workers[static_cast<size_t>(after)]->state() == WorkerState::kDone)) {
          s.baton.Give(static_cast<int>(i));  // runs up to its first step
          started = true;
        }
      }
    }
  };

  for (;;) {
    start_ready();
    uint32_t eligible = 0;
    bool live = false;
    for (size_t i = 0; i < plan.instances.size(); ++i) {
      Worker& w = *s.workers[i];
      switch (w.state()) {
        case WorkerState::kAtGate:
          eligible |= 1u << i;
          live = true;
          break;
        case WorkerState::kBlocked:
          if (w.redelivery_wait()) {
            // The world's rule, under every retry rule: the redelivery comes once no other
            // instance holds the lock its attempt before was refused for.
            if (!w.AnotherHoldsWriteLock(w.blocked_file())) eligible |= 1u << i;
          } else if (postgres ? w.released() : w.blocked_at() < wait_mark(w)) {
            eligible |= 1u << i;
          }
          live = true;
          break;
        case WorkerState::kWaiting:
          live = true;
          break;
        default:
          break;
      }
    }
    if (!s.failure.empty()) {
      s.Abort();
      s.ThrowFailure();
    }
    // Checked between steps: a file's statement itself is held to the sandbox's budget.
    if (s.deadline && std::chrono::steady_clock::now() >= *s.deadline) {
      result.abandoned = true;
      result.out_of_time = true;
      s.Abort();
      return result;
    }
    if (!live) break;
    if (eligible == 0 && on_release) {
      // No lock was seen released; the rule it refines decides whether anyone may move.
      for (size_t i = 0; i < plan.instances.size(); ++i) {
        const Worker& w = *s.workers[i];
        if (w.state() == WorkerState::kBlocked && !w.redelivery_wait() &&
            w.touched_at() < touches(w.blocked_file()))
          eligible |= 1u << i;
      }
    }
    if (eligible == 0) {
      result.outcome = Outcome::kDeadlock;
      result.note = "every live instance waits for a lock another one holds";
      if (recorder != nullptr) recorder->Note("", "deadlock", result.note, "aborted");
      s.Abort();
      break;
    }
    if (result.picks.size() >= s.options.max_steps) {
      result.outcome = Outcome::kError;
      result.note = fmt::format("no end after {} steps", s.options.max_steps);
      s.Abort();
      break;
    }
    std::optional<int> choice = chooser.Choose(result.picks.size(), eligible);
    if (!choice || *choice < 0 || *choice >= kMaxInstances || (eligible & (1u << *choice)) == 0) {
      result.abandoned = true;
      s.Abort();
      return result;
    }
    Worker& w = *s.workers[static_cast<size_t>(*choice)];
    const bool retry = w.state() == WorkerState::kBlocked;
    const std::string label = w.pending();
    const int64_t attempt_seq = w.attempt_seq();
    std::string what =
        (retry && !w.redelivery_wait() ? (postgres ? "resume " : "retry ") : "") + label;
    w.clear_crashed();
    const uint8_t held = postgres ? 0 : w.WriteLocks();
    s.baton.Give(*choice);
    const uint8_t released = static_cast<uint8_t>(held & ~w.WriteLocks());
    if ((released & kMainFile) != 0) ++releases[0];
    if ((released & kAuxFile) != 0) ++releases[1];
    Footprint footprint = w.footprint();
    if (retry && any_step) footprint.all = true;
    if (on_release && !postgres) footprint = WithLockChange(footprint, held, w.WriteLocks());
    auto advance = [&] {
      ++progress;
      const uint16_t files =
          footprint.all ? kMainWhole | kAuxWhole : footprint.reads | footprint.writes;
      if ((files & kMainWhole) != 0) ++touched[0];
      if ((files & kAuxWhole) != 0) ++touched[1];
    };
    if (w.crashed_last_step()) {
      what = "crash at " + label;
      advance();
    } else if (w.state() == WorkerState::kBlocked) {
      what += postgres ? ": waits" : w.redelivery_wait() ? ": busy, refused" : ": busy";
      w.set_blocked_at(wait_mark(w));
      w.set_touched_at(touches(w.blocked_file()));
    } else {
      advance();
    }
    s.Settle(w.state() == WorkerState::kBlocked ? *choice : -1);
    result.picks.push_back(*choice);
    result.eligible.push_back(eligible);
    result.steps.push_back(w.name() + "  " + what);
    result.footprints.push_back(footprint);
    result.attempts.push_back(attempt_seq);
    chooser.Took(result.picks.size() - 1, *choice, footprint);
  }
  if (!s.failure.empty()) s.ThrowFailure();

  const Outcome before = result.outcome;
  result.stale_refusals = s.stale_refusals;
  result.figures = s.Measure(plan, result);
  bool given_up = false;
  for (const Tally& t : s.tallies) given_up = given_up || t.given_up;
  if (given_up && before == Outcome::kOnce) {
    std::string why = fmt::format(
        "a delivery was refused {} times and given up (dead-lettered): the broker never heard "
        "it was handled",
        s.options.max_attempts);
    result.note = result.note.empty() ? why : why + "; " + result.note;
  }
  return result;
}

}  // namespace dedupsim::explore
