// PostgreSQL's reader of a run's tables (store/tables_reader.h): the schema's tables, read
// from the server through a connection of the reader's own, then the side stores (the dedup
// cache, the email provider: SideStores::OpenTablesReader), once a lesson has made them.
// The explorer's replay of a counterexample on PostgreSQL reads its schema's tables the
// same way (explore/explorer.h, Explorer::Replay).
//
// The reader never waits for a consumer: each read is one SELECT of every table (one
// snapshot, one round trip; MVCC: it sees what was committed when it began, takes no lock a
// consumer's write waits for, and waits for none of theirs), with a statement_timeout so
// that a DDL lock could only make it say "unreadable", never stall the run. The schema's
// tables, their columns and keys are read once, at the first read. It is not traced, and
// the lock watch does not watch it.
#pragma once

#include <memory>

#include "store/side_store.h"
#include "store/tables_reader.h"

namespace dedupsim {

class PgDatabase;

// A reader of db's schema and, when sides is given, of the run's side stores once they
// have a place (it makes none). db and sides must outlive the reader.
std::unique_ptr<TablesReader> OpenPgTablesReader(const PgDatabase& db, const SideStores* sides);

}  // namespace dedupsim
