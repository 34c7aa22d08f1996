// What the loader_*_test files share: loading a TOML text with the real
// handler table (builtin_vocabulary.h), expecting an error at a position, and
// comparing configs through a format-and-reload round trip.
#pragma once

#include <string_view>

#include "config/config.h"
#include "config/loader.h"
#include "tests/unit/config/builtin_vocabulary.h"

namespace gearbox::testing::loader {

// The config `toml` loads to; a test failure (and a default Config) when it
// does not load.
Config Load(std::string_view toml);

// The error `toml` gets; a test failure when it loads.
ConfigError LoadError(std::string_view toml);

// The error is at line:column and its message contains substring.
void ExpectError(std::string_view toml, int line, int column,
                 std::string_view substring);

// Everything but source and foreground (neither comes from TOML).
void ExpectSameConfig(const Config& a, const Config& b);

// Format, reload, compare; and formatting is stable.
void ExpectRoundTrip(const Config& config);

}  // namespace gearbox::testing::loader
