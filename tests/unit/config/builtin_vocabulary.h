// The real model and handler tables, as gearboxd loads a config with them: for
// the tests whose files and messages are about the built-in handlers.
#pragma once

#include <string>

#include "config/loader.h"

namespace gearbox::testing {

// The real handler table: the reference file and the loader's messages are
// about the built-in handlers.
extern const ConfigVocabulary kVocabulary;

// The built-in handlers' names as an unknown handler's message suggests them
// (fault-test-only ones are not), from the handler table, so a new handler
// changes no test.
std::string BuiltInNames();

}  // namespace gearbox::testing
