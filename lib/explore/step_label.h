// Short names for the steps a delivery takes, used as crash points and in schedules:
// "BEGIN", "COMMIT", "INSERT Inbox", "UPDATE StockItems", "SELECT Inbox".
#pragma once

#include <string>
#include <string_view>

namespace dedupsim::explore {

// The statement's keyword, and for INSERT, UPDATE, DELETE and SELECT the table it names
// first ("INSERT INTO Inbox (...)" -> "INSERT Inbox"). BEGIN keeps its kind ("BEGIN
// IMMEDIATE").
std::string StepLabel(std::string_view sql);

}  // namespace dedupsim::explore
