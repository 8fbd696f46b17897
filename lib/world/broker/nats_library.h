// libnats (cnats), loaded the first time the NATS broker is used (client_library.h):
// nats_library.cpp defines each cnats function the code calls.
#pragma once

#include "world/broker/client_library.h"

namespace dedupsim {

// $DEDUPSIM_LIBNATS when set, else libnats.so.3.4 (Debian 12's libnats3.4).
const ClientLibrary& NatsLibrary();
// Opens it now; throws BrokerError naming the file when it cannot.
inline void RequireNatsLibrary() { NatsLibrary().Require(); }

}  // namespace dedupsim
