// A response larger than the socket can hold, to a client that reads it
// slowly: every model waits for room and sends the rest (a blocked send is
// resumed by the writable wake, not only by the send timeout's close).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>

#include "tests/integration/harness.h"

namespace gearbox::testing {
namespace {

constexpr size_t kBigBody = 8 << 20;

TEST(BackpressureTest, BigResponseToASlowReaderArrivesWhole) {
  DaemonConfig config;
  config.model = ModelUnderTest();
  config.sections =
      "[limits]\nsend_timeout = \"60s\"\n\n[[route]]\n"
      "path = \"/big\"\nhandler = \"text\"\nbody = \"" +
      std::string(kBigBody, 'x') + "\"\n";
  std::string error;
  std::unique_ptr<Daemon> daemon = Daemon::Start(config, &error);
  ASSERT_NE(daemon, nullptr) << error;
  Connection c = Connection::Open(daemon->port());
  ASSERT_TRUE(c.ok()) << c.error();
  // A small receive window: the server's sends block many times over.
  const int rcvbuf = 65536;
  ASSERT_EQ(setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)),
            0);
  ASSERT_TRUE(c.Send(GetRequest("/big"))) << c.error();
  HttpResponse r = c.ReadResponse(Millis(30000));
  ASSERT_EQ(r.error, "") << daemon->Log().substr(0, 4000);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), kBigBody);
  EXPECT_EQ(r.body.find_first_not_of('x'), std::string::npos);
  // The connection is still usable: the machine went back to reading.
  ASSERT_TRUE(c.Send(GetRequest("/hello"))) << c.error();
  HttpResponse hello = c.ReadResponse();
  EXPECT_EQ(hello.status, 200) << hello.raw;
}

}  // namespace
}  // namespace gearbox::testing
