// A module's declared route keys (gearbox_module.keys, ABI 1.1) as a
// HandlerSchema, the form built-in handlers declare theirs in: so a module
// route is checked like a built-in one (type, bounds, required, unknown key
// listing the valid ones) and `gearboxd -p` prints its keys with defaults.
#pragma once

#include <gearbox/module.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/params.h"

namespace gearbox {

class ModuleKeys {
 public:
  // Reads the module's list (ended by a NULL name). Null with *error set
  // ("key ms: default 5 outside 10..20") for a list that breaks the rules of
  // a handler schema (config/params.h) or names a key gearboxd owns.
  static std::unique_ptr<const ModuleKeys> Read(const char* module,
                                                const gearbox_key* keys,
                                                std::string* error);
  // The schema views the members: never copied or moved.
  ModuleKeys(const ModuleKeys&) = delete;
  ModuleKeys& operator=(const ModuleKeys&) = delete;

  const HandlerSchema& schema() const { return schema_; }

  // Checks `params` (a module route's keys as written) against the list and
  // rewrites them in list order with the defaults filled in. On a problem,
  // returns it (`"ms: expected an integer, got a string"`) with *where set to
  // the offending value (0:0: the route itself, for a missing key).
  std::optional<std::string> Apply(RouteParams& params,
                                   SourcePosition* where) const;

 private:
  ModuleKeys() = default;

  std::string name_;
  std::vector<std::string> docs_;  // the doc lines, " (required)" appended
  std::vector<ParamSpec> specs_;
  std::vector<bool> required_;
  HandlerSchema schema_;
};

}  // namespace gearbox
