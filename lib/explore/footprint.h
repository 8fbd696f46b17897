// What one scheduled step touched, and when two steps commute: the explorer's dependency
// relation, kept in this one place. The scheduler computes a step's footprint as it hands
// the step out (from the statement's label and the connection it runs on); every search
// (the sleep sets, the source sets and their wakeup trees) and the tests' canonical orders
// decide what commutes only through Independent. Plain values: thread-safe to copy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dedupsim::explore {

// What one step touched, for partial-order reduction: which database files it read and
// which it wrote (bit 0 the service's file, bit 1 the second file; on PostgreSQL one bit
// per table, and COMMIT, ROLLBACK and a crash every table), or `all` when its effect on
// the others cannot be told from that: under RetryRule::kAfterAnyStep it found the
// database locked or was a retry after that; on PostgreSQL it waited or resumed. A hook, an
// email send and a deferred BEGIN touch no file. Under kAfterAnyStep (StatementFootprint)
// reads are SELECTs; INSERT, UPDATE, DELETE, BEGIN IMMEDIATE, COMMIT, ROLLBACK and anything
// else write. Under kAfterRelease (the WAL journal) a file's write lock and its rows are
// apart (WalStatementFootprint). A crash writes every file its instance had open (closing
// a connection ends its transaction and releases its locks).
struct Footprint {
  uint16_t reads = 0;
  uint16_t writes = 0;
  bool all = false;
};

// Two steps of different instances commute: neither writes a file the other touches, and
// neither is marked `all`. Then running them in either order leaves the same state.
bool Independent(const Footprint& a, const Footprint& b);

// The SQLite files of a footprint. kMainFile is the service file's lock; kMainTables its
// tables, a bit each (tables beyond six share bits: a shared bit only adds dependencies).
inline constexpr uint8_t kMainFile = 1;
inline constexpr uint8_t kAuxFile = 2;
inline constexpr uint8_t kMainTables = 0xFC;
inline constexpr uint8_t kMainWhole = kMainFile | kMainTables;
// Under RetryRule::kAfterRelease only (WalStatementFootprint): the second file's rows, apart
// from its lock (kAuxFile). Elsewhere kAuxFile stands for the whole second file.
inline constexpr uint16_t kAuxData = 0x100;
inline constexpr uint16_t kAuxWhole = kAuxFile | kAuxData;
// On PostgreSQL a footprint has a bit per table: the server locks rows, not the file.
inline constexpr uint8_t kEveryTable = 0xFF;

// What a SQLite statement about to run will touch, from its label (StepLabel) and the
// file (kMainFile or kAuxFile) of the connection it runs on. Inside a transaction, or on
// the second file, a statement touches the whole file: a read fixes the transaction's
// snapshot of every table, a write holds the file's lock to the COMMIT. A statement of
// its own on the service file (autocommit: no lock held once it returns, no snapshot kept)
// touches only `tables`, the bits of the tables its text names (MainTableBits); a write
// also takes the file's lock for its duration (it reads kMainFile, which a transaction's
// writes hold), so it depends on every open writer. tables == 0: the whole file.
Footprint StatementFootprint(const std::string& label, uint8_t file, uint8_t tables = 0);

// The same under RetryRule::kAfterRelease (the WAL journal), where a file's write lock
// (kMainFile, kAuxFile) and its rows (kMainTables, kAuxData) are apart. In WAL a reader
// never waits for the lock nor holds it, so a read touches the rows only; a write (and a
// BEGIN IMMEDIATE) reads the lock, which it needs; a statement of a transaction that already
// holds the lock changes the rows, not the lock. Which steps took or released a lock is
// known only after the step: WithLockChange adds those. A step that found a file locked
// (BlockedFootprint) only read the lock: it ran nothing and holds nothing (SQLite drops its
// read lock before calling the busy handler), so it commutes with the holder's statements
// inside its transaction, and depends on the steps that take or release the lock.
Footprint WalStatementFootprint(const std::string& label, uint8_t file, uint8_t tables = 0);
// held_before, held_after: the step's instance's write locks (kMainFile | kAuxFile) before
// and after it. A lock taken or released is written.
Footprint WithLockChange(Footprint f, uint8_t held_before, uint8_t held_after);
// What a step that found `file`'s write lock held touched, under kAfterRelease.
Footprint BlockedFootprint(uint8_t file);

// The kMainTables bits of the tables (names, as the file's schema has them) that sql names
// as a word, case-insensitively; 0 when it names none of them (the caller then takes the
// whole file).
uint8_t MainTableBits(std::string_view sql, const std::vector<std::string>& tables);

// What a PostgreSQL statement about to run will touch: its table (read or written); a
// COMMIT or ROLLBACK ends a transaction that may have touched any table: every table.
Footprint PgStatementFootprint(const std::string& label);

}  // namespace dedupsim::explore
