#include "config/fields.h"

#include <algorithm>
#include <sstream>
#include <type_traits>
#include <variant>

#include "config/internal.h"
#include "config/loader.h"

namespace gearbox::config_internal {
namespace {

constexpr Duration kYear = kDurationMax;

std::string Octal(int64_t value) {
  std::ostringstream out;
  if (value < 0) out << '-';
  out << "0o" << std::oct << (value < 0 ? -value : value);
  return out.str();
}

}  // namespace

std::optional<std::string> ReadString(const toml::node& node,
                                      std::string* out) {
  const toml::value<std::string>* value = node.as_string();
  if (!value) return "expected a string, got " + Describe(node);
  *out = value->get();
  return std::nullopt;
}

bool HasControl(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

std::string Join(std::span<const std::string_view> names) {
  std::string joined;
  for (const std::string_view name : names) {
    if (!joined.empty()) joined += ", ";
    joined += name;
  }
  return joined;
}

std::string FieldNames(const std::vector<Field>& fields) {
  std::vector<std::string_view> names;
  for (const Field& field : fields) names.push_back(field.name);
  return Join(names);
}

std::vector<std::pair<const toml::key*, const toml::node*>> InSourceOrder(
    const toml::table& table) {
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
  std::stable_sort(entries.begin(), entries.end(), [](auto& a, auto& b) {
    const toml::source_position& pa = a.first->source().begin;
    const toml::source_position& pb = b.first->source().begin;
    return std::pair(pa.line, pa.column) < std::pair(pb.line, pb.column);
  });
  return entries;
}

std::string Describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "string " + QuoteToml(node.as_string()->get());
    case toml::node_type::integer:
      return "integer " + std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point: {
      std::ostringstream out;
      out << "float " << node.as_floating_point()->get();
      return out.str();
    }
    case toml::node_type::boolean:
      return node.as_boolean()->get() ? "boolean true" : "boolean false";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date/time";
  }
}

std::optional<std::string> ReadInt(const toml::node& node, int64_t min,
                                   int64_t max, int64_t* out) {
  const toml::value<int64_t>* value = node.as_integer();
  if (!value) return "expected an integer, got " + Describe(node);
  const int64_t x = value->get();
  if (x < min || x > max) {
    const std::string range =
        max == std::numeric_limits<int64_t>::max()
            ? ">= " + std::to_string(min)
            : std::to_string(min) + ".." + std::to_string(max);
    return std::to_string(x) + " out of range (" + range + ")";
  }
  *out = x;
  return std::nullopt;
}

std::optional<std::string> ReadDuration(const toml::node& node, Duration min,
                                        Duration max, Duration* out) {
  const toml::value<std::string>* value = node.as_string();
  if (!value) {
    return "expected a duration string like \"10s\" or \"1500ms\", got " +
           Describe(node);
  }
  const std::optional<Duration> d = ParseDuration(value->get());
  if (!d) {
    return "bad duration " + QuoteToml(value->get()) +
           " (expected e.g. \"10s\", \"1500ms\"; units us, ms, s, m, h)";
  }
  if (*d < min) {
    return min == Duration(1)
               ? "must be greater than 0, got " + value->get()
               : value->get() + " is below the minimum " + FormatDuration(min);
  }
  if (*d > max) {
    return value->get() + " is above the maximum " + FormatDuration(max);
  }
  *out = *d;
  return std::nullopt;
}

Reader Str(std::string* out) {
  return [=](const toml::node& node) { return ReadString(node, out); };
}

Reader Bool(bool* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    const toml::value<bool>* value = node.as_boolean();
    if (!value) return "expected true or false, got " + Describe(node);
    *out = value->get();
    return std::nullopt;
  };
}

Reader OneOf(std::span<const std::string_view> valid, std::string_view what,
             std::string* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    for (const std::string_view name : valid) {
      if (name == text) {
        *out = std::move(text);
        return std::nullopt;
      }
    }
    return "unknown " + std::string(what) + " " + QuoteToml(text) +
           " (valid: " + Join(valid) + ")";
  };
}

Reader Address(std::string* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    if (auto why = CheckAddress(text)) {
      return "bad address " + QuoteToml(text) + ": " + *why;
    }
    *out = std::move(text);
    return std::nullopt;
  };
}

Reader SocketName(std::string* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    bool ascii = true;
    for (const char c : text)
      ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (text.empty() || text.size() > 255 || !ascii || HasControl(text) ||
        text.find(':') != text.npos) {
      return "bad name " + QuoteToml(text) +
             " (systemd FileDescriptorName=: 1..255 ASCII characters, no ':' "
             "or control characters)";
    }
    *out = std::move(text);
    return std::nullopt;
  };
}

