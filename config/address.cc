// Listen address syntax: "HOST:PORT", "[IPV6]:PORT", "unix:/abs/path".
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <string_view>

#include "config/internal.h"

namespace gearbox::config_internal {
namespace {

constexpr std::string_view kUnixPrefix = "unix:";
constexpr std::string_view kExpected =
    R"( (expected "HOST:PORT", "[IPV6]:PORT" or "unix:/absolute/path"))";

std::optional<std::string> CheckPort(std::string_view port) {
  if (port.empty()) return "missing port" + std::string(kExpected);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != port.npos) {
    return "port \"" + std::string(port) + "\" is not a number (0..65535)";
  }
  if (std::stoi(std::string(port)) > 65535) {
    return "port " + std::string(port) + " out of range (0..65535)";
  }
  return std::nullopt;
}

std::optional<std::string> CheckHost(std::string_view host) {
  if (host.empty()) {
    return "missing host (use 0.0.0.0 or [::] for every address)";
  }
  const std::string h(host);
  if (host.find_first_not_of("0123456789.") == host.npos) {
    in_addr v4;
    if (inet_pton(AF_INET, h.c_str(), &v4) != 1) {
      return "\"" + h + "\" is not an IPv4 address";
    }
    return std::nullopt;
  }
  if (host.find(':') != host.npos) {
    return "IPv6 addresses need brackets, e.g. \"[::1]:8080\"";
  }
  // A host name for getaddrinfo(3): letters, digits, '-' and '.', at most 253
  // bytes.
  constexpr std::string_view kHostChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.";
  if (host.size() > 253 || host.find_first_not_of(kHostChars) != host.npos) {
    return "\"" + h + "\" is not a valid host name or IPv4 address";
  }
  return std::nullopt;
}

}  // namespace

bool IsUnixAddress(std::string_view address) {
  return address.substr(0, kUnixPrefix.size()) == kUnixPrefix;
}

std::optional<std::string> CheckAddress(std::string_view address) {
  if (IsUnixAddress(address)) {
    const std::string_view path = address.substr(kUnixPrefix.size());
    if (path.empty() || path[0] != '/') {
      return "unix socket path must be absolute, e.g. "
             "\"unix:/run/gearbox.sock\"";
    }
    if (path.find('\0') != path.npos) return "unix socket path contains NUL";
    constexpr size_t kMaxPath = sizeof(sockaddr_un::sun_path) - 1;  // 107 + NUL
    if (path.size() > kMaxPath) {
      return "unix socket path is " + std::to_string(path.size()) +
             " bytes, longer than the limit of " + std::to_string(kMaxPath);
    }
    return std::nullopt;
  }
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == address.npos) return "missing ']' after the IPv6 address";
    const std::string host(address.substr(1, close - 1));
    in6_addr v6;
    if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) {
      return "\"" + host + "\" is not an IPv6 address";
    }
    const std::string_view rest = address.substr(close + 1);
    if (rest.empty() || rest[0] != ':') {
      return "missing \":PORT\" after \"[" + host + "]\"";
    }
    return CheckPort(rest.substr(1));
  }
  const size_t colon = address.rfind(':');
  if (colon == address.npos)
    return "missing \":PORT\"" + std::string(kExpected);
  if (auto error = CheckHost(address.substr(0, colon))) return error;
  return CheckPort(address.substr(colon + 1));
}

}  // namespace gearbox::config_internal
