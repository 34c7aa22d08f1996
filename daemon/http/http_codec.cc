// ServerCodec for HTTP/1.1: the llhttp parser plus the response writer.
#include "daemon/codec.h"
#include "daemon/http/http_parser.h"
#include "daemon/http/http_writer.h"

namespace gearbox {
namespace {

class HttpCodec final : public ServerCodec {
 public:
  explicit HttpCodec(const LimitsConfig& limits)
      : parser_(HttpLimits{static_cast<size_t>(limits.max_header_bytes),
                           static_cast<uint64_t>(limits.max_body_bytes)}) {}

  Result Parse(std::string_view buffer, Request& request,
               std::string& out) override {
    HttpRequestParser::Result r = parser_.Parse(buffer, request);
    Result result;
    switch (r.status) {
      case HttpRequestParser::Status::kComplete:
        result.status = Status::kComplete;
        result.consumed = r.consumed;
        break;
      case HttpRequestParser::Status::kIncomplete:
        if (r.send_continue) out.append(kHttpContinue);
        break;
      case HttpRequestParser::Status::kError:
        result.status = Status::kError;
        result.error_status = r.error_status;
        result.error_reason = r.error_reason;
        AppendHttpError(r.error_status, {}, out);
        break;
    }
    return result;
  }

  bool AppendResponse(const Request& request, const Response& response,
                      bool close, std::string& out) override {
    return AppendHttpResponse(request, response, close, out);
  }

  void AppendError(int status, std::string_view extra_headers,
                   std::string& out) override {
    AppendHttpError(status, extra_headers, out);
  }

  bool InRequest() const override { return parser_.InRequest(); }
  bool InBody() const override { return parser_.InBody(); }

  void StampAnswer(std::span<char> answer, time_t now) const override {
    StampDateHeader(answer, now);
  }

  void StopAtBody() override { parser_.StopAtBody(); }
  size_t SaveHead(std::string_view buffer, std::string& record) const override {
    return parser_.SaveHead(buffer, record);
  }
  bool ResumeHead(std::string_view record) override {
    return parser_.ResumeHead(record);
  }

 private:
  HttpRequestParser parser_;
};

}  // namespace

std::unique_ptr<ServerCodec> MakeHttpCodec(const LimitsConfig& limits) {
  return std::make_unique<HttpCodec>(limits);
}

}  // namespace gearbox
