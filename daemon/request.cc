#include "daemon/request.h"

#include <strings.h>

namespace gearbox {

std::string_view Request::FindHeader(std::string_view name) const {
  for (const Header& h : headers) {
    if (h.name.size() == name.size() &&
        strncasecmp(h.name.data(), name.data(), name.size()) == 0) {
      return h.value;
    }
  }
  return {};
}

std::string_view Request::QueryParam(std::string_view key) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view{}
                                          : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return {};
}

const PathParam* Request::FindParam(std::string_view name) const {
  for (const PathParam& p : Params()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

void Request::SetTarget(std::string_view raw_target) {
  target = raw_target;
  size_t q = raw_target.find('?');
  if (q == std::string_view::npos) {
    path = raw_target;
    query = {};
  } else {
    path = raw_target.substr(0, q);
    query = raw_target.substr(q + 1);
  }
}

}  // namespace gearbox
