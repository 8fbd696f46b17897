#include "store/database_settings.h"

namespace dedupsim {

std::string_view ToString(JournalMode mode) { return mode == JournalMode::kWal ? "wal" : "delete"; }

std::string_view ToString(Synchronous level) {
  switch (level) {
    case Synchronous::kOff:
      return "off";
    case Synchronous::kNormal:
      return "normal";
    case Synchronous::kFull:
      return "full";
  }
  return "normal";
}

}  // namespace dedupsim
