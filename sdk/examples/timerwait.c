/* SPDX-License-Identifier: Apache-2.0 */
/* timerwait.c: waits on a file descriptor, the way a handler waits on a
 * backend socket. It arms a timerfd for ?ms=N (capped by the route's max_ms)
 * and asks gearboxd to resume it when the fd becomes readable. No thread
 * sleeps on it: a blocking worker poll()s it, an async loop registers it
 * with libevent, and the module cannot tell which.
 *
 *   cc -shared -fPIC $(pkg-config --cflags gearbox) timerwait.c \
 *      -o libtimerwait.so
 *
 *   [[module]]
 *   name = "timerwait"
 *   path = "/usr/lib64/gearbox/modules/libtimerwait.so"
 *   [[route]]
 *   path = "/tw"
 *   handler = "timerwait"
 *   ms = 10          # without ?ms=N (default 10)
 *   max_ms = 1000    # the largest ?ms=N (default 1000)
 */
#define _POSIX_C_SOURCE 200809L /* CLOCK_MONOTONIC under -std=c11 */
#include <errno.h>
#include <gearbox/module.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static const gearbox_host *gb;

/* If the timer's wake-up never came, something is badly wrong: give up
 * this long after the timer should have fired (504). */
#define SLACK_US 5000000

struct route {
  int64_t ms;
  int64_t max_ms;
};

struct wait {
  int64_t ms;
  int fd;
};

/* The route keys, checked by gearboxd before create() and printed by
 * `gearboxd -p` with their defaults. */
static const gearbox_key keys[] = {
    GEARBOX_KEY_INT("ms", 10, 0, 3600000, "The wait without ?ms=N, in ms"),
    GEARBOX_KEY_INT("max_ms", 1000, 0, 3600000,
                    "The largest wait ?ms=N may ask for, in ms"),
    GEARBOX_KEY_END,
};

static void *create(gearbox_route *r) {
  int64_t ms, max_ms;
  /* Declared keys: the getters return the route's value or the declared
   * default (the 0 passed here is not used). */
  if (!gb->route_int(r, "max_ms", 0, 0, 3600000, &max_ms) ||
      !gb->route_int(r, "ms", 0, 0, 3600000, &ms))
    return NULL;
  if (ms > max_ms) {
    char why[128];
    snprintf(why, sizeof why, "ms (%lld) exceeds max_ms (%lld)",
             (long long)ms, (long long)max_ms);
    gb->route_error(r, "ms", why);
    return NULL;
  }
  struct route *route = malloc(sizeof *route);
  if (!route) return NULL;
  route->ms = ms;
  route->max_ms = max_ms;
  return route;
}

static void destroy(void *handler) { free(handler); }

/* ?ms=N as a non-negative decimal, or -1. */
static int64_t query_ms(const gearbox_request *request) {
  gearbox_str v = gb->request_query(request, "ms");
  int64_t n = 0;
  if (v.size == 0 || v.size > 9) return -1;
  for (size_t i = 0; i < v.size; ++i) {
    if (v.data[i] < '0' || v.data[i] > '9') return -1;
    n = n * 10 + (v.data[i] - '0');
  }
  return n;
}

static void *start(void *instance, const gearbox_request *request) {
  const struct route *route = instance;
  struct wait *w = malloc(sizeof *w);
  if (!w) return NULL;
  int64_t ms = query_ms(request);
  if (ms < 0) ms = route->ms;
  w->ms = ms < route->max_ms ? ms : route->max_ms;
  w->fd = -1;
  return w;
}

static void answer(gearbox_response *response, int status, const char *text) {
  gb->set_status(response, status);
  gb->set_body(response, text, strlen(text));
}

static void resume(void *exchange, const gearbox_wake *wake,
                   gearbox_response *response, gearbox_step *next) {
  struct wait *w = exchange;
  char text[64];
  if (wake->why == GEARBOX_WAKE_START && w->ms > 0) {
    w->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec at = {{0, 0}, {w->ms / 1000, (w->ms % 1000) * 1000000}};
    if (w->fd < 0 || timerfd_settime(w->fd, 0, &at, NULL) != 0) {
      gearbox_logf(gb, GEARBOX_LOG_ERROR, "timerfd_failed", "errno=%d (%s)",
                   errno, strerror(errno));
      answer(response, 500, "timerfd failed\n");
      return;
    }
    gearbox_wait_fd(next, w->fd, GEARBOX_FD_READABLE);
    gearbox_wait_fds(next, w->ms * 1000 + SLACK_US);
    return;
  }
  if (wake->why == GEARBOX_WAKE_DEADLINE) {
    answer(response, 504, "the timer never fired\n");
    return;
  }
  if (wake->why == GEARBOX_WAKE_FDS_READY) {
    uint64_t expirations = 0;
    if (read(w->fd, &expirations, sizeof expirations) < 0 && errno == EAGAIN) {
      /* woken early (cannot happen with a timerfd, but a socket may): wait on */
      gearbox_wait_fd(next, w->fd, GEARBOX_FD_READABLE);
      gearbox_wait_fds(next, w->ms * 1000 + SLACK_US);
      return;
    }
  }
  snprintf(text, sizeof text, "waited %lld ms\n", (long long)w->ms);
  answer(response, 200, text);
}

/* Answered or cancelled (the client went away mid-wait): gearboxd has
 * already removed the wait, so closing the fd here is safe. */
static void finish(void *exchange) {
  struct wait *w = exchange;
  if (w->fd >= 0) close(w->fd);
  free(w);
}

const gearbox_module *gearbox_module_init(const gearbox_host *host) {
  static const gearbox_module module = {
      .abi_major = GEARBOX_ABI_MAJOR,
      .abi_minor = GEARBOX_ABI_MINOR,
      .struct_size = sizeof(gearbox_module),
      .name = "timerwait",
      .create = create,
      .destroy = destroy,
      .start = start,
      .resume = resume,
      .finish = finish,
      .keys = keys,
  };
  gb = host;
  return &module;
}
