/* abi10: a module built against ABI 1.0's header (tests/modules/abi_1_0, a
 * frozen copy of gearbox/module.h as 1.0 shipped it), as a module author's
 * old binary would be. It uses what 1.0 offered: keys declared by reading
 * them (greeting, ms), worker_init returning NULL (a valid instance), a
 * timer wait, an fd wait, a response header and a log line.
 *   GET /old?ms=N   "abi10 greeting=G worker=W wakes=start,timer,ready"
 */
#define _GNU_SOURCE /* pipe2 */
#include <fcntl.h>
#include <gearbox/module.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if GEARBOX_ABI_MAJOR != 1 || GEARBOX_ABI_MINOR != 0
#error "abi10 must be built against the frozen 1.0 header"
#endif

static const gearbox_host *gb;

struct route {
  char greeting[32];
  int64_t ms;
};

struct exchange {
  const struct route *route;
  int fds[2];
  char wakes[64];
};

static void *create(gearbox_route *r) {
  gearbox_str greeting;
  struct route *route = calloc(1, sizeof *route);
  if (!route) return NULL;
  if (!gb->route_string(r, "greeting", "hi", &greeting) ||
      !gb->route_int(r, "ms", 1, 0, 1000, &route->ms)) {
    free(route);
    return NULL;
  }
  snprintf(route->greeting, sizeof route->greeting, "%.*s",
           (int)greeting.size, greeting.data);
  return route;
}

static void destroy(void *handler) { free(handler); }

/* 1.0: NULL is a valid instance; the route handler travels in start(). */
static void *worker_init(void *handler, const gearbox_worker *worker) {
  (void)handler;
  gearbox_logf(gb, GEARBOX_LOG_INFO, "abi10_worker_init", "worker=%d",
               worker->index);
  return NULL;
}

static const struct route *the_route;

static void *start(void *instance, const gearbox_request *request) {
  (void)request;
  if (instance != NULL) return NULL; /* 500: the instance was not NULL */
  struct exchange *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  x->route = the_route;
  x->fds[0] = x->fds[1] = -1;
  return x;
}

static void resume(void *exchange, const gearbox_wake *wake,
                   gearbox_response *response, gearbox_step *next) {
  struct exchange *x = exchange;
  static const char *why[] = {"start", "timer", "ready", "deadline"};
  strncat(x->wakes, x->wakes[0] ? "," : "", sizeof x->wakes - 1);
  strncat(x->wakes, wake->why < 4 ? why[wake->why] : "?",
          sizeof x->wakes - strlen(x->wakes) - 1);
  if (wake->why == GEARBOX_WAKE_START) {
    gearbox_wait_timer(next, x->route->ms * 1000);
    return;
  }
  if (wake->why == GEARBOX_WAKE_TIMER) {
    if (pipe2(x->fds, O_NONBLOCK | O_CLOEXEC) == 0 &&
        write(x->fds[1], "x", 1) == 1) {
      gearbox_wait_fd(next, x->fds[0], GEARBOX_FD_READABLE);
      gearbox_wait_fds(next, 5000000);
      return;
    }
  }
  char text[160];
  int n = snprintf(text, sizeof text, "abi10 greeting=%s wakes=%s\n",
                   x->route->greeting, x->wakes);
  gb->set_header(response, (gearbox_str){"X-Abi", 5},
                 (gearbox_str){"1.0", 3});
  gb->set_body(response, text, (size_t)n);
}

static void finish(void *exchange) {
  struct exchange *x = exchange;
  if (x->fds[0] >= 0) close(x->fds[0]);
  if (x->fds[1] >= 0) close(x->fds[1]);
  free(x);
}

/* One route per test daemon: create() keeps it for start(). */
static void *create_and_keep(gearbox_route *r) {
  void *route = create(r);
  if (route) the_route = route;
  return route;
}

const gearbox_module *gearbox_module_init(const gearbox_host *host) {
  static const gearbox_module module = {
      .abi_major = GEARBOX_ABI_MAJOR,
      .abi_minor = GEARBOX_ABI_MINOR,
      .struct_size = sizeof(gearbox_module),
      .name = "abi10",
      .create = create_and_keep,
      .destroy = destroy,
      .worker_init = worker_init,
      .start = start,
      .resume = resume,
      .finish = finish,
  };
  gb = host;
  return &module;
}
