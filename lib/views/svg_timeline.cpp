#include "views/svg_timeline.h"

#include <fmt/format.h>

#include "views/timeline_legend.h"
#include "views/timeline_section.h"
#include "views/timeline_text.h"

namespace dedupsim {

using timeline::kMargin;
using timeline::kWidth;
using timeline::Num;

std::string SvgTimeline(const std::vector<TimelineSection>& sections) {
  std::string body;
  double y = 92;
  bool write_lock = false;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (i > 0) {
      body += fmt::format("<line class=\"divider\" x1=\"0\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/>\n",
                          Num(y + 8), Num(kWidth));
      y += 20;
    }
    timeline::Drawn out = timeline::DrawSection(sections[i], y);
    body += out.svg;
    y += out.height + 12;
    write_lock |= out.write_lock;
  }
  double legend_height = 0;
  body += timeline::Legend(y, write_lock, &legend_height);
  y += legend_height + 6;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\">\n",
      Num(kWidth), Num(y));
  svg += "<title>dedupsim timeline</title>\n";
  svg += timeline::Style();
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     Num(kWidth), Num(y));
  svg += fmt::format("<text class=\"title\" x=\"{}\" y=\"42\">dedupsim timeline</text>\n",
                     Num(kMargin));
  svg += fmt::format(
      "<text class=\"subtitle\" x=\"{}\" y=\"74\">one lane per actor; bars are transactions; "
      "green ✓ is right for the business, red ✗ is wrong</text>\n",
      Num(kMargin));
  svg += body;
  svg += "</svg>\n";
  return svg;
}

}  // namespace dedupsim
