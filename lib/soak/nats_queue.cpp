#include "soak/nats_queue.h"

#include <fmt/format.h>
#include <nats/nats.h>

#include <map>

#include "world/broker/broker.h"
#include "world/broker/nats_broker.h"
#include "world/broker/nats_library.h"
#include "world/broker/nats_stream.h"

namespace dedupsim {

// Named, not anonymous: NatsSoakQueue::Impl holds a NatsLink.
namespace nats_queue_detail {

struct NatsLink {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  explicit NatsLink(const std::string& url) {
    RequireNatsLibrary();
    natsOptions* opts = nullptr;
    CheckNats(natsOptions_Create(&opts), jsErrCode{}, "options");
    natsOptions_SetURL(opts, url.c_str());
    natsOptions_SetTimeout(opts, 5000);
    natsOptions_SetAllowReconnect(opts, false);
    natsStatus s = natsConnection_Connect(&nc, opts);
    natsOptions_Destroy(opts);
    CheckNats(s, jsErrCode{}, "connect to " + url);
    CheckNats(natsConnection_JetStream(&js, nc, nullptr), jsErrCode{}, "JetStream context");
  }
  ~NatsLink() {
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) natsConnection_Destroy(nc);
  }
  NatsLink(const NatsLink&) = delete;
  NatsLink& operator=(const NatsLink&) = delete;
};

std::string Subject(const std::string& name) {
  std::string s = name + ".orders";
  for (char& c : s) c = c == '-' ? '.' : c;
  return s;
}

std::string ConsumerName(const std::string& name) { return name + "-consumers"; }

}  // namespace nats_queue_detail

using nats_queue_detail::ConsumerName;
using nats_queue_detail::NatsLink;
using nats_queue_detail::Subject;

void SetUpNatsSoakStream(const std::string& url, const std::string& name,
                         std::chrono::milliseconds lease, const std::vector<OrderPlaced>& messages) {
  NatsLink c(url);
  const std::string subject = Subject(name);
  MakeMarkedStream(c.js, name, subject);
  jsErrCode jerr{};
  const std::string consumer = ConsumerName(name);
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = consumer.c_str();
  cc.Description = kNatsMark;
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = std::chrono::duration_cast<std::chrono::nanoseconds>(lease).count();
  cc.MaxDeliver = -1;  // never give a delivery up: the soak must lose nothing
  cc.MaxAckPending = -1;
  cc.FilterSubject = subject.c_str();
  jsConsumerInfo* ci = nullptr;
  CheckNats(js_AddConsumer(&ci, c.js, name.c_str(), &cc, nullptr, &jerr), jerr, "create consumer " + consumer);
  jsConsumerInfo_Destroy(ci);
  for (const OrderPlaced& m : messages) {
    const std::string body = EncodeOrder(m);
    jsPubAck* ack = nullptr;
    CheckNats(js_Publish(&ack, c.js, subject.c_str(), body.data(), static_cast<int>(body.size()), nullptr, &jerr),
          jerr, "publish to " + subject);
    jsPubAck_Destroy(ack);
  }
}

BrokerCounts ReadNatsSoakCounts(const std::string& url, const std::string& name) {
  NatsLink c(url);
  jsErrCode jerr{};
  jsStreamInfo* si = nullptr;
  CheckNats(js_GetStreamInfo(&si, c.js, name.c_str(), nullptr, &jerr), jerr, "read stream " + name);
  const int64_t entries = static_cast<int64_t>(si->State.Msgs);
  jsStreamInfo_Destroy(si);
  jsConsumerInfo* ci = nullptr;
  CheckNats(js_GetConsumerInfo(&ci, c.js, name.c_str(), ConsumerName(name).c_str(), nullptr, &jerr), jerr,
        "read consumer " + ConsumerName(name));
  BrokerCounts counts;
  counts.entries = entries;
  counts.deliveries = static_cast<int64_t>(ci->Delivered.Consumer);
  counts.redeliveries = counts.deliveries - (entries - static_cast<int64_t>(ci->NumPending));
  counts.acked = entries - static_cast<int64_t>(ci->NumPending) - ci->NumAckPending;
  jsConsumerInfo_Destroy(ci);
  return counts;
}

