#include "daemon/logging.h"

#include <spdlog/sinks/stdout_sinks.h>

namespace gearbox {

bool SetLogLevel(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") return false;
  spdlog::set_level(lvl);
  return true;
}

void InitLogging(std::string_view level) {
  // stderr, unbuffered per line; the mutex sink keeps lines whole across
  // threads.
  auto logger = spdlog::stderr_logger_mt("gearbox");
  spdlog::drop("gearbox");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("ts=%Y-%m-%dT%H:%M:%S.%eZ level=%l pid=%P %v",
                      spdlog::pattern_time_type::utc);
  SetLogLevel(level);
  spdlog::flush_on(spdlog::level::trace);
}

std::string LogQuote(std::string_view value) {
  bool needs = value.empty();
  for (char c : value) needs = needs || c == ' ' || c == '"' || c == '=';
  if (!needs) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace gearbox
