// What the NATS broker (nats_broker.cpp) and the soak's NATS queue (soak/nats_queue.cpp)
// share: one way to turn a libnats status into a BrokerError, and one way to make a stream
// of dedupsim's.
//
// Rules:
//   - A stream is dedupsim's when its description is kNatsMark. MakeMarkedStream deletes a
//     stream of that name only when it carries the mark; a stream without it is refused with
//     a BrokerError and left as it is.
//   - Both need libnats loaded (RequireNatsLibrary) and a JetStream context of their own.
#pragma once

#include <nats/nats.h>

#include <cstdint>
#include <string>

namespace dedupsim {

// The status's text, with the JetStream error and libnats's last error when there are any.
std::string NatsStatusText(natsStatus s, jsErrCode e);

// Throws BrokerError "NATS: <what>: <NatsStatusText>"
// unless s is NATS_OK.
void CheckNats(natsStatus s, jsErrCode e, const std::string& what);

// Creates the file-stored stream `name` on `subject`, marked as dedupsim's, after deleting a
// marked stream of that name left by an earlier run. duplicates is the stream's Duplicates
// window in nanoseconds (0: the server's default).
void MakeMarkedStream(jsCtx* js, const std::string& name, const std::string& subject,
                      int64_t duplicates = 0);

}  // namespace dedupsim