Reader FileMode(uint32_t* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    const toml::value<int64_t>* value = node.as_integer();
    if (!value)
      return "expected an integer such as 0o660, got " + Describe(node);
    const int64_t mode = value->get();
    if (mode < 0 || mode > 0777) {
      return std::to_string(mode) + " (" + Octal(mode) +
             ") out of range (0o0..0o777); write modes in octal, e.g. 0o660";
    }
    *out = static_cast<uint32_t>(mode);
    return std::nullopt;
  };
}

Reader HeaderValue(std::string* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    if (text.empty() || HasControl(text)) {
      return "bad header value " + QuoteToml(text) +
             " (must be non-empty, without control characters)";
    }
    *out = std::move(text);
    return std::nullopt;
  };
}

std::vector<Field> ListenFields(ListenConfig* listen) {
  static constexpr std::string_view kProtocols[] = {"http", "fastcgi"};
  Reader protocol = [listen](const toml::node& node) {
    std::string name;
    auto complaint = OneOf(kProtocols, "protocol", &name)(node);
    if (!complaint) {
      listen->protocol =
          name == "fastcgi" ? Protocol::kFastCgi : Protocol::kHttp;
    }
    return complaint;
  };
  return {{"address", Address(&listen->address)},
          {"protocol", protocol},
          {"name", SocketName(&listen->name)},
          {"backlog", Int(&listen->backlog, 1, 65535)},
          {"unix_mode", FileMode(&listen->unix_mode)}};
}

std::optional<std::string> StringList(const toml::node& node,
                                      std::vector<std::string>* out);

// [server] trusted_proxies: an array of "unix", addresses and networks.
Reader TrustedProxies(std::vector<IpNet>* out) {
  return [out](const toml::node& node) -> std::optional<std::string> {
    std::vector<std::string> texts;
    if (auto complaint = StringList(node, &texts)) return complaint;
    std::vector<IpNet> nets(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      if (auto complaint = ParseIpNet(texts[i], &nets[i])) {
        return "element " + std::to_string(i) + ": " + *complaint;
      }
    }
    *out = std::move(nets);
    return std::nullopt;
  };
}

std::vector<Field> ServerFields(ServerConfig* server,
                                std::span<const std::string_view> models) {
  return {
      {"model", OneOf(models, "model", &server->model)},
      {"graceful_timeout", Dur(&server->graceful_timeout, Duration(0), kYear)},
      {"enable_crash_handler", Bool(&server->enable_crash_handler)},
      {"trusted_proxies", TrustedProxies(&server->trusted_proxies)}};
}

std::vector<Field> LimitsFields(LimitsConfig* l) {
  const Duration min(1);
  return {{"header_timeout", Dur(&l->header_timeout, min, kYear)},
          {"idle_timeout", Dur(&l->idle_timeout, min, kYear)},
          {"body_timeout", Dur(&l->body_timeout, min, kYear)},
          {"send_timeout", Dur(&l->send_timeout, min, kYear)},
          {"max_header_bytes", Int(&l->max_header_bytes, 1024, 1048576)},
          {"max_body_bytes", Int(&l->max_body_bytes, 0, int64_t{1} << 34)},
          {"max_connections", Int(&l->max_connections, 1, 1000000)},
          {"request_timeout", Dur(&l->request_timeout, min, kYear)},
          {"drain_idle_timeout",
           Dur(&l->drain_idle_timeout, Duration(0), std::chrono::hours(1))},
          {"lingering_timeout",
           Dur(&l->lingering_timeout, Duration(0), std::chrono::minutes(5))}};
}

std::vector<Field> LogFields(LogConfig* log) {
  static constexpr std::string_view kLevels[] = {
      "trace", "debug", "info", "warn", "error", "critical", "off"};
  return {{"level", OneOf(kLevels, "log level", &log->level)},
          {"access", Bool(&log->access)},
          {"slow", Dur(&log->slow, Duration(0), kYear)}};
}

std::vector<Field> MetricsFields(MetricsConfig* metrics) {
  return {
      {"interval",
       Dur(&metrics->interval, std::chrono::milliseconds(100), kYear)},
      {"advice_after", Dur(&metrics->advice_after, Duration::zero(), kYear)}};
}

