// The generated sections of a scenario page (docs/scenarios/<name>.md): blocks the
// program writes between marker comments under a heading, while the hand-written prose
// around them stays as it is. A page may have any of the sections, or none.
//
//   ## Output
//
//   <!-- dedupsim docs: begin output (generated: do not edit) -->
//   ```text
//   ...
//   ```
//   <!-- dedupsim docs: end output -->
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace dedupsim {

struct GeneratedSection {
  std::string heading;  // "Output": the page's "## Output" line
  std::string key;      // "output": the name in the markers
  std::string block;    // what goes between the markers, ending with a newline
};

// A page whose markers are broken (a begin without its end, or the end first).
class DocPageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string BeginMarker(std::string_view key);
std::string EndMarker(std::string_view key);

// The page with each section's block in place: between its markers when the page has
// them; else right under the section's heading, taking the place of a fenced block that
// opens the section (pasted by hand); a page without the heading is left without the
// section. Everything else is kept byte for byte.
std::string RewritePage(std::string_view page, const std::vector<GeneratedSection>& sections);

// A fenced block: ```language, the text (a newline added if missing), ```.
std::string FencedBlock(std::string_view language, std::string_view text);

// A scenario page's generated sections for one run: "Output" (the text line, as a text
// block) and "Diagram" (the Mermaid diagram without timings or process ids, so that the
// same scenario gives the same page on every run).
std::vector<GeneratedSection> ScenarioPageSections(std::string_view scenario, std::string_view line,
                                                   const std::vector<TraceEvent>& events);

}  // namespace dedupsim
