#include "daemon/handlers/handlers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/loader.h"
#include "daemon/handler.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/request.h"
#include "daemon/response.h"
#include "daemon/router.h"
#include "tests/support/read_file.h"

namespace gearbox {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

RouteConfig Route(std::string path, std::string_view handler) {
  return DefaultRoute(std::move(path), handler);  // every param at its default
}

std::vector<RouteConfig> Routes() {
  std::vector<RouteConfig> routes;
  RouteConfig hello = Route("/hello", "text");
  hello.params.Set("body", std::string("hello world\n"));
  hello.params.Set("status", int64_t{201});
  hello.params.Set("content_type", std::string("text/html"));
  routes.push_back(hello);
  routes.push_back(Route("/plain", "text"));  // defaults: 200, text/plain, ""
  RouteConfig wait = Route("/wait", "wait");
  wait.params.Set("ms", int64_t{5});
  wait.params.Set("max_ms", int64_t{50});
  routes.push_back(wait);
  RouteConfig burn = Route("/burn", "burn");
  burn.params.Set("us", int64_t{2000});
  burn.params.Set("max_us", int64_t{20000});
  routes.push_back(burn);
  routes.push_back(Route("/echo", "echo"));
  routes.push_back(Route("/status", "status"));
  return routes;
}

ServerInfo Info(std::shared_ptr<StatsRegion> stats = nullptr) {
  ServerInfo info;
  info.model = "threadpool";
  info.generation = 3;
  info.stats = std::move(stats);
  return info;
}

// What a blocking model does: Resume until done, recording each wait. The
// exchange is kept: response.content_type may point into it (echo), so models
// keep it alive until the response is serialized.
struct Served {
  std::unique_ptr<Exchange> exchange;
  Response response;
  std::vector<microseconds> waits;
};

Served Serve(const Router& router, const Request& request) {
  Served served;
  served.exchange = router.Find(request.path)->Start(request);
  EXPECT_NE(served.exchange, nullptr);
  if (!served.exchange) return served;
  for (int i = 0; i < 10; ++i) {
    Step step = served.exchange->Resume(gearbox::Wake{}, served.response);
    if (step.done()) return served;
    served.waits.push_back(step.timeout);
  }
  ADD_FAILURE() << "exchange never finished";
  return served;
}

Request Get(std::string_view target) {
  Request r;
  r.method = "GET";
  r.SetTarget(target);
  return r;
}

TEST(RouterTest, UnknownPathIs404AndNeverNull) {
  Router router(Routes(), Info());
  for (std::string_view path : {"/nope", "", "/hello/", "/HELLO", "/hell"}) {
    Handler* h = router.Find(path);
    ASSERT_NE(h, nullptr) << path;
    Served s = Serve(router, Get(path));
    EXPECT_EQ(s.response.status, 404) << path;
    EXPECT_EQ(s.response.body, "not found\n");
    EXPECT_EQ(s.response.content_type, "text/plain");
  }
  EXPECT_EQ(router.Find("/nope"), router.Find("/other"));
  EXPECT_NE(router.Find("/hello"), router.Find("/nope"));
  EXPECT_EQ(router.info().model, "threadpool");
}

// Each worker builds its own Router from the generation's RouteSet: no
// handler instance is shared between two workers, and all see the same
// routes and server facts.
TEST(RouterTest, EachWorkerGetsItsOwnHandlers) {
  RouteSet set;
  set.routes = Routes();
  set.info = Info();
  std::unique_ptr<Router> a = set.MakeRouter(0);
  std::unique_ptr<Router> b = set.MakeRouter(1);
  for (const RouteConfig& route : set.routes) {
    EXPECT_NE(a->Find(route.path), b->Find(route.path)) << route.path;
    EXPECT_NE(a->Find(route.path), a->Find("/nope")) << route.path;
  }
  EXPECT_EQ(Serve(*a, Get("/hello")).response.body, "hello world\n");
  EXPECT_EQ(Serve(*b, Get("/hello")).response.body, "hello world\n");
  EXPECT_EQ(b->info().generation, 3);
}

TEST(RouterTest, EmptyRouteTableServes404) {
  Router router({}, Info());
  EXPECT_EQ(Serve(router, Get("/")).response.status, 404);
}

TEST(HandlerTableTest, NamesAndFactories) {
  std::vector<std::string_view> names;
  for (const HandlerSchema& schema : HandlerSchemas()) {
    names.push_back(schema.name);
  }
  ASSERT_FALSE(names.empty());
  ServerInfo info = Info();
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(std::count(names.begin(), names.end(), names[i]), 1)
        << names[i] << " twice in the table";
    EXPECT_NE(MakeHandler(Route("/x", names[i]), info), nullptr) << names[i];
  }
  RouteConfig unknown;
  unknown.path = "/x";
  unknown.handler = "nonesuch";
  EXPECT_EQ(MakeHandler(unknown, info), nullptr);
}

