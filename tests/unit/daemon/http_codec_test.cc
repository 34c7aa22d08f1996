// The HTTP codec behind the ServerCodec seam: protocol replies (100 Continue,
// error answers) land in `out`, and the limits come from the config.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "daemon/codec.h"
#include "daemon/http/http_writer.h"
#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox {
namespace {

TEST(HttpCodecTest, ContinueAndErrorsAreWrittenToOut) {
  LimitsConfig limits;
  limits.max_header_bytes = 256;
  limits.max_body_bytes = 64;
  std::unique_ptr<ServerCodec> codec = MakeCodec(Protocol::kHttp, limits);
  ASSERT_NE(codec, nullptr);
  Request req;
  std::string out;
  std::string buf =
      "POST / HTTP/1.1\r\nHost: a\r\nExpect: "
      "100-continue\r\nContent-Length: 2\r\n\r\n";
  ServerCodec::Result r = codec->Parse(buf, req, out);
  EXPECT_EQ(r.status, ServerCodec::Status::kIncomplete);
  EXPECT_EQ(out, kHttpContinue);
  EXPECT_TRUE(codec->InRequest());
  EXPECT_TRUE(codec->InBody());
  out.clear();
  buf += "ok";
  r = codec->Parse(buf, req, out);
  ASSERT_EQ(r.status, ServerCodec::Status::kComplete);
  EXPECT_EQ(r.consumed, buf.size());
  EXPECT_EQ(req.body, "ok");
  EXPECT_EQ(out, "");

  Response resp;
  resp.body = "fine";
  EXPECT_FALSE(codec->AppendResponse(req, resp, false, out));
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;

  out.clear();
  r = codec->Parse("BAD\r\n\r\n", req, out);
  EXPECT_EQ(r.status, ServerCodec::Status::kError);
  EXPECT_EQ(r.error_status, 400);
  EXPECT_EQ(out.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos) << out;
}

TEST(HttpCodecTest, LimitsComeFromConfig) {
  LimitsConfig limits;
  limits.max_header_bytes = 256;
  limits.max_body_bytes = 64;
  std::unique_ptr<ServerCodec> codec = MakeCodec(Protocol::kHttp, limits);
  Request req;
  std::string out;
  ServerCodec::Result r = codec->Parse(
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n", req, out);
  EXPECT_EQ(r.status, ServerCodec::Status::kError);
  EXPECT_EQ(r.error_status, 413);
  EXPECT_EQ(out.rfind("HTTP/1.1 413 Content Too Large\r\n", 0), 0u) << out;
}

}  // namespace
}  // namespace gearbox