std::vector<Field> LuaFields(LuaConfig* lua) {
  Reader path = [lua](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    if (HasControl(text) || (!text.empty() && text.find('?') == text.npos)) {
      return "bad package.path " + QuoteToml(text) +
             " (templates separated by ';', each with a '?': "
             "\"/etc/gearbox/lua/?.lua\")";
    }
    lua->path = std::move(text);
    return std::nullopt;
  };
  return {{"path", path},
          {"memory", Int(&lua->memory, int64_t{1} << 20, kNoMax)},
          {"init_timeout",
           Dur(&lua->init_timeout, std::chrono::milliseconds(1), kYear)}};
}

namespace {

// A pool's ceiling defaults to its minimum (a static pool) and
// may not be below it.
std::optional<SectionComplaint> SettleMax(std::string_view min_key, int min,
                                          std::string_view max_key, int* max) {
  if (*max == 0) *max = min;
  if (*max >= min) return std::nullopt;
  return SectionComplaint{max_key, std::to_string(*max) + " is less than " +
                                       std::string(min_key) + " (" +
                                       std::to_string(min) + ")"};
}

// The reader of one described key: a type and range check, then a store
// through the key's accessor.
Reader KeyReader(const ModelKey& spec, ModelSections* sections) {
  return std::visit(
      [&](auto at) -> Reader {
        auto* out = at(*sections);
        using T = std::remove_pointer_t<decltype(out)>;
        if constexpr (std::is_same_v<T, Duration>) {
          return Dur(out, Duration(spec.min), Duration(spec.max));
        } else {
          return Int(out, spec.min, spec.max);
        }
      },
      spec.at);
}

}  // namespace

SourcePosition Position(const toml::node& node) {
  const toml::source_position& at = node.source().begin;
  return {static_cast<int>(at.line), static_cast<int>(at.column)};
}

std::vector<Field> ModelSectionFields(const ModelSchema& schema,
                                      Config* config) {
  std::vector<Field> fields;
  for (const ModelKey& spec : schema.keys) {
    fields.push_back({spec.key, KeyReader(spec, config)});
  }
  return fields;
}

std::optional<SectionComplaint> SettleModelSection(const ModelSchema& schema,
                                                   Config* config) {
  for (const ModelKey& spec : schema.keys) {
    if (spec.ceiling_of.empty()) continue;
    const ModelKey* min = nullptr;
    for (const ModelKey& other : schema.keys) {
      if (other.key == spec.ceiling_of) min = &other;
    }
    // A malformed row is a broken invariant (models_list_test checks the
    // table): std::get throws on a ceiling that is not an int key.
    const int floor = *std::get<IntAt>(min->at)(*config);
    if (auto complaint = SettleMax(spec.ceiling_of, floor, spec.key,
                                   std::get<IntAt>(spec.at)(*config))) {
      return complaint;
    }
  }
  return std::nullopt;
}

// An array of strings. The complaint names the element (0-based, as the
// handler's docs count $1.. from the first): the position is the array's.
std::optional<std::string> StringList(const toml::node& node,
                                      std::vector<std::string>* out) {
  const toml::array* array = node.as_array();
  if (!array) return "expected an array of strings, got " + Describe(node);
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const auto* text = element.as_string();
    if (!text) {
      return "element " + std::to_string(i) + ": expected a string, got " +
             Describe(element);
    }
    out->push_back(text->get());
  }
  return std::nullopt;
}

Reader Param(const ParamSpec& spec, RouteParams* params) {
  return [&spec, params](const toml::node& node) -> std::optional<std::string> {
    ParamValue value;
    std::optional<std::string> complaint;
    if (spec.type == ParamType::kInt) {
      int64_t number = 0;
      complaint = ReadInt(node, spec.min, spec.max, &number);
      value = number;
    } else if (spec.type == ParamType::kBool) {
      bool flag = false;
      complaint = Bool(&flag)(node);
      value = flag;
    } else if (spec.type == ParamType::kStringList) {
      std::vector<std::string> list;
      complaint = StringList(node, &list);
      value = std::move(list);
    } else {
      std::string text;
      complaint = spec.type == ParamType::kHeaderValue
                      ? HeaderValue(&text)(node)
                      : Str(&text)(node);
      if (!complaint && spec.check) {
        std::string problem = spec.check(text);
        if (!problem.empty()) complaint = std::move(problem);
      }
      value = std::move(text);
    }
    if (!complaint) params->Set(spec.key, std::move(value), Position(node));
    return complaint;
  };
}

}  // namespace gearbox::config_internal

namespace gearbox {

std::vector<std::string_view> RouteKeys() {
  RouteConfig route;
  std::vector<std::string_view> keys;
  for (const auto& field : config_internal::RouteKeyFields(&route)) {
    keys.push_back(field.name);
  }
  return keys;
}

}  // namespace gearbox
