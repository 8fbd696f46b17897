// A consumer file as a row of the explorer: an explore::Strategy whose handler runs the
// file's steps (RunConsumer) on the instance's scheduled connection, so the explorer
// crashes it at every step, interleaves its copies and counts its effect exactly as it
// does for the consumers written in C++.
//
// A FileStrategy must outlive every Explorer it was given to; it is neither copied nor
// moved (the strategy's handler points back at it).
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "explore/explorer.h"
#include "explore/strategy.h"
#include "files/run_consumer.h"

namespace dedupsim::files {

class FileStrategy {
 public:
  // Throws FileError when the file names a partner that is no built-in strategy of the
  // other effect.
  explicit FileStrategy(ConsumerFile file);
  FileStrategy(const FileStrategy&) = delete;
  FileStrategy& operator=(const FileStrategy&) = delete;

  const ConsumerFile& file() const { return file_; }
  const explore::Strategy& strategy() const { return strategy_; }

  // The statements that empty the file's tables on PostgreSQL before every schedule
  // (FileDatabase::reset(), store/file_databases.h).
  void SetPostgresReset(std::string reset);

  // Sets the crash points to the steps of a clean first delivery, as the explorer (which
  // must have been given this strategy) sees them run.
  void LearnCrashPoints(explore::Explorer& explorer);

  // The file's written reactions (on-duplicate, on-row if-null, ...) that no run of this
  // strategy has taken so far, in the file's order: "FILE:LINE:COLUMN on-no-row = \"throw\"".
  // What follows such a branch never ran.
  std::vector<std::string> UntakenBranches() const;

 private:
  ConsumerFile file_;
  std::string reset_;
  std::string pg_reset_;
  std::vector<std::string> points_;
  explore::Strategy strategy_;
  // (step index, reaction) taken by some run; instances run one at a time, on threads.
  mutable std::mutex taken_mutex_;
  std::set<std::pair<size_t, std::string>> taken_;
};

}  // namespace dedupsim::files
