// A scenario file's line and what --check expects of it (files/scenario_file.h): the line is
// a template, literal text with {figure} for a figure's value ({{ and }} for braces); an
// expectation is an expression over the figures and the run's options.
//
// All of it is pure: it reads the file as loaded and the figures as measured, and builds
// text or JSON; nothing runs here.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "files/scenario_file.h"

namespace dedupsim::files {

// Checks the line's template at `at` (where its text starts): every { closed, every }
// opening nothing doubled, every name one of figures. Throws FileError at the column.
void CheckLine(const std::string& line, const Position& at, const std::set<std::string>& figures);

// The options an expression may name, as values: quantity, deliveries, holdMs, staggerMs,
// crashMode, instances (hold and stagger as the run used them).
nlohmann::json OptionValues(const RunOptions& options, std::chrono::milliseconds hold,
                            std::chrono::milliseconds stagger);

// The line: the template with each {figure} replaced by its value (integers as written,
// booleans and lists of booleans as C# prints them: True, False).
std::string RenderLine(const ScenarioFile& file, const nlohmann::ordered_json& figures);

// What --check compares with: each expectation evaluated over the figures and options.
nlohmann::ordered_json ExpectedFigures(const ScenarioFile& file,
                                       const nlohmann::ordered_json& figures,
                                       const nlohmann::json& options);

}  // namespace dedupsim::files
