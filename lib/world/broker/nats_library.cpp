// cnats's functions, each forwarding to libnats's own, opened on the first call
// (client_library.h). A function the code starts to call is added here (the link fails
// with an undefined reference until then; the compiler checks its signature).
#include "world/broker/nats_library.h"

#include <nats/nats.h>

namespace dedupsim {

const ClientLibrary& NatsLibrary() {
  static const ClientLibrary library("DEDUPSIM_LIBNATS", "libnats.so.3.4", "the NATS broker",
                                     "libnats3.4 (Debian; libnats-dev for building)");
  return library;
}

}  // namespace dedupsim

#define NATS_FORWARD(result, name, params, args) \
  DEDUPSIM_CLIENT_FORWARD(dedupsim::NatsLibrary, result, name, params, args)
#define NATS_FREE(name, params, args) DEDUPSIM_CLIENT_FREE(dedupsim::NatsLibrary, name, params, args)

// The library, errors.
NATS_FORWARD(const char*, nats_GetLastError, (natsStatus * status), (status))
NATS_FORWARD(const char*, natsStatus_GetText, (natsStatus s), (s))

// Connecting.
NATS_FORWARD(natsStatus, natsOptions_Create, (natsOptions * *newOpts), (newOpts))
NATS_FORWARD(natsStatus, natsOptions_SetURL, (natsOptions * opts, const char* url), (opts, url))
NATS_FORWARD(natsStatus, natsOptions_SetTimeout, (natsOptions * opts, int64_t timeout), (opts, timeout))
NATS_FORWARD(natsStatus, natsOptions_SetAllowReconnect, (natsOptions * opts, bool allow), (opts, allow))
NATS_FREE(natsOptions_Destroy, (natsOptions * opts), (opts))
NATS_FORWARD(natsStatus, natsConnection_Connect, (natsConnection * *nc, natsOptions * options), (nc, options))
NATS_FORWARD(natsStatus, natsConnection_ConnectTo, (natsConnection * *nc, const char* urls), (nc, urls))
NATS_FREE(natsConnection_Destroy, (natsConnection * nc), (nc))
NATS_FORWARD(natsStatus, natsConnection_SubscribeSync,
             (natsSubscription * *sub, natsConnection * nc, const char* subject), (sub, nc, subject))
NATS_FORWARD(natsStatus, natsSubscription_NextMsg,
             (natsMsg * *nextMsg, natsSubscription * sub, int64_t timeout), (nextMsg, sub, timeout))
NATS_FREE(natsSubscription_Destroy, (natsSubscription * sub), (sub))

// Messages.
NATS_FORWARD(natsStatus, natsMsg_Create,
             (natsMsg * *newMsg, const char* subj, const char* reply, const char* data, int dataLen),
             (newMsg, subj, reply, data, dataLen))
NATS_FORWARD(natsStatus, natsMsgHeader_Set, (natsMsg * msg, const char* key, const char* value),
             (msg, key, value))
NATS_FORWARD(const char*, natsMsg_GetData, (const natsMsg* msg), (msg))
NATS_FORWARD(int, natsMsg_GetDataLength, (const natsMsg* msg), (msg))
NATS_FREE(natsMsg_Destroy, (natsMsg * msg), (msg))
NATS_FREE(natsMsgList_Destroy, (natsMsgList * list), (list))

// JetStream.
NATS_FORWARD(natsStatus, natsConnection_JetStream, (jsCtx * *js, natsConnection * nc, jsOptions * opts),
             (js, nc, opts))
NATS_FREE(jsCtx_Destroy, (jsCtx * js), (js))
NATS_FORWARD(natsStatus, jsStreamConfig_Init, (jsStreamConfig * cfg), (cfg))
NATS_FORWARD(natsStatus, js_AddStream,
             (jsStreamInfo * *si, jsCtx * js, jsStreamConfig * cfg, jsOptions * opts, jsErrCode * errCode),
             (si, js, cfg, opts, errCode))
NATS_FORWARD(natsStatus, js_GetStreamInfo,
             (jsStreamInfo * *si, jsCtx * js, const char* stream, jsOptions* opts, jsErrCode* errCode),
             (si, js, stream, opts, errCode))
NATS_FORWARD(natsStatus, js_DeleteStream,
             (jsCtx * js, const char* stream, jsOptions* opts, jsErrCode* errCode),
             (js, stream, opts, errCode))
NATS_FORWARD(natsStatus, js_PurgeStream,
             (jsCtx * js, const char* stream, jsOptions* opts, jsErrCode* errCode),
             (js, stream, opts, errCode))
NATS_FREE(jsStreamInfo_Destroy, (jsStreamInfo * si), (si))
NATS_FORWARD(natsStatus, jsConsumerConfig_Init, (jsConsumerConfig * cc), (cc))
NATS_FORWARD(natsStatus, js_AddConsumer,
             (jsConsumerInfo * *ci, jsCtx * js, const char* stream, jsConsumerConfig* cfg,
              jsOptions* opts, jsErrCode* errCode),
             (ci, js, stream, cfg, opts, errCode))
NATS_FORWARD(natsStatus, js_GetConsumerInfo,
             (jsConsumerInfo * *ci, jsCtx * js, const char* stream, const char* consumer,
              jsOptions* opts, jsErrCode* errCode),
             (ci, js, stream, consumer, opts, errCode))
NATS_FREE(jsConsumerInfo_Destroy, (jsConsumerInfo * ci), (ci))
NATS_FORWARD(natsStatus, js_PublishMsg,
             (jsPubAck * *pubAck, jsCtx * js, natsMsg * msg, jsPubOptions * opts, jsErrCode * errCode),
             (pubAck, js, msg, opts, errCode))
NATS_FORWARD(natsStatus, js_Publish,
             (jsPubAck * *pubAck, jsCtx * js, const char* subj, const void* data, int dataLen,
              jsPubOptions* opts, jsErrCode* errCode),
             (pubAck, js, subj, data, dataLen, opts, errCode))
NATS_FREE(jsPubAck_Destroy, (jsPubAck * pubAck), (pubAck))
NATS_FORWARD(natsStatus, jsSubOptions_Init, (jsSubOptions * opts), (opts))
NATS_FORWARD(natsStatus, js_PullSubscribe,
             (natsSubscription * *sub, jsCtx * js, const char* subject, const char* durable,
              jsOptions* opts, jsSubOptions* subOpts, jsErrCode* errCode),
             (sub, js, subject, durable, opts, subOpts, errCode))
NATS_FORWARD(natsStatus, natsSubscription_Fetch,
             (natsMsgList * list, natsSubscription * sub, int batch, int64_t timeout, jsErrCode * errCode),
             (list, sub, batch, timeout, errCode))
NATS_FORWARD(natsStatus, natsMsg_GetMetaData, (jsMsgMetaData * *new_meta, natsMsg * msg), (new_meta, msg))
NATS_FREE(jsMsgMetaData_Destroy, (jsMsgMetaData * meta), (meta))
NATS_FORWARD(natsStatus, natsMsg_AckSync, (natsMsg * msg, jsOptions * opts, jsErrCode * errCode),
             (msg, opts, errCode))
NATS_FORWARD(natsStatus, natsMsg_Nak, (natsMsg * msg, jsOptions * opts), (msg, opts))
NATS_FORWARD(natsStatus, natsMsg_Term, (natsMsg * msg, jsOptions * opts), (msg, opts))
