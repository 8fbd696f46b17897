// librabbitmq (rabbitmq-c), loaded the first time the RabbitMQ broker is used
// (client_library.h): amqp_library.cpp defines each rabbitmq-c function the code calls.
#pragma once

#include "world/broker/client_library.h"

namespace dedupsim {

// $DEDUPSIM_LIBRABBITMQ when set, else librabbitmq.so.4 (Debian 12's librabbitmq4).
const ClientLibrary& AmqpLibrary();
inline void RequireAmqpLibrary() { AmqpLibrary().Require(); }

}  // namespace dedupsim
