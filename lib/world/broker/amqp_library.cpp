// rabbitmq-c's functions, each forwarding to librabbitmq's own, opened on the first call
// (client_library.h). A function the code starts to call is added here (the link fails
// with an undefined reference until then; the compiler checks its signature).
#include "world/broker/amqp_library.h"

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>

#include <cstdarg>

namespace dedupsim {

const ClientLibrary& AmqpLibrary() {
  static const ClientLibrary library("DEDUPSIM_LIBRABBITMQ", "librabbitmq.so.4",
                                     "the RabbitMQ broker",
                                     "librabbitmq4 (Debian; librabbitmq-dev for building)");
  return library;
}

}  // namespace dedupsim

#define AMQP_FORWARD(result, name, params, args) \
  DEDUPSIM_CLIENT_FORWARD(dedupsim::AmqpLibrary, result, name, params, args)

// Connections and channels.
AMQP_FORWARD(amqp_connection_state_t, amqp_new_connection, (void), ())
AMQP_FORWARD(amqp_socket_t*, amqp_tcp_socket_new, (amqp_connection_state_t state), (state))
AMQP_FORWARD(int, amqp_socket_open, (amqp_socket_t * self, const char* host, int port),
             (self, host, port))
AMQP_FORWARD(int, amqp_set_handshake_timeout,
             (amqp_connection_state_t state, const struct timeval* timeout), (state, timeout))
AMQP_FORWARD(int, amqp_set_rpc_timeout,
             (amqp_connection_state_t state, const struct timeval* timeout), (state, timeout))
AMQP_FORWARD(amqp_table_t*, amqp_get_server_properties, (amqp_connection_state_t state), (state))
AMQP_FORWARD(amqp_channel_open_ok_t*, amqp_channel_open,
             (amqp_connection_state_t state, amqp_channel_t channel), (state, channel))
AMQP_FORWARD(amqp_rpc_reply_t, amqp_get_rpc_reply, (amqp_connection_state_t state), (state))
AMQP_FORWARD(amqp_rpc_reply_t, amqp_channel_close,
             (amqp_connection_state_t state, amqp_channel_t channel, int code),
             (state, channel, code))
AMQP_FORWARD(amqp_rpc_reply_t, amqp_connection_close, (amqp_connection_state_t state, int code),
             (state, code))
AMQP_FORWARD(int, amqp_destroy_connection, (amqp_connection_state_t state), (state))
AMQP_FORWARD(void, amqp_maybe_release_buffers, (amqp_connection_state_t state), (state))
AMQP_FORWARD(const char*, amqp_error_string2, (int err), (err))
AMQP_FORWARD(amqp_bytes_t, amqp_cstring_bytes, (char const* cstr), (cstr))
AMQP_FORWARD(int, amqp_parse_url, (char* url, struct amqp_connection_info* parsed), (url, parsed))
AMQP_FORWARD(void, amqp_default_connection_info, (struct amqp_connection_info * parsed), (parsed))
AMQP_FORWARD(int, amqp_send_method,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_method_number_t id,
              void* decoded),
             (state, channel, id, decoded))
AMQP_FORWARD(int, amqp_simple_wait_frame, (amqp_connection_state_t state, amqp_frame_t* decoded_frame),
             (state, decoded_frame))

// Queues and exchanges.
AMQP_FORWARD(amqp_queue_declare_ok_t*, amqp_queue_declare,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
              amqp_boolean_t passive, amqp_boolean_t durable, amqp_boolean_t exclusive,
              amqp_boolean_t auto_delete, amqp_table_t arguments),
             (state, channel, queue, passive, durable, exclusive, auto_delete, arguments))
AMQP_FORWARD(amqp_exchange_declare_ok_t*, amqp_exchange_declare,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t exchange,
              amqp_bytes_t type, amqp_boolean_t passive, amqp_boolean_t durable,
              amqp_boolean_t auto_delete, amqp_boolean_t internal, amqp_table_t arguments),
             (state, channel, exchange, type, passive, durable, auto_delete, internal, arguments))
AMQP_FORWARD(amqp_queue_bind_ok_t*, amqp_queue_bind,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
              amqp_bytes_t exchange, amqp_bytes_t routing_key, amqp_table_t arguments),
             (state, channel, queue, exchange, routing_key, arguments))
AMQP_FORWARD(amqp_queue_purge_ok_t*, amqp_queue_purge,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue),
             (state, channel, queue))
AMQP_FORWARD(amqp_queue_delete_ok_t*, amqp_queue_delete,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
              amqp_boolean_t if_unused, amqp_boolean_t if_empty),
             (state, channel, queue, if_unused, if_empty))
AMQP_FORWARD(amqp_confirm_select_ok_t*, amqp_confirm_select,
             (amqp_connection_state_t state, amqp_channel_t channel), (state, channel))

// Messages.
AMQP_FORWARD(int, amqp_basic_publish,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t exchange,
              amqp_bytes_t routing_key, amqp_boolean_t mandatory, amqp_boolean_t immediate,
              struct amqp_basic_properties_t_ const* properties, amqp_bytes_t body),
             (state, channel, exchange, routing_key, mandatory, immediate, properties, body))
AMQP_FORWARD(amqp_rpc_reply_t, amqp_basic_get,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
              amqp_boolean_t no_ack),
             (state, channel, queue, no_ack))
AMQP_FORWARD(amqp_rpc_reply_t, amqp_read_message,
             (amqp_connection_state_t state, amqp_channel_t channel, amqp_message_t* message,
              int flags),
             (state, channel, message, flags))
DEDUPSIM_CLIENT_FREE(dedupsim::AmqpLibrary, amqp_destroy_message, (amqp_message_t * message), (message))
AMQP_FORWARD(int, amqp_basic_ack,
             (amqp_connection_state_t state, amqp_channel_t channel, uint64_t delivery_tag,
              amqp_boolean_t multiple),
             (state, channel, delivery_tag, multiple))
AMQP_FORWARD(int, amqp_basic_nack,
             (amqp_connection_state_t state, amqp_channel_t channel, uint64_t delivery_tag,
              amqp_boolean_t multiple, amqp_boolean_t requeue),
             (state, channel, delivery_tag, multiple, requeue))
AMQP_FORWARD(int, amqp_basic_reject,
             (amqp_connection_state_t state, amqp_channel_t channel, uint64_t delivery_tag,
              amqp_boolean_t requeue),
             (state, channel, delivery_tag, requeue))

// amqp_login is variadic (its SASL method's arguments): the forwarding takes PLAIN's user
// and password, the only method dedupsim logs in with.
extern "C" amqp_rpc_reply_t amqp_login(amqp_connection_state_t state, char const* vhost,
                                       int channel_max, int frame_max, int heartbeat,
                                       amqp_sasl_method_enum sasl_method, ...) {
  static const auto forward =
      reinterpret_cast<decltype(&::amqp_login)>(dedupsim::AmqpLibrary().Symbol("amqp_login"));
  va_list args;
  va_start(args, sasl_method);
  const char* user = va_arg(args, const char*);
  const char* password = va_arg(args, const char*);
  va_end(args);
  return forward(state, vhost, channel_max, frame_max, heartbeat, sasl_method, user, password);
}
