// What gearbox/module.h promises a module, checked under every model (one
// target per model): the raw-ABI test module tests/modules/contract.c, and a
// module binary built against the frozen ABI 1.0 header (tests/modules/
// abi10.c).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/modules/modules_fixture.h"

namespace gearbox::testing {
namespace {

constexpr int kWorkers = 2;

std::string ContractSections() {
  return ModelSections(kWorkers) +
         ModuleTable("contract", Runfile("tests/modules/libcontract.so")) +
         ModuleTable("abi10", Runfile("tests/modules/libabi10.so")) +
         "[[route]]\npath = \"/c\"\nhandler = \"contract\"\n"
         "label = \"main\"\ntimeout = \"3s\"\n\n"
         "[[route]]\npath = \"/c_default\"\nhandler = \"contract\"\n"
         "label = \"default\"\n\n"
         "[[route]]\npath = \"/c_broken\"\nhandler = \"contract\"\n"
         "label = \"broken\"\nfail_worker_init = true\n\n"
         "[[route]]\npath = \"/items/{id}/files/{rest...}\"\n"
         "handler = \"contract\"\nlabel = \"captures\"\n\n"
         "[[route]]\npath = \"/old\"\nhandler = \"abi10\"\n"
         "greeting = \"hello\"\nms = 5\n\n";
}

class ContractTest : public ModuleTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartWith(ContractSections(), true, Server()));
  }
  virtual std::string Server() { return ""; }
  HttpResponse Get(const std::string& target) {
    return Exchange(port(), GetRequest(target));
  }
};

// host->route_timeout_us() is the route's `timeout`, else [limits]
// request_timeout (50 s by default); host->now_us() is CLOCK_MONOTONIC.
TEST_F(ContractTest, RouteTimeoutAndClock) {
  HttpResponse r = Get("/c?do=info");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.body.find("timeout_us=3000000 "), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(" label=main\n"), std::string::npos) << r.body;
  const size_t skew = r.body.find("clock_skew_us=");
  ASSERT_NE(skew, std::string::npos) << r.body;
  EXPECT_LT(atol(r.body.c_str() + skew + 14), 100000) << r.body;
  r = Get("/c_default?do=info");
  EXPECT_NE(r.body.find("timeout_us=50000000 "), std::string::npos) << r.body;
}

// Each resume() finds `next` reset: kind DONE, nfds 0, timeout 0, after an
// FDS wait on two fds and after a TIMER wait.
TEST_F(ContractTest, NextIsResetBeforeEveryResume) {
  HttpResponse r = Get("/c?do=reset");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "0/0/0,0/0/0,0/0/0,\n");
}

// A refused non-blocking connect() wakes its WRITABLE wait as WRITABLE |
// ERROR under every model, and SO_ERROR still holds the reason.
TEST_F(ContractTest, FailedConnectIsWritableAndError) {
  HttpResponse r = Get("/c?do=connect");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "ready=we so_error=refused\n");
}

// SIGPIPE is ignored in the worker: a write to a pipe or a socket whose
// reader is gone is EPIPE, and the worker lives on.
TEST_F(ContractTest, SigpipeIsIgnored) {
  for (int i = 0; i < 2 * kWorkers; ++i) {
    HttpResponse r = Get("/c?do=sigpipe");
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body, "pipe=EPIPE socket=EPIPE\n");
  }
  EXPECT_EQ(Get("/c?do=info").status, 200);
  EXPECT_EQ(daemon_->Log().find("child_died"), std::string::npos);
}

// resume() closes the fd it waited on and waits on a new one with the same
// number, after a ready wake and after a deadline; several times on one
// keep-alive connection.
TEST_F(ContractTest, FdClosedInResume) {
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(c.Send(GetRequest("/c?do=close")));
    HttpResponse r = c.ReadResponse();
    EXPECT_EQ(r.body, "start,ready,ready,ready, reused=1\n") << r.raw;
    ASSERT_TRUE(c.Send(GetRequest("/c?do=close&after=deadline")));
    r = c.ReadResponse();
    EXPECT_EQ(r.body, "start,deadline,ready,ready, reused=1\n") << r.raw;
  }
}

// The worker instance keeps a socketpair across exchanges; successive
// exchanges (one connection, then new connections) wait on the same fd.
TEST_F(ContractTest, FdKeptAcrossExchanges) {
  std::map<std::string, std::string> fd_of_worker;
  std::map<std::string, long> uses_of_worker;
  auto check = [&](const HttpResponse& r) {
    ASSERT_EQ(r.status, 200) << r.raw;
    char worker[16] = {}, fd[16] = {};
    long uses = 0;
    ASSERT_EQ(sscanf(r.body.c_str(), "worker=%15s pool_fd=%15s uses=%ld",
                     worker, fd, &uses),
              3)
        << r.body;
    auto [it, fresh] = fd_of_worker.emplace(worker, fd);
    EXPECT_EQ(it->second, fd) << "worker " << worker << " changed its fd";
    EXPECT_GT(uses, uses_of_worker[worker]) << r.body;
    uses_of_worker[worker] = uses;
  };
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c.Send(GetRequest("/c?do=pool")));
    ASSERT_NO_FATAL_FAILURE(check(c.ReadResponse()));
  }
  for (int i = 0; i < 10; ++i)
    ASSERT_NO_FATAL_FAILURE(check(Get("/c?do=pool")));
  long most = 0;
  for (const auto& [worker, uses] : uses_of_worker) most = std::max(most, uses);
  EXPECT_GE(most, 5) << "no instance served several exchanges";
}

