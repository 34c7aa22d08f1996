// Helpers shared by the loader and the formatter; not part of the config/ API.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

namespace gearbox::config_internal {

// The largest unit that divides exactly: "30s", "1500ms", "250us", "2m", "1h".
// ParseDuration(FormatDuration(d)) == d for every d >= 0.
std::string FormatDuration(Duration d);

// A TOML basic string, quotes included, with ", \ and control characters
// escaped.
std::string QuoteToml(std::string_view text);

// "unix:/abs/path" (the prefix is the whole test; the path is not checked).
bool IsUnixAddress(std::string_view address);

// nullopt if address is "HOST:PORT", "[IPV6]:PORT" or "unix:/abs/path" with a
// valid port / absolute path that fits sun_path; otherwise why not, e.g. "port
// 99999 out of range (0..65535)".
std::optional<std::string> CheckAddress(std::string_view address);

}  // namespace gearbox::config_internal
