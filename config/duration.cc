// Durations as the config spells them: an integer and a unit, "1500ms", "10s".
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "config/internal.h"
#include "config/loader.h"

namespace gearbox {
namespace {

struct Unit {
  std::string_view suffix;
  int64_t micros;
};

// Largest first: FormatDuration picks the first unit that divides exactly.
constexpr Unit kUnits[] = {
    {"h", int64_t{3600} * 1000 * 1000},
    {"m", int64_t{60} * 1000 * 1000},
    {"s", 1000 * 1000},
    {"ms", 1000},
    {"us", 1},
};

}  // namespace

std::optional<Duration> ParseDuration(std::string_view text) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t n = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const int digit = text[i] - '0';
    if (n > (kMax - digit) / 10) return std::nullopt;
    n = n * 10 + digit;
  }
  if (i == 0) return std::nullopt;  // no digits: "", "ms", "-5s", " 5s"
  const std::string_view suffix = text.substr(i);
  for (const Unit& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    if (n > kMax / unit.micros) return std::nullopt;
    return Duration(n * unit.micros);
  }
  return std::nullopt;  // no unit, unknown unit, or trailing garbage
}

namespace config_internal {

std::string FormatDuration(Duration d) {
  const int64_t us = d.count();
  if (us == 0) return "0s";
  for (const Unit& unit : kUnits) {
    if (us % unit.micros == 0) {
      return std::to_string(us / unit.micros) + std::string(unit.suffix);
    }
  }
  return std::to_string(us) + "us";  // unreachable: "us" divides everything
}

}  // namespace config_internal
}  // namespace gearbox
