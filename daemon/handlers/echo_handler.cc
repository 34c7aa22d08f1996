// `echo`: returns the request body with the request's Content-Type.
#include "daemon/handlers/handlers.h"

namespace gearbox {
namespace {

class EchoExchange final : public Exchange {
 public:
  explicit EchoExchange(const Request& request)
      : body_(request.body), content_type_(request.FindHeader("content-type")) {
    if (content_type_.empty()) content_type_ = "application/octet-stream";
  }
  Step Resume(const Wake&, Response& response) override {
    response.content_type = content_type_;  // lives as long as this exchange
    response.body.swap(body_);
    return Step::Done();
  }

 private:
  std::string body_;
  std::string content_type_;
};

class EchoHandler final : public Handler {
 public:
  std::unique_ptr<Exchange> Start(const Request& request) override {
    return std::make_unique<EchoExchange>(request);
  }
};

}  // namespace

std::unique_ptr<Handler> MakeEchoHandler(const RouteConfig&,
                                         const ServerInfo&) {
  return std::make_unique<EchoHandler>();
}

}  // namespace gearbox
