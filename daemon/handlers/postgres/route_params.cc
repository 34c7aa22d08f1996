#include "daemon/handlers/postgres/route_params.h"

#include <optional>

#include "config/loader.h"

namespace gearbox::postgres {

std::string CheckConnectTimeout(std::string_view text) {
  const std::optional<std::chrono::microseconds> d = ParseDuration(text);
  if (!d) return "not a duration (\"2s\", \"500ms\")";
  if (d->count() <= 0) return "must be greater than 0";
  return "";
}

std::chrono::microseconds ConnectTimeout(std::string_view text) {
  return ParseDuration(text).value_or(std::chrono::seconds(2));
}

std::string CheckInt8(std::string_view text) {
  if (text == "number" || text == "string") return "";
  return "must be \"number\" or \"string\"";
}

bool Int8AsString(std::string_view text) { return text == "string"; }

}  // namespace gearbox::postgres
