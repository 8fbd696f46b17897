#include "store/lock_waits.h"

namespace dedupsim {

bool WaitedFor(const LockHistory& waiter, const LockHistory& holder) {
  for (const BlockedWait& w : waiter.waits) {
    for (const LockHold& h : holder.held) {
      const bool overlaps = w.blocked < h.released && w.resumed > h.acquire_started;
      const bool resumed_after = w.resumed >= h.release_started;
      if (overlaps && resumed_after) return true;
    }
  }
  return false;
}

}  // namespace dedupsim
