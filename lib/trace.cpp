#include "trace.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace dedupsim {

Recorder::Recorder() : Recorder(std::chrono::steady_clock::now()) {}

Recorder::Recorder(std::chrono::steady_clock::time_point origin) : origin_(origin) {}

int64_t Recorder::MicrosSinceOrigin() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               origin_)
      .count();
}

void Recorder::Record(TraceEvent event) {
  const bool observe = event.pid == observer_pid_ && event.actor != kActorProbe;
  {
    std::lock_guard<std::mutex> lock(mu_);
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

void Recorder::BeginPart(const std::string& title) {
  TraceEvent e;
  e.at_us = MicrosSinceOrigin();
  e.pid = static_cast<int>(getpid());
  e.kind = "part";
  e.detail = title;
  e.actor = kActorScenario;
  Record(std::move(e));
}

void Recorder::MarkTime(const std::string& label) {
  TraceEvent e;
  e.at_us = MicrosSinceOrigin();
  e.pid = static_cast<int>(getpid());
  e.kind = "clock";
  e.detail = label;
  e.actor = kActorScenario;
  Record(std::move(e));
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
  e.pid = static_cast<int>(getpid());
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
  std::stable_sort(copy.begin(), copy.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.at_us < b.at_us; });
  return copy;
}

int64_t Recorder::MicrosAt(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
}

void Recorder::LockTaken(const std::string& file, const void* owner, int64_t at_us) {
  std::lock_guard<std::mutex> lock(mu_);
  lock_takes_[file].push_back({owner, at_us});
}

int64_t Recorder::ReleaseStamp(const std::string& file, const void* owner, int64_t step_started_us,
                               int64_t now_us) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = lock_takes_.find(file);
  if (found == lock_takes_.end()) return now_us;
  int64_t stamp = now_us;
  for (const LockTake& take : found->second) {
    if (take.owner != owner && take.at_us >= step_started_us && take.at_us <= stamp) {
      stamp = std::max(step_started_us, take.at_us - 1);
    }
  }
  return stamp;
}

void Recorder::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
  lock_takes_.clear();
  offered_ = {};
}

void RecordNote(Recorder& recorder, TraceEvent stamped, const std::string& kind,
                const std::string& detail, const std::string& result, int64_t at_us) {
  stamped.at_us = at_us >= 0 ? at_us : recorder.MicrosSinceOrigin();
  stamped.target.clear();  // not a statement
  stamped.kind = kind;
  stamped.op = kind == "outcome" ? "outcome" : "";
  stamped.detail = detail;
  stamped.result = result;
  recorder.Record(std::move(stamped));
}

}  // namespace dedupsim
