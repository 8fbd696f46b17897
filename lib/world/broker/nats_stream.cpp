#include "world/broker/nats_stream.h"

#include <fmt/format.h>

#include "world/broker/broker.h"
#include "world/broker/nats_broker.h"

namespace dedupsim {

std::string NatsStatusText(natsStatus s, jsErrCode e) {
  std::string text = natsStatus_GetText(s);
  if (e != 0) text += fmt::format(" (JetStream error {})", static_cast<int>(e));
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0') text += fmt::format(": {}", last);
  return text;
}

void CheckNats(natsStatus s, jsErrCode e, const std::string& what) {
  if (s != NATS_OK) throw BrokerError(fmt::format("NATS: {}: {}", what, NatsStatusText(s, e)));
}

void MakeMarkedStream(jsCtx* js, const std::string& name, const std::string& subject,
                      int64_t duplicates) {
  jsStreamInfo* si = nullptr;
  jsErrCode jerr{};
  natsStatus s = js_GetStreamInfo(&si, js, name.c_str(), nullptr, &jerr);
  if (s == NATS_OK) {
    const bool ours = si->Config != nullptr && si->Config->Description != nullptr &&
                      std::string(si->Config->Description) == kNatsMark;
    jsStreamInfo_Destroy(si);
    if (!ours) {
      throw BrokerError(fmt::format(
          "NATS: stream {} exists and is not dedupsim's (its description is not dedupsim's "
          "mark): refusing to use or change it",
          name));
    }
    CheckNats(js_DeleteStream(js, name.c_str(), nullptr, &jerr), jerr, "delete " + name);
  } else if (s != NATS_NOT_FOUND) {
    CheckNats(s, jerr, "read stream " + name);
  }
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  cfg.Description = kNatsMark;
  const char* subjects[] = {subject.c_str()};
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.Duplicates = duplicates;  // 0: the server's default window
  si = nullptr;
  CheckNats(js_AddStream(&si, js, &cfg, nullptr, &jerr), jerr, "create stream " + name);
  jsStreamInfo_Destroy(si);
}

}  // namespace dedupsim
