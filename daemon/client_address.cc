// Request::Client(): who the client is, behind trusted proxies (nginx's
// realip module with real_ip_recursive, gunicorn's forwarded_allow_ips).
#include <strings.h>

#include "daemon/request.h"

namespace gearbox {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool IsNamed(const Header& h, std::string_view name) {
  return h.name.size() == name.size() &&
         strncasecmp(h.name.data(), name.data(), name.size()) == 0;
}

// The X-Forwarded-For entries from right to left (the last header line's
// last entry first): the first that is not a trusted proxy is the client.
// All trusted: the leftmost. An entry that is not an address ends the walk
// at the last good one. Empty: no usable entry.
std::string_view FromForwardedFor(const Request& r,
                                  std::span<const IpNet> trusted) {
  std::string_view client;
  for (size_t h = r.headers.size(); h-- > 0;) {
    if (!IsNamed(r.headers[h], "x-forwarded-for")) continue;
    std::string_view rest = r.headers[h].value;
    while (!rest.empty()) {
      const size_t comma = rest.rfind(',');
      const std::string_view entry =
          Trim(comma == std::string_view::npos ? rest : rest.substr(comma + 1));
      rest = comma == std::string_view::npos ? std::string_view()
                                             : rest.substr(0, comma);
      if (entry.empty()) continue;
      const std::optional<IpAddress> address = ParseIp(entry);
      if (!address) return client;
      client = entry;
      if (!Trusted(trusted, *address)) return client;
    }
  }
  return client;
}

std::string_view IfAddress(std::string_view text) {
  text = Trim(text);
  return ParseIp(text) ? text : std::string_view();
}

}  // namespace

std::string_view Request::Client() const {
  if (client_known_) return client_;
  client_known_ = true;
  client_ = {};
  if (Trusted(origin.trusted, origin.peer)) {
    // Over FastCGI the front end's REMOTE_ADDR is its view of the client
    // (after its own realip rules); the X-Forwarded-For it passes is the
    // client's own header, unchecked: not used.
    if (origin.protocol == "fastcgi") {
      client_ = IfAddress(remote_addr);
    } else {
      client_ = FromForwardedFor(*this, origin.trusted);
      if (client_.empty()) client_ = IfAddress(FindHeader("x-real-ip"));
    }
    if (!client_.empty()) return client_;
  }
  client_ = FormatIp(origin.peer, client_text_.data());
  return client_;
}

}  // namespace gearbox
