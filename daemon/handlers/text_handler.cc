// `text`: a fixed body with a configured status and content type (hello world).
#include "daemon/handlers/handlers.h"

namespace gearbox {
namespace {

class TextHandler final : public Handler {
 public:
  explicit TextHandler(const RouteParams& params)
      : body_(params.Text("body")),
        status_(static_cast<int>(params.Int("status"))),
        content_type_(params.Text("content_type")) {}

  std::unique_ptr<Exchange> Start(const Request&) override {
    return Immediately([this](Response& response) {
      response.status = status_;
      response.content_type = content_type_;
      response.body.assign(body_);
    });
  }

 private:
  const std::string body_;
  const int status_;
  const std::string content_type_;
};

}  // namespace

std::unique_ptr<Handler> MakeTextHandler(const RouteConfig& route,
                                         const ServerInfo&) {
  return std::make_unique<TextHandler>(route.params);
}

}  // namespace gearbox