TEST(HandlerTableTest, SchemasAreWellFormed) {
  for (const HandlerSchema& schema : HandlerSchemas()) {
    EXPECT_EQ(CheckSchema(schema), std::nullopt);
    EXPECT_FALSE(schema.doc.empty()) << schema.name;
    for (const ParamSpec& spec : schema.params) {
      EXPECT_FALSE(spec.doc.empty()) << schema.name << " " << spec.key;
    }
  }
  // Only the crash handler needs [server] enable_crash_handler.
  for (const HandlerSchema& schema : HandlerSchemas()) {
    EXPECT_EQ(schema.fault_test_only, schema.name == "crash") << schema.name;
  }
}

using testing::ReadFile;

// config/gearbox.toml documents every handler a config may use and each of
// its parameters with the line DescribeParam derives from the table (and -p
// prints), so a changed default or bound fails here until the file follows.
TEST(HandlerTableTest, ReferenceConfigDocumentsTheTable) {
  const std::string toml = ReadFile("config/gearbox.toml");
  for (const HandlerSchema& schema : HandlerSchemas()) {
    if (schema.fault_test_only) continue;
    SCOPED_TRACE(std::string(schema.name));
    const std::string name(schema.name);
    EXPECT_NE(toml.find("# " + name + ": " + std::string(schema.doc)),
              std::string::npos);
    const size_t line_start = toml.find("\n#   handler ");
    ASSERT_NE(line_start, std::string::npos);
    const std::string handler_line =
        toml.substr(line_start, toml.find('\n', line_start + 1) - line_start);
    EXPECT_NE(handler_line.find("\"" + name + "\""), std::string::npos)
        << handler_line;
    size_t route = toml.find("\nhandler = \"" + name + "\"\n");
    std::string block;
    if (route != std::string::npos) {
      block = toml.substr(route, toml.find("[[route]]", route) - route);
    } else {
      // A handler that needs a backend (postgres) is not in the defaults:
      // its example is commented out, line by line, and documented alike.
      route = toml.find("\n# handler = \"" + name + "\"\n");
      ASSERT_NE(route, std::string::npos) << "no example route";
      block = toml.substr(route, toml.find("\n\n", route) - route);
      for (size_t at = 0; (at = block.find("\n# ", at)) != std::string::npos;
           ++at) {
        block.erase(at + 1, 2);
      }
    }
    for (const ParamSpec& spec : schema.params) {
      const std::string documented = "\n# " + DescribeParam(schema, spec) +
                                     "\n" + std::string(spec.key) + " = ";
      EXPECT_NE(block.find(documented), std::string::npos)
          << "expected" << documented << "\nin\n"
          << block;
    }
  }
}

TEST(HandlerTableTest, QueryInt) {
  Request r = Get("/x?a=12&b=&c=-3&d=4x&e=99999999999999999999&f=0");
  EXPECT_EQ(QueryInt(r, "a", 7), 12);
  EXPECT_EQ(QueryInt(r, "b", 7), 7);  // empty
  EXPECT_EQ(QueryInt(r, "c", 7), 7);  // negative
  EXPECT_EQ(QueryInt(r, "d", 7), 7);  // trailing junk
  EXPECT_EQ(QueryInt(r, "e", 7), 7);  // out of range
  EXPECT_EQ(QueryInt(r, "f", 7), 0);
  EXPECT_EQ(QueryInt(r, "missing", 7), 7);
}

TEST(TextHandlerTest, BodyStatusAndContentType) {
  Router router(Routes(), Info());
  Served s = Serve(router, Get("/hello?ignored=1"));
  EXPECT_TRUE(s.waits.empty());
  EXPECT_EQ(s.response.status, 201);
  EXPECT_EQ(s.response.body, "hello world\n");
  EXPECT_EQ(s.response.content_type, "text/html");

  Served plain = Serve(router, Get("/plain"));
  EXPECT_EQ(plain.response.status, 200);
  EXPECT_EQ(plain.response.body, "");
  EXPECT_EQ(plain.response.content_type, "text/plain");
}

