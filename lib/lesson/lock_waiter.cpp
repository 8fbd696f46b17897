#include "lesson/lock_waiter.h"

namespace dedupsim {

LockWaiter::LockWaiter(const Backend& backend, Recorder* recorder, std::string instance,
                       std::string actor, DeliveryRef delivery, std::function<void(Store&)> work) {
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
    store->SetTraceRole(actor, "database");
    store->SetWaitListener([this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        blocked_ = true;
      }
      changed_.notify_all();
    });
    store->SetDelivery(std::move(delivery));
    store->Note("open", "new connection", "ok");
    work(*store);
  } catch (...) {
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (store) statements_ = store->WatchedStatements();
  done_ = true;
  changed_.notify_all();
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
