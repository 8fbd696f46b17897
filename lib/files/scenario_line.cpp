#include "files/scenario_line.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "files/scenario_parts.h"

namespace dedupsim::files {

namespace {

// The template's pieces: literal text and figure names, in order.
struct Piece {
  bool figure = false;
  std::string text;
};

std::vector<Piece> Pieces(const std::string& line, const Position& at,
                          const std::set<std::string>* figures) {
  std::vector<Piece> out;
  std::string literal;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if ((c == '{' || c == '}') && i + 1 < line.size() && line[i + 1] == c) {
      literal.push_back(c);
      ++i;
    } else if (c == '{') {
      size_t end = line.find('}', i);
      Position here = at;
      here.column += static_cast<int>(i);
      if (end == std::string::npos)
        throw ErrorAt(here, "a { in the line is not closed (write {{ for a brace)");
      std::string name = line.substr(i + 1, end - i - 1);
      if (figures != nullptr && figures->count(name) == 0) {
        throw ErrorAt(here, fmt::format("the line names no figure '{}' (expected one of {})", name,
                                        JoinOr({figures->begin(), figures->end()}, "none")));
      }
      if (!literal.empty()) out.push_back({false, std::move(literal)});
      literal.clear();
      out.push_back({true, name});
      i = end;
    } else if (c == '}') {
      Position here = at;
      here.column += static_cast<int>(i);
      throw ErrorAt(here, "a } in the line closes nothing (write }} for a brace)");
    } else {
      literal.push_back(c);
    }
  }
  if (!literal.empty()) out.push_back({false, std::move(literal)});
  return out;
}

std::string Show(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "none";
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : v) items.push_back(Show(item));
    return fmt::format("{}", fmt::join(items, ", "));
  }
  return v.dump();
}

}  // namespace

void CheckLine(const std::string& line, const Position& at, const std::set<std::string>& figures) {
  Pieces(line, at, &figures);
}

nlohmann::json OptionValues(const RunOptions& options, std::chrono::milliseconds hold,
                            std::chrono::milliseconds stagger) {
  return {{"quantity", options.quantity},
          {"deliveries", options.deliveries},
          {"holdMs", hold.count()},
          {"staggerMs", stagger.count()},
          {"crashMode", std::string(ToString(options.crash_mode))},
          {"instances", std::string(ToString(options.instances))}};
}

std::string RenderLine(const ScenarioFile& file, const nlohmann::ordered_json& figures) {
  std::string out = TagColumn(file.tag);
  for (const Piece& p : Pieces(file.line, file.line_at, nullptr)) {
    out += p.figure ? Show(figures.at(p.text)) : p.text;
  }
  return out;
}

nlohmann::ordered_json ExpectedFigures(const ScenarioFile& file,
                                       const nlohmann::ordered_json& figures,
                                       const nlohmann::json& options) {
  nlohmann::ordered_json expected = nlohmann::ordered_json::object();
  auto lookup = [&](std::string_view name) -> std::optional<nlohmann::json> {
    const std::string key(name);
    if (auto it = options.find(key); it != options.end()) return *it;
    if (auto it = figures.find(key); it != figures.end()) return nlohmann::json::parse(it->dump());
    return std::nullopt;
  };
  for (const ScenarioExpectation& e : file.expectations) {
    expected[e.figure] = e.value.Evaluate(lookup);
  }
  return expected;
}

}  // namespace dedupsim::files
