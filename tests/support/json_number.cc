#include "tests/support/json_number.h"

#include <cstdlib>

namespace gearbox::testing {

int64_t JsonNumber(const std::string& json, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return -1;
  return strtoll(json.c_str() + at + needle.size(), nullptr, 10);
}

}  // namespace gearbox::testing
