#include "postgres/lock_waiter.h"

#include "postgres/connection.h"
#include "postgres/store.h"
#include "store/error.h"

namespace dedupsim {

LockWaiter::LockWaiter(const Backend& backend, Recorder* recorder, std::string instance,
                       std::string actor, DeliveryRef delivery, std::function<void(Store&)> work) {
  const auto* pg = dynamic_cast<const PgBackend*>(&backend);
  if (pg == nullptr) throw DatabaseError("LockWaiter: the lesson runs on a server database only");
  thread_ = std::thread(
      [this, &backend, recorder, instance = std::move(instance), actor = std::move(actor),
       delivery = std::move(delivery),
       work = std::move(work)] { Body(backend, recorder, instance, actor, delivery, work); });
}

LockWaiter::~LockWaiter() {
  if (thread_.joinable()) thread_.join();
}

void LockWaiter::Body(const Backend& backend, Recorder* recorder, const std::string& instance,
                      const std::string& actor, DeliveryRef delivery,
                      const std::function<void(Store&)>& work) {
  std::unique_ptr<Store> store;
  try {
    store = backend.Open(recorder, instance);
    auto& connection = static_cast<PgStore&>(*store).connection();
    connection.SetTraceRole(actor, "database");
    store->SetWaitListener([this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        blocked_ = true;
      }
      changed_.notify_all();
    });
    store->SetDelivery(std::move(delivery));
    store->Note("open", "new connection", "ok");
    {
      std::lock_guard<std::mutex> lock(mu_);
      pid_ = connection.backend_pid();
    }
    changed_.notify_all();
    work(*store);
  } catch (...) {
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (store) statements_ = store->WatchedStatements();
  if (pid_ < 0) pid_ = 0;
  done_ = true;
  changed_.notify_all();
}

int LockWaiter::backend_pid() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return pid_ >= 0; });
  return pid_;
}

bool LockWaiter::AwaitBlocked(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, timeout, [this] { return blocked_ || done_; });
  return blocked_;
}

void LockWaiter::Join() {
  if (thread_.joinable()) thread_.join();
  if (error_) std::rethrow_exception(error_);
}

const WatchedStatement* LockWaiter::FirstWait() const {
  for (const WatchedStatement& s : statements_) {
    if (s.waited) return &s;
  }
  return nullptr;
}

}  // namespace dedupsim
