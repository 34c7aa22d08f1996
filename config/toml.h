// The one way config/ includes toml++ (keep every includer on it: toml++ is
// header-only, so every translation unit must see the same macros).
#pragma once

// toml++ 3.3.0 (Debian bookworm) asserts in parser::parse_key() on malformed
// table headers such as "[=", "[[[1]]]" or "[\x01]" (upstream PR #301), and our
// builds keep asserts (no NDEBUG): `gearboxd -t` and a reload (SIGHUP) would
// abort instead of reporting the error. The parser checks the same condition
// right after the assertion and reports "expected bare key starting character
// or string delimiter", so the assertions are turned off, as in any NDEBUG
// build of toml++.
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>
