// Views of one SoakReport: a few lines of text, or one JSON object. Both are built from
// the same figures.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "soak/soak.h"

namespace dedupsim {

// {"command":"soak", the options, "kills":..., "redeliveries":..., "duplicatesSkipped":...,
//  "lost":..., "doubled":..., "held":true, "failures":[...]}
nlohmann::ordered_json SoakReportToJson(const SoakReport& report);

std::string FormatSoakReport(const SoakReport& report);

// One consumer of soak --role consumer: what it received, did, skipped and acked.
nlohmann::ordered_json SoakConsumerReportToJson(const SoakConsumerReport& report);
std::string FormatSoakConsumerReport(const SoakConsumerReport& report);

}  // namespace dedupsim
