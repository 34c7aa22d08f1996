// A whole file as a string, for the unit tests that check a file shipped in
// config/ (a `data` dependency: the path is relative to the runfiles tree).
#pragma once

#include <string>

namespace gearbox::testing {

// The text of `path`; a test failure (and what could be read) when it cannot
// be opened.
std::string ReadFile(const std::string& path);

}  // namespace gearbox::testing
