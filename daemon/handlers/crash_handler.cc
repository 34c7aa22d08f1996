// `crash`: aborts the process, to prove what clients see when a worker dies
// (prefork: one child, respawned; threadpool/async: the process, restarted by
// systemd while the listening socket stays open). Off unless the config sets
// [server] enable_crash_handler = true.
#include <cstdlib>

#include "daemon/handlers/handlers.h"
#include "daemon/logging.h"

namespace gearbox {
namespace {

class CrashHandler final : public Handler {
 public:
  std::unique_ptr<Exchange> Start(const Request&) override {
    LogError("crash_handler",
             "msg=\"aborting on purpose (enable_crash_handler)\"");
    abort();
  }
};

}  // namespace

std::unique_ptr<Handler> MakeCrashHandler(const RouteConfig&,
                                          const ServerInfo&) {
  return std::make_unique<CrashHandler>();
}

}  // namespace gearbox
