// router_bench: thread CPU ns per Router::Match with 5 routes and with 1,000
// (the same mix as bench_routes.py: exact, template and prefix patterns), on
// an exact route (/hello), a template (/items/123) and a prefix
// (/static/a/b.css). Rounds alternate the two routers; the median of each is
// printed with the ratio. Thread CPU time, so a busy host barely moves it.
// A PATH argument measures that path instead: under callgrind, the
// instructions of one Match are Router::Match's inclusive count over calls.
//   bazel run -c opt //tests/bench:router_bench -- [ROUNDS] [MATCHES] [PATH]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "daemon/handlers/handlers.h"
#include "daemon/router.h"

namespace gearbox {
namespace {

double CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// bench_routes.py's configs: the first five, then neighbours of the measured
// routes, then /app{i} trees of an exact, a template and a prefix route.
std::vector<RouteConfig> Routes(size_t total) {
  std::vector<std::string> paths = {"/hello", "/items/{id}", "/static/",
                                    "/sleep", "/status"};
  if (total > paths.size()) {
    paths.insert(paths.end(),
                 {"/items/{id}/details", "/items/new", "/static/img/"});
  }
  for (int i = 0; paths.size() < total; ++i) {
    const std::string app = "/app" + std::to_string(i);
    for (const char* tail : {"/info", "/items/{id}", "/assets/"}) {
      if (paths.size() < total) paths.push_back(app + tail);
    }
  }
  std::vector<RouteConfig> routes;
  for (const std::string& path : paths) {
    routes.push_back(DefaultRoute(path, "text"));
  }
  return routes;
}

// Mean CPU ns of one Match of `target` over `n`.
double NsPerMatch(const Router& router, const char* target, int n) {
  Request request;
  request.method = "GET";
  request.SetTarget(target);
  uint32_t sink = 0;
  const double start = CpuNs();
  for (int i = 0; i < n; ++i) sink += router.Match(request).id;
  const double ns = (CpuNs() - start) / n;
  if (sink == 1) fprintf(stderr, " ");  // keeps the loop
  return ns;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Run(int rounds, int n, const char* only) {
  const Router few(Routes(5), ServerInfo{});
  const Router many(Routes(1000), ServerInfo{});
  printf("| path | 5 routes ns/match | 1,000 routes ns/match | 1,000/5 |\n");
  printf("|---|---|---|---|\n");
  std::vector<const char*> targets = {"/hello", "/items/123",
                                      "/static/a/b.css"};
  if (only) targets = {only};
  for (const char* target : targets) {
    std::vector<double> a, b;
    for (int r = 0; r < rounds; ++r) {
      a.push_back(NsPerMatch(few, target, n));
      b.push_back(NsPerMatch(many, target, n));
    }
    printf("| %s | %.1f | %.1f | %.3f |\n", target, Median(a), Median(b),
           Median(b) / Median(a));
  }
  return 0;
}

}  // namespace
}  // namespace gearbox

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 9;
  const int n = argc > 2 ? atoi(argv[2]) : 1000000;
  return gearbox::Run(rounds, n, argc > 3 ? argv[3] : nullptr);
}
