#include "trace/trace.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <system_error>
#include <utility>

#include "os/this_pid.h"

namespace dedupsim {

Recorder::Recorder() : Recorder(std::chrono::steady_clock::now()) {}

namespace {

// The most recent lock takes the table keeps. A release looks back only to the start of its
// own step, so it needs the takes of that step's duration: a handful.
constexpr uint64_t kTakeSlots = 1024;

// A file's key in the table (FNV-1a of its path): the table is plain memory, shared by
// processes, so it holds no strings.
uint64_t FileKey(std::string_view file) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : file) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// Holds a robust, process-shared mutex. A process that died holding it (SIGKILL) left the
// table whole: a take is written into its slot before the count that publishes it moves.
class SharedLock {
 public:
  explicit SharedLock(pthread_mutex_t* mu) : mu_(mu) {
    if (pthread_mutex_lock(mu_) == EOWNERDEAD) pthread_mutex_consistent(mu_);
  }
  ~SharedLock() { pthread_mutex_unlock(mu_); }
  SharedLock(const SharedLock&) = delete;
  SharedLock& operator=(const SharedLock&) = delete;

 private:
  pthread_mutex_t* mu_;
};

}  // namespace

// Every write-lock take of this recorder's connections, in this process and in every
// process forked after the recorder was made (they share the mapping): stamped and
// appended under one process-shared mutex, so the takes are in stamp order.
struct Recorder::SharedTakes {
  struct Take {
    uint64_t file;
    int64_t pid;
    uintptr_t owner;
    int64_t at_us;
  };
  pthread_mutex_t mu;
  uint64_t count;  // takes recorded so far; the last kTakeSlots are in slots
  Take slots[kTakeSlots];
};

Recorder::Recorder(std::chrono::steady_clock::time_point origin) : origin_(origin) {
  void* memory = ::mmap(nullptr, sizeof(SharedTakes), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "trace: cannot map the lock table");
  }
  takes_ = new (memory) SharedTakes;  // zero-filled by mmap
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&takes_->mu, &attributes);
  pthread_mutexattr_destroy(&attributes);
}

// A forked child's copy of the mapping stays until that child exits.
Recorder::~Recorder() { ::munmap(takes_, sizeof(SharedTakes)); }

int64_t Recorder::MicrosSinceOrigin() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               origin_)
      .count();
}

void Recorder::Record(TraceEvent event) {
  const bool observe = event.pid == observer_pid_ && event.actor != kActorProbe;
  {
    std::lock_guard<std::mutex> lock(mu_);
    event.seq = next_seq_++;
    int64_t& last = last_at_.try_emplace({event.pid, event.instance}, event.at_us).first->second;
    last = std::max(last, event.at_us);
    events_.push_back(event);
    if (!observe || !observer_) return;
  }
  std::lock_guard<std::mutex> lock(observer_mu_);
  observer_(event);
}

void Recorder::SetObserver(Observer observer) {
  std::lock_guard<std::mutex> lock(mu_);
  observer_ = std::move(observer);
  observer_pid_ = observer_ ? static_cast<int>(getpid()) : 0;
}

namespace {

// An event of the run itself, not of a connection: now, by this process, kind, detail, actor.
int64_t RecordRunEvent(Recorder& recorder, const char* kind, const std::string& detail,
                       const char* actor) {
  TraceEvent e;
  e.at_us = recorder.MicrosSinceOrigin();
  const int64_t at_us = e.at_us;
  e.pid = ThisPid();
  e.kind = kind;
  e.detail = detail;
  e.actor = actor;
  recorder.Record(std::move(e));
  return at_us;
}

}  // namespace

void Recorder::BeginPart(const std::string& title) {
  RecordRunEvent(*this, "part", title, kActorScenario);
}

void Recorder::MarkRealWait(const std::string& what) {
  RecordRunEvent(*this, "waited", what, kActorScenario);
}

void Recorder::NoteReset(const std::string& what) { RecordRunEvent(*this, "reset", what, kActorSetup); }

// A clock mark never shares its microsecond with another event of this process: it is
// stamped after the latest event recorded so far, and returns only once the clock has moved
// past its stamp, so a step recorded next is later too. Two events of one microsecond are
// one stamp on the timeline's step axis, where a mark of its own splits the lane's card: a
// tie that came and went with the machine's speed drew the same seed two ways. The waits
// are of a microsecond at most.
void Recorder::MarkTime(const std::string& label) {
  int64_t latest = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [who, at_us] : last_at_) latest = std::max(latest, at_us);
  }
  // (A stamp more than a millisecond ahead is not waited for: none is, and a wait must end.)
  const int64_t start = MicrosSinceOrigin();
  while (latest - start < 1000 && MicrosSinceOrigin() <= latest) {
  }
  const int64_t marked = RecordRunEvent(*this, "clock", label, kActorScenario);
  while (MicrosSinceOrigin() <= marked) {
  }
}

