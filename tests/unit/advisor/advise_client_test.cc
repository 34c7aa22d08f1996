// gearboxd --advise's parsing: its URL, the /status text it reads, and the
// targets of a config.
#include "daemon/advisor/advise_client.h"

#include <gtest/gtest.h>

namespace gearbox::advisor {
namespace {

TEST(AdviseUrlTest, HttpAndUnixForms) {
  ParsedUrl p = ParseAdviseUrl("http://127.0.0.1:8080");
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.target.address, "127.0.0.1:8080");
  EXPECT_EQ(p.target.path, "/status");
  p = ParseAdviseUrl("http://[::1]:9000/admin/status");
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.target.address, "[::1]:9000");
  EXPECT_EQ(p.target.path, "/admin/status");
  p = ParseAdviseUrl("unix:/run/gearbox/http.sock");
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.target.address, "unix:/run/gearbox/http.sock");
  EXPECT_EQ(p.target.path, "/status");
  for (const char* bad :
       {"ftp://x", "http://host", "http://host:0", "http://host:99999",
        "unix:", "unix:relative", "localhost:8080"}) {
    EXPECT_NE(ParseAdviseUrl(bad).error, "") << bad;
  }
}

TEST(AdviseUrlTest, WildcardListenAddressesAreReachedOnLoopback) {
  EXPECT_EQ(ConnectAddress("0.0.0.0:80"), "127.0.0.1:80");
  EXPECT_EQ(ConnectAddress("*:80"), "127.0.0.1:80");
  EXPECT_EQ(ConnectAddress(":80"), "127.0.0.1:80");
  EXPECT_EQ(ConnectAddress("[::]:80"), "[::1]:80");
  EXPECT_EQ(ConnectAddress("10.0.0.5:80"), "10.0.0.5:80");
  EXPECT_EQ(ConnectAddress("unix:/x.sock"), "unix:/x.sock");
}

constexpr const char* kStatusText =
    "model: threadpool\n"
    "generation: 1\n"
    "requests: 120\n"
    "cores: 2\n"
    "cpu_sample_every: 64\n"
    "window_s: 2.000\n"
    "window_workers: 16\n"
    "window_asked_s: 60.000\n"
    "route: name=/sleep requests=120 service_us=132000 queue_us=0 "
    "wait_us=120000 cpu_ns=20000 cpu_samples=2 w_requests=100 "
    "w_service_us=110000 w_queue_us=5000 w_wait_us=100000 w_cpu_ns=0 "
    "w_cpu_samples=0\n"
    "route: name=\"/a b\" requests=0 service_us=0 queue_us=0 wait_us=0 "
    "cpu_ns=0 cpu_samples=0 w_requests=0 w_service_us=0 w_queue_us=0 "
    "w_wait_us=0 w_cpu_ns=0 w_cpu_samples=0\n"
    "advice: pick=async size=1 configured=threadpool why=\"...\"\n";

TEST(StatusTextTest, ReadsTheWindowOfEachRoute) {
  ParsedStatus p = ParseStatusText(kStatusText);
  ASSERT_EQ(p.error, "");
  const StatusFigures& f = p.figures;
  EXPECT_EQ(f.machine.model, "threadpool");
  EXPECT_EQ(f.machine.cores, 2);
  EXPECT_EQ(f.machine.size, 16);
  EXPECT_DOUBLE_EQ(f.window_s, 2.0);
  EXPECT_DOUBLE_EQ(f.window_asked_s, 60.0);
  ASSERT_EQ(f.routes.size(), 2u);
  EXPECT_EQ(f.routes[0].route, "/sleep");
  EXPECT_DOUBLE_EQ(f.routes[0].rps, 50);
  EXPECT_DOUBLE_EQ(f.routes[0].service_us, 1100);
  EXPECT_DOUBLE_EQ(f.routes[0].wait_us, 1000);
  EXPECT_DOUBLE_EQ(f.routes[0].queue_us, 50);
  EXPECT_DOUBLE_EQ(f.routes[0].cpu_us, 10) << "no sample in the window: the "
                                              "all-time mean (20 us / 2)";
  EXPECT_EQ(f.routes[1].route, "/a b");
  EXPECT_DOUBLE_EQ(f.routes[1].rps, 0);
}

TEST(StatusTextTest, SomethingElseIsAnError) {
  EXPECT_NE(ParseStatusText("hello world\n").error, "");
  EXPECT_NE(ParseStatusText("model: async\n").error, "")
      << "a gearboxd without per-route figures";
}

TEST(ConfigTargetsTest, HttpListenersWithTheStatusRoute) {
  Config c;
  c.source = "x.toml";
  c.listen.push_back({"0.0.0.0:8080", Protocol::kHttp, "http"});
  c.listen.push_back({"unix:/run/f.sock", Protocol::kFastCgi, "fastcgi"});
  c.listen.push_back({"unix:/run/h.sock", Protocol::kHttp, "h2"});
  RouteConfig status;
  status.path = "/admin/status";
  status.handler = "status";
  c.routes.push_back(status);
  std::string error;
  std::vector<StatusTarget> t = TargetsFromConfig(c, &error);
  ASSERT_EQ(t.size(), 2u) << error;
  EXPECT_EQ(t[0].address, "127.0.0.1:8080");
  EXPECT_EQ(t[0].path, "/admin/status");
  EXPECT_EQ(t[1].address, "unix:/run/h.sock");
  c.routes.clear();
  EXPECT_TRUE(TargetsFromConfig(c, &error).empty());
  EXPECT_NE(error.find("no [[route]] with handler = \"status\""),
            std::string::npos);
}

}  // namespace
}  // namespace gearbox::advisor
