#include "consumers/retry.h"

#include <fmt/format.h>

namespace dedupsim {

void NoteRetry(Session& session, int next_attempt, const std::string& sqlstate) {
  session.Note("retry", fmt::format("attempt {} after {}", next_attempt, sqlstate), "retrying");
}

}  // namespace dedupsim