TEST(TextHandlerTest, ReusedResponseIsOverwritten) {
  // Models reuse one Response (Reset() between requests); the body is assigned,
  // not appended.
  Router router(Routes(), Info());
  Response response;
  response.body = "stale";
  std::unique_ptr<Exchange> e = router.Find("/hello")->Start(Get("/hello"));
  ASSERT_TRUE(e->Resume(gearbox::Wake{}, response).done());
  EXPECT_EQ(response.body, "hello world\n");
}

TEST(WaitHandlerTest, WaitsThenCompletes) {
  Router router(Routes(), Info());
  std::unique_ptr<Exchange> e = router.Find("/wait")->Start(Get("/wait?ms=20"));
  Response response;
  Step first = e->Resume(gearbox::Wake{}, response);
  ASSERT_FALSE(first.done());
  EXPECT_EQ(first.timeout, milliseconds(20));
  Step second = e->Resume(gearbox::Wake{}, response);
  EXPECT_TRUE(second.done());
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "waited 20 ms\n");
}

TEST(WaitHandlerTest, DefaultCapAndZero) {
  Router router(Routes(), Info());
  Served def = Serve(router, Get("/wait"));
  ASSERT_EQ(def.waits.size(), 1u);
  EXPECT_EQ(def.waits[0], milliseconds(5));  // the route's ms
  EXPECT_EQ(def.response.body, "waited 5 ms\n");

  Served capped = Serve(router, Get("/wait?ms=100000"));
  ASSERT_EQ(capped.waits.size(), 1u);
  EXPECT_EQ(capped.waits[0], milliseconds(50));  // max_ms
  EXPECT_EQ(capped.response.body, "waited 50 ms\n");

  Served zero = Serve(router, Get("/wait?ms=0"));
  EXPECT_TRUE(zero.waits.empty());  // done at the first Resume
  EXPECT_EQ(zero.response.body, "waited 0 ms\n");

  Served junk = Serve(router, Get("/wait?ms=abc"));
  ASSERT_EQ(junk.waits.size(), 1u);
  EXPECT_EQ(junk.waits[0], milliseconds(5));
  Served negative = Serve(router, Get("/wait?ms=-1"));
  ASSERT_EQ(negative.waits.size(), 1u);
  EXPECT_EQ(negative.waits[0], milliseconds(5));
}

TEST(WaitHandlerTest, ExchangeOutlivesRequest) {
  // The request's views die after Start(); the exchange must not need them.
  Router router(Routes(), Info());
  std::unique_ptr<Exchange> e;
  {
    std::string target = "/wait?ms=7";
    Request r;
    r.SetTarget(target);
    e = router.Find(r.path)->Start(r);
    target.assign(target.size(), 'X');
  }
  Response response;
  Step step = e->Resume(gearbox::Wake{}, response);
  ASSERT_FALSE(step.done());
  EXPECT_EQ(step.timeout, milliseconds(7));
  EXPECT_TRUE(e->Resume(gearbox::Wake{}, response).done());
  EXPECT_EQ(response.body, "waited 7 ms\n");
}

TEST(WaitHandlerTest, DestroyedWhileWaiting) {
  // A connection closing mid-wait destroys the exchange: nothing to clean up.
  Router router(Routes(), Info());
  std::unique_ptr<Exchange> e = router.Find("/wait")->Start(Get("/wait"));
  Response response;
  EXPECT_FALSE(e->Resume(gearbox::Wake{}, response).done());
  e.reset();
}

// Times one burn exchange; returns the body.
std::string TimedBurn(const Router& router, std::string_view target,
                      microseconds* took) {
  std::unique_ptr<Exchange> e = router.Find("/burn")->Start(Get(target));
  Response response;
  Clock::time_point start = Clock::now();
  Step step = e->Resume(gearbox::Wake{}, response);
  *took = std::chrono::duration_cast<microseconds>(Clock::now() - start);
  EXPECT_TRUE(step.done());
  return response.body;
}

TEST(BurnHandlerTest, BurnsAtLeastTheRequestedTime) {
  Router router(Routes(), Info());
  microseconds took{};
  std::string body = TimedBurn(router, "/burn?us=5000", &took);
  EXPECT_GE(took, microseconds(5000));
  EXPECT_LT(took, std::chrono::seconds(2));  // generous: loaded CI machines
  EXPECT_EQ(body.rfind("burned 5000 us ", 0), 0u) << body;

  body = TimedBurn(router, "/burn", &took);  // the route's default
  EXPECT_GE(took, microseconds(2000));
  EXPECT_EQ(body.rfind("burned 2000 us ", 0), 0u) << body;
}

