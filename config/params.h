// Handler parameters. A handler declares its keys in its row of the handler
// table (daemon/handlers/handler_table.cc) as a HandlerSchema. The loader is
// handed the schemas (ConfigVocabulary), checks each [[route]]'s keys against
// its handler's schema and fills in the defaults, so config/ names no handler
// and //config does not depend on //daemon:handlers. The handler reads the
// result, a RouteParams, by key.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gearbox {

// Where a value was written: 1-based line and column, or 0:0 for a value the
// file did not set (a default). Kept so that a check made after loading (a
// module's create callback) can still report file:line:col.
struct SourcePosition {
  int line = 0;
  int column = 0;
  bool in_file() const { return line > 0; }
};

enum class ParamType {
  kInt,          // a TOML integer in [min, max]
  kBool,         // true or false
  kString,       // any string
  kHeaderValue,  // a non-empty string without control characters
  kStringList,   // an array of strings (default: empty)
};

// One key of a handler's schema. Write it with IntParam, BoolParam,
// StringParam, HeaderValueParam or StringListParam.
struct ParamSpec {
  std::string_view key;
  ParamType type = ParamType::kString;
  std::string_view doc;  // one line: what the value means, for -p and docs
  int64_t int_default = 0;
  int64_t min = 0;  // kInt bounds, inclusive
  int64_t max = 0;
  // kInt: another kInt key this one must not exceed. The pair is a default
  // and the cap a query parameter may raise it to (wait's ms and max_ms).
  std::string_view at_most;
  bool bool_default = false;
  std::string_view text_default;  // kString, kHeaderValue
  // kString: how -p (and the handler's log lines) show a value that holds a
  // secret (a password in a database's conninfo); null: as written.
  std::string (*redact)(std::string_view value) = nullptr;
  // kString: what is wrong with a value beyond its type ("" when nothing),
  // checked at load so a bad value is a file:line:col error; null: any.
  std::string (*check)(std::string_view value) = nullptr;
};

constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

constexpr ParamSpec IntParam(std::string_view key, int64_t default_value,
                             int64_t min, int64_t max, std::string_view doc,
                             std::string_view at_most = {}) {
  ParamSpec spec;
  spec.key = key;
  spec.type = ParamType::kInt;
  spec.doc = doc;
  spec.int_default = default_value;
  spec.min = min;
  spec.max = max;
  spec.at_most = at_most;
  return spec;
}

constexpr ParamSpec BoolParam(std::string_view key, bool default_value,
                              std::string_view doc) {
  ParamSpec spec;
  spec.key = key;
  spec.type = ParamType::kBool;
  spec.doc = doc;
  spec.bool_default = default_value;
  return spec;
}

constexpr ParamSpec StringParam(std::string_view key,
                                std::string_view default_value,
                                std::string_view doc) {
  ParamSpec spec;
  spec.key = key;
  spec.type = ParamType::kString;
  spec.doc = doc;
  spec.text_default = default_value;
  return spec;
}

// A string that goes into a response header (Content-Type, ...).
constexpr ParamSpec HeaderValueParam(std::string_view key,
                                     std::string_view default_value,
                                     std::string_view doc) {
  ParamSpec spec = StringParam(key, default_value, doc);
  spec.type = ParamType::kHeaderValue;
  return spec;
}

constexpr ParamSpec StringListParam(std::string_view key,
                                    std::string_view doc) {
  ParamSpec spec;
  spec.key = key;
  spec.type = ParamType::kStringList;
  spec.doc = doc;
  return spec;
}

// A string the handler checks at load (check returns "" or what is wrong)
// and that is shown through redact (when not null) wherever the config is
// printed.
constexpr ParamSpec CheckedStringParam(
    std::string_view key, std::string_view default_value, std::string_view doc,
    std::string (*check)(std::string_view),
    std::string (*redact)(std::string_view) = nullptr) {
  ParamSpec spec = StringParam(key, default_value, doc);
  spec.check = check;
  spec.redact = redact;
  return spec;
}

// What the loader knows about one handler kind: its name (the value of a
// route's `handler`) and the keys its routes may set besides the keys every
// route has (path, handler).
struct HandlerSchema {
  std::string_view name;
  std::string_view doc;  // one line
  std::span<const ParamSpec> params;
  // Allowed only with [server] enable_crash_handler = true (handlers that
  // exist to break the server in fault tests).
  bool fault_test_only = false;

  // The spec for key, or null.
  const ParamSpec* Find(std::string_view key) const;
};

using ParamValue =
    std::variant<int64_t, bool, std::string, std::vector<std::string>>;

struct RouteParam {
  std::string key;
  ParamValue value;
  SourcePosition where;  // of the value; 0:0 for a default
};

// A route's handler parameters: every key of its handler's schema, in schema
// order, the defaults filled in. Lookups scan the list: a handler reads its
// few keys once, when a worker creates it.
class RouteParams {
 public:
  // Sets key, replacing its earlier value (and position) in place.
  void Set(std::string_view key, ParamValue value, SourcePosition where = {});
  // The parameter named key, or null.
  const RouteParam* Find(std::string_view key) const;
  // The value of a key the handler's schema declares with this type. The
  // loader filled every declared key in, so a missing key or another type is
  // a broken invariant: these abort, naming the key.
  int64_t Int(std::string_view key) const;
  bool Bool(std::string_view key) const;
  const std::string& Text(std::string_view key) const;
  const std::vector<std::string>& List(std::string_view key) const;

  const std::vector<RouteParam>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  template <typename T>
  const T& Get(std::string_view key, const char* type) const;

  std::vector<RouteParam> entries_;
};

// Every key of schema at its default, in schema order.
RouteParams DefaultParams(const HandlerSchema& schema);

// The schema named name, or null.
const HandlerSchema* FindSchema(std::span<const HandlerSchema> schemas,
                                std::string_view name);

// One line documenting spec, derived from the schema (config/gearbox.toml
// carries it above each key, and -p prints it): "The delay in milliseconds:
// 0..3600000 (default 0)." A key that caps another shows that key as its
// lower bound ("ms..3600000").
std::string DescribeParam(const HandlerSchema& schema, const ParamSpec& spec);

// A checked string (CheckedStringParam) the file left out must pass its check
// at its default (a postgres route needs a query): "missing key K (why)" for
// the first that does not, for an error at the [[route]].
std::optional<std::string> MissingCheckedParam(const HandlerSchema& schema,
                                               const RouteParams& params);

}  // namespace gearbox
