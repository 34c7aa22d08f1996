// The router: Go 1.22 ServeMux precedence, captures, the path rule
// (daemon/routing/route_path.h), methods and 405, and no allocation.
#include "daemon/router.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "daemon/handlers/handlers.h"

namespace {
std::atomic<long> allocations{0};
}  // namespace

void* operator new(size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace gearbox {
namespace {

// A route that answers with its own name, so a test sees which one matched.
RouteConfig Named(std::string path, std::vector<std::string> methods = {}) {
  RouteConfig route = DefaultRoute(path, "text");
  route.methods = std::move(methods);
  route.params.Set("body", RouteDisplay(route));
  return route;
}

struct Answer {
  int status = 0;
  std::string body;
  std::string headers;
  std::vector<std::pair<std::string, std::string>> params;
};

Answer Serve(const Router& router, std::string_view method,
             std::string_view target) {
  Request request;
  request.method = method;
  request.SetTarget(target);
  const Route& route = router.Match(request);
  Answer answer;
  for (const PathParam& p : request.Params()) {
    answer.params.emplace_back(p.name, p.value);
  }
  Response response;
  auto exchange = route.handler->Start(request);
  exchange->Resume(Wake{}, response);
  answer.status = response.status;
  answer.body = response.body;
  answer.headers = response.extra_headers;
  return answer;
}

std::string Body(const Router& router, std::string_view target,
                 std::string_view method = "GET") {
  Answer a = Serve(router, method, target);
  return a.status == 200 ? a.body : std::to_string(a.status);
}

using Params = std::vector<std::pair<std::string, std::string>>;

TEST(RouterTest, EveryKindOfPattern) {
  Router router(
      {Named("/hello"), Named("/items/{id}"), Named("/files/{rest...}"),
       Named("/static/"), Named("/static/{$}"), Named("/")},
      ServerInfo{});
  EXPECT_EQ(Body(router, "/hello"), "/hello");
  EXPECT_EQ(Body(router, "/hello/"), "/");  // exact: the catch-all has it
  EXPECT_EQ(Body(router, "/items/123"), "/items/{id}");
  EXPECT_EQ(Body(router, "/items/"), "/");  // {id} is never empty
  EXPECT_EQ(Body(router, "/items/1/2"), "/");
  EXPECT_EQ(Body(router, "/files/a/b.txt"), "/files/{rest...}");
  EXPECT_EQ(Body(router, "/files/"), "/files/{rest...}");
  EXPECT_EQ(Body(router, "/files"), "/");
  EXPECT_EQ(Body(router, "/static/a/b.css"), "/static/");
  EXPECT_EQ(Body(router, "/static/"), "/static/{$}");
  EXPECT_EQ(Body(router, "/static"), "/");  // no automatic redirect
  EXPECT_EQ(Body(router, "/anything/else"), "/");
  EXPECT_EQ(Body(router, "/"), "/");
  EXPECT_EQ(Serve(router, "GET", "/items/123").params, (Params{{"id", "123"}}));
  EXPECT_EQ(Serve(router, "GET", "/files/a/b.txt").params,
            (Params{{"rest", "a/b.txt"}}));
  EXPECT_EQ(Serve(router, "GET", "/files/").params, (Params{{"rest", ""}}));
  EXPECT_EQ(Serve(router, "GET", "/static/a").params, Params{});
}

TEST(RouterTest, WithoutACatchAllUnmatchedIs404) {
  Router router({Named("/hello")}, ServerInfo{});
  EXPECT_EQ(Body(router, "/nope"), "404");
  EXPECT_EQ(Body(router, "/hello/"), "404");
}

// Go's documented precedence, in either config order.
TEST(RouterTest, MostSpecificWins) {
  for (bool reversed : {false, true}) {
    std::vector<RouteConfig> routes = {
        Named("/images/"),    Named("/images/thumbnails/"),
        Named("/posts/{id}"), Named("/posts/latest"),
        Named("/a/{x}/c"),    Named("/a/b/")};
    if (reversed) std::reverse(routes.begin(), routes.end());
    Router router(routes, ServerInfo{});
    EXPECT_EQ(Body(router, "/images/thumbnails/x.png"), "/images/thumbnails/");
    EXPECT_EQ(Body(router, "/images/x.png"), "/images/");
    EXPECT_EQ(Body(router, "/posts/latest"), "/posts/latest");
    EXPECT_EQ(Body(router, "/posts/7"), "/posts/{id}");
    // Backs up: the literal "b" leads nowhere for /a/b/c... it does: /a/b/.
    EXPECT_EQ(Body(router, "/a/b/c"), "/a/b/");
    EXPECT_EQ(Body(router, "/a/z/c"), "/a/{x}/c");
  }
}

TEST(RouterTest, BacksUpFromADeadEndLiteral) {
  Router router({Named("/a/b/c"), Named("/a/{x}/d")}, ServerInfo{});
  EXPECT_EQ(Body(router, "/a/b/d"), "/a/{x}/d");
  EXPECT_EQ(Serve(router, "GET", "/a/b/d").params, (Params{{"x", "b"}}));
}

TEST(RouterTest, CapturesArePercentDecodedOnce) {
  Router router({Named("/items/{id}"), Named("/items/{a}/{b}"),
                 Named("/f/{rest...}"), Named("/a b")},
                ServerInfo{});
  // %2F does not split a segment; the value is decoded once (%2541 -> %41).
  EXPECT_EQ(Serve(router, "GET", "/items/a%2Fb").params,
            (Params{{"id", "a/b"}}));
  EXPECT_EQ(Serve(router, "GET", "/items/%2541").params,
            (Params{{"id", "%41"}}));
  EXPECT_EQ(Serve(router, "GET", "/items/caf%C3%A9").params,
            (Params{{"id", "caf\xC3\xA9"}}));
  EXPECT_EQ(Serve(router, "GET", "/f/x%20y/z%2Fw").params,
            (Params{{"rest", "x y/z/w"}}));
  EXPECT_EQ(Body(router, "/a%20b"), "/a b");
  EXPECT_EQ(Body(router, "/%61%20b"), "/a b");
}

TEST(RouterTest, DotSegmentsAndSlashes) {
  Router router({Named("/hello"), Named("/static/"), Named("/f/{rest...}"),
                 Named("/items/{id}")},
                ServerInfo{});
  EXPECT_EQ(Body(router, "/static/../hello"), "/hello");
  EXPECT_EQ(Body(router, "/static/%2e%2E/hello"), "/hello");
  EXPECT_EQ(Body(router, "/x/./../hello"), "/hello");
  EXPECT_EQ(Body(router, "//hello"), "/hello");
  EXPECT_EQ(Body(router, "/static//a"), "/static/");
  EXPECT_EQ(Body(router, "/static/a/.."), "/static/");
  EXPECT_EQ(Serve(router, "GET", "/f/a//b/./c").params,
            (Params{{"rest", "a/b/c"}}));
  // Above the root, malformed escapes, NUL, a dot-segment hidden behind %2F.
  for (std::string_view bad :
       {"/..", "/static/../../etc", "/a%zz", "/a%0", "/a%00b", "/f/..%2Fetc",
        "/items/.%2f..", "/f/a%2F..%2Fb"}) {
    EXPECT_EQ(Body(router, bad), "400") << bad;
  }
  // A prefix route is never escaped: what it serves stays under it.
  EXPECT_EQ(Serve(router, "GET", "/f/a/../../hello").params, Params{});
  EXPECT_EQ(Body(router, "/f/a/../../hello"), "/hello");
}

TEST(RouterTest, MethodsAnd405) {
  Router router({Named("/a", {"GET"}), Named("/a", {"POST", "PUT"}),
                 Named("/b", {"DELETE"}), Named("/c"), Named("/c", {"GET"})},
                ServerInfo{});
  EXPECT_EQ(Body(router, "/a", "GET"), "GET /a");
  EXPECT_EQ(Body(router, "/a", "HEAD"), "GET /a");  // GET implies HEAD
  EXPECT_EQ(Body(router, "/a", "PUT"), "POST,PUT /a");
  Answer a = Serve(router, "DELETE", "/a");
  EXPECT_EQ(a.status, 405);
  EXPECT_EQ(a.headers, "Allow: GET, HEAD, POST, PUT\r\n");
  Answer b = Serve(router, "GET", "/b");
  EXPECT_EQ(b.status, 405);
  EXPECT_EQ(b.headers, "Allow: DELETE\r\n");
  EXPECT_EQ(Serve(router, "GET", "/nope").status, 404);
  // Method-restricted is more specific than unrestricted.
  EXPECT_EQ(Body(router, "/c", "GET"), "GET /c");
  EXPECT_EQ(Body(router, "/c", "PATCH"), "/c");
}

// An exact route is found by one lookup of the raw path in the trie of the
// request's method (or, when no route names that method, of any method):
// the lookup must change nothing that the walk decides.
TEST(RouterTest, ExactLookupKeepsPrecedence) {
  Router router({Named("/a"), Named("/{x}", {"GET"}), Named("/b", {"POST"}),
                 Named("/b/{$}"), Named("/c/d"), Named("/c/{y}/"),
                 Named("/e%2Ff"), Named("/g/..%2Fh"), Named("/i j")},
                ServerInfo{});
  // A route of the method wins over an exact one of any method.
  EXPECT_EQ(Body(router, "/a", "GET"), "GET /{x}");
  EXPECT_EQ(Body(router, "/a", "HEAD"), "GET /{x}");
  EXPECT_EQ(Body(router, "/a", "PUT"), "/a");
  EXPECT_EQ(Body(router, "/b", "POST"), "POST /b");
  EXPECT_EQ(Body(router, "/b", "GET"), "GET /{x}");
  EXPECT_EQ(Body(router, "/b", "PUT"), "405");
  EXPECT_EQ(Serve(router, "PUT", "/b").headers, "Allow: GET, HEAD, POST\r\n");
  EXPECT_EQ(Body(router, "/b/", "PUT"), "/b/{$}");
  EXPECT_EQ(Body(router, "/c/d", "PUT"), "/c/d");
  EXPECT_EQ(Body(router, "/c/d/", "PUT"), "/c/{y}/");
  // Paths that canonicalise to an exact route's still reach it.
  for (std::string_view path : {"/c//d", "/c/./d", "/c/x/../d", "/c/%64"}) {
    EXPECT_EQ(Body(router, path, "PUT"), "/c/d") << path;
  }
  EXPECT_EQ(Body(router, "/e%2Ff", "PUT"), "/e%2Ff");
  EXPECT_EQ(Body(router, "/e%2ff", "PUT"), "/e%2Ff");
  EXPECT_EQ(Body(router, "/e/f", "PUT"), "404");
  EXPECT_EQ(Body(router, "/i j", "PUT"), "/i j");
  EXPECT_EQ(Body(router, "/i%20j", "PUT"), "/i j");
  // A route whose own path canonicalising refuses is never served for it.
  EXPECT_EQ(Body(router, "/g/..%2Fh", "PUT"), "400");
}

TEST(RouterTest, AnExactMatchClearsTheLastCaptures) {
  Router router({Named("/items/{id}"), Named("/hello")}, ServerInfo{});
  Request request;
  request.method = "GET";
  request.SetTarget("/items/7");
  router.Match(request);
  ASSERT_EQ(request.Param("id"), "7");
  request.SetTarget("/hello");
  router.Match(request);
  EXPECT_EQ(request.param_count, 0);
  EXPECT_EQ(request.Param("id"), "");
}

TEST(RouterTest, AddReplacesAnExactRoute) {
  Router router({}, ServerInfo{});
  router.Add("/x", MakeHandler(Named("/first"), ServerInfo{}));
  router.Add("/x", MakeHandler(Named("/second"), ServerInfo{}));
  EXPECT_EQ(Body(router, "/x"), "/second");
  EXPECT_EQ(Body(router, "//x"), "/second");
}

TEST(RouterTest, OptionsStarIsTheServer) {
  Router router({Named("/")}, ServerInfo{});
  Request request;
  request.method = "OPTIONS";
  request.SetTarget("*");
  Response response;
  router.Match(request).handler->Start(request)->Resume(Wake{}, response);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "");
}

TEST(RouterTest, MatchingAllocatesNothing) {
  std::vector<RouteConfig> routes;
  for (int i = 0; i < 1000; ++i) {
    routes.push_back(Named("/r" + std::to_string(i)));
    routes.push_back(Named("/t" + std::to_string(i) + "/{id}"));
    routes.push_back(Named("/p" + std::to_string(i) + "/"));
  }
  routes.push_back(Named("/items/{id}", {"GET"}));
  Router router(routes, ServerInfo{});
  Request request;
  request.method = "GET";
  const char* targets[] = {"/r500",        "/t7/x",     "/p9/a/b.css",
                           "/items/a%2Fb", "/p1/../r2", "/nope"};
  for (const char* target : targets) {  // warm-up: the decode buffer grows
    request.SetTarget(target);
    router.Match(request);
  }
  const long before = allocations.load();
  for (int round = 0; round < 100; ++round) {
    for (const char* target : targets) {
      request.SetTarget(target);
      router.Match(request);
    }
  }
  EXPECT_EQ(allocations.load() - before, 0);
  request.SetTarget("/items/a%2Fb");
  EXPECT_EQ(&router.Match(request), &router.Match(request));
  EXPECT_EQ(request.Param("id"), "a/b");
}

}  // namespace
}  // namespace gearbox
