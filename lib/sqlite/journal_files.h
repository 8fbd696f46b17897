// Reads what a dead writer left beside a database file, from the bytes alone (the formats
// are in SQLite's "Database File Format" document): the WAL's header and frame headers, or
// the rollback journal's header. Nothing here opens the database or changes a file.
#pragma once

#include <cstdint>
#include <string>

namespace dedupsim {

// A write-ahead log as the next open will replay it: frames are valid while their salts
// match the header's and their running checksum holds; the valid frames up to the last
// commit frame (a nonzero database-size field) are committed, the valid frames after it
// are an uncommitted tail the next open ignores.
struct WalFile {
  bool exists = false;
  int64_t bytes = 0;
  bool header_valid = false;  // magic, version and header checksum
  uint32_t page_size = 0;
  uint32_t salt1 = 0;
  uint32_t salt2 = 0;
  int64_t valid_frames = 0;      // frames the checksum chain accepts, from the start
  int64_t committed_frames = 0;  // valid frames up to and including the last commit frame
  int64_t commits = 0;           // commit frames among them: committed transactions
  int64_t tail_frames = 0;       // valid frames after the last commit frame
};

WalFile ReadWal(const std::string& path);

// The valid frames of now after the last commit frame that were written since `before`.
int64_t TailSince(const WalFile& now, const WalFile& before);

// How many of now's committed transactions (commit frames) were written after `before` was
// read. When the salts changed the log was restarted since: every commit frame counts.
int64_t CommitsSince(const WalFile& now, const WalFile& before);

// A rollback journal. SQLite rolls a journal back on the next open when it is hot: it
// exists, is not empty, its header was written (the first byte is not zero) and no other
// connection holds a RESERVED lock on the database.
struct JournalFile {
  bool exists = false;
  int64_t bytes = 0;
  bool header_valid = false;  // the 8-byte magic at the start
  // SQLite's test, less the lock (the writer is dead): not empty, first byte not zero. With
  // synchronous on, SQLite zeroes the magic until just before it changes the database file.
  bool hot = false;
  int64_t page_records = 0;  // original page images after the header, by the file's size
};

JournalFile ReadJournal(const std::string& path);

}  // namespace dedupsim
