#include "world/broker/nats_broker.h"

#include <fmt/format.h>
#include <nats/nats.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "os/unique_fd.h"
#include "world/broker/nats_library.h"
#include "world/broker/nats_stream.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t Nanos(std::chrono::milliseconds ms) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(ms).count();
}

OrderPlaced Decode(const char* data, int length, const std::string& stream) {
  std::optional<OrderPlaced> m = DecodeOrder(std::string_view(data, static_cast<size_t>(length)));
  if (!m) {
    throw BrokerError(fmt::format(
        "NATS: stream {} holds a message that is not an OrderPlaced of dedupsim's", stream));
  }
  return *m;
}

// The server's INFO line: what it says it is. nats://host:port (the first of a list).
nlohmann::json ServerInfo(const std::string& url) {
  std::string rest = url;
  if (auto p = rest.find("://"); p != std::string::npos) rest = rest.substr(p + 3);
  if (auto p = rest.find(','); p != std::string::npos) rest = rest.substr(0, p);
  if (auto p = rest.rfind('@'); p != std::string::npos) rest = rest.substr(p + 1);
  std::string host = rest;
  std::string port = "4222";
  if (auto p = rest.rfind(':'); p != std::string::npos) {
    host = rest.substr(0, p);
    port = rest.substr(p + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    throw BrokerError(fmt::format("NATS: cannot resolve {} (from --broker-url {})", host, url));
  }
  UniqueFd fd;
  for (addrinfo* a = found; a != nullptr && !fd; a = a->ai_next) {
    fd.reset(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (fd && ::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) fd.reset();
  }
  ::freeaddrinfo(found);
  if (!fd) throw BrokerError(fmt::format("NATS: cannot connect to {}", url));
  timeval tv{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string line;
  char c = 0;
  while (line.size() < 65536 && ::read(fd.get(), &c, 1) == 1 && c != '\n') line += c;
  fd.reset();
  if (line.rfind("INFO ", 0) != 0) {
    throw BrokerError(fmt::format("NATS: {} did not answer as a NATS server", url));
  }
  nlohmann::json info = nlohmann::json::parse(line.substr(5), nullptr, false);
  if (info.is_discarded()) throw BrokerError(fmt::format("NATS: {} sent an INFO line that is not JSON", url));
  return info;
}

struct MsgDeleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
using MsgPtr = std::unique_ptr<natsMsg, MsgDeleter>;

}  // namespace

struct NatsBrokers::Impl {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  std::string url;
  std::string prefix;
  std::string server;
  mutable int next = 1;

  ~Impl() {
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) natsConnection_Destroy(nc);
  }
};

namespace {

class NatsBroker final : public Broker {
 public:
  NatsBroker(const NatsBrokers::Impl& nats, const std::string& name, const BrokerOptions& options,
             Recorder* recorder)
      : Broker(recorder),
        nats_(nats),
        stream_(name),
        subject_(name + ".orders"),
        dead_stream_(name + "-dead"),
        dead_subject_(name + ".dead"),
        consumer_(name + "-consumer"),
        options_(options) {
    ValidateBrokerOptions(options_);
    for (char& c : subject_) c = c == '-' ? '.' : c;
    for (char& c : dead_subject_) c = c == '-' ? '.' : c;
    CreateStream(stream_, subject_,
                 options_.duplicate_detection_window.count() > 0 ? Nanos(options_.duplicate_detection_window) : 0);
    CreateStream(dead_stream_, dead_subject_, 0);
    // The advisory the server sends when it gives a message up after MaxDeliver.
    const std::string advisory =
        fmt::format("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.{}", stream_, consumer_);
    CheckNats(natsConnection_SubscribeSync(&advisories_, nats_.nc, advisory.c_str()), jsErrCode{},
          "subscribe to " + advisory);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = consumer_.c_str();
    cc.Description = kNatsMark;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = Nanos(options_.ack_wait);
    cc.MaxDeliver = options_.max_delivery_count;
    cc.FilterSubject = subject_.c_str();
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr{};
    CheckNats(js_AddConsumer(&ci, nats_.js, stream_.c_str(), &cc, nullptr, &jerr), jerr,
          "create consumer " + consumer_);
    jsConsumerInfo_Destroy(ci);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream_.c_str();
    so.Consumer = consumer_.c_str();
    CheckNats(js_PullSubscribe(&sub_, nats_.js, subject_.c_str(), consumer_.c_str(), nullptr, &so, &jerr),
          jerr, "subscribe to consumer " + consumer_);
  }

  ~NatsBroker() override {
    in_flight_.clear();
    if (sub_ != nullptr) natsSubscription_Destroy(sub_);
    if (advisories_ != nullptr) natsSubscription_Destroy(advisories_);
    for (const std::string& s : {stream_, dead_stream_}) {
      jsErrCode jerr{};
      js_DeleteStream(nats_.js, s.c_str(), nullptr, &jerr);  // ours: made by the constructor
    }
  }

  BrokerKind kind() const override { return BrokerKind::kNats; }
  std::string server() const override { return nats_.server; }

  SendResult Send(const OrderPlaced& message) override {
    return Publish(message, subject_, "send", {});
  }

  std::optional<Delivery> Receive() override {
    // Long enough for every redelivery the options allow, with room for a loaded machine.
    const auto deadline = SteadyClock::now() + options_.ack_wait * (options_.max_delivery_count + 1) +
                          std::chrono::seconds(30);
    for (;;) {
      jsConsumerInfo* ci = nullptr;
      jsErrCode jerr{};
      CheckNats(js_GetConsumerInfo(&ci, nats_.js, stream_.c_str(), consumer_.c_str(), nullptr, &jerr),
            jerr, "read consumer " + consumer_);
      const uint64_t pending = ci->NumPending;
      const int64_t ack_pending = ci->NumAckPending;
      jsConsumerInfo_Destroy(ci);
      if (pending == 0 && ack_pending == 0) {
        ReadAdvisories();
        NoteUnacked(0, "");  // any left: the server holds nothing more of them
        return std::nullopt;
      }
      natsMsgList list{};
      natsStatus s = natsSubscription_Fetch(
          &list, sub_, 1, static_cast<int64_t>((options_.ack_wait + std::chrono::milliseconds(100)).count()),
          &jerr);
      if (s == NATS_TIMEOUT || (s == NATS_OK && list.Count == 0)) {
        natsMsgList_Destroy(&list);
        if (SteadyClock::now() > deadline) {
          throw BrokerError(fmt::format("NATS: consumer {} holds {} messages but delivered none",
                                        consumer_, pending + static_cast<uint64_t>(ack_pending)));
        }
        continue;
      }
      CheckNats(s, jerr, "fetch from " + consumer_);
      MsgPtr msg(list.Msgs[0]);
      list.Msgs[0] = nullptr;
      natsMsgList_Destroy(&list);
      jsMsgMetaData* meta = nullptr;
      CheckNats(natsMsg_GetMetaData(&meta, msg.get()), jsErrCode{}, "read a delivery's metadata");
      Delivery d;
      d.sequence_number = static_cast<int64_t>(meta->Sequence.Stream);
      d.delivery_tag = static_cast<int64_t>(meta->Sequence.Consumer);
      d.delivery_count = static_cast<int>(meta->NumDelivered);
      jsMsgMetaData_Destroy(meta);
      d.redelivered = d.delivery_count > 1;
      d.message = Decode(natsMsg_GetData(msg.get()), natsMsg_GetDataLength(msg.get()), stream_);
      d.receipt = next_receipt_++;
      stats_.deliveries++;
      stored_[d.sequence_number] = d.message;
      // The server redelivers an unacked message only once AckWait ran out: the evidence that
      // no ack reached it, said now, before the redelivery.
      NoteUnacked(d.sequence_number, "redelivered");
      Note("deliver", d,
           fmt::format("deliver {} (stream sequence {}, consumer sequence {})", d.message.message_id,
                       d.sequence_number, d.delivery_tag),
           fmt::format("num_delivered {} of MaxDeliver {}", d.delivery_count,
                       options_.max_delivery_count));
      Offer(d);
      in_flight_.emplace(d.receipt, std::make_pair(std::move(msg), d));
      return d;
    }
  }

  bool Ack(const Delivery& delivery) override {
    auto held = Take(delivery, "ack");
    jsErrCode jerr{};
    natsStatus s = natsMsg_AckSync(held.first.get(), nullptr, &jerr);
    Settled();
    if (s != NATS_OK) {
      Note("ack", held.second, fmt::format("ack {} (consumer sequence {})", delivery.message.message_id, delivery.delivery_tag),
           "refused: " + NatsStatusText(s, jerr));
      return false;
    }
    stats_.acked++;
    Note("ack", held.second,
         fmt::format("ack {} (consumer sequence {})", delivery.message.message_id, delivery.delivery_tag),
         "accepted by the server");
    return true;
  }

  void Abandon(const Delivery& delivery) override {
    auto held = Take(delivery, "abandon");
    CheckNats(natsMsg_Nak(held.first.get(), nullptr), jsErrCode{}, "nak");
    Settled();
    stats_.redelivered++;
    OweAdvisory(delivery);
    // A nak gets no reply: what the server then did is its own later step (a redelivery,
    // or the MAX_DELIVERIES advisory's give-up).
    Note("abandon", held.second, fmt::format("nak {} (consumer sequence {})", delivery.message.message_id, delivery.delivery_tag),
         "sent (no reply)");
  }

  void LoseAck(const Delivery& delivery) override {
    auto held = Take(delivery, "ack lost for");
    Settled();
    stats_.redelivered++;
    OweAdvisory(delivery);
    if (releasing_unacked()) {
      // Nothing is sent and the server has seen nothing yet: it acts only when AckWait runs
      // out. The step is noted when that is seen (the redelivery, the MAX_DELIVERIES
      // advisory), not now, while its consumer may still be at work.
      unacked_waiting_.push_back({held.second, TakeSettleVerdict()});
      return;
    }
    Note("ack-lost", held.second,
         fmt::format("no ack for {} (consumer sequence {})", delivery.message.message_id, delivery.delivery_tag),
         fmt::format("nothing reached the server (AckWait {} ms)", options_.ack_wait.count()));
  }

  void DeadLetterIt(const Delivery& delivery, const std::string& reason,
                    const std::string& description) override {
    auto held = Take(delivery, "dead-letter");
    CheckNats(natsMsg_Term(held.first.get(), nullptr), jsErrCode{}, "term");
    Settled();
    Publish(delivery.message, dead_subject_, "dead-letter", reason);
    dead_letters_.push_back({held.second, reason, description});
    stats_.dead_lettered++;
    Note("dead-letter", held.second,
         fmt::format("term {} and publish it to {}", delivery.message.message_id, dead_stream_), reason);
  }

  int64_t ReplayDeadLetters() override {
    std::vector<DeadLetter> letters;
    letters.swap(dead_letters_);
    jsErrCode jerr{};
    CheckNats(js_PurgeStream(nats_.js, dead_stream_.c_str(), nullptr, &jerr), jerr, "purge " + dead_stream_);
    int64_t accepted = 0;
    for (const DeadLetter& letter : letters) {
      Note("replay", letter.delivery,
           fmt::format("replay {} from {}", letter.delivery.message.message_id, dead_stream_),
           "");  // the send that follows says what the broker answered
      if (SendReplay(letter.delivery.message) == SendResult::kAccepted) accepted++;
    }
    return accepted;
  }

  const std::vector<DeadLetter>& dead_letters() const override { return dead_letters_; }
  const BrokerStats& stats() const override { return stats_; }
  const BrokerOptions& options() const override { return options_; }

 private:
  // A stream of ours (nats_stream.h): a marked one of that name is made anew.
  void CreateStream(const std::string& name, const std::string& subject, int64_t duplicates) {
    MakeMarkedStream(nats_.js, name, subject, duplicates);
  }

  SendResult Publish(const OrderPlaced& message, const std::string& subject, const char* why,
                     const std::string& reason) {
    stats_.sent++;
    const std::string body = EncodeOrder(message);
    natsMsg* raw = nullptr;
    CheckNats(natsMsg_Create(&raw, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size())),
          jsErrCode{}, "make a message");
    MsgPtr msg(raw);
    const bool dedup = options_.duplicate_detection_window.count() > 0 && subject == subject_;
    if (dedup) natsMsgHeader_Set(msg.get(), "Nats-Msg-Id", message.message_id.c_str());
    if (!reason.empty()) natsMsgHeader_Set(msg.get(), "Dedupsim-Dead-Letter-Reason", reason.c_str());
    jsPubAck* ack = nullptr;
    jsErrCode jerr{};
    CheckNats(js_PublishMsg(&ack, nats_.js, msg.get(), nullptr, &jerr), jerr, "publish to " + subject);
    const bool duplicate = ack->Duplicate;
    const uint64_t sequence = ack->Sequence;
    jsPubAck_Destroy(ack);
    if (subject != subject_) return SendResult::kAccepted;  // the dead-letter stream
    Delivery about;
    about.message = message;
    if (duplicate) {
      stats_.dropped++;
      Note("drop", about, fmt::format("publish {} with Nats-Msg-Id", message.message_id),
           fmt::format("dropped: the server's publish ack says duplicate (window {} ms)",
                       options_.duplicate_detection_window.count()));
      return SendResult::kDuplicateDropped;
    }
    stats_.accepted++;
    about.sequence_number = static_cast<int64_t>(sequence);  // which stored message it is
    Note(why, about,
         fmt::format("publish {}{}", message.message_id, dedup ? " with Nats-Msg-Id" : ""),
         fmt::format("stored as stream sequence {}", sequence));
    return SendResult::kAccepted;
  }

  std::pair<MsgPtr, Delivery> Take(const Delivery& delivery, const char* action) {
    auto it = in_flight_.find(delivery.receipt);
    if (it == in_flight_.end()) {
      throw std::logic_error(fmt::format("{}: delivery {} is not in flight", action, delivery.receipt));
    }
    auto held = std::move(it->second);
    in_flight_.erase(it);
    return held;
  }

  // Notes the "no ack" of each unacked delivery of stream sequence `sequence` (0: of every
  // one left), now that the server is seen to have acted on it: `then` says how.
  void NoteUnacked(int64_t sequence, const std::string& then) {
    for (auto it = unacked_waiting_.begin(); it != unacked_waiting_.end();) {
      if (sequence != 0 && it->delivery.sequence_number != sequence) {
        ++it;
        continue;
      }
      const Delivery& d = it->delivery;
      Note("unacked", d,
           fmt::format("no ack for {} (consumer sequence {})", d.message.message_id, d.delivery_tag),
           then.empty() ? fmt::format("none reached the server (AckWait {} ms)", options_.ack_wait.count())
                        : fmt::format("none reached the server within AckWait {} ms: {}",
                                      options_.ack_wait.count(), then),
           it->verdict);
      it = unacked_waiting_.erase(it);
    }
  }

  bool AtLimit(const Delivery& d) const { return d.delivery_count >= options_.max_delivery_count; }
  void OweAdvisory(const Delivery& d) {
    if (AtLimit(d)) owed_advisories_++;
  }

  // Reads the MAX_DELIVERIES advisories the server sent; when some are owed (a delivery at
  // MaxDeliver was released), waits for them a while.
  void ReadAdvisories() {
    const auto until = SteadyClock::now() + std::chrono::seconds(5);
    for (;;) {
      natsMsg* raw = nullptr;
      const bool owed = owed_advisories_ > 0;
      natsStatus s = natsSubscription_NextMsg(&raw, advisories_, owed ? 100 : 0);
      if (s == NATS_OK) {
        MsgPtr msg(raw);
        nlohmann::json j = nlohmann::json::parse(
            std::string(natsMsg_GetData(msg.get()), static_cast<size_t>(natsMsg_GetDataLength(msg.get()))),
            nullptr, false);
        Delivery about;
        about.sequence_number = j.is_object() ? j.value("stream_seq", int64_t{0}) : 0;
        about.delivery_count = j.is_object() ? j.value("deliveries", 0) : 0;
        if (auto m = stored_.find(about.sequence_number); m != stored_.end()) about.message = m->second;
        stats_.gave_up++;
        if (owed_advisories_ > 0) owed_advisories_--;
        NoteUnacked(about.sequence_number, "the server gave up on it (MaxDeliver)");
        // A message silenced, with no dead letter to replay: lost for the business.
        Note("give-up", about,
             fmt::format("advisory MAX_DELIVERIES for stream sequence {}", about.sequence_number),
             fmt::format("the server stopped delivering it after {} deliveries; no dead letter",
                         about.delivery_count),
             kVerdictWrong);
        continue;
      }
      if (!owed || SteadyClock::now() > until) return;
    }
  }

  const NatsBrokers::Impl& nats_;
  std::string stream_;
  std::string subject_;
  std::string dead_stream_;
  std::string dead_subject_;
  std::string consumer_;
  BrokerOptions options_;
  natsSubscription* sub_ = nullptr;
  natsSubscription* advisories_ = nullptr;
  std::map<uint64_t, std::pair<MsgPtr, Delivery>> in_flight_;
  std::map<int64_t, OrderPlaced> stored_;  // stream sequence -> the message it delivered
  uint64_t next_receipt_ = 1;
  int64_t owed_advisories_ = 0;
  std::vector<DeadLetter> dead_letters_;
  // Deliveries released unacked (ReleaseUnacked) whose step waits for the server's act.
  struct Unacked {
    Delivery delivery;
    const char* verdict;
  };
  std::vector<Unacked> unacked_waiting_;
  BrokerStats stats_;
};

}  // namespace

