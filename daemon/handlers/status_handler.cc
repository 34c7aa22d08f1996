// `status`: live figures as JSON (model, pid, uptime, requests, connections).
#include <unistd.h>

#include <algorithm>
#include <string>

#include "daemon/handlers/handlers.h"

namespace gearbox {
namespace {

class StatusHandler final : public Handler {
 public:
  explicit StatusHandler(const ServerInfo& info) : info_(info) {}

  std::unique_ptr<Exchange> Start(const Request&) override {
    return Immediately([this](Response& response) {
      response.content_type = "application/json";
      Render(response.body);
    });
  }

 private:
  void Render(std::string& out) const {
    auto uptime = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - info_.started)
                      .count();
    StatsRegion::Totals t;
    if (info_.stats) t = info_.stats->Sum();
    uint64_t closed = 0;
    for (uint64_t c : t.closed) closed += c;
    out.clear();
    out += "{\"model\":\"" + info_.model + "\"";
    out += ",\"generation\":" + std::to_string(info_.generation);
    out += ",\"pid\":" + std::to_string(getpid());
    out += ",\"uptime_s\":" + std::to_string(uptime);
    out += ",\"requests\":" + std::to_string(t.requests);
    out += ",\"inflight\":" + std::to_string(t.inflight);
    out += ",\"busy\":" + std::to_string(t.busy);
    out += ",\"connections\":{\"accepted\":" + std::to_string(t.accepted) +
           ",\"open\":" + std::to_string(t.accepted - std::min(t.accepted, closed)) +
           ",\"closed\":" + std::to_string(closed) + "}";
    out += ",\"status\":{\"1xx\":" + std::to_string(t.status_class[1]) +
           ",\"2xx\":" + std::to_string(t.status_class[2]) +
           ",\"3xx\":" + std::to_string(t.status_class[3]) +
           ",\"4xx\":" + std::to_string(t.status_class[4]) +
           ",\"5xx\":" + std::to_string(t.status_class[5]) + "}";
    out += ",\"rejected\":" + std::to_string(t.rejected);
    out += ",\"bad_input\":" + std::to_string(t.bad_input);
    out += "}\n";
  }

  const ServerInfo info_;
};

}  // namespace

std::unique_ptr<Handler> MakeStatusHandler(const RouteConfig&,
                                           const ServerInfo& info) {
  return std::make_unique<StatusHandler>(info);
}

}  // namespace gearbox
