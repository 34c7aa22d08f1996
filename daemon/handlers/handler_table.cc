#include <charconv>

#include "daemon/handlers/handlers.h"

namespace gearbox {
namespace {

struct HandlerKind {
  std::string_view name;
  std::unique_ptr<Handler> (*make)(const RouteConfig&, const ServerInfo&);
};

// The only list of handlers (like libevent's eventops[]): nothing registers
// itself.
constexpr HandlerKind kHandlerTable[] = {
    {"text", &MakeTextHandler},     {"wait", &MakeWaitHandler},
    {"burn", &MakeBurnHandler},     {"echo", &MakeEchoHandler},
    {"status", &MakeStatusHandler}, {"crash", &MakeCrashHandler},
};

constexpr std::string_view kHandlerNames[] = {"text", "wait",   "burn",
                                              "echo", "status", "crash"};
static_assert(std::size(kHandlerNames) == std::size(kHandlerTable));

}  // namespace

std::span<const std::string_view> HandlerNames() { return kHandlerNames; }

std::unique_ptr<Handler> MakeHandler(const RouteConfig& route,
                                     const ServerInfo& info) {
  for (const HandlerKind& kind : kHandlerTable) {
    if (kind.name == route.handler) return kind.make(route, info);
  }
  return nullptr;
}

int64_t QueryInt(const Request& request, std::string_view key,
                 int64_t fallback) {
  std::string_view v = request.QueryParam(key);
  if (v.empty()) return fallback;
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || ptr != v.data() + v.size() || n < 0) return fallback;
  return n;
}

}  // namespace gearbox
