// The integer of a key in a flat reading of a JSON text, for conditions on
// /status figures ("inflight", "accepted", "parked", ...).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gearbox::testing {

// The integer after the first "\"key\":" in `json`, or -1.
int64_t JsonNumber(const std::string& json, std::string_view key);

}  // namespace gearbox::testing
