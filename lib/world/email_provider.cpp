#include "world/email_provider.h"

namespace dedupsim {

void IdempotentEmailProvider::Send(const std::string& idempotency_key, const std::string& text) {
  SendWithKey(idempotency_key, text);
}

ProviderSend IdempotentEmailProvider::SendWithKey(const std::string& idempotency_key,
                                                  const std::string& text) {
  return records_.ProviderSend(idempotency_key, text, clock_) ? ProviderSend::kSent
                                                              : ProviderSend::kAlreadySent;
}

std::optional<std::string> IdempotentEmailProvider::Find(const std::string& idempotency_key) {
  return records_.ProviderFind(idempotency_key);
}

int64_t IdempotentEmailProvider::SentCount() { return records_.ProviderSentCount(); }

int64_t IdempotentEmailProvider::RequestCount() { return records_.ProviderRequestCount(); }

}  // namespace dedupsim
