#include "store/databases.h"

#include <fmt/format.h>

#include "store/durable_queue.h"
#include "store/error.h"

namespace dedupsim {

std::unique_ptr<SharedRun> Databases::OpenSharedRun() const {
  throw DatabaseError(
      fmt::format("{}: its databases are not shared between machines (no run to share)", backend()));
}

}  // namespace dedupsim
