// Config -> TOML (--print-config) and ConfigError -> one line.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>

#include "config/internal.h"
#include "config/loader.h"

namespace gearbox {
namespace {

using config_internal::FormatDuration;
using config_internal::QuoteToml;

std::string_view ProtocolName(Protocol protocol) {
  return protocol == Protocol::kFastCgi ? "fastcgi" : "http";
}

std::string Dur(Duration d) { return QuoteToml(FormatDuration(d)); }

// A key as TOML writes it: bare when it can be, else quoted.
std::string TomlKey(std::string_view key) {
  const bool bare =
      !key.empty() && key.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789_-") == std::string_view::npos;
  return bare ? std::string(key) : QuoteToml(key);
}

std::string TomlValue(const ParamValue& value) {
  if (const auto* number = std::get_if<int64_t>(&value)) {
    return std::to_string(*number);
  }
  if (const auto* flag = std::get_if<bool>(&value)) {
    return *flag ? "true" : "false";
  }
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    std::string out = "[";
    for (const std::string& item : *list) {
      if (out.size() > 1) out += ", ";
      out += QuoteToml(item);
    }
    return out + "]";
  }
  return QuoteToml(std::get<std::string>(value));
}

// path, handler, then every parameter as the loader filled it in (schema
// order, defaults included), each under its schema's description if known.
void FormatRoute(const RouteConfig& r, const HandlerSchema* schema,
                 std::ostringstream& out) {
  out << "\n";
  if (schema && !schema->doc.empty()) {
    out << "# " << r.handler << ": " << schema->doc << "\n";
  }
  out << "[[route]]\n"
      << "path = " << QuoteToml(r.path) << "\n";
  if (!r.methods.empty()) {
    out << "methods = [";
    for (size_t i = 0; i < r.methods.size(); ++i) {
      out << (i ? ", " : "") << QuoteToml(r.methods[i]);
    }
    out << "]\n";
  }
  out << "handler = " << QuoteToml(r.handler) << "\n";
  if (r.timeout) out << "timeout = " << Dur(*r.timeout) << "\n";
  for (const RouteParam& param : r.params.entries()) {
    const ParamSpec* spec = schema ? schema->Find(param.key) : nullptr;
    if (spec) out << "# " << DescribeParam(*schema, *spec) << "\n";
    const auto* text = std::get_if<std::string>(&param.value);
    // A secret (a password in a conninfo) never reaches -p's output.
    const std::string shown = spec && spec->redact && text
                                  ? QuoteToml(spec->redact(*text))
                                  : TomlValue(param.value);
    out << TomlKey(param.key) << " = " << shown << "\n";
  }
}

}  // namespace

namespace config_internal {

std::string QuoteToml(std::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        quoted += "\\\"";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '\b':
        quoted += "\\b";
        break;
      case '\t':
        quoted += "\\t";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\f':
        quoted += "\\f";
        break;
      case '\r':
        quoted += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04X",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          quoted += escape;
        } else {
          quoted += c;  // UTF-8 passes through; toml++ validated it on input
        }
    }
  }
  return quoted + "\"";
}

}  // namespace config_internal

std::string ConfigError::ToString() const {
  if (line <= 0) return file + ": " + message;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) +
         ": " + message;
}

