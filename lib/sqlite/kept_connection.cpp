#include "sqlite/kept_connection.h"

#include <pthread.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace dedupsim {

namespace {

std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}

std::vector<KeptConnection*>& Registry() {
  static std::vector<KeptConnection*> all;
  return all;
}

}  // namespace

KeptConnection::KeptConnection(Connection connection) : connection_(std::move(connection)) {
  static std::once_flag handler;
  std::call_once(handler, [] { ::pthread_atfork(&CloseAllBeforeFork, nullptr, nullptr); });
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().push_back(this);
}

KeptConnection::~KeptConnection() {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto& all = Registry();
    all.erase(std::remove(all.begin(), all.end(), this), all.end());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  connection_.reset();
}

void KeptConnection::WithReopened(const std::function<Connection()>& reopen,
                                  const std::function<void(Connection&)>& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!connection_) connection_.emplace(reopen());  // closed by a fork
  f(*connection_);
}

bool KeptConnection::WithIfOpen(const std::function<void(Connection&)>& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!connection_) return false;
  f(*connection_);
  return true;
}

void KeptConnection::CloseAllBeforeFork() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (KeptConnection* kept : Registry()) {
    std::lock_guard<std::mutex> inner(kept->mutex_);
    kept->connection_.reset();  // a temporary file's connection: no checkpoint at close
  }
}

}  // namespace dedupsim