NatsBrokers::NatsBrokers(const std::string& url, std::string prefix) : impl_(std::make_unique<Impl>()) {
  RequireNatsLibrary();  // before anything: one line when libnats is missing
  impl_->url = url;
  impl_->prefix = std::move(prefix);
  nlohmann::json info = ServerInfo(url);
  impl_->server = fmt::format("NATS JetStream {}", info.value("version", std::string("?")));
  if (!info.value("jetstream", false)) {
    throw BrokerError(fmt::format("NATS: the server at {} has no JetStream (start it with -js)", url));
  }
  natsOptions* opts = nullptr;
  CheckNats(natsOptions_Create(&opts), jsErrCode{}, "options");
  natsOptions_SetURL(opts, url.c_str());
  natsOptions_SetTimeout(opts, 5000);
  natsOptions_SetAllowReconnect(opts, false);
  natsStatus s = natsConnection_Connect(&impl_->nc, opts);
  natsOptions_Destroy(opts);
  CheckNats(s, jsErrCode{}, "connect to " + url);
  CheckNats(natsConnection_JetStream(&impl_->js, impl_->nc, nullptr), jsErrCode{}, "JetStream context");
}

NatsBrokers::~NatsBrokers() = default;

const std::string& NatsBrokers::server() const { return impl_->server; }

std::unique_ptr<Broker> NatsBrokers::Open(Clock& /*clock*/, const BrokerOptions& options,
                                          Recorder* recorder) const {
  const std::string name =
      fmt::format("{}-{}-{}", impl_->prefix, static_cast<int>(::getpid()), impl_->next++);
  return std::make_unique<NatsBroker>(*impl_, name, options, recorder);
}

}  // namespace dedupsim
