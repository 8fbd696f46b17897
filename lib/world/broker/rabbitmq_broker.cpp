#include "world/broker/rabbitmq_broker.h"

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <fmt/format.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "world/broker/amqp_library.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

// librabbitmq's amqp_empty_table is data, which the forwarding functions cannot reach.
const amqp_table_t kNoArguments{0, nullptr};

std::string Text(amqp_bytes_t b) {
  return b.bytes != nullptr ? std::string(static_cast<const char*>(b.bytes), b.len) : "";
}

// A channel the server closed (a declare refused: 406 PRECONDITION_FAILED, 404 NOT_FOUND).
class ChannelClosed : public BrokerError {
 public:
  ChannelClosed(int code, const std::string& message) : BrokerError(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

const amqp_field_value_t* Header(const amqp_table_t& table, const char* key) {
  for (int i = 0; i < table.num_entries; ++i) {
    if (Text(table.entries[i].key) == key) return &table.entries[i].value;
  }
  return nullptr;
}

// An integer header of any AMQP integer kind; nullopt when absent or not an integer.
std::optional<int64_t> IntHeader(const amqp_table_t& table, const char* key) {
  const amqp_field_value_t* v = Header(table, key);
  if (v == nullptr) return std::nullopt;
  switch (v->kind) {
    case AMQP_FIELD_KIND_I8: return v->value.i8;
    case AMQP_FIELD_KIND_U8: return v->value.u8;
    case AMQP_FIELD_KIND_I16: return v->value.i16;
    case AMQP_FIELD_KIND_U16: return v->value.u16;
    case AMQP_FIELD_KIND_I32: return v->value.i32;
    case AMQP_FIELD_KIND_U32: return v->value.u32;
    case AMQP_FIELD_KIND_I64: return v->value.i64;
    case AMQP_FIELD_KIND_U64: return static_cast<int64_t>(v->value.u64);
    default: return std::nullopt;
  }
}

std::string StringHeader(const amqp_table_t& table, const char* key) {
  const amqp_field_value_t* v = Header(table, key);
  if (v == nullptr || (v->kind != AMQP_FIELD_KIND_UTF8 && v->kind != AMQP_FIELD_KIND_BYTES)) return "";
  return Text(v->value.bytes);
}

// The header each publish carries with its number (RabbitBroker::Send).
constexpr const char* kPublishHeader = "dedupsim-publish";

amqp_table_entry_t Entry(const char* key, const char* value) {
  amqp_table_entry_t e{};
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_UTF8;
  e.value.value.bytes = amqp_cstring_bytes(value);
  return e;
}

amqp_table_entry_t Entry(const char* key, int64_t value) {
  amqp_table_entry_t e{};
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_I64;
  e.value.value.i64 = value;
  return e;
}

}  // namespace

struct RabbitBrokers::Impl {
  amqp_connection_state_t conn = nullptr;
  std::string url;
  std::string prefix;
  std::string server;
  mutable amqp_channel_t next_channel = 1;
  mutable int next_queue = 1;

  ~Impl() {
    if (conn != nullptr) {
      amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
      amqp_destroy_connection(conn);
    }
  }

  // Throws BrokerError for a reply that is not normal; ChannelClosed when the server closed
  // the channel (its close is answered, so the connection goes on).
  void Check(amqp_rpc_reply_t reply, amqp_channel_t channel, const std::string& what) const {
    switch (reply.reply_type) {
      case AMQP_RESPONSE_NORMAL:
        return;
      case AMQP_RESPONSE_NONE:
        throw BrokerError(fmt::format("RabbitMQ: {}: no reply", what));
      case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        throw BrokerError(
            fmt::format("RabbitMQ: {}: {}", what, amqp_error_string2(reply.library_error)));
      case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
          auto* m = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
          const int code = m->reply_code;
          const std::string text = Text(m->reply_text);
          amqp_channel_close_ok_t ok{};
          amqp_send_method(conn, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
          throw ChannelClosed(code, fmt::format("RabbitMQ: {}: {} {}", what, code, text));
        }
        if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
          auto* m = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
          throw BrokerError(fmt::format("RabbitMQ: {}: the server closed the connection: {} {}",
                                        what, m->reply_code, Text(m->reply_text)));
        }
        throw BrokerError(fmt::format("RabbitMQ: {}: unexpected method {:#x}", what, reply.reply.id));
    }
    throw BrokerError(fmt::format("RabbitMQ: {}: unknown reply", what));
  }

