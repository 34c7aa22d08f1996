// Cost and robustness: byte-by-byte delivery stays linear, random mutations
// never crash and every schedule agrees (fastcgi_harness.h).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "daemon/fastcgi/fastcgi_codec.h"
#include "tests/unit/fastcgi/fastcgi_harness.h"

namespace gearbox::testing::fastcgi_codec {
namespace {

TEST(FastCgiCodecTest, ByteByByteIsLinear) {
  // 512 KiB of body delivered one byte per call: quadratic re-parsing would
  // take ~10^11 steps; linear takes milliseconds.
  const std::string body(512 * 1024, 'b');
  const std::string input = Begin(1) +
                            Stream(kParams, 1, ParamStream(GetParams())) +
                            Stream(kStdin, 1, body, 32768);
  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  ServerCodec::Result r;
  for (size_t k = 1; k <= input.size(); ++k) {
    r = codec->Parse(std::string_view(input).substr(0, k), request, out);
    if (r.status != Status::kIncomplete) break;
  }
  EXPECT_EQ(r.status, Status::kComplete);
  EXPECT_EQ(r.consumed, input.size());
  EXPECT_EQ(request.body.size(), body.size());
}

TEST(FastCgiCodecTest, RandomMutationsNeverCrashAndAgree) {
  std::mt19937 rng(12345);
  const std::string base = Rec(kGetValues, 0, Pair("FCGI_MAX_CONNS", "")) +
                           Request1(1, GetParams("/m?x"), "body") +
                           Request1(2, GetParams("/n"), "", 0);
  LimitsConfig limits = TestLimits();
  limits.max_header_bytes = 300;
  limits.max_body_bytes = 50;
  for (int i = 0; i < 2000; ++i) {
    std::string input = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % input.size();
      switch (rng() % 3) {
        case 0:
          input[at] = static_cast<char>(rng());
          break;
        case 1:
          input.erase(at, 1 + rng() % 8);
          break;
        default:
          input.insert(at,
                       std::string(1 + rng() % 8, static_cast<char>(rng())));
      }
      if (input.empty()) input = "x";
    }
    PlayWholeAndBytewise(input, limits);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "mutation " << i;
      break;
    }
  }
}

}  // namespace
}  // namespace gearbox::testing::fastcgi_codec
