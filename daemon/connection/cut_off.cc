#include "daemon/connection/cut_off.h"

#include "daemon/connection/connection.h"

namespace gearbox {

void TimeoutResponse(Response& response) {
  response.Reset();
  response.status = 504;
  response.body = "request timeout\n";
}

std::string RenderCutOffAnswer(Protocol protocol, const LimitsConfig& limits) {
  std::unique_ptr<ServerCodec> codec = MakeCodec(protocol, limits);
  Request request;
  Response response;
  TimeoutResponse(response);
  std::string out;
  codec->AppendResponse(request, response, /*close=*/true, out);
  return out;
}

void Connection::StampCutOff(std::span<char> answer, time_t now) const {
  codec_->StampAnswer(answer, now);
}

void Connection::CountCutOff(size_t sent) {
  WorkerStats& s = stats();
  Bump(s.request_timeouts);
  if (sent > 0) {
    Bump(s.requests);
    s.CountStatus(504);
    Bump(s.bytes_out, sent);
  }
  s.CountClose(CloseReason::kServer);
}

}  // namespace gearbox
