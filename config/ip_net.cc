#include "config/ip_net.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace gearbox {

std::optional<IpAddress> ParseIp(std::string_view text) {
  char buffer[kIpTextSize];
  if (text.empty() || text.size() >= sizeof buffer) return std::nullopt;
  memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  IpAddress a;
  if (inet_pton(AF_INET, buffer, a.bytes.data()) == 1) {
    a.family = IpAddress::Family::kV4;
    return a;
  }
  if (inet_pton(AF_INET6, buffer, a.bytes.data()) != 1) return std::nullopt;
  a.family = IpAddress::Family::kV6;
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0,    0,
                                          0, 0, 0, 0, 0xff, 0xff};
  if (memcmp(a.bytes.data(), kMapped, sizeof kMapped) == 0) {
    memmove(a.bytes.data(), a.bytes.data() + 12, 4);
    memset(a.bytes.data() + 4, 0, 12);
    a.family = IpAddress::Family::kV4;
  }
  return a;
}

std::string_view FormatIp(const IpAddress& address, char* out) {
  const int af = address.family == IpAddress::Family::kV4   ? AF_INET
                 : address.family == IpAddress::Family::kV6 ? AF_INET6
                                                            : 0;
  if (!af || !inet_ntop(af, address.bytes.data(), out, kIpTextSize)) {
    return {};
  }
  return std::string_view(out);
}

bool IpNet::Contains(const IpAddress& peer) const {
  if (peer.family != address.family) return false;
  if (peer.family == IpAddress::Family::kUnix) return true;
  const int whole = prefix / 8, rest = prefix % 8;
  if (memcmp(peer.bytes.data(), address.bytes.data(), whole) != 0) {
    return false;
  }
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (peer.bytes[whole] & mask) == (address.bytes[whole] & mask);
}

std::optional<std::string> ParseIpNet(std::string_view text, IpNet* out) {
  out->text = std::string(text);
  if (text == "unix") {
    out->address.family = IpAddress::Family::kUnix;
    return std::nullopt;
  }
  const size_t slash = text.find('/');
  const std::optional<IpAddress> a = ParseIp(text.substr(0, slash));
  if (!a) {
    return "\"" + std::string(text) +
           "\" is not \"unix\", an IP address or a CIDR network "
           "(\"10.0.0.0/8\", \"fd00::/8\")";
  }
  const int bits = a->family == IpAddress::Family::kV4 ? 32 : 128;
  int prefix = bits;
  if (slash != std::string_view::npos) {
    const std::string_view p = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), prefix);
    if (p.empty() || ec != std::errc() || end != p.data() + p.size() ||
        prefix < 0 || prefix > bits) {
      return "\"" + std::string(text) + "\": bad prefix /" + std::string(p) +
             " (0.." + std::to_string(bits) + ")";
    }
  }
  out->address = *a;
  out->prefix = prefix;
  // Host bits cleared, so Contains() compares whole bytes.
  for (int bit = prefix; bit < 128; ++bit) {
    out->address.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  return std::nullopt;
}

bool Trusted(std::span<const IpNet> nets, const IpAddress& peer) {
  for (const IpNet& net : nets) {
    if (net.Contains(peer)) return true;
  }
  return false;
}

std::vector<IpNet> DefaultTrustedProxies() {
  std::vector<IpNet> nets(3);
  ParseIpNet("unix", &nets[0]);
  ParseIpNet("127.0.0.0/8", &nets[1]);
  ParseIpNet("::1", &nets[2]);
  return nets;
}

}  // namespace gearbox