void Recorder::OfferDelivery(DeliveryRef delivery) {
  std::lock_guard<std::mutex> lock(mu_);
  offered_ = std::move(delivery);
}

DeliveryRef Recorder::TakeOfferedDelivery() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(offered_, DeliveryRef{});
}

std::string ActorOf(const TraceEvent& e) {
  if (!e.actor.empty()) return e.actor;
  if (e.instance.empty()) return kActorSetup;
  if (e.instance == "broker") return kActorBroker;
  return kActorConsumer;
}

std::string ActorTitle(const TraceEvent& e) {
  const std::string actor = ActorOf(e);
  if (actor == kActorConsumer) {
    return e.instance.size() == 1 ? "Consumer " + e.instance : e.instance;
  }
  if (actor == kActorBroker) return "Broker";
  if (actor == kActorProducer) return "Producer";
  if (actor == kActorProbe) return "scenario check";
  if (actor == kActorSetup) return "set-up";
  if (actor == kActorDatabase) return "Database";
  return e.instance.empty() ? actor : e.instance;
}

void Recorder::Note(const std::string& instance, const std::string& kind, const std::string& detail,
                    const std::string& result) {
  TraceEvent e;
  e.at_us = MicrosSinceOrigin();
  e.instance = instance;
  e.pid = ThisPid();
  e.kind = kind;
  e.detail = detail;
  e.result = result;
  Record(std::move(e));
}

std::vector<TraceEvent> Recorder::Events() const {
  std::vector<TraceEvent> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = events_;
  }
  std::sort(copy.begin(), copy.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.at_us != b.at_us ? a.at_us < b.at_us : a.seq < b.seq;
  });
  return copy;
}

int64_t Recorder::LastAtOf(int pid, const std::string& instance) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto found = last_at_.find({pid, instance});
  return found == last_at_.end() ? -1 : found->second;
}

int64_t Recorder::MicrosAt(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
}

int64_t Recorder::LockTaken(const std::string& file, const void* owner) {
  SharedLock lock(&takes_->mu);
  const int64_t at_us = MicrosSinceOrigin();  // under the lock: the table stays in stamp order
  takes_->slots[takes_->count % kTakeSlots] = {FileKey(file), static_cast<int64_t>(ThisPid()),
                                               reinterpret_cast<uintptr_t>(owner), at_us};
  ++takes_->count;
  return at_us;
}

int64_t Recorder::ReleaseStamp(const std::string& file, const void* owner, int64_t step_started_us,
                               int64_t now_us) const {
  const uint64_t key = FileKey(file);
  const auto pid = static_cast<int64_t>(ThisPid());
  const auto self = reinterpret_cast<uintptr_t>(owner);
  SharedLock lock(&takes_->mu);
  const uint64_t count = takes_->count;
  const uint64_t oldest = count > kTakeSlots ? count - kTakeSlots : 0;
  int64_t stamp = now_us;
  // Newest first, down to the step's start: ends at the first take since the step began.
  for (uint64_t i = count; i > oldest; --i) {
    const SharedTakes::Take& take = takes_->slots[(i - 1) % kTakeSlots];
    if (take.at_us < step_started_us) break;
    if (take.file != key || (take.pid == pid && take.owner == self) || take.at_us > now_us) {
      continue;
    }
    stamp = std::max(step_started_us, take.at_us - 1);
  }
  return stamp;
}

void Recorder::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  last_at_.clear();
  events_.clear();  // the lock takes stay: a release looks only at takes since its step began
  next_seq_ = 1;
  offered_ = {};
}

void RecordNote(Recorder& recorder, TraceEvent stamped, const std::string& kind,
                const std::string& detail, const std::string& result, int64_t at_us) {
  if (at_us < 0 && kind == "outcome") at_us = recorder.LastAtOf(stamped.pid, stamped.instance);
  stamped.at_us = at_us >= 0 ? at_us : recorder.MicrosSinceOrigin();
  // Not a statement: no target, except a lock's take or release, which names its store.
  if (kind != "lock") stamped.target.clear();
  stamped.kind = kind;
  stamped.op = kind == "outcome" ? "outcome" : "";
  stamped.detail = detail;
  stamped.result = result;
  recorder.Record(std::move(stamped));
}

}  // namespace dedupsim
