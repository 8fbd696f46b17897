// What the tests read from a step-through page (views/html_steps.h): the JSON its script
// steps through (its <script id="data">), a cell of a table as shown after a step, and the
// steps whose text says something. One copy for every test that reads a page.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dedupsim::testing {

// The JSON the page steps through.
inline nlohmann::json PageData(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"data\">";
  size_t from = page.find(open);
  REQUIRE(from != std::string::npos);
  from += open.size();
  const size_t to = page.find("</script>", from);
  REQUIRE(to != std::string::npos);
  return nlohmann::json::parse(page.substr(from, to - from));
}

// A cell of a table shown after step i ("" when the table, the row or the column is not
// there).
inline std::string CellAfter(const nlohmann::json& data, size_t i, const std::string& store,
                             const std::string& table, const std::string& column,
                             size_t row = 0) {
  const int snapshot = data["steps"][i]["snapshot"];
  if (snapshot < 0) return "";
  for (const auto& t : data["snapshots"][static_cast<size_t>(snapshot)]["tables"]) {
    if (t["store"] != store || t["name"] != table) continue;
    const auto& columns = t["columns"];
    for (size_t c = 0; c < columns.size(); ++c) {
      if (columns[c] == column && row < t["rows"].size()) return t["rows"][row][c];
    }
  }
  return "";
}

// The steps whose text contains text, in order.
inline std::vector<size_t> StepsWith(const nlohmann::json& data, const std::string& text) {
  std::vector<size_t> out;
  for (size_t i = 0; i < data["steps"].size(); ++i) {
    if (data["steps"][i]["text"].get<std::string>().find(text) != std::string::npos)
      out.push_back(i);
  }
  return out;
}

// A section's line as the page shows it: its pieces joined, each judged figure with its
// ✓ or ✗.
inline std::string PageLine(const nlohmann::json& section) {
  std::string line;
  for (const auto& piece : section["line"]) line += piece[0].get<std::string>();
  return line;
}

}  // namespace dedupsim::testing
