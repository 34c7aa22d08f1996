// IP addresses and networks as gearbox compares them: a connection's peer
// against [server] trusted_proxies, an X-Forwarded-For entry against the
// same list. Small value types: no allocation to compare.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gearbox {

// A peer: an IPv4 or IPv6 address (an IPv4-mapped IPv6 address is held as
// IPv4), a unix-socket peer, or none known.
struct IpAddress {
  enum class Family : uint8_t { kNone, kUnix, kV4, kV6 };
  Family family = Family::kNone;
  std::array<uint8_t, 16> bytes{};  // kV4: the first 4
};

// Parses a literal IPv4 or IPv6 address (no port, no brackets, no zone).
std::optional<IpAddress> ParseIp(std::string_view text);

// The address as text ("203.0.113.7", "2001:db8::1"); empty for kNone and
// kUnix. `out` holds at least kIpTextSize bytes.
inline constexpr size_t kIpTextSize = 46;  // INET6_ADDRSTRLEN
std::string_view FormatIp(const IpAddress& address, char* out);

// A [server] trusted_proxies entry: "unix" (every unix-socket peer), an
// address, or a network in CIDR notation ("10.0.0.0/8", "fd00::/8").
struct IpNet {
  IpAddress address;  // the network's address, host bits cleared
  int prefix = 0;     // bits; kUnix: unused
  std::string text;   // as written (for -p)
  bool Contains(const IpAddress& peer) const;
};

// Parses one entry; what is wrong with it otherwise ("bad prefix /33 for an
// IPv4 network").
std::optional<std::string> ParseIpNet(std::string_view text, IpNet* out);

// Whether any of `nets` contains `peer`.
bool Trusted(std::span<const IpNet> nets, const IpAddress& peer);

// The packaged deployment's trust: unix-socket peers and loopback.
std::vector<IpNet> DefaultTrustedProxies();

}  // namespace gearbox
