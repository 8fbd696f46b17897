// Runs a consumer file's steps for one delivery (the file read by consumer_file.h) on a
// store of either backend (store/store.h), through the same statements, trace and hooks as
// the consumers written in C++. Each sql step runs through the store's UntrustedSql
// (store/untrusted_sql.h) in the text of its dialect: on SQLite under the rules its check
// found, so it touches only what its check allowed, on the database it is given (always one
// dedupsim created); on PostgreSQL its pg_sql on a store whose connection is the file's own
// role in the file's own database (files/file_database.h): the server's privileges are the
// rules there.
//
// RunConsumer keeps no state between calls; it is safe to call from several threads on
// different connections at once.
#pragma once

#include <functional>
#include <string>

#include "consumers/email.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/message.h"
#include "files/consumer_file.h"
#include "store/side_store.h"
#include "store/store.h"
#include "world/email_provider.h"

namespace dedupsim::files {

// What one delivery runs with. Every reference is valid for the call only.
struct RunContext {
  // The service's database: on SQLite a store over its connection, on PostgreSQL the file's
  // store (files/file_database.h).
  Store& store;
  Clock& clock;
  EmailProvider& email;                            // sends without a key
  IdempotentEmailProvider* keyed_email = nullptr;  // sends with one; required when SendsWithKey()
  SideRecords* second_store = nullptr;              // required when the file has a second_store
  std::function<Hook(const std::string&)> hook = {};  // the hook for a hook point, or empty
  std::function<void(const std::string& topic, const OrderPlaced&)> publish;  // may be empty
  // Called with a step's index and the reaction of it that a result called for
  // ("on-duplicate", "on-row if-null", ...), before it runs; may be empty.
  std::function<void(size_t step, const char* reaction)> taken = {};
};

// Handles one delivery by running the file's steps, each sql step under the rules its check
// found (SQLite) or as the file's role (PostgreSQL). Throws what the database throws
// (StoreError), SimulatedCrash from a hook,
// explore::DeliveryFailed for a `throw` action, and FileError at the step for a statement
// the sandbox stopped (past its budget or PostgreSQL's statement_timeout, or refused when
// it ran).
Result RunConsumer(const ConsumerFile& file, RunContext& context, const OrderPlaced& message);

}  // namespace dedupsim::files
