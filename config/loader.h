// Reads TOML into a validated Config. Every error names file:line:col and the key.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"

namespace gearbox {

struct ConfigError {
  std::string file;
  int line = 0;    // 1-based; 0 when the error has no position (e.g. unreadable file)
  int column = 0;  // 1-based
  std::string message;  // names the key, e.g. "[server] model: unknown model ..."
  // "file:line:col: message" on one line.
  std::string ToString() const;
};

// What the loader validates names against. The lists are owned elsewhere
// (models/registry for models, daemon/handlers for handlers) so config/ depends on
// neither.
struct ConfigVocabulary {
  std::span<const std::string_view> models;
  std::span<const std::string_view> handlers;
};

using ConfigResult = std::variant<Config, ConfigError>;

ConfigResult LoadConfigString(std::string_view toml, std::string_view source,
                              const ConfigVocabulary& vocabulary);
ConfigResult LoadConfigFile(const std::string& path,
                            const ConfigVocabulary& vocabulary);

// The config gearboxd runs with when started without -c (config/default.toml).
std::string_view EmbeddedDefaultConfig();

// The effective config as TOML, every default filled in (--print-config).
std::string FormatConfig(const Config& config);

// "1500ms" / "10s" / "2m" / "1h" / "250us" -> microseconds; nullopt if malformed.
std::optional<Duration> ParseDuration(std::string_view text);

}  // namespace gearbox
