// The model advisor: which concurrency model, and what size, fit the traffic a
// daemon serves, worked out from per-route figures with plain queueing
// arithmetic. Pure functions over numbers (no clock, no I/O), so the running
// daemon (/status, event=advice) and `gearboxd --advise` give the same answer
// for the same figures, and unit tests can feed it synthetic ones.
//
// The arithmetic, per route with rate L (req/s) and means per request of
// service time S, CPU time C, waiting time W and queue wait Q:
//   in flight        = L x S                (Little's law)
//   blocking workers = L x (Q + C + W)      (what prefork/threadpool need: a
//                      worker is held while its request computes or waits;
//                      queued requests wanted one too. A CPU-heavy route's
//                      queue is the CPU's: more workers would not shorten it,
//                      so it counts L x (C + W))
//   cores            = L x C
//   async loop load  = L x (C + kAsyncCostUs) (one loop's busy fraction)
// and the models' known costs below.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gearbox::advisor {

// --- known costs (tests/bench/results holds the runs they come from) -------
// Server CPU per /hello request: the I/O and hand-off each model adds to every
// request, rounded up. kAsyncCostUs enters the loop load; the other two are
// quoted in a light route's `why`.
inline constexpr double kAsyncCostUs = 6;
inline constexpr double kThreadpoolCostUs = 7;
inline constexpr double kPreforkCostUs = 15;
// RSS one more prefork child adds (the difference between a pool of several
// children and a pool of one, per child).
inline constexpr double kForkChildMiB = 2;
// A parked thread's resident stack (the difference between a large pool and a
// pool of one, per thread); its virtual stack is RLIMIT_STACK
// (MachineFacts::thread_stack_mib).
inline constexpr double kThreadResidentKiB = 24;

// --- thresholds -------------------------------------------------------------
// A route whose requests spend at least this share of their service time
// waiting (timers, backend fds) is a waiting route: a wait costs async a
// timer, a blocking model a whole worker.
inline constexpr double kWaitingShare = 0.5;
// A request on the CPU this long holds an async loop: every other connection
// on the loop waits meanwhile, and a connection's work cannot move to an idle
// loop. Against what a blocking model adds per request (kPreforkCostUs), 100 us
// keeps that overhead small.
inline constexpr double kCpuHeavyUs = 100;
// A route's share of all requests from which it weighs in the pick: CPU-heavy
// routes below it stall a loop rarely enough for async to stay the pick, and
// other routes below it (a health check) do not make a disagreement. A share,
// not a rate: the mix of routes is the same whichever model serves it, while
// rates follow each model's capacity (a saturated prefork-1 serves a small
// fraction of the rate threadpool-64 serves the same mix at).
inline constexpr double kShareThatCounts = 0.01;
// A CPU-heavy route's run, as a share of the shortest service time among the
// other routes, below which one async loop per core still serves them all: a
// 200 us burn next to 20 ms waits delays a wait's events by 1% at most, while
// a threadpool would hold a thread per wait. Above it (the same burn next to
// 1 ms waits: 20%), the other routes feel the stalls.
inline constexpr double kStallShare = 0.1;
// Above this many blocking workers, threads cost more than they help (a stack
// each, a context switch per wake-up): mixed traffic goes to async instead.
inline constexpr int kMaxThreads = 512;
// Traffic that keeps less than this share of one worker busy (counting only
// its own CPU and waits plus kAsyncCostUs per request) fits any model: the
// advice is to keep the configured one.
inline constexpr double kIdleLoad = 0.01;

// One route's traffic over a window. Means are per request.
struct RouteFigures {
  std::string route;
  double rps = 0;
  double service_us = 0;  // handler start -> response serialized
  double cpu_us = 0;      // on the worker's CPU (sampled requests)
  double wait_us = 0;     // parked in handler waits (timers, fds)
  double queue_us = 0;    // connection ready -> handler start
};

// What the advice is weighed against.
struct MachineFacts {
  int cores = 1;
  std::string model;  // configured model ("prefork", "threadpool", "async")
  int size = 1;       // its workers: children, threads or loops
  double thread_stack_mib = 8;  // virtual stack per thread
};

enum class RouteKind { kLight, kWaiting, kCpuHeavy };
std::string_view KindName(RouteKind kind);

struct RouteAdvice {
  RouteFigures figures;
  RouteKind kind = RouteKind::kLight;
  std::string pick;  // a model name: "async" or "threadpool"
  int size = 1;
  double inflight = 0;    // L x S
  double workers = 0;     // blocking workers needed
  double cores = 0;       // L x C
  double async_load = 0;  // L x (C + kAsyncCostUs)
  double wait_share = 0;  // W / S
  std::string why;
};

struct Advice {
  std::vector<RouteAdvice> routes;  // routes with traffic, in input order
  std::string pick;                 // the model for the whole daemon
  int size = 1;
  bool idle = false;      // too little traffic to tell: keep the configured
  bool disagree = false;  // CPU-heavy and other routes share the daemon
  double rps = 0, inflight = 0, workers = 0, cores = 0, async_load = 0;
  std::string why;
  // The pick is another model than the configured one.
  bool Differs(const MachineFacts& machine) const {
    return pick != machine.model;
  }
};

// Advice for the routes (those with rps == 0 are left out).
Advice Advise(std::span<const RouteFigures> routes,
              const MachineFacts& machine);

// One logfmt line per route, as `gearboxd --advise` prints them:
//   route=/sleep pick=async size=1 rps=9400 cpu_us=6 wait_ms=1.10
//   inflight=10.4 why="..."
std::string FormatRouteLine(const RouteAdvice& route);
// The window the figures cover: `seconds`, and what was asked (0: the last
// stats interval). Shorter than asked when the daemon (its generation) is
// younger.
struct WindowFacts {
  double seconds = 0;
  double asked_s = 0;
};
// The summary line for the whole daemon:
//   summary window_s=60.0 window_asked_s=60 pick=async size=1
//   configured=threadpool configured_size=64 cores=2 rps=... cpu_cores=...
//   inflight=... workers=... why="..."
// (window_asked_s only when a window was asked).
std::string FormatSummaryLine(const Advice& advice, const MachineFacts& machine,
                              const WindowFacts& window);

}  // namespace gearbox::advisor
