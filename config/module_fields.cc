// The readers of what a [[module]] declares and of a module route's keys
// (passed as written to the module's create(), which checks them).
#include <string>
#include <utility>

#include "config/fields.h"
#include "config/internal.h"

namespace gearbox::config_internal {

std::vector<Field> ModuleFields(ModuleConfig* module) {
  Reader name = [module](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    const bool bare =
        !text.empty() && text.size() <= 64 &&
        text.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyz"
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
    if (!bare) {
      return "bad module name " + QuoteToml(text) +
             " (1..64 letters, digits, '_' or '-')";
    }
    module->name = std::move(text);
    return std::nullopt;
  };
  Reader path = [module](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    if (text.empty() || HasControl(text)) {
      return "bad path " + QuoteToml(text) +
             " (a shared object: non-empty, no control characters)";
    }
    module->path = std::move(text);
    return std::nullopt;
  };
  return {{"name", name}, {"path", path}};
}

Reader RawParam(std::string_view key, RouteParams* params) {
  return [key, params](const toml::node& node) -> std::optional<std::string> {
    ParamValue value;
    if (const auto* number = node.as_integer()) {
      value = number->get();
    } else if (const auto* flag = node.as_boolean()) {
      value = flag->get();
    } else if (const auto* text = node.as_string()) {
      value = text->get();
    } else {
      return "a module's route key takes an integer, a boolean or a "
             "string, got " +
             Describe(node);
    }
    params->Set(key, std::move(value), Position(node));
    return std::nullopt;
  };
}

}  // namespace gearbox::config_internal