namespace {

// Each model's section, as its schema describes it: every key, defaults
// included, a pool's ceiling as the pool uses it (at least its minimum).
void FormatModelSections(const Config& c, std::ostringstream& out) {
  ModelSections sections = c;  // a copy: the accessors are the loader's
  for (const ModelSchema& model : c.model_schemas) {
    out << "\n[" << model.name << "]\n";
    for (const ModelKey& spec : model.keys) {
      out << spec.key << " = ";
      if (auto at = std::get_if<DurationAt>(&spec.at)) {
        out << Dur(*(*at)(sections));
      } else if (auto at = std::get_if<Int64At>(&spec.at)) {
        out << *(*at)(sections);
      } else {
        int value = *std::get<IntAt>(spec.at)(sections);
        for (const ModelKey& min : model.keys) {
          if (min.key == spec.ceiling_of) {
            value = std::max(value, *std::get<IntAt>(min.at)(sections));
          }
        }
        out << value;
      }
      out << "\n";
    }
  }
}

// [limits], [log] and [metrics].
void FormatLimitsLogMetrics(const Config& c, std::ostringstream& out) {
  const LimitsConfig& l = c.limits;
  out << "\n[limits]\n"
      << "header_timeout = " << Dur(l.header_timeout) << "\n"
      << "idle_timeout = " << Dur(l.idle_timeout) << "\n"
      << "body_timeout = " << Dur(l.body_timeout) << "\n"
      << "send_timeout = " << Dur(l.send_timeout) << "\n"
      << "max_header_bytes = " << l.max_header_bytes << "\n"
      << "max_body_bytes = " << l.max_body_bytes << "\n"
      << "max_connections = " << l.max_connections << "\n"
      << "request_timeout = " << Dur(l.request_timeout) << "\n"
      << "drain_idle_timeout = " << Dur(l.drain_idle_timeout) << "\n"
      << "lingering_timeout = " << Dur(l.lingering_timeout) << "\n";

  out << "\n[log]\n"
      << "level = " << QuoteToml(c.log.level) << "\n"
      << "access = " << (c.log.access ? "true" : "false") << "\n";
  if (c.log.slow) {
    out << "slow = " << Dur(*c.log.slow) << "\n";
  } else {
    out << "# slow is unset: no slow-request log\n";
  }

  out << "\n[metrics]\n"
      << "interval = " << Dur(c.metrics.interval) << "\n"
      << "advice_after = " << Dur(c.metrics.advice_after) << "\n";

  out << "\n[lua]\n"
      << "path = " << QuoteToml(c.lua.path) << "\n"
      << "memory = " << c.lua.memory << "\n"
      << "init_timeout = " << Dur(c.lua.init_timeout) << "\n";
}

}  // namespace

std::string FormatConfig(const Config& c,
                         std::span<const HandlerSchema> handlers) {
  std::ostringstream out;
  out << "# gearbox effective configuration, loaded from " << c.source << ".\n"
      << "# Every key is shown, defaults included; config/gearbox.toml "
         "documents them.\n";
  // Top-level keys must precede the first [table]. An empty list is written out
  // so that reloading this text does not bring back the default
  // listeners/routes.
  if (c.listen.empty()) out << "listen = []\n";
  if (c.routes.empty())
    out << "route = []  # no routes: every request gets 404\n";

  out << "\n[server]\n"
      << "model = " << QuoteToml(c.server.model) << "\n"
      << "graceful_timeout = " << Dur(c.server.graceful_timeout) << "\n"
      << "enable_crash_handler = "
      << (c.server.enable_crash_handler ? "true" : "false") << "\n"
      << "trusted_proxies = [";
  for (size_t i = 0; i < c.server.trusted_proxies.size(); ++i) {
    out << (i ? ", " : "") << QuoteToml(c.server.trusted_proxies[i].text);
  }
  out << "]\n";

  for (const ListenConfig& l : c.listen) {
    out << "\n[[listen]]\n"
        << "address = " << QuoteToml(l.address) << "\n"
        << "protocol = " << QuoteToml(ProtocolName(l.protocol)) << "\n"
        << "name = " << QuoteToml(l.name) << "\n"
        << "backlog = " << l.backlog << "\n";
    if (config_internal::IsUnixAddress(l.address)) {
      out << "unix_mode = 0o" << std::oct << l.unix_mode << std::dec << "\n";
    }
  }

  FormatModelSections(c, out);
  FormatLimitsLogMetrics(c, out);

  for (const ModuleConfig& m : c.modules) {
    out << "\n[[module]]\n"
        << "name = " << QuoteToml(m.name) << "\n"
        << "path = " << QuoteToml(m.path) << "\n";
  }
  if (c.routes.size() > 1) {
    out << "\n# Routes, most specific first: each before every route it is "
           "more "
           "specific\n# than, otherwise in config order.\n";
  }
  for (size_t i : SpecificityOrder(c.routes)) {
    const RouteConfig& r = c.routes[i];
    // A module that declares its keys is in `handlers` (its keys are shown
    // with their docs and defaults); another's keys are shown as written.
    FormatRoute(r, FindSchema(handlers, r.handler), out);
  }
  return out.str();
}

}  // namespace gearbox
