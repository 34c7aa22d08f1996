// Config -> TOML (--print-config) and ConfigError -> one line.
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>

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

std::string FormatConfig(const Config& c) {
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
      << (c.server.enable_crash_handler ? "true" : "false") << "\n";

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

  out << "\n[threadpool]\n"
      << "threads = " << c.threadpool.threads << "\n"
      << "queue = " << c.threadpool.queue << "\n"
      << "\n[prefork]\n"
      << "workers = " << c.prefork.workers << "\n"
      << "max_requests = " << c.prefork.max_requests << "\n"
      << "\n[async]\n"
      << "loops = " << c.async.loops << "\n";

  const LimitsConfig& l = c.limits;
  out << "\n[limits]\n"
      << "header_timeout = " << Dur(l.header_timeout) << "\n"
      << "idle_timeout = " << Dur(l.idle_timeout) << "\n"
      << "body_timeout = " << Dur(l.body_timeout) << "\n"
      << "send_timeout = " << Dur(l.send_timeout) << "\n"
      << "max_header_bytes = " << l.max_header_bytes << "\n"
      << "max_body_bytes = " << l.max_body_bytes << "\n"
      << "max_connections = " << l.max_connections << "\n";

  out << "\n[log]\n"
      << "level = " << QuoteToml(c.log.level) << "\n"
      << "access = " << (c.log.access ? "true" : "false") << "\n";
  if (c.log.slow) {
    out << "slow = " << Dur(*c.log.slow) << "\n";
  } else {
    out << "# slow is unset: no slow-request log\n";
  }

  out << "\n[metrics]\n"
      << "interval = " << Dur(c.metrics.interval) << "\n";

  for (const RouteConfig& r : c.routes) {
    out << "\n[[route]]\n"
        << "path = " << QuoteToml(r.path) << "\n"
        << "handler = " << QuoteToml(r.handler) << "\n";
    // Only the handler's own parameters: the loader rejects the others.
    if (r.handler == "text") {
      out << "body = " << QuoteToml(r.body) << "\n"
          << "status = " << r.status << "\n"
          << "content_type = " << QuoteToml(r.content_type) << "\n";
    } else if (r.handler == "wait") {
      out << "ms = " << r.ms << "\n"
          << "max_ms = " << r.max_ms << "\n";
    } else if (r.handler == "burn") {
      out << "us = " << r.us << "\n"
          << "max_us = " << r.max_us << "\n";
    }
  }
  return out.str();
}

}  // namespace gearbox