// Several exchanges of one instance waiting on the same fd at once (only
// the async model runs them together; the others serve them in turn): each
// is woken, one that meets EAGAIN waits again, all are answered.
TEST_F(ContractTest, ExchangesShareAKeptFd) {
  Burst burst = ConcurrentGets(port(), "/c?do=pool", 20, Millis(10000));
  for (const HttpResponse& r : burst.responses) {
    EXPECT_EQ(r.status, 200) << r.error << r.raw;
    EXPECT_NE(r.body.find(" pool_fd="), std::string::npos) << r.body;
  }
}

// worker_init() calling host->worker_error(): logged once per worker, the
// route answers 503 with Retry-After; the module's other routes serve.
TEST_F(ContractTest, WorkerInitFailureAnswers503) {
  HttpResponse r = Get("/c_broken?do=info");
  EXPECT_EQ(r.status, 503) << r.raw;
  EXPECT_EQ(r.Header("Retry-After"), "1") << r.raw;
  EXPECT_EQ(Get("/c?do=info").status, 200);
  const std::string log = daemon_->Log();
  EXPECT_NE(log.find("event=module_worker_init_failed module=contract worker="),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("msg=\"asked to fail by fail_worker_init\" answering=503"),
            std::string::npos)
      << log;
}

// The 1.1 request fields. The test client connects from loopback, which
// [server] trusted_proxies trusts by default: X-Forwarded-For names the
// client (its rightmost untrusted entry), else X-Real-IP, else the peer.
TEST_F(ContractTest, RequestFields) {
  HttpResponse r = Get("/c?do=request");
  EXPECT_EQ(r.body,
            "version=1.1 listener=http protocol=http client=127.0.0.1 "
            "captures= id=\n");
  r = Exchange(port(), "GET /c?do=request HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.body,
            "version=1.0 listener=http protocol=http client=127.0.0.1 "
            "captures= id=\n");
  r = Exchange(port(), GetRequest("/c?do=request",
                                  "X-Forwarded-For: 198.51.100.1, "
                                  "203.0.113.9, ::1\r\n"
                                  "X-Forwarded-For: 127.0.0.1\r\n"
                                  "X-Real-IP: 192.0.2.5\r\n"));
  EXPECT_NE(r.body.find(" client=203.0.113.9 "), std::string::npos) << r.body;
  r = Exchange(port(), GetRequest("/c?do=request", "X-Real-IP: 192.0.2.5\r\n"));
  EXPECT_NE(r.body.find(" client=192.0.2.5 "), std::string::npos) << r.body;
  // The route's path captures, percent-decoded once.
  r = Get("/items/123/files/a/b%2Fc?do=request");
  EXPECT_EQ(r.body,
            "version=1.1 listener=http protocol=http client=127.0.0.1 "
            "captures=id:123,rest:a/b/c id=123\n");
}

// With loopback not trusted, the same headers are the client's own claim:
// the peer's address is the client.
class UntrustedPeerTest : public ContractTest {
  std::string Server() override { return "trusted_proxies = [\"unix\"]\n"; }
};

TEST_F(UntrustedPeerTest, HeadersFromAnUntrustedPeerAreIgnored) {
  HttpResponse r =
      Exchange(port(), GetRequest("/c?do=request",
                                  "X-Forwarded-For: 203.0.113.9\r\n"
                                  "X-Real-IP: 192.0.2.5\r\n"));
  EXPECT_NE(r.body.find(" client=127.0.0.1 "), std::string::npos) << r.body;
}

// A module binary built against the 1.0 header loads and serves unchanged:
// keys declared by reading them, a NULL instance, timer and fd waits.
TEST_F(ContractTest, Abi10ModuleServes) {
  for (int i = 0; i < 2 * kWorkers; ++i) {
    HttpResponse r = Get("/old");
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body, "abi10 greeting=hello wakes=start,timer,ready\n");
    EXPECT_EQ(r.Header("X-Abi"), "1.0");
  }
  EXPECT_NE(daemon_->Log().find("event=module_loaded module=abi10 "),
            std::string::npos);
  EXPECT_NE(daemon_->Log().find(" abi=1.0 "), std::string::npos);
}

}  // namespace
}  // namespace gearbox::testing