TEST(BurnHandlerTest, RespectsMaxUs) {
  Router router(Routes(), Info());
  microseconds took{};
  std::string body = TimedBurn(router, "/burn?us=5000000", &took);
  EXPECT_EQ(body.rfind("burned 20000 us ", 0), 0u) << body;
  EXPECT_GE(took, microseconds(20000));
  EXPECT_LT(took, std::chrono::seconds(2));  // not the 5 s asked for
}

TEST(BurnHandlerTest, ZeroIsImmediate) {
  Router router(Routes(), Info());
  microseconds took{};
  std::string body = TimedBurn(router, "/burn?us=0", &took);
  EXPECT_EQ(body.rfind("burned 0 us ", 0), 0u) << body;
  EXPECT_LT(took, std::chrono::seconds(1));
}

TEST(EchoHandlerTest, ReturnsBodyAndContentType) {
  Router router(Routes(), Info());
  std::string buffer = "payload \x01\x02 bytes";
  std::string content_type = "application/x-test; charset=utf-8";
  std::unique_ptr<Exchange> e;
  {
    Request r = Get("/echo");
    r.method = "POST";
    r.headers.push_back({"content-TYPE", content_type});
    r.body = buffer;
    e = router.Find(r.path)->Start(r);
  }
  // The connection buffer is reused before the response is built.
  const std::string expected = buffer;
  buffer.assign(buffer.size(), '?');
  content_type.assign(content_type.size(), '?');
  Response response;
  ASSERT_TRUE(e->Resume(gearbox::Wake{}, response).done());
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, expected);
  EXPECT_EQ(response.content_type, "application/x-test; charset=utf-8");
}

TEST(EchoHandlerTest, DefaultContentTypeAndEmptyBody) {
  Router router(Routes(), Info());
  Request r = Get("/echo");
  Served s = Serve(router, r);
  EXPECT_EQ(s.response.status, 200);
  EXPECT_EQ(s.response.body, "");
  EXPECT_EQ(s.response.content_type, "application/octet-stream");
}

TEST(StatusHandlerTest, JsonWithoutStats) {
  Router router(Routes(), Info());  // stats == nullptr (unit tests)
  Served s = Serve(router, Get("/status"));
  EXPECT_EQ(s.response.status, 200);
  EXPECT_EQ(s.response.content_type, "application/json");
  const std::string& body = s.response.body;
  EXPECT_EQ(body.front(), '{') << body;
  EXPECT_TRUE(body.ends_with("}\n")) << body;
  EXPECT_NE(body.find("\"model\":\"threadpool\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"generation\":3"), std::string::npos) << body;
  EXPECT_NE(body.find("\"requests\":0"), std::string::npos) << body;
  EXPECT_NE(body.find("\"pid\":"), std::string::npos) << body;
  EXPECT_NE(body.find("\"uptime_s\":"), std::string::npos) << body;
}

TEST(StatusHandlerTest, JsonSumsStats) {
  std::shared_ptr<StatsRegion> stats = StatsRegion::Create(4, 0);
  ASSERT_NE(stats, nullptr);
  Bump(stats->Slot(0).requests, 3);
  Bump(stats->Slot(3).requests, 4);
  stats->Slot(1).CountStatus(200);
  stats->Slot(2).CountStatus(503);
  Bump(stats->Slot(2).accepted, 5);
  stats->Slot(2).CountClose(CloseReason::kClient);
  Router router(Routes(), Info(stats));
  Served s = Serve(router, Get("/status"));
  const std::string& body = s.response.body;
  EXPECT_NE(body.find("\"model\":\"threadpool\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"requests\":7"), std::string::npos) << body;
  EXPECT_NE(body.find("\"accepted\":5"), std::string::npos) << body;
  EXPECT_NE(body.find("\"open\":4"), std::string::npos) << body;
  EXPECT_NE(body.find("\"2xx\":1"), std::string::npos) << body;
  EXPECT_NE(body.find("\"5xx\":1"), std::string::npos) << body;

  // Live figures: a second request sees new counts.
  Bump(stats->Slot(0).requests);
  Served again = Serve(router, Get("/status"));
  EXPECT_NE(again.response.body.find("\"requests\":8"), std::string::npos)
      << again.response.body;
}

}  // namespace
}  // namespace gearbox
