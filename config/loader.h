// Reads TOML into a validated Config. Every error names file:line:col and the
// key.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"

namespace gearbox {

struct ConfigError {
  std::string file;
  int line =
      0;  // 1-based; 0 when the error has no position (e.g. unreadable file)
  int column = 0;  // 1-based
  std::string
      message;  // names the key, e.g. "[server] model: unknown model ..."
  // "file:line:col: message" on one line.
  std::string ToString() const;
};

// What the loader validates names against. The lists are owned elsewhere
// (models/registry.cc's model table, daemon/handlers/handler_table.cc's
// handler table) so config/ depends on neither and names no handler.
struct ConfigVocabulary {
  // Values of [server] model, and the per-model sections a file may have
  // with their keys.
  std::span<const ModelSchema> models;
  // Values of a route's handler, and the other keys each handler's routes may
  // set (with types, bounds and defaults).
  std::span<const HandlerSchema> handlers;
};

using ConfigResult = std::variant<Config, ConfigError>;

ConfigResult LoadConfigString(std::string_view toml, std::string_view source,
                              const ConfigVocabulary& vocabulary);
ConfigResult LoadConfigFile(const std::string& path,
                            const ConfigVocabulary& vocabulary);

// The config gearboxd runs with when started without -c (config/default.toml).
std::string_view EmbeddedDefaultConfig();

// The effective config as TOML, every default filled in (--print-config).
// Given the handler schemas, each route parameter gets its schema's one-line
// description as a comment.
std::string FormatConfig(const Config& config,
                         std::span<const HandlerSchema> handlers = {});

// The keys every [[route]] has, whatever its handler ("path", "handler"). A
// handler's schema may not declare them.
std::vector<std::string_view> RouteKeys();

// nullopt if schema is well-formed: keys unique, bare TOML keys and not route
// keys, defaults within bounds, every at_most names another integer key whose
// default is at least this one's. Otherwise what is wrong.
std::optional<std::string> CheckSchema(const HandlerSchema& schema);

// "1500ms" / "10s" / "2m" / "1h" / "250us" -> microseconds; nullopt if
// malformed.
std::optional<Duration> ParseDuration(std::string_view text);

}  // namespace gearbox
