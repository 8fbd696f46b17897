// Short texts for trace steps, shared by the diagram and the timeline: a statement cut
// down to its verb and table ("INSERT Inbox"), and a statement's result in words.
#pragma once

#include <string>
#include <string_view>

#include "trace.h"

namespace dedupsim {

// "INSERT INTO Inbox (...) VALUES (...)" -> "INSERT Inbox"; "UPDATE StockItems SET ..." ->
// "UPDATE StockItems"; "SELECT ... FROM Inbox WHERE ..." -> "SELECT Inbox"; BEGIN, COMMIT,
// ROLLBACK and PRAGMA keep their words. Anything else: its first word.
std::string AbbreviateSql(std::string_view sql);

// What a transaction-control statement is, from its text.
enum class SqlControl { kNone, kBegin, kCommit, kRollback };
SqlControl ClassifySql(std::string_view sql);

// A statement's result for a reader: "ok", "no row" / "row" for a SELECT, "constraint
// 1555", with ", waited N ms" after a lock wait (", waited" alone when timings are left
// out, so the text does not change from run to run).
std::string DescribeResult(const TraceEvent& event, bool with_timings);

// Replaces each "pid <digits>" in text with "pid N", for output that must not change
// between runs.
std::string ScrubPids(std::string_view text);

}  // namespace dedupsim
