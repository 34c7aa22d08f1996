// ServerCodec for FastCGI: the record parser plus the record writer.
#include "daemon/fastcgi/fastcgi_codec.h"

#include "daemon/fastcgi/fastcgi_parser.h"
#include "daemon/fastcgi/fastcgi_writer.h"

namespace gearbox {
namespace {

class FastCgiCodec final : public ServerCodec {
 public:
  explicit FastCgiCodec(const LimitsConfig& limits) : parser_(limits) {}

  Result Parse(std::string_view buffer, Request& request,
               std::string& out) override {
    return parser_.Parse(buffer, request, out);
  }

  // The request id, FCGI_KEEP_CONN and HEAD come from the parser's record of
  // the last completed request, so a model may pass a trimmed copy of
  // `request`.
  bool AppendResponse(const Request&, const Response& response, bool close,
                      std::string& out) override {
    fcgi::AppendResponseRecords(out, parser_.scratch(), parser_.done_id(),
                                response, parser_.done_is_head());
    return close || response.close || !parser_.done_keep_conn();
  }

  // Overload (503) and timeout (408) answers. FastCGI has no way to answer a
  // connection without a request id: when a request is being received, it gets
  // the answer; otherwise the answer goes to request id 1, the id nginx uses
  // for every request, so nginx reports it as the upstream's response instead
  // of "upstream prematurely closed connection". The connection closes after
  // it.
  void AppendError(int status, std::string_view extra_headers,
                   std::string& out) override {
    const uint16_t id = parser_.active_id() ? parser_.active_id() : 1;
    fcgi::AppendErrorRecords(out, parser_.scratch(), id, status, extra_headers);
  }

  bool InRequest() const override { return parser_.InRequest(); }
  bool InBody() const override { return parser_.InBody(); }
  bool AnnouncesClose() const override { return false; }

  void StampAnswer(std::span<char> answer, time_t) const override {
    fcgi::StampRequestId(answer, parser_.done_id());
  }

  void StopAtBody() override { parser_.StopAtBody(); }
  size_t SaveHead(std::string_view, std::string& record) const override {
    return parser_.SaveHead(record);
  }
  bool ResumeHead(std::string_view record) override {
    return parser_.ResumeHead(record);
  }

 private:
  FastCgiParser parser_;
};

}  // namespace

std::unique_ptr<ServerCodec> MakeFastCgiCodec(const LimitsConfig& limits) {
  return std::make_unique<FastCgiCodec>(limits);
}

}  // namespace gearbox
