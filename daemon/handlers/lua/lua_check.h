// gearboxd -t (and every start and reload): each Lua route's script is
// compiled and its top level run in a throwaway state, so a syntax error, an
// error at the top level or a returned value of the wrong shape is a config
// error naming the script's file:line. Pools open lazily: nothing connects.
#pragma once

#include <optional>

#include "config/config.h"
#include "config/loader.h"

namespace gearbox {

// Also keeps each script's text in config->lua.sources.
std::optional<ConfigError> CheckLuaScripts(Config* config);

}  // namespace gearbox