void DeleteNatsSoakStream(const std::string& url, const std::string& name) noexcept {
  try {
    NatsLink c(url);
    jsErrCode jerr{};
    js_DeleteStream(c.js, name.c_str(), nullptr, &jerr);
  } catch (const std::exception&) {
  }
}

struct NatsSoakQueue::Impl {
  explicit Impl(const std::string& url) : c(url) {}
  NatsLink c;
  std::string name;
  natsSubscription* sub = nullptr;
  std::map<int64_t, natsMsg*> held;  // stream sequence -> the delivery's message, until acked
  ~Impl() {
    for (auto& [seq, msg] : held) natsMsg_Destroy(msg);
    if (sub != nullptr) natsSubscription_Destroy(sub);
  }
};

NatsSoakQueue::NatsSoakQueue(const std::string& url, const std::string& name)
    : impl_(std::make_unique<Impl>(url)) {
  impl_->name = name;
  const std::string consumer = ConsumerName(name);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = name.c_str();
  so.Consumer = consumer.c_str();
  jsErrCode jerr{};
  CheckNats(js_PullSubscribe(&impl_->sub, impl_->c.js, Subject(name).c_str(), consumer.c_str(), nullptr,
                         &so, &jerr),
        jerr, "subscribe to consumer " + consumer);
}

NatsSoakQueue::~NatsSoakQueue() = default;

std::optional<LeasedDelivery> NatsSoakQueue::Receive() {
  natsMsgList list{};
  jsErrCode jerr{};
  natsStatus s = natsSubscription_Fetch(&list, impl_->sub, 1, 50, &jerr);
  if (s == NATS_TIMEOUT || (s == NATS_OK && list.Count == 0)) {
    natsMsgList_Destroy(&list);
    return std::nullopt;
  }
  CheckNats(s, jerr, "fetch");
  natsMsg* msg = list.Msgs[0];
  list.Msgs[0] = nullptr;
  natsMsgList_Destroy(&list);
  jsMsgMetaData* meta = nullptr;
  CheckNats(natsMsg_GetMetaData(&meta, msg), jsErrCode{}, "read a delivery's metadata");
  LeasedDelivery d;
  d.seq = static_cast<int64_t>(meta->Sequence.Stream);
  d.delivery_count = static_cast<int64_t>(meta->NumDelivered);
  jsMsgMetaData_Destroy(meta);
  std::optional<OrderPlaced> order =
      DecodeOrder(std::string_view(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
  if (!order) {
    natsMsg_Destroy(msg);
    throw BrokerError(fmt::format("NATS: stream {} holds a message that is not an OrderPlaced of dedupsim's", impl_->name));
  }
  d.message = *order;
  auto [it, fresh] = impl_->held.emplace(d.seq, msg);
  if (!fresh) {  // an earlier delivery of it, never acked here: superseded
    natsMsg_Destroy(it->second);
    it->second = msg;
  }
  return d;
}

bool NatsSoakQueue::Ack(const LeasedDelivery& delivery, bool /*processed*/) {
  auto it = impl_->held.find(delivery.seq);
  if (it == impl_->held.end()) return false;
  jsErrCode jerr{};
  natsStatus s = natsMsg_AckSync(it->second, nullptr, &jerr);
  natsMsg_Destroy(it->second);
  impl_->held.erase(it);
  return s == NATS_OK;
}

bool NatsSoakQueue::AllAcked() {
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr{};
  CheckNats(js_GetConsumerInfo(&ci, impl_->c.js, impl_->name.c_str(), ConsumerName(impl_->name).c_str(),
                           nullptr, &jerr),
        jerr, "read consumer");
  const bool done = ci->NumPending == 0 && ci->NumAckPending == 0;
  jsConsumerInfo_Destroy(ci);
  return done;
}

}  // namespace dedupsim
