// The questions an HTTP head raises, asked through PARAMS (issue 14).
// Answered as the HTTP codec answers them; the HTTP case of each is named
// (tests/conformance/cases.toml). Each under every schedule
// (fastcgi_harness.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/fastcgi/fastcgi_codec.h"
#include "tests/unit/fastcgi/fastcgi_harness.h"

namespace gearbox::testing::fastcgi_codec {
namespace {

Params With(Params p, const std::string& name, const std::string& value) {
  for (auto& [n, v] : p) {
    if (n == name) {
      v = value;
      return p;
    }
  }
  p.emplace_back(name, value);
  return p;
}

Params Plus(Params p, const std::string& name, const std::string& value) {
  p.emplace_back(name, value);
  return p;
}

struct ParamsCase {
  const char* http_case;  // its counterpart in cases.toml
  Params params;
  std::string body;
  int status;  // 0: a request
};

TEST(FastCgiCodecTest, HttpQuestionsThroughParamsGetHttpAnswers) {
  const Params get = GetParams("/hello");
  const Params post = With(get, "REQUEST_METHOD", "POST");
  const std::vector<ParamsCase> cases = {
      {"cl_body", With(post, "CONTENT_LENGTH", "5"), "hello", 0},
      {"cl_hex", With(post, "CONTENT_LENGTH", "0x5"), "hello", 400},
      {"cl_plus_sign", With(post, "CONTENT_LENGTH", "+5"), "hello", 400},
      {"cl_negative", With(post, "CONTENT_LENGTH", "-5"), "hello", 400},
      {"cl_inner_space", With(post, "CONTENT_LENGTH", "1 0"), "helloworld",
       400},
      {"cl_list_same", With(post, "CONTENT_LENGTH", "5, 5"), "hello", 400},
      {"(not a number)", With(post, "CONTENT_LENGTH", "abc"), "", 400},
      {"cl_overflow", With(post, "CONTENT_LENGTH", "99999999999999999999999"),
       "", 400},
      {"cl_over_limit", With(post, "CONTENT_LENGTH", "2000000"), "", 413},
      {"cl_two_fields_same",
       Plus(With(post, "CONTENT_LENGTH", "5"), "CONTENT_LENGTH", "5"), "hello",
       400},
      {"(STDIN longer than CONTENT_LENGTH)", With(post, "CONTENT_LENGTH", "5"),
       "hello!", 400},
      {"(STDIN shorter than CONTENT_LENGTH)", With(post, "CONTENT_LENGTH", "5"),
       "hell", 400},
      {"host_with_port", Plus(get, "HTTP_HOST", "t.example:8080"), "", 0},
      {"host_empty", Plus(get, "HTTP_HOST", ""), "", 0},
      {"host_duplicate", Plus(Plus(get, "HTTP_HOST", "t"), "HTTP_HOST", "t"),
       "", 400},
      {"host_space_inside", Plus(get, "HTTP_HOST", "a b"), "", 400},
      {"host_userinfo", Plus(get, "HTTP_HOST", "user@t"), "", 400},
      {"host_bad_port", Plus(get, "HTTP_HOST", "t:80x"), "", 400},
      {"field_value_nul", Plus(get, "HTTP_X_A", std::string("a\0b", 3)), "",
       400},
      {"field_value_ctl", Plus(get, "HTTP_X_A", "a\x01b"), "", 400},
      {"field_value_del",
       Plus(get, "HTTP_X_A",
            "a\x7f"
            "b"),
       "", 400},
      {"field_value_obs_text", Plus(get, "HTTP_X_A", "caf\xc3\xa9"), "", 0},
      {"field_value_inner_tab", Plus(get, "HTTP_X_A", "a\tb c"), "", 0},
      {"method_not_a_token", With(get, "REQUEST_METHOD", "G@T"), "", 400},
      {"method_lowercase", With(get, "REQUEST_METHOD", "get"), "", 501},
      {"method_unknown", With(get, "REQUEST_METHOD", "FROB"), "", 501},
      {"method_connect",
       With(With(get, "REQUEST_METHOD", "CONNECT"), "REQUEST_URI", "t:443"), "",
       501},
      {"target_fragment", With(get, "REQUEST_URI", "/hello#frag"), "", 400},
      {"target_bad_pct_encoding", With(get, "REQUEST_URI", "/a%zz"), "", 400},
      {"target_8bit", With(get, "REQUEST_URI", "/caf\xc3\xa9"), "", 400},
      {"asterisk_form_not_options", With(get, "REQUEST_URI", "*"), "", 400},
      {"authority_form_not_connect", With(get, "REQUEST_URI", "t:80"), "", 400},
      {"absolute_form_userinfo",
       With(get, "REQUEST_URI", "http://user@t/hello"), "", 400},
  };
  for (const ParamsCase& c : cases) {
    SCOPED_TRACE(c.http_case);
    Trace run = PlayAllSplits(Request1(1, c.params, c.body));
    ASSERT_FALSE(run.outcomes.empty());
    const Outcome& first = run.outcomes[0];
    if (c.status == 0) {
      EXPECT_EQ(first.status, Status::kComplete) << run;
      EXPECT_EQ(first.body, c.body) << run;
    } else {
      EXPECT_EQ(first.status, Status::kError) << run;
      EXPECT_EQ(first.error_status, c.status) << run;
      bool terminated = false;
      const std::string reply = StdoutOf(Decode(run.out), 1, &terminated);
      EXPECT_EQ(reply.rfind("Status: " + std::to_string(c.status), 0), 0u)
          << reply;
      EXPECT_TRUE(terminated);
    }
  }
}

TEST(FastCgiCodecTest, AbsoluteAndAsteriskRequestUri) {
  // absolute_form: route on the path, the host from the target (RFC 9112
  // 3.2.2), as over HTTP.
  Trace run = PlayAllSplits(Request1(
      1, Plus(With(GetParams(), "REQUEST_URI", "http://other.example:81/p?q=1"),
              "HTTP_HOST", "t")));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/p");
  std::string host;
  for (const auto& [n, v] : run.outcomes[0].headers) {
    if (n == "Host") host = v;
  }
  EXPECT_EQ(host, "other.example:81");
  // absolute_form_empty_path: "/".
  run = PlayAllSplits(
      Request1(1, With(GetParams(), "REQUEST_URI", "https://h.example")));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/");
  // asterisk_form_options: path "*", which the router answers for OPTIONS.
  run = PlayAllSplits(
      Request1(1, With(With(GetParams(), "REQUEST_METHOD", "OPTIONS"),
                       "REQUEST_URI", "*")));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "*");
}

TEST(FastCgiCodecTest, MissingMethodIs400) {
  Trace run = PlayAllSplits(Request1(1, {{"REQUEST_URI", "/x"}}));
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].error_status, 400);
  bool terminated = false;
  StdoutOf(Decode(run.out), 1, &terminated);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, CrLfInAHeaderValueIs400) {
  for (const char* name : {"HTTP_X_EVIL", "CONTENT_TYPE"}) {
    Trace run = PlayAllSplits(Request1(1, {{"REQUEST_METHOD", "GET"},
                                           {"REQUEST_URI", "/x"},
                                           {name, "a\r\nSet-Cookie: x=1"}}));
    ASSERT_EQ(run.outcomes.size(), 1u) << run;
    EXPECT_EQ(run.outcomes[0].error_status, 400) << name;
  }
}

}  // namespace
}  // namespace gearbox::testing::fastcgi_codec
