#include "config/fields.h"

#include <algorithm>
#include <sstream>

#include "config/internal.h"
#include "config/loader.h"

namespace gearbox::config_internal {
namespace {

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

std::string Octal(int64_t value) {
  std::ostringstream out;
  if (value < 0) out << '-';
  out << "0o" << std::oct << (value < 0 ? -value : value);
  return out.str();
}

}  // namespace

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

Reader RoutePath(std::string* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    if (text.empty() || text[0] != '/') {
      return "path " + QuoteToml(text) + " must start with '/'";
    }
    if (HasControl(text) || text.find_first_of(" ?#") != text.npos) {
      return "path " + QuoteToml(text) +
             " must not contain spaces, '?', '#' or control characters "
             "(routes match the exact path, without the query)";
    }
    *out = std::move(text);
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

std::vector<Field> RouteFields(RouteConfig* r) {
  // handler was read by the caller; it is listed so that it counts as known.
  std::vector<Field> fields = {{"path", RoutePath(&r->path)},
                               {"handler", [](const toml::node&) {
                                  return std::optional<std::string>();
                                }}};
  if (r->handler == "text") {
    fields.push_back({"body", Str(&r->body)});
    fields.push_back({"status", Int(&r->status, 100, 599)});
    fields.push_back({"content_type", HeaderValue(&r->content_type)});
  } else if (r->handler == "wait") {
    fields.push_back({"ms", Int(&r->ms, 0, 3600000)});
    fields.push_back({"max_ms", Int(&r->max_ms, 0, 3600000)});
  } else if (r->handler == "burn") {
    fields.push_back({"us", Int(&r->us, 0, 60000000)});
    fields.push_back({"max_us", Int(&r->max_us, 0, 60000000)});
  }
  return fields;
}

}  // namespace gearbox::config_internal
