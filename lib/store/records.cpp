#include "store/records.h"

namespace dedupsim {

std::string_view ToString(InboxKey key) {
  return key == InboxKey::kMessageIdOnly ? "MessageId" : "(MessageId, Consumer)";
}

std::string_view InboxTable(InboxKey key) {
  return key == InboxKey::kMessageIdOnly ? "InboxByMessageId" : "Inbox";
}

}  // namespace dedupsim
