// A simulated email provider that honours an idempotency key, as many real providers do:
// a second Send with a key it has already accepted sends nothing and says so, and Find
// answers whether, and when, a key was sent. Its records live in a side store (store/
// side_store.h), not in the inventory database (the provider is another system), so they
// survive the death of a child process that sent an email, and the parent can count them.
//
// Every request is logged as well as every email actually sent: the difference is the
// duplicates the provider turned away.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/clock.h"
#include "store/side_store.h"

namespace dedupsim {

// Where emails go. Abstract so a scenario can count sends made in a child process.
class EmailProvider {
 public:
  virtual ~EmailProvider() = default;
  virtual void Send(const std::string& idempotency_key, const std::string& text) = 0;
};

enum class ProviderSend { kSent, kAlreadySent };

class IdempotentEmailProvider final : public EmailProvider {
 public:
  // records: a connection to a provider's store (SideStoreKind::kEmailProvider); must
  // outlive this object.
  IdempotentEmailProvider(SideRecords& records, Clock& clock) : records_(records), clock_(clock) {}

  // EmailProvider: sends unless the key was sent before.
  void Send(const std::string& idempotency_key, const std::string& text) override;
  ProviderSend SendWithKey(const std::string& idempotency_key, const std::string& text);
  // When the key was sent, if it was.
  std::optional<std::string> Find(const std::string& idempotency_key);

  int64_t SentCount();     // emails that went out
  int64_t RequestCount();  // sends asked for, duplicates included

 private:
  SideRecords& records_;
  Clock& clock_;
};

}  // namespace dedupsim