  amqp_channel_t OpenChannel() const {
    const amqp_channel_t ch = next_channel++;
    amqp_channel_open(conn, ch);
    Check(amqp_get_rpc_reply(conn), ch, fmt::format("open channel {}", ch));
    return ch;
  }

  void CloseChannel(amqp_channel_t ch) const {
    Check(amqp_channel_close(conn, ch, AMQP_REPLY_SUCCESS), ch, fmt::format("close channel {}", ch));
  }
};

namespace {

class RabbitBroker final : public Broker {
 public:
  RabbitBroker(const RabbitBrokers::Impl& r, const std::string& name, const BrokerOptions& options,
               Recorder* recorder)
      : Broker(recorder),
        r_(r),
        queue_(name),
        dead_queue_(name + "-dead"),
        exchange_(r.prefix + ".dead-letters"),
        options_(options) {
    ValidateBrokerOptions(options_);
    if (options_.duplicate_detection_window.count() > 0) {
      throw std::invalid_argument(
          "RabbitMQ has no send-side duplicate detection (no duplicate window to set)");
    }
    admin_ = r_.OpenChannel();
    amqp_exchange_declare(r_.conn, admin_, amqp_cstring_bytes(exchange_.c_str()),
                          amqp_cstring_bytes("direct"), 0, 1, 0, 0, kNoArguments);
    Declared(amqp_get_rpc_reply(r_.conn), "exchange " + exchange_);
    // Both queues carry dedupsim's dead-letter exchange as an argument: RabbitMQ compares
    // it on every declare, so a queue of the name declared otherwise is refused.
    {
      amqp_table_entry_t entries[] = {Entry("x-queue-type", "quorum"),
                                      Entry("x-dead-letter-exchange", exchange_.c_str())};
      amqp_table_t args{2, entries};
      amqp_queue_declare(r_.conn, admin_, amqp_cstring_bytes(dead_queue_.c_str()), 0, 1, 0, 0, args);
      Declared(amqp_get_rpc_reply(r_.conn), "queue " + dead_queue_);
    }
    amqp_queue_bind(r_.conn, admin_, amqp_cstring_bytes(dead_queue_.c_str()),
                    amqp_cstring_bytes(exchange_.c_str()), amqp_cstring_bytes(dead_queue_.c_str()),
                    kNoArguments);
    Declared(amqp_get_rpc_reply(r_.conn), "bind " + dead_queue_);
    {
      amqp_table_entry_t entries[] = {
          Entry("x-queue-type", "quorum"), Entry("x-dead-letter-exchange", exchange_.c_str()),
          Entry("x-dead-letter-routing-key", dead_queue_.c_str()),
          Entry("x-delivery-limit", static_cast<int64_t>(options_.max_delivery_count - 1))};
      amqp_table_t args{4, entries};
      amqp_queue_declare(r_.conn, admin_, amqp_cstring_bytes(queue_.c_str()), 0, 1, 0, 0, args);
      Declared(amqp_get_rpc_reply(r_.conn), "queue " + queue_);
    }
    for (const std::string& q : {queue_, dead_queue_}) {  // ours: empty it for a fresh start
      amqp_queue_purge(r_.conn, admin_, amqp_cstring_bytes(q.c_str()));
      r_.Check(amqp_get_rpc_reply(r_.conn), admin_, "purge " + q);
    }
    producer_ = r_.OpenChannel();
    amqp_confirm_select(r_.conn, producer_);
    r_.Check(amqp_get_rpc_reply(r_.conn), producer_, "publisher confirms");
    consumer_ = r_.OpenChannel();
  }

  ~RabbitBroker() override {
    try {
      for (const std::string& q : {queue_, dead_queue_}) {  // ours: made by the constructor
        amqp_queue_delete(r_.conn, admin_, amqp_cstring_bytes(q.c_str()), 0, 0);
        r_.Check(amqp_get_rpc_reply(r_.conn), admin_, "delete " + q);
      }
      for (amqp_channel_t ch : {consumer_, producer_, admin_}) r_.CloseChannel(ch);
    } catch (const std::exception&) {
      // The connection is gone: the queues go with the private server, or stay marked.
    }
  }

