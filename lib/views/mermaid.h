// The --diagram mermaid view: a Mermaid sequence diagram of one scenario's run, built from
// its recorded events only. Participants are the actors that took part, each as itself:
// the Producer, the Broker, an Operator, each consumer instance (a restarted process as its
// own participant), the Database, side stores (Cache, Email provider) and, boxed apart, the
// scenario's own checks. Deliveries carry the broker's number; acks, nacks, lost acks and
// dead letters are arrows back to the broker; each delivery's outcome is a note; sub-runs
// are titled. Message ids are short (m1, m2); the JSON keeps the full ones.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

namespace dedupsim {

struct MermaidOptions {
  // With timings: lock waits and holds in ms, and process ids when several processes took
  // part. Without: neither, so the same run gives the same text every time (for docs).
  bool timings = true;
  // Written as a %% comment on the first line when not empty.
  std::string title;
  // Ids as check's text names them (ShortIds::Cut: "78833635…"), not m1, id-1.
  bool ids_as_text = false;
};

// The diagram, starting with "sequenceDiagram" and ending with a newline.
std::string MermaidDiagram(const std::vector<TraceEvent>& events, const MermaidOptions& options);

}  // namespace dedupsim
