#include "daemon/http/http_writer.h"

#include <gtest/gtest.h>
#include <llhttp.h>

#include <ctime>
#include <map>
#include <string>
#include <string_view>

#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox {
namespace {

// A response read back with llhttp: proves the framing (status line, headers,
// Content-Length vs body) is something a client (nginx) can parse.
struct Parsed {
  bool ok = false;
  int status = 0;
  int minor = 0;
  std::multimap<std::string, std::string> headers;
  std::string body;
  bool complete = false;
  std::string field;  // header name being read
};

Parsed ParseResponse(std::string_view bytes, bool head) {
  llhttp_settings_t settings;
  llhttp_settings_init(&settings);
  settings.on_header_field = [](llhttp_t* p, const char* at, size_t len) {
    auto* r = static_cast<Parsed*>(p->data);
    r->field.assign(at, len);
    return 0;
  };
  settings.on_header_value = [](llhttp_t* p, const char* at, size_t len) {
    auto* r = static_cast<Parsed*>(p->data);
    r->headers.emplace(r->field, std::string(at, len));
    return 0;
  };
  settings.on_body = [](llhttp_t* p, const char* at, size_t len) {
    static_cast<Parsed*>(p->data)->body.append(at, len);
    return 0;
  };
  settings.on_message_complete = [](llhttp_t* p) {
    static_cast<Parsed*>(p->data)->complete = true;
    return 0;
  };
  // A HEAD response has no body whatever its Content-Length says.
  settings.on_headers_complete =
      head ? +[](llhttp_t*) { return 1; } : +[](llhttp_t*) { return 0; };
  Parsed parsed;
  llhttp_t parser;
  llhttp_init(&parser, HTTP_RESPONSE, &settings);
  parser.data = &parsed;
  llhttp_errno_t err = llhttp_execute(&parser, bytes.data(), bytes.size());
  parsed.ok = err == HPE_OK && parsed.complete;
  parsed.status = parser.status_code;
  parsed.minor = parser.http_minor;
  return parsed;
}

std::string Header(const Parsed& p, const std::string& name) {
  auto it = p.headers.find(name);
  return it == p.headers.end() ? "" : it->second;
}

Request Http11() {
  Request r;
  r.method = "GET";
  r.version_major = 1;
  r.version_minor = 1;
  r.keep_alive = true;
  return r;
}

// True when `line` is exactly "Date: <IMF-fixdate>\r\n" (RFC 9110 5.6.7), e.g.
// "Date: Mon, 30 Nov 2026 17:40:43 GMT\r\n": parsed, then formatted again
// from the parsed time, it must come back byte for byte (zero padding, English
// names, a weekday that matches the date). Stores the time in `when`.
bool IsDateLine(const std::string& line, time_t* when = nullptr) {
  static constexpr char kFormat[] = "Date: %a, %d %b %Y %H:%M:%S GMT\r\n";
  struct tm tm = {};
  const char* end = strptime(line.c_str(), kFormat, &tm);
  if (end == nullptr || *end != '\0') return false;
  time_t t = timegm(&tm);
  struct tm again;
  gmtime_r(&t, &again);
  char buf[64];
  size_t n = strftime(buf, sizeof(buf), kFormat, &again);
  if (when) *when = t;
  return std::string_view(buf, n) == line;
}

TEST(HttpWriterTest, OkResponse) {
  Request req = Http11();
  Response resp;
  resp.body = "hello\n";
  std::string out;
  EXPECT_FALSE(AppendHttpResponse(req, resp, /*close=*/false, out));
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\nServer: gearbox\r\nDate: ", 0), 0u)
      << out;
  EXPECT_NE(out.find("\r\nContent-Type: text/plain\r\n"), std::string::npos);
  EXPECT_NE(out.find("\r\nContent-Length: 6\r\n"), std::string::npos);
  EXPECT_EQ(out.find("Connection:"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\r\n\r\nhello\n")) << out;

  Parsed p = ParseResponse(out, false);
  ASSERT_TRUE(p.ok) << out;
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.minor, 1);
  EXPECT_EQ(Header(p, "Server"), "gearbox");
  EXPECT_EQ(Header(p, "Content-Type"), "text/plain");
  EXPECT_EQ(Header(p, "Content-Length"), "6");
  EXPECT_EQ(p.body, "hello\n");
}

TEST(HttpWriterTest, DateHeaderIsImfFixdateAndCurrent) {
  EXPECT_TRUE(IsDateLine("Date: Mon, 30 Nov 2026 17:40:43 GMT\r\n"));
  EXPECT_FALSE(IsDateLine("Date: Tue, 30 Nov 2026 17:40:43 GMT\r\n"));
  EXPECT_FALSE(IsDateLine("Date: Mon, 30 Nov 2026 17:40:43 GMT"));

  std::string date(CachedDateHeader());
  time_t then = 0;
  EXPECT_TRUE(IsDateLine(date, &then)) << date;
  time_t now = time(nullptr);
  EXPECT_LE(then, now);
  EXPECT_GE(then, now - 5);

  Request req = Http11();
  Response resp;
  std::string out;
  AppendHttpResponse(req, resp, false, out);
  size_t at = out.find("\r\nDate: ");
  ASSERT_NE(at, std::string::npos) << out;
  std::string line = out.substr(at + 2, out.find("\r\n", at + 2) + 2 - at - 2);
  EXPECT_TRUE(IsDateLine(line)) << line;
}

TEST(HttpWriterTest, ContentTypeStatusAndExtraHeaders) {
  Request req = Http11();
  Response resp;
  resp.status = 404;
  resp.content_type = "application/json";
  resp.body = "{}";
  resp.extra_headers = "X-One: 1\r\nX-Two: 2\r\n";
  std::string out;
  EXPECT_FALSE(AppendHttpResponse(req, resp, false, out));
  EXPECT_EQ(out.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << out;
  Parsed p = ParseResponse(out, false);
  ASSERT_TRUE(p.ok) << out;
  EXPECT_EQ(p.status, 404);
  EXPECT_EQ(Header(p, "Content-Type"), "application/json");
  EXPECT_EQ(Header(p, "X-One"), "1");
  EXPECT_EQ(Header(p, "X-Two"), "2");
  EXPECT_EQ(p.body, "{}");
}

TEST(HttpWriterTest, EmptyBodyHasContentLengthZero) {
  Request req = Http11();
  Response resp;
  std::string out;
  AppendHttpResponse(req, resp, false, out);
  EXPECT_NE(out.find("\r\nContent-Length: 0\r\n"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\r\n\r\n")) << out;
  EXPECT_TRUE(ParseResponse(out, false).ok) << out;
}

TEST(HttpWriterTest, HeadOmitsBodyButKeepsContentLength) {
  Request req = Http11();
  req.method = "HEAD";
  req.is_head = true;
  Response resp;
  resp.body = "twelve bytes";
  std::string out;
  EXPECT_FALSE(AppendHttpResponse(req, resp, false, out));
  EXPECT_NE(out.find("\r\nContent-Length: 12\r\n"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\r\n\r\n")) << out;
  EXPECT_EQ(out.find("twelve"), std::string::npos) << out;
  Parsed p = ParseResponse(out, /*head=*/true);
  ASSERT_TRUE(p.ok) << out;
  EXPECT_EQ(p.body, "");
}

TEST(HttpWriterTest, Http10KeepAliveSaysSo) {
  Request req = Http11();
  req.version_minor = 0;
  req.keep_alive = true;
  Response resp;
  resp.body = "x";
  std::string out;
  EXPECT_FALSE(AppendHttpResponse(req, resp, false, out));
  EXPECT_NE(out.find("\r\nConnection: keep-alive\r\n"), std::string::npos)
      << out;
  // The status line stays HTTP/1.1 (RFC 9110 6.2: the server's version).
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
}

TEST(HttpWriterTest, Http10WithoutKeepAliveCloses) {
  Request req = Http11();
  req.version_minor = 0;
  req.keep_alive = false;
  Response resp;
  std::string out;
  EXPECT_TRUE(AppendHttpResponse(req, resp, false, out));
  EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("keep-alive"), std::string::npos) << out;
}

TEST(HttpWriterTest, CloseAddsConnectionCloseAndReturnsTrue) {
  Response resp;
  resp.body = "bye";
  {
    Request req = Http11();
    std::string out;
    EXPECT_TRUE(AppendHttpResponse(req, resp, /*close=*/true, out));
    EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
    EXPECT_TRUE(out.ends_with("\r\n\r\nbye")) << out;
    Parsed p = ParseResponse(out, false);
    ASSERT_TRUE(p.ok) << out;
    EXPECT_EQ(Header(p, "Connection"), "close");
  }
  {
    Request req = Http11();
    req.keep_alive = false;  // the client asked (Connection: close)
    std::string out;
    EXPECT_TRUE(AppendHttpResponse(req, resp, false, out));
    EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
  }
  {
    Request req = Http11();
    Response closing;
    closing.close = true;  // the handler asked
    std::string out;
    EXPECT_TRUE(AppendHttpResponse(req, closing, false, out));
    EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
  }
  {
    // HTTP/1.0 keep-alive but the server closes: close wins, once.
    Request req = Http11();
    req.version_minor = 0;
    std::string out;
    EXPECT_TRUE(AppendHttpResponse(req, resp, true, out));
    EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
    EXPECT_EQ(out.find("keep-alive"), std::string::npos) << out;
  }
}

TEST(HttpWriterTest, NoContentHasNoBodyOrLength) {
  Request req = Http11();
  for (int status : {204, 304}) {
    Response resp;
    resp.status = status;
    resp.body = "ignored";
    std::string out;
    EXPECT_FALSE(AppendHttpResponse(req, resp, false, out));
    EXPECT_EQ(out.rfind("HTTP/1.1 " + std::to_string(status) + " ", 0), 0u)
        << out;
    EXPECT_EQ(out.find("Content-Length"), std::string::npos) << out;
    EXPECT_EQ(out.find("Content-Type"), std::string::npos) << out;
    EXPECT_EQ(out.find("ignored"), std::string::npos) << out;
    EXPECT_TRUE(out.ends_with("\r\n\r\n")) << out;
    Parsed p = ParseResponse(out, false);
    EXPECT_TRUE(p.ok) << out;
    EXPECT_EQ(p.status, status);
  }
}

TEST(HttpWriterTest, ResponsesAppendInOrder) {
  // Pipelined responses go into one buffer back to back.
  Request req = Http11();
  Response a, b;
  a.body = "first";
  b.body = "second";
  std::string out;
  AppendHttpResponse(req, a, false, out);
  size_t first_len = out.size();
  AppendHttpResponse(req, b, false, out);
  EXPECT_TRUE(
      ParseResponse(std::string_view(out).substr(0, first_len), false).ok);
  Parsed second = ParseResponse(std::string_view(out).substr(first_len), false);
  ASSERT_TRUE(second.ok) << out;
  EXPECT_EQ(second.body, "second");
  EXPECT_EQ(out.find("first"), out.rfind("first"));
}

TEST(HttpWriterTest, ErrorWithRetryAfter) {
  std::string out;
  AppendHttpError(503, "Retry-After: 1\r\n", out);
  EXPECT_EQ(out.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("\r\nRetry-After: 1\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nConnection: close\r\n"), std::string::npos) << out;
  Parsed p = ParseResponse(out, false);
  ASSERT_TRUE(p.ok) << out;
  EXPECT_EQ(p.status, 503);
  EXPECT_EQ(Header(p, "Retry-After"), "1");
  EXPECT_EQ(Header(p, "Connection"), "close");
  EXPECT_EQ(Header(p, "Server"), "gearbox");
  EXPECT_EQ(Header(p, "Content-Length"), std::to_string(p.body.size()));
  EXPECT_EQ(p.body, "Service Unavailable\n");
}

TEST(HttpWriterTest, ErrorsForBadInput) {
  for (int status : {400, 408, 413, 431, 505}) {
    std::string out;
    AppendHttpError(status, {}, out);
    Parsed p = ParseResponse(out, false);
    ASSERT_TRUE(p.ok) << out;
    EXPECT_EQ(p.status, status);
    EXPECT_EQ(Header(p, "Connection"), "close");
    EXPECT_EQ(p.body, std::string(ReasonPhrase(status)) + "\n");
    EXPECT_NE(ReasonPhrase(status), "Unknown") << status;
  }
}

TEST(HttpWriterTest, ContinueLine) {
  EXPECT_EQ(kHttpContinue, "HTTP/1.1 100 Continue\r\n\r\n");
}

// A response rendered ahead of time gets the Date of the moment it is sent,
// formatted without strftime (async-signal-safe): the same text strftime
// gives, for dates across the calendar's corners.
TEST(HttpWriterTest, StampDateHeaderRewritesTheDate) {
  Request request;
  Response response;
  std::string out;
  AppendHttpResponse(request, response, /*close=*/true, out);
  for (time_t t : {time_t{0}, time_t{784111777}, time_t{951782400},
                   time_t{1709164800}, time_t{4102444799}, time(nullptr)}) {
    StampDateHeader(out, t);
    struct tm tm;
    gmtime_r(&t, &tm);
    char want[64];
    strftime(want, sizeof(want), "\r\nDate: %a, %d %b %Y %H:%M:%S GMT\r\n",
             &tm);
    EXPECT_NE(out.find(want), std::string::npos) << t << "\n" << out;
  }
  const std::string before = out;
  std::string no_date = "HTTP/1.1 504 Gateway Timeout\r\n\r\n";
  StampDateHeader(no_date, 0);  // nothing to stamp: unchanged
  EXPECT_EQ(no_date, "HTTP/1.1 504 Gateway Timeout\r\n\r\n");
  EXPECT_EQ(out.size(), before.size());
}

}  // namespace
}  // namespace gearbox