  BrokerKind kind() const override { return BrokerKind::kRabbitMq; }
  std::string server() const override { return r_.server; }

  SendResult Send(const OrderPlaced& message) override {
    stats_.sent++;
    const std::string body = EncodeOrder(message);
    amqp_basic_properties_t props{};
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                   AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
    props.content_type = amqp_cstring_bytes("application/json");
    props.delivery_mode = 2;  // persistent
    props.message_id = amqp_cstring_bytes(message.message_id.c_str());
    // Which publish this is (the producer channel's confirm sequence number): RabbitMQ hands
    // out no number of the stored message, so each copy carries its publish's, read back
    // from every delivery and dead letter of it (which copy a delivery is: Broker::CopyOf).
    const int64_t publish = next_publish_++;
    amqp_table_entry_t headers[] = {Entry(kPublishHeader, publish)};
    props.headers = amqp_table_t{1, headers};
    amqp_bytes_t bytes{body.size(), const_cast<char*>(body.data())};
    int status = amqp_basic_publish(r_.conn, producer_, amqp_cstring_bytes(""),
                                    amqp_cstring_bytes(queue_.c_str()), 1, 0, &props, bytes);
    if (status != AMQP_STATUS_OK) {
      throw BrokerError(fmt::format("RabbitMQ: publish to {}: {}", queue_, amqp_error_string2(status)));
    }
    const uint64_t confirmed = AwaitConfirm();
    stats_.accepted++;
    Delivery about;
    about.message = message;
    about.sequence_number = publish;
    Note("send", about, fmt::format("publish {} (message-id)", message.message_id),
         fmt::format("confirmed by the broker (publish {})", confirmed));
    return SendResult::kAccepted;
  }

