// Readers for one TOML value each: type check, range check, store. A reader
// returns nullopt on success or a complaint ("expected an integer, got string
// \"64\""); the loader adds the position and the "[section] key: " prefix.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/toml.h"

namespace gearbox::config_internal {

using Reader = std::function<std::optional<std::string>(const toml::node&)>;

struct Field {
  std::string_view name;
  Reader read;
};

// "a, b, c"
std::string Join(std::span<const std::string_view> names);
std::string FieldNames(const std::vector<Field>& fields);

// A table's entries in file order (toml::table is a map, sorted by key).
std::vector<std::pair<const toml::key*, const toml::node*>> InSourceOrder(
    const toml::table& table);

// A value for messages: `string "x"`, `integer 5`, `a table`.
std::string Describe(const toml::node& node);
// The string at `node`, or a complaint naming what it is instead.
std::optional<std::string> ReadString(const toml::node& node, std::string* out);
// A C0 control character or DEL.
bool HasControl(std::string_view text);
// Where `node` starts, as the loader reports it.
SourcePosition Position(const toml::node& node);

std::optional<std::string> ReadInt(const toml::node& node, int64_t min,
                                   int64_t max, int64_t* out);
std::optional<std::string> ReadDuration(const toml::node& node, Duration min,
                                        Duration max, Duration* out);

// An integer in [min, max].
template <typename T>
Reader Int(T* out, int64_t min, int64_t max) {
  return [=](const toml::node& node) {
    int64_t value = 0;
    auto complaint = ReadInt(node, min, max, &value);
    if (!complaint) *out = static_cast<T>(value);
    return complaint;
  };
}

// A duration string in [min, max]; T is Duration or std::optional<Duration>.
template <typename T>
Reader Dur(T* out, Duration min, Duration max) {
  return [=](const toml::node& node) {
    Duration value{};
    auto complaint = ReadDuration(node, min, max, &value);
    if (!complaint) *out = value;
    return complaint;
  };
}

Reader Str(std::string* out);
Reader Bool(bool* out);
// One of valid; what names it in the complaint: "unknown model \"x\" (valid:
// ...)".
Reader OneOf(std::span<const std::string_view> valid, std::string_view what,
             std::string* out);
// A listen address (see CheckAddress).
Reader Address(std::string* out);
// A systemd FileDescriptorName=: 1..255 ASCII characters, no control or ':'.
Reader SocketName(std::string* out);
// Permission bits 0..0o777 (TOML octal 0o660, or decimal 432).
Reader FileMode(uint32_t* out);
// A route's path pattern (config/route_pattern.h): starts with '/', no '?',
// '#', spaces or control characters. Sets path and pattern.
Reader RoutePath(RouteConfig* route);
// A route's methods: a non-empty array of distinct method tokens.
Reader Methods(std::vector<std::string>* out);
// An array of strings; the complaint names the element.
std::optional<std::string> StringList(const toml::node& node,
                                      std::vector<std::string>* out);
// A string safe to put in a response header (no control characters), non-empty.
Reader HeaderValue(std::string* out);

// The keys of one [[listen]]; address is required, name defaults elsewhere.
std::vector<Field> ListenFields(ListenConfig* listen);

// The keys of [server]; model is one of models (the model table's names).
std::vector<Field> ServerFields(ServerConfig* server,
                                std::span<const std::string_view> models);
std::vector<Field> LimitsFields(LimitsConfig* limits);
std::vector<Field> LogFields(LogConfig* log);
std::vector<Field> MetricsFields(MetricsConfig* metrics);
std::vector<Field> LuaFields(LuaConfig* lua);

// The keys of a model's section ([threadpool], ...) as its schema (the
// model table's row) describes them.
std::vector<Field> ModelSectionFields(const ModelSchema& schema,
                                      Config* config);

// A key of a section whose value does not fit the others, and why.
struct SectionComplaint {
  std::string_view key;
  std::string message;
};
// Fills the defaults of a model's section that follow its other keys (a
// pool's ceiling = its minimum) and checks them; the complaint names the key.
// Called once a section is read, and for every section at the end (for the
// ones a file left out).
std::optional<SectionComplaint> SettleModelSection(const ModelSchema& schema,
                                                   Config* config);

// One value checked against spec, stored in params with its position.
Reader Param(const ParamSpec& spec, RouteParams* params);

// The keys of one [[module]]: name (a bare key, 1..64 characters) and path
// (non-empty; the loader resolves a relative one).
std::vector<Field> ModuleFields(ModuleConfig* module);

// A module route's key, stored as written: an integer, a boolean or a string
// (the module's create() checks it).
Reader RawParam(std::string_view key, RouteParams* params);

// The keys every [[route]] has, whatever its handler: path, methods, handler
// and timeout (config/route_fields.cc).
// handler is read by the caller first (it picks the schema); it is listed so
// that it counts as known.
std::vector<Field> RouteKeyFields(RouteConfig* route);
// RouteKeyFields, then one Field per key of the route's handler's schema.
std::vector<Field> RouteFields(RouteConfig* route, const HandlerSchema& schema);

}  // namespace gearbox::config_internal
