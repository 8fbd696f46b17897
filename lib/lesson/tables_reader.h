// The step-through page's reader of a run's stores on either database: on SQLite the
// run's file and the side stores beside it (TableProbe); on PostgreSQL the schema's tables,
// read from the server through a connection of the reader's own, and the side stores (the
// dedup cache, the email provider: ScenarioEnv::sides, once a lesson has made them).
// The explorer's replay of a counterexample on PostgreSQL reads its schema's tables the
// same way (explore/explorer.h, Explorer::Replay).
//
// The PostgreSQL reader never waits for a consumer: each read is one SELECT of every table
// (one snapshot, one round trip; MVCC: it sees what was committed when it began, takes no
// lock a consumer's write waits for, and waits for none of theirs), with a
// statement_timeout so that a DDL lock could only make it say "unreadable", never stall
// the run. The schema's tables, their columns and keys are read once, at the first read. It is not traced, and the lock
// watch does not watch it. One thread at a time (the Recorder serialises its observer).
#pragma once

#include <memory>

#include "lesson/scenario.h"
#include "world/table_probe.h"

namespace dedupsim {

class PgDatabase;

// A reader of every table of env's stores, for Recorder::SetObserver. On a server it reads
// the side stores once a lesson has made their folder, and makes nothing itself.
std::unique_ptr<TablesReader> OpenTablesReader(ScenarioEnv& env);
// A reader of the schema's tables alone, as above (the explorer's schema: its rows keep no
// side store on PostgreSQL). db must outlive the reader.
std::unique_ptr<TablesReader> OpenTablesReader(const PgDatabase& db);

}  // namespace dedupsim
