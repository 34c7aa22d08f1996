// The request-target (RFC 9112 3.2): its four forms, and the RFC 3986 grammar
// of its path, query and authority; Host values too (RFC 9110 7.2).
#include "daemon/http/ascii.h"
#include "daemon/http/char_class.h"
#include "daemon/http/http_syntax.h"

namespace gearbox::http {
namespace {

using ascii::IsAlpha;
using ascii::IsDigit;
using ascii::IsHex;

// RFC 3986 2.3 unreserved and 2.2 sub-delims.
bool IsUnreservedOrSubDelim(unsigned char c) {
  return chars::Is(static_cast<char>(c), chars::kRegName);
}

// Bytes a path or query may hold (RFC 3986 3.3, 3.4: pchar, "/", "?"), plus
// the ones browsers send unencoded (the WHATWG URL Standard's path and query
// percent-encode sets leave them alone): "[ \ ] ^ ` { | }". RFC 9112 3.2 says
// SHOULD answer 400 to them, not MUST; refusing them would break browser
// traffic that nginx passes through. Never accepted: CTLs, SP, DEL, 8-bit,
// '"', '<', '>' and '#' (a fragment is never sent; parsers that disagree on
// where the path ends are an access-control bypass). chars::def::IsPath is
// the definition.
bool IsPathByte(unsigned char c) {
  return chars::Is(static_cast<char>(c), chars::kPath);
}

// Path and query bytes with valid pct-encoding ("%" HEXDIG HEXDIG).
bool IsValidPathAndQuery(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (IsPathByte(c)) continue;  // '%' is not one
    if (c != '%' || i + 2 >= s.size() || !IsHex(s[i + 1]) || !IsHex(s[i + 2])) {
      return false;
    }
    i += 2;
  }
  return true;
}

// RFC 3986 3.1 scheme, followed by "://"; returns the length of "scheme://"
// or 0.
size_t SchemePrefix(std::string_view target) {
  if (target.empty() || !IsAlpha(target[0])) return 0;
  size_t i = 1;
  while (i < target.size() &&
         (IsAlpha(target[i]) || IsDigit(target[i]) || target[i] == '+' ||
          target[i] == '-' || target[i] == '.')) {
    ++i;
  }
  if (target.substr(i, 3) != "://") return 0;
  return i + 3;
}

bool IsPort(std::string_view s) {
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// RFC 3986 3.2.2 IP-literal, without the brackets: an IPv6 address (checked
// for its alphabet only) or an IPvFuture.
bool IsIpLiteral(std::string_view s) {
  if (s.empty()) return false;
  if (s[0] == 'v' || s[0] == 'V') {
    size_t dot = s.find('.');
    if (dot == std::string_view::npos || dot < 2) return false;
    for (size_t i = 1; i < dot; ++i) {
      if (!IsHex(s[i])) return false;
    }
    if (dot + 1 == s.size()) return false;
    for (size_t i = dot + 1; i < s.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (!IsUnreservedOrSubDelim(c) && c != ':') return false;
    }
    return true;
  }
  for (char c : s) {
    if (!IsHex(c) && c != ':' && c != '.') return false;
  }
  return s.find(':') != std::string_view::npos;
}

// The length of the longest prefix of `s` that is an RFC 3986 3.2.2 reg-name
// (IPv4 addresses included): the whole of `s` when it is one.
size_t RegNameLength(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (IsUnreservedOrSubDelim(c)) {  // '%' is not one
      ++i;
    } else if (c == '%' && i + 2 < s.size() && IsHex(s[i + 1]) &&
               IsHex(s[i + 2])) {
      i += 3;
    } else {
      break;
    }
  }
  return i;
}

}  // namespace

Verdict CheckMethodAndTarget(std::string_view method, std::string_view target,
                             TargetForm* form) {
  // RFC 9110 9.3.6 / 15.6.2: gearbox is an origin server, not a tunnel.
  if (method == "CONNECT") return Verdict{501, "not_implemented"};
  if (target == "*") {
    // RFC 9112 3.2.4: asterisk-form is only for a server-wide OPTIONS.
    if (method != "OPTIONS") return kMalformed;
    *form = TargetForm::kAsterisk;
  } else if (!target.empty() && target[0] == '/') {
    if (!IsValidPathAndQuery(target)) return kMalformed;
    *form = TargetForm::kOrigin;
  } else if (SchemePrefix(target) > 0) {
    *form = TargetForm::kAbsolute;
    AbsoluteTarget parts;
    if (Verdict v = SplitAbsoluteTarget(target, &parts); !v.ok()) return v;
  } else {
    // Authority-form (3.2.3) is only for CONNECT, refused above.
    return kMalformed;
  }
  return kOk;
}

bool IsValidHost(std::string_view host) {
  if (host.empty()) return true;  // RFC 9112 3.2: "Host:" for no authority
  if (host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos ||
        !IsIpLiteral(host.substr(1, close - 1))) {
      return false;
    }
    std::string_view rest = host.substr(close + 1);
    return rest.empty() || (rest[0] == ':' && IsPort(rest.substr(1)));
  }
  // ':' is neither a reg-name byte nor a HEXDIG: the reg-name ends at the
  // end or at the first ':', or the host is invalid.
  const size_t reg_name = RegNameLength(host);
  if (reg_name == host.size()) return true;
  return host[reg_name] == ':' && IsPort(host.substr(reg_name + 1));
}

Verdict SplitAbsoluteTarget(std::string_view target, AbsoluteTarget* out) {
  const size_t prefix = SchemePrefix(target);
  std::string_view scheme = target.substr(0, prefix - 3);
  if (!EqualsNoCase(scheme, "http") && !EqualsNoCase(scheme, "https")) {
    return kMalformed;
  }
  std::string_view rest = target.substr(prefix);
  const size_t end = rest.find_first_of("/?");
  out->authority = rest.substr(0, end);
  out->path_and_query =
      end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  // RFC 9110 4.2.4: userinfo is likely there to mislead; 4.2.1: an http URI
  // with an empty host MUST be rejected.
  const std::string_view host =
      out->authority.empty() || out->authority[0] == '['
          ? out->authority
          : out->authority.substr(0, out->authority.find(':'));
  if (out->authority.find('@') != std::string_view::npos || host.empty() ||
      !IsValidHost(out->authority) ||
      !IsValidPathAndQuery(out->path_and_query)) {
    return kMalformed;
  }
  return kOk;
}

}  // namespace gearbox::http
