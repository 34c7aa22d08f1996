// Logging: spdlog to stderr (journald captures it), one logfmt line per event:
//   ts=... level=info event=<name> key=value ...
// Logs are also the metrics channel (the stats line), so keys are stable.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace gearbox {

// Installs the stderr logger with the logfmt pattern. Safe to call again (after
// a reload changes the level, or in a forked child).
void InitLogging(std::string_view level);
// Returns false when `level` is not a spdlog level name.
bool SetLogLevel(std::string_view level);

template <typename... Args>
void LogAt(spdlog::level::level_enum lvl, std::string_view event,
           fmt::format_string<Args...> format, Args&&... args) {
  auto* logger = spdlog::default_logger_raw();
  if (!logger->should_log(lvl)) return;
  logger->log(lvl, "event={} {}", event,
              fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void LogInfo(std::string_view event, fmt::format_string<Args...> format,
             Args&&... args) {
  LogAt(spdlog::level::info, event, format, std::forward<Args>(args)...);
}
template <typename... Args>
void LogWarn(std::string_view event, fmt::format_string<Args...> format,
             Args&&... args) {
  LogAt(spdlog::level::warn, event, format, std::forward<Args>(args)...);
}
template <typename... Args>
void LogError(std::string_view event, fmt::format_string<Args...> format,
              Args&&... args) {
  LogAt(spdlog::level::err, event, format, std::forward<Args>(args)...);
}
template <typename... Args>
void LogDebug(std::string_view event, fmt::format_string<Args...> format,
              Args&&... args) {
  LogAt(spdlog::level::debug, event, format, std::forward<Args>(args)...);
}

// Quotes a value for logfmt when it contains spaces, quotes or '='.
std::string LogQuote(std::string_view value);

}  // namespace gearbox
