// The --diagram mermaid view: a Mermaid sequence diagram of one scenario's run, built from
// its recorded events only. Participants are the Broker, each consumer instance that took
// a step, the Database, and the Email provider when an email was sent. A delivery starts
// where the trace shows one (see DeliveryStarts); statements are abbreviated ("INSERT
// Inbox") with their results; hooks, lock waits, crashes, deaths and recoveries are notes.
#pragma once

#include <string>
#include <vector>

#include "trace.h"

namespace dedupsim {

struct MermaidOptions {
  // With timings: lock waits and holds in ms, and process ids when several processes took
  // part. Without: neither, so the same run gives the same text every time (for docs).
  bool timings = true;
  // Written as a %% comment on the first line when not empty.
  std::string title;
};

// The diagram, starting with "sequenceDiagram" and ending with a newline.
std::string MermaidDiagram(const std::vector<TraceEvent>& events, const MermaidOptions& options);

}  // namespace dedupsim
