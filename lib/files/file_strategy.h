// A consumer file as a row of the explorer: an explore::Strategy whose handler runs the
// file's steps (RunConsumer) on the instance's scheduled connection, so the explorer
// crashes it at every step, interleaves its copies and counts its effect exactly as it
// does for the consumers written in C++.
//
// A FileStrategy must outlive every Explorer it was given to; it is neither copied nor
// moved (the strategy's handler points back at it).
#pragma once

#include <memory>
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

  // Sets the crash points to the steps of a clean first delivery, as the explorer (which
  // must have been given this strategy) sees them run.
  void LearnCrashPoints(explore::Explorer& explorer);

 private:
  ConsumerFile file_;
  std::string reset_;
  std::vector<std::string> points_;
  explore::Strategy strategy_;
};

}  // namespace dedupsim::files
