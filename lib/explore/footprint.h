// What one scheduled step touched, and when two steps commute: the explorer's dependency
// relation, kept in this one place. The scheduler computes a step's footprint as it hands
// the step out (from the statement's label and the connection it runs on); every search
// (the sleep sets, the source sets and their wakeup trees) and the tests' canonical orders
// decide what commutes only through Independent. Plain values: thread-safe to copy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dedupsim::explore {

// What one step touched, for partial-order reduction: which database files it read and
// which it wrote (bit 0 the service's file, bit 1 the second file; on PostgreSQL one bit
// per table, and COMMIT, ROLLBACK and a crash every table), or `all` when its
// effect on the others cannot be told from that: it found the database locked, it was a
// retry after that, or it moved the shared clock. A hook, an email send and a deferred
// BEGIN touch no file. Reads are SELECTs; INSERT, UPDATE, DELETE, BEGIN IMMEDIATE,
// COMMIT, ROLLBACK and anything else write; a crash writes every file its instance had
// open (closing a connection ends its transaction and releases its locks).
struct Footprint {
  uint8_t reads = 0;
  uint8_t writes = 0;
  bool all = false;
};

// Two steps of different instances commute: neither writes a file the other touches, and
// neither is marked `all`. Then running them in either order leaves the same state.
bool Independent(const Footprint& a, const Footprint& b);

// The SQLite files of a footprint.
inline constexpr uint8_t kMainFile = 1;
inline constexpr uint8_t kAuxFile = 2;
// On PostgreSQL a footprint has a bit per table: the server locks rows, not the file.
inline constexpr uint8_t kEveryTable = 0xFF;

// What a SQLite statement about to run will touch, from its label (StepLabel) and the
// file (kMainFile or kAuxFile) of the connection it runs on.
Footprint StatementFootprint(const std::string& label, uint8_t file);

// What a PostgreSQL statement about to run will touch: its table (read or written); a
// COMMIT or ROLLBACK ends a transaction that may have touched any table: every table.
Footprint PgStatementFootprint(const std::string& label);

}  // namespace dedupsim::explore
