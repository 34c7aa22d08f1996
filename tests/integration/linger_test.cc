// Lingering close, every model: after bad input is answered with a close,
// gearboxd shuts its write side and drops what the client still sends, for
// [limits] lingering_timeout at most. A close on unread bytes would make the
// kernel reset the connection: a client still sending its body (nginx
// forwarding a POST) gets ECONNRESET on its write and never reads the answer
// (nginx turns it into a 502).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>

#include "tests/integration/harness.h"
#include "tests/support/wait_until.h"

namespace gearbox::testing {
namespace {

constexpr size_t kLateBody = 4 << 20;

std::unique_ptr<Daemon> StartWithLinger(const std::string& lingering) {
  DaemonConfig config;
  config.model = ModelUnderTest();
  config.sections = "[limits]\nmax_body_bytes = 1024\nlingering_timeout = \"" +
                    lingering + "\"\n";
  std::string error;
  std::unique_ptr<Daemon> daemon = Daemon::Start(config, &error);
  EXPECT_NE(daemon, nullptr) << error;
  return daemon;
}

// Connections closed for bad input: /status's "connections" "error"; -1 if
// absent.
int ErrorCloses(int port) {
  return static_cast<int>(
      FigureAfter(StatusJson(port), "\"connections\":", "\"error\":", '}'));
}

// The body of a request refused with 413 on its Content-Length, sent whole
// through a small send buffer: it can only go through if gearboxd keeps
// reading after its answer.
TEST(LingerTest, BodySentAfterA413IsDroppedAndTheAnswerRead) {
  std::unique_ptr<Daemon> daemon = StartWithLinger("5s");
  ASSERT_NE(daemon, nullptr);
  Connection c = Connection::Open(daemon->port());
  ASSERT_TRUE(c.ok()) << c.error();
  const int sndbuf = 65536;
  ASSERT_EQ(setsockopt(c.fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)),
            0);
  const std::string request =
      "POST /echo HTTP/1.1\r\nHost: t\r\n"
      "Content-Length: " +
      std::to_string(kLateBody) + "\r\n\r\n" + std::string(kLateBody, 'x');
  ASSERT_TRUE(c.Send(request)) << c.error() << "\n" << daemon->Log();
  const HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 413) << r.raw;
  EXPECT_EQ(r.Header("Connection"), "close") << r.raw;
  EXPECT_TRUE(c.WaitClosed()) << c.error();  // the write side, shut
  c.Close();
  // The linger ends with the client's close: counted as closed for bad input.
  int closes = 0;
  WaitUntil([&] { return (closes = ErrorCloses(daemon->port())) >= 1; },
            Millis(2000), Millis(20));
  EXPECT_EQ(closes, 1);
}

// A client that reads its answer and then neither sends nor closes: the
// linger ends at lingering_timeout, not later.
TEST(LingerTest, SilentClientIsClosedAtLingeringTimeout) {
  std::unique_ptr<Daemon> daemon = StartWithLinger("1s");
  ASSERT_NE(daemon, nullptr);
  Connection c = Connection::Open(daemon->port());
  ASSERT_TRUE(c.ok()) << c.error();
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send("GARBAGE\x01\r\n\r\n")) << c.error();
  const HttpResponse r = c.ReadResponse();
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(ErrorCloses(daemon->port()), 0);  // lingering: open still
  int closes = 0;
  WaitUntil([&] { return (closes = ErrorCloses(daemon->port())) >= 1; },
            Millis(5000), Millis(20));
  const auto waited = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(closes, 1) << "not closed within 5 s of a 1 s linger";
  EXPECT_GE(waited, std::chrono::milliseconds(1000));
}

}  // namespace
}  // namespace gearbox::testing