  std::optional<Delivery> Receive() override {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
    for (;;) {
      amqp_rpc_reply_t reply =
          amqp_basic_get(r_.conn, consumer_, amqp_cstring_bytes(queue_.c_str()), 0);
      r_.Check(reply, consumer_, "get from " + queue_);
      if (reply.reply.id == AMQP_BASIC_GET_OK_METHOD) return Delivered(reply);
      amqp_maybe_release_buffers(r_.conn);
      if (pending_returns_ <= 0) {
        CollectDeadLetters();
        return std::nullopt;
      }
      if (SteadyClock::now() > deadline) {
        throw BrokerError(fmt::format(
            "RabbitMQ: {} deliveries released to {} did not come back within 30 s",
            pending_returns_, queue_));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  bool Ack(const Delivery& delivery) override {
    Held held = Take(delivery, "ack");
    Settled();
    const std::string detail = fmt::format("basic.ack {} (channel {}, delivery tag {})",
                                           delivery.message.message_id, held.channel,
                                           delivery.delivery_tag);
    if (held.channel != consumer_) {
      Note("ack", held.delivery, detail, "not sent: its channel was closed");
      return false;
    }
    int status = amqp_basic_ack(r_.conn, consumer_, static_cast<uint64_t>(delivery.delivery_tag), 0);
    if (status != AMQP_STATUS_OK) {
      Note("ack", held.delivery, detail, fmt::format("failed: {}", amqp_error_string2(status)));
      return false;
    }
    stats_.acked++;
    Note("ack", held.delivery, detail, "sent");
    return true;
  }

  void Abandon(const Delivery& delivery) override {
    Held held = Take(delivery, "abandon");
    Settled();
    stats_.redelivered++;
    const bool sent = held.channel == consumer_;
    if (sent) {
      amqp_basic_nack(r_.conn, consumer_, static_cast<uint64_t>(delivery.delivery_tag), 0, 1);
      Released(delivery);
    }
    // basic.nack gets no reply: what the queue then did is its own later step (a
    // redelivery, or, past x-delivery-limit, the dead letter arriving).
    Note("abandon", held.delivery,
         fmt::format("basic.nack {} with requeue (delivery tag {})", delivery.message.message_id,
                     delivery.delivery_tag),
         sent ? "sent (no reply)" : "not sent: its channel was closed");
  }

  void LoseAck(const Delivery& delivery) override {
    Held held = Take(delivery, "ack lost for");
    Settled();
    stats_.redelivered++;
    if (held.channel == consumer_) {
      // The consumer's channel goes, as its connection drops: the broker requeues every
      // delivery the channel held unacked.
      for (auto& [receipt, other] : in_flight_) {
        if (other.channel == consumer_) Released(other.delivery);
      }
      Released(delivery);
      r_.CloseChannel(consumer_);
      const amqp_channel_t closed = consumer_;
      consumer_ = r_.OpenChannel();
      Note("ack-lost", held.delivery,
           fmt::format("no ack for {}: channel {} closed", delivery.message.message_id, closed),
           fmt::format("channel {} closed; next deliveries on channel {}", closed, consumer_));
      return;
    }
    Note("ack-lost", held.delivery,
         fmt::format("no ack for {}: its channel is closed already", delivery.message.message_id),
         "its channel was closed already");
  }

  void DeadLetterIt(const Delivery& delivery, const std::string& reason,
                    const std::string& description) override {
    Held held = Take(delivery, "dead-letter");
    Settled();
    const bool sent = held.channel == consumer_;
    if (sent) {
      amqp_basic_reject(r_.conn, consumer_, static_cast<uint64_t>(delivery.delivery_tag), 0);
      expected_dead_++;
      ours_[delivery.message.message_id] = {reason, description};
      dead_after_[delivery.message.message_id] = delivery.delivery_count;
    }
    // The consumer's own dead-lettering, its reason its own; basic.reject gets no reply: the
    // dead letter's arrival is the queue's step.
    Note("dead-letter", held.delivery,
         fmt::format("basic.reject {} without requeue (delivery tag {}): {}",
                     delivery.message.message_id, delivery.delivery_tag, reason),
         sent ? "sent (no reply)" : "not sent: its channel was closed");
  }

  int64_t ReplayDeadLetters() override {
    CollectDeadLetters();
    std::vector<DeadLetter> letters;
    letters.swap(dead_letters_);
    int64_t accepted = 0;
    for (const DeadLetter& letter : letters) {
      Note("replay", letter.delivery,
           fmt::format("replay {} from {}", letter.delivery.message.message_id, dead_queue_),
           "");  // the send that follows says what the broker answered
      if (SendReplay(letter.delivery.message) == SendResult::kAccepted) accepted++;
    }
    return accepted;
  }

  const std::vector<DeadLetter>& dead_letters() const override { return dead_letters_; }
  const BrokerStats& stats() const override { return stats_; }
  const BrokerOptions& options() const override { return options_; }

 private:
  struct Held {
    amqp_channel_t channel = 0;
    Delivery delivery;
  };

  // A declare's answer: a queue or exchange of that name declared otherwise is refused.
  void Declared(amqp_rpc_reply_t reply, const std::string& what) {
    try {
      r_.Check(reply, admin_, "declare " + what);
    } catch (const ChannelClosed& e) {
      admin_ = r_.OpenChannel();
      if (e.code() == 406) {
        throw BrokerError(fmt::format(
            "RabbitMQ: {} exists and was not declared by dedupsim (its arguments differ from "
            "dedupsim's: {}): refusing to use or change it",
            what, e.what()));
      }
      throw;
    }
  }

  uint64_t AwaitConfirm() {
    for (;;) {
      amqp_frame_t frame{};
      int status = amqp_simple_wait_frame(r_.conn, &frame);
      if (status != AMQP_STATUS_OK) {
        throw BrokerError(fmt::format("RabbitMQ: waiting for a publish confirm: {}",
                                      amqp_error_string2(status)));
      }
      if (frame.frame_type != AMQP_FRAME_METHOD || frame.channel != producer_) continue;
      if (frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
        return static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded)->delivery_tag;
      }
      if (frame.payload.method.id == AMQP_BASIC_NACK_METHOD) {
        throw BrokerError(fmt::format("RabbitMQ: the broker refused a publish to {} (basic.nack)", queue_));
      }
      if (frame.payload.method.id == AMQP_BASIC_RETURN_METHOD) {
        throw BrokerError(fmt::format("RabbitMQ: a publish to {} was returned: no such queue", queue_));
      }
    }
  }

  Delivery Delivered(const amqp_rpc_reply_t& reply) {
    auto* ok = static_cast<amqp_basic_get_ok_t*>(reply.reply.decoded);
    Delivery d;
    d.delivery_tag = static_cast<int64_t>(ok->delivery_tag);
    d.redelivered = ok->redelivered != 0;
    amqp_message_t message{};
    r_.Check(amqp_read_message(r_.conn, consumer_, &message, 0), consumer_, "read a delivery");
    std::optional<int64_t> count;
    if (message.properties._flags & AMQP_BASIC_HEADERS_FLAG) {
      count = IntHeader(message.properties.headers, "x-delivery-count");
      d.sequence_number = IntHeader(message.properties.headers, kPublishHeader).value_or(0);
    }
    std::optional<OrderPlaced> order = DecodeOrder(Text(message.body));
    amqp_destroy_message(&message);
    amqp_maybe_release_buffers(r_.conn);
    if (!order) {
      throw BrokerError(fmt::format("RabbitMQ: queue {} holds a message that is not an OrderPlaced of dedupsim's", queue_));
    }
    d.message = *order;
    d.delivery_count = static_cast<int>(count.value_or(0)) + 1;
    d.receipt = next_receipt_++;
    if (d.redelivered && pending_returns_ > 0) pending_returns_--;
    stats_.deliveries++;
    Note("deliver", d,
         fmt::format("basic.get {} (channel {}, delivery tag {})", d.message.message_id, consumer_,
                     d.delivery_tag),
         fmt::format("redelivered {}, x-delivery-count {}", d.redelivered ? 1 : 0,
                     count ? std::to_string(*count) : "absent"));
    Offer(d);
    in_flight_[d.receipt] = {consumer_, d};
    return d;
  }

  Held Take(const Delivery& delivery, const char* action) {
    auto it = in_flight_.find(delivery.receipt);
    if (it == in_flight_.end()) {
      throw std::logic_error(fmt::format("{}: delivery {} is not in flight", action, delivery.receipt));
    }
    Held held = it->second;
    in_flight_.erase(it);
    return held;
  }

  bool AtLimit(const Delivery& d) const { return d.delivery_count >= options_.max_delivery_count; }

  // A delivery handed back to the queue: it comes back, or, past the limit, is dead-lettered.
  void Released(const Delivery& d) {
    if (AtLimit(d)) {
      expected_dead_++;
      dead_after_[d.message.message_id] = d.delivery_count;
    } else {
      pending_returns_++;
    }
  }

  // Reads what the dead-letter queue received (consumed: acked as read), waiting a while for
  // the dead letters the queue owes.
  void CollectDeadLetters() {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
    while (expected_dead_ > 0) {
      amqp_rpc_reply_t reply =
          amqp_basic_get(r_.conn, admin_, amqp_cstring_bytes(dead_queue_.c_str()), 1);
      r_.Check(reply, admin_, "get from " + dead_queue_);
      if (reply.reply.id != AMQP_BASIC_GET_OK_METHOD) {
        amqp_maybe_release_buffers(r_.conn);
        if (SteadyClock::now() > deadline) {
          throw BrokerError(fmt::format("RabbitMQ: {} dead letters owed to {} did not arrive within 10 s",
                                        expected_dead_, dead_queue_));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      amqp_message_t message{};
      r_.Check(amqp_read_message(r_.conn, admin_, &message, 0), admin_, "read a dead letter");
      std::string server_reason;
      int64_t publish = 0;
      if (message.properties._flags & AMQP_BASIC_HEADERS_FLAG) {
        server_reason = StringHeader(message.properties.headers, "x-first-death-reason");
        publish = IntHeader(message.properties.headers, kPublishHeader).value_or(0);
      }
      std::optional<OrderPlaced> order = DecodeOrder(Text(message.body));
      amqp_destroy_message(&message);
      amqp_maybe_release_buffers(r_.conn);
      if (!order) continue;  // not one of ours: consumed, not counted
      DeadLetter letter;
      letter.delivery.message = *order;
      letter.delivery.sequence_number = publish;
      // A dead letter is no delivery: it is numbered by the last delivery of it this client
      // settled (rejected, or released at the limit), 0 where it settled none.
      if (auto after = dead_after_.find(order->message_id); after != dead_after_.end()) {
        letter.delivery.delivery_count = after->second;
        dead_after_.erase(after);
      }
      auto ours = ours_.find(order->message_id);
      if (server_reason == "rejected" && ours != ours_.end()) {
        letter.reason = ours->second.first;
        letter.description = ours->second.second;
        ours_.erase(ours);
      } else {
        letter.reason = server_reason.empty() ? "dead-lettered" : server_reason;
        letter.description = fmt::format("dead-lettered by the queue: x-first-death-reason {}",
                                         letter.reason);
      }
      expected_dead_--;
      stats_.dead_lettered++;
      Note("dead-lettered", letter.delivery, fmt::format("{} arrived in {}", order->message_id, dead_queue_),
           fmt::format("x-first-death-reason {}", server_reason.empty() ? "absent" : server_reason));
      dead_letters_.push_back(std::move(letter));
    }
  }

  const RabbitBrokers::Impl& r_;
  std::string queue_;
  std::string dead_queue_;
  std::string exchange_;
  BrokerOptions options_;
  amqp_channel_t admin_ = 0;
  amqp_channel_t producer_ = 0;
  amqp_channel_t consumer_ = 0;
  std::map<uint64_t, Held> in_flight_;
  uint64_t next_receipt_ = 1;
  int64_t pending_returns_ = 0;
  int64_t expected_dead_ = 0;
  std::map<std::string, std::pair<std::string, std::string>> ours_;  // MessageId -> reason, text
  std::map<std::string, int> dead_after_;  // MessageId -> the delivery settled before its death
  int64_t next_publish_ = 1;  // the producer channel's next confirm sequence number
  std::vector<DeadLetter> dead_letters_;
  BrokerStats stats_;
};

}  // namespace

RabbitBrokers::RabbitBrokers(const std::string& url, std::string prefix)
    : impl_(std::make_unique<Impl>()) {
  RequireAmqpLibrary();  // before anything: one line when librabbitmq is missing
  impl_->url = url;
  impl_->prefix = std::move(prefix);
  std::vector<char> text(url.begin(), url.end());
  text.push_back('\0');
  amqp_connection_info info{};
  amqp_default_connection_info(&info);
  if (amqp_parse_url(text.data(), &info) != AMQP_STATUS_OK) {
    throw BrokerError(fmt::format("RabbitMQ: --broker-url {} is not an amqp:// URL", url));
  }
  if (info.ssl) throw BrokerError(fmt::format("RabbitMQ: {}: amqps (TLS) is not supported", url));
  impl_->conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(impl_->conn);
  if (socket == nullptr) throw BrokerError("RabbitMQ: cannot make a TCP socket");
  timeval timeout{10, 0};
  amqp_set_handshake_timeout(impl_->conn, &timeout);
  amqp_set_rpc_timeout(impl_->conn, &timeout);
  if (int status = amqp_socket_open(socket, info.host, info.port); status != AMQP_STATUS_OK) {
    throw BrokerError(fmt::format("RabbitMQ: cannot connect to {}:{}: {}", info.host, info.port,
                                  amqp_error_string2(status)));
  }
  amqp_rpc_reply_t login = amqp_login(impl_->conn, info.vhost, 0, 131072, 0,
                                      AMQP_SASL_METHOD_PLAIN, info.user, info.password);
  impl_->Check(login, 0, fmt::format("log in to {}:{} as {}", info.host, info.port, info.user));
  std::string version = "?";
  if (const amqp_table_t* props = amqp_get_server_properties(impl_->conn)) {
    std::string v = StringHeader(*props, "version");
    if (!v.empty()) version = v;
  }
  impl_->server = "RabbitMQ " + version;
}

RabbitBrokers::~RabbitBrokers() = default;

const std::string& RabbitBrokers::server() const { return impl_->server; }

std::unique_ptr<Broker> RabbitBrokers::Open(Clock& /*clock*/, const BrokerOptions& options,
                                            Recorder* recorder) const {
  const std::string name =
      fmt::format("{}-{}-{}", impl_->prefix, static_cast<int>(::getpid()), impl_->next_queue++);
  return std::make_unique<RabbitBroker>(*impl_, name, options, recorder);
}

}  // namespace dedupsim
