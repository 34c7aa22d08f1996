/* SPDX-License-Identifier: Apache-2.0 */
/* Copyright 2026 the gearbox authors. */
/*
 * gearbox/module.h: the C ABI between gearboxd and a handler module, a shared
 * object that gearboxd loads with dlopen():
 *
 *   [[module]]
 *   name = "timerwait"                  # what a route's handler = names
 *   path = "/usr/lib64/gearbox/modules/libtimerwait.so"
 *   [[route]]
 *   path = "/tw"
 *   handler = "timerwait"
 *   max_ms = 1000                       # keys gearbox does not know go to
 *                                       # the module's create()
 *
 * Build a module with nothing but this header:
 *   cc -shared -fPIC -I/usr/include hello.c -o libhello.so
 * (or `pkg-config --cflags gearbox`). No gearbox library is linked: gearboxd
 * hands the module its functions in a gearbox_host table.
 *
 * The contract in one page:
 *  - The module exports one function, gearbox_module_init(). gearboxd calls
 *    it once per load with its gearbox_host table (keep the pointer: it is
 *    valid until the module is unloaded) and reads the gearbox_module it
 *    returns: ABI version, struct_size, name and callbacks. gearboxd loads it
 *    only if abi_major equals its own and abi_minor is at most its own (a
 *    module built against an older minor loads; a newer minor does not), like
 *    Apache's module magic number, not nginx's exact version match.
 *  - No C++ types cross this boundary; every struct starts with its size, so
 *    a later minor can append fields. Strings are gearbox_str (pointer and
 *    size, not NUL-terminated) unless the comment says otherwise.
 *  - Lifetimes, in the order they happen:
 *      create(route)          master process, once per route per generation
 *                             (and for `gearboxd -t`): read and check the
 *                             route's keys, return the route's handler.
 *                             Read-only afterwards: every worker shares it.
 *      worker_init(handler)   inside each worker (a prefork child after fork,
 *                             a threadpool thread, an async loop, on its own
 *                             thread), once per route: the worker's instance,
 *                             e.g. its backend connections. Only that worker
 *                             ever uses it, so it needs no locks.
 *      start / resume / finish  one exchange (request), on the worker that
 *                             started it, never on two threads at once.
 *                             An async loop runs many exchanges of one
 *                             instance interleaved, one callback at a time.
 *      worker_exit(instance)  when the worker stops cleanly (not on a crash).
 *      destroy(handler)       master, after the generation has drained.
 *  - Callbacks must not block: a blocking call holds its worker (prefork,
 *    threadpool) or stalls every connection of its loop (async). Wait through
 *    resume()'s gearbox_step instead: a timer, or fds readable/writable with
 *    a deadline. Every kind of wait works under every concurrency model; a
 *    module never learns which model runs it.
 *  - A reload loads a fresh private copy of the .so for the new generation
 *    (a rebuilt file is picked up); the old generation keeps its copy until
 *    it has drained. Module globals are per copy.
 *  - A crash in a module is a crash of its worker (prefork: one child,
 *    respawned; threadpool and async: the process).
 */
#ifndef GEARBOX_MODULE_H_
#define GEARBOX_MODULE_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GEARBOX_ABI_MAJOR 1
#define GEARBOX_ABI_MINOR 0

/* Bytes, not NUL-terminated. size 0 (data may be NULL): empty or absent. */
typedef struct gearbox_str {
  const char *data;
  size_t size;
} gearbox_str;

typedef struct gearbox_header {
  gearbox_str name; /* as the client sent it; compare case-insensitively */
  gearbox_str value;
} gearbox_header;

/* A request, valid only during start(): copy what later callbacks need. */
typedef struct gearbox_request {
  uint32_t struct_size;
  gearbox_str method; /* "GET" */
  gearbox_str target; /* "/tw?ms=50": path and query as sent */
  gearbox_str path;   /* "/tw" */
  gearbox_str query;  /* "ms=50", without '?'; not percent-decoded */
  const gearbox_header *headers;
  size_t header_count;
  gearbox_str body; /* the whole body (gearboxd read it before start()) */
} gearbox_request;

/* Opaque: set through gearbox_host's response functions. */
typedef struct gearbox_response gearbox_response;
/* Opaque: a [[route]]'s keys, read through gearbox_host during create(). */
typedef struct gearbox_route gearbox_route;

/* The worker an instance belongs to, for worker_init(). */
typedef struct gearbox_worker {
  uint32_t struct_size;
  int index;      /* 0-based within its generation */
  int generation; /* counts reloads: 1, 2, ... */
} gearbox_worker;

/* --- waits --------------------------------------------------------------- */

#define GEARBOX_FD_READABLE 1u
#define GEARBOX_FD_WRITABLE 2u
#define GEARBOX_FD_ERROR 4u /* in a wake only: error or hang-up on the fd */
#define GEARBOX_MAX_WAIT_FDS 4

typedef struct gearbox_fd_wait {
  int fd;
  uint32_t events; /* GEARBOX_FD_READABLE | GEARBOX_FD_WRITABLE */
  uint32_t ready;  /* in a gearbox_wake: what happened */
} gearbox_fd_wait;

enum gearbox_step_kind {
  GEARBOX_STEP_DONE = 0,  /* the response is complete */
  GEARBOX_STEP_TIMER = 1, /* resume after timeout_us */
  GEARBOX_STEP_FDS = 2,   /* resume when an fd is ready, or at timeout_us */
};

/* What an exchange needs next: resume()'s answer. gearboxd sets it to DONE
 * before each resume(); use the helpers below to ask for a wait. */
typedef struct gearbox_step {
  uint32_t struct_size;
  uint32_t kind;      /* enum gearbox_step_kind */
  int64_t timeout_us; /* TIMER: the delay; FDS: the deadline, from now */
  uint32_t nfds;
  gearbox_fd_wait fds[GEARBOX_MAX_WAIT_FDS];
} gearbox_step;

enum gearbox_wake_why {
  GEARBOX_WAKE_START = 0,     /* the first resume(), right after start() */
  GEARBOX_WAKE_TIMER = 1,     /* a TIMER step's delay passed */
  GEARBOX_WAKE_FDS_READY = 2, /* at least one fd is ready: see fds[i].ready */
  GEARBOX_WAKE_DEADLINE = 3,  /* an FDS step's timeout passed, none ready */
};

/* Why resume() is called. */
typedef struct gearbox_wake {
  uint32_t struct_size;
  uint32_t why; /* enum gearbox_wake_why */
  uint32_t nfds;
  gearbox_fd_wait fds[GEARBOX_MAX_WAIT_FDS]; /* the step's fds, ready set */
} gearbox_wake;

/* Resume after `timeout_us` microseconds. */
static inline void gearbox_wait_timer(gearbox_step *next, int64_t timeout_us) {
  next->kind = GEARBOX_STEP_TIMER;
  next->timeout_us = timeout_us;
  next->nfds = 0;
}

/* Resume once one of the fds added with gearbox_wait_fd() is ready, or after
 * `timeout_us` (GEARBOX_WAKE_DEADLINE). */
static inline void gearbox_wait_fds(gearbox_step *next, int64_t timeout_us) {
  next->kind = GEARBOX_STEP_FDS;
  next->timeout_us = timeout_us;
}

/* Adds an fd to an FDS step. Returns 0, or -1 when GEARBOX_MAX_WAIT_FDS are
 * there already. gearboxd never reads or closes the fd: the module owns it,
 * and may close it in finish() (its wait is removed before that). */
static inline int gearbox_wait_fd(gearbox_step *next, int fd, uint32_t events) {
  if (next->nfds >= GEARBOX_MAX_WAIT_FDS) return -1;
  next->fds[next->nfds].fd = fd;
  next->fds[next->nfds].events = events;
  next->fds[next->nfds].ready = 0;
  next->nfds++;
  return 0;
}

/* True when fd number i of the wake has `what` (GEARBOX_FD_*) set. */
static inline int gearbox_wake_ready(const gearbox_wake *wake, uint32_t i,
                                     uint32_t what) {
  return i < wake->nfds && (wake->fds[i].ready & what) != 0;
}

/* --- what gearboxd offers a module ---------------------------------------- */

enum gearbox_log_level {
  GEARBOX_LOG_DEBUG = 1,
  GEARBOX_LOG_INFO = 2,
  GEARBOX_LOG_WARN = 3,
  GEARBOX_LOG_ERROR = 4,
};

typedef struct gearbox_host {
  uint32_t abi_major; /* GEARBOX_ABI_MAJOR of gearboxd */
  uint32_t abi_minor;
  uint32_t struct_size; /* check it before calling a field a later minor added */

  /* Route keys, during create() only. Reading a key declares it: after
   * create() returns, a key of the route that the module never read is an
   * error ("unknown key"). A wrong type or a value outside [min, max] is
   * reported by gearboxd at the key's file:line:col; the getter returns 0
   * then, and create() should return NULL. Absent keys give the default and
   * return 1. */
  int (*route_int)(gearbox_route *route, const char *key, int64_t default_value,
                   int64_t min, int64_t max, int64_t *out);
  int (*route_bool)(gearbox_route *route, const char *key, int default_value,
                    int *out);
  /* *out points into gearboxd's copy, valid until create() returns. */
  int (*route_string)(gearbox_route *route, const char *key,
                      const char *default_value, gearbox_str *out);
  /* Rejects the route: `message` comes out as "FILE:LINE:COL: ..." at the
   * key's value (key NULL or absent: at the [[route]]). create() then
   * returns NULL. gearboxd -t and a reload report it; the old generation
   * keeps serving. */
  void (*route_error)(gearbox_route *route, const char *key,
                      const char *message);
  gearbox_str (*route_path)(const gearbox_route *route);

  /* Request helpers (the struct's fields are there too). */
  /* The first header called `name` (case-insensitive); size 0 if absent. */
  gearbox_str (*request_header)(const gearbox_request *request,
                                const char *name);
  /* The value of `key` in the query ("ms" in "a=1&ms=50"); size 0 if absent. */
  gearbox_str (*request_query)(const gearbox_request *request, const char *key);

  /* The response. Status defaults to 200, Content-Type to text/plain, the
   * body to empty. */
  void (*set_status)(gearbox_response *response, int status); /* 200..599 */
  /* Returns 0, or -1 for a name that is not an HTTP token, a value with a
   * control character other than tab, or a header gearboxd writes itself: Content-Length, Transfer-Encoding,
   * Connection, Keep-Alive, Upgrade, Date, Server, Status. Content-Type
   * replaces the default. */
  int (*set_header)(gearbox_response *response, gearbox_str name,
                    gearbox_str value);
  void (*set_body)(gearbox_response *response, const char *data, size_t size);
  void (*append_body)(gearbox_response *response, const char *data,
                      size_t size);

  /* One log line through gearboxd's logger (logfmt on stderr / journald):
   *   level=info event=<event> module=<name> worker=<n> gen=<g> msg="..."
   * worker= and gen= are there when called in a worker. `event` is a short
   * key of the module's own ("greet_backend_down": gearboxd's events, such as
   * stats, are read by tools); `message` is free text. */
  void (*log)(const struct gearbox_host *host, int level, const char *event,
              const char *message);
  /* Whether a line at `level` would be written (skip building it if not). */
  int (*log_enabled)(const struct gearbox_host *host, int level);
} gearbox_host;

#if defined(__GNUC__)
#define GEARBOX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GEARBOX_PRINTF(f, a)
#endif

/* printf-style gearbox_host.log (lines longer than 1 KiB are cut). */
static inline void gearbox_logf(const gearbox_host *host, int level,
                                const char *event, const char *format, ...)
    GEARBOX_PRINTF(4, 5);
static inline void gearbox_logf(const gearbox_host *host, int level,
                                const char *event, const char *format, ...) {
  char message[1024];
  va_list args;
  if (!host->log_enabled(host, level)) return;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  host->log(host, level, event, message);
}

/* --- what a module offers gearboxd ---------------------------------------- */

typedef struct gearbox_module {
  uint32_t abi_major;   /* GEARBOX_ABI_MAJOR */
  uint32_t abi_minor;   /* GEARBOX_ABI_MINOR the module was built against */
  uint32_t struct_size; /* sizeof(gearbox_module) */
  const char *name;     /* NUL-terminated, for messages: "timerwait" */

  /* Required. Master: the handler for one route (see route_* above), or NULL
   * after reporting why with route_error (or a getter did). */
  void *(*create)(gearbox_route *route);
  /* Optional. Master: frees what create() returned, after every worker of
   * the generation is gone. */
  void (*destroy)(void *handler);

  /* Optional. In each worker, on its thread: the worker's own instance for
   * this route (NULL is a valid instance). Without worker_init, the instance
   * passed to start() is the handler itself. It cannot fail: connect to
   * backends lazily and answer 502/503 while one is down. */
  void *(*worker_init)(void *handler, const gearbox_worker *worker);
  /* Optional. The worker is stopping cleanly: close what worker_init
   * opened. */
  void (*worker_exit)(void *handler, void *instance);

  /* Required. A new exchange for `request` (valid only during this call):
   * return its state, or NULL to answer 500. Then resume() is called with
   * GEARBOX_WAKE_START. */
  void *(*start)(void *instance, const gearbox_request *request);
  /* Required. Fill `response` and leave `next` at DONE, or ask for a wait
   * (gearbox_wait_timer / gearbox_wait_fd + gearbox_wait_fds): resume() is
   * called again with what ended it. The response keeps what earlier calls
   * set. */
  void (*resume)(void *exchange, const gearbox_wake *wake,
                 gearbox_response *response, gearbox_step *next);
  /* Required. The exchange is over: answered, or cancelled (the client
   * closed, the server stops). Its waits are already removed: free the
   * state and close its fds here. Called exactly once per start() that
   * returned non-NULL. */
  void (*finish)(void *exchange);
} gearbox_module;

/* The one symbol a module exports. */
#if defined(__GNUC__)
#define GEARBOX_EXPORT __attribute__((visibility("default")))
#else
#define GEARBOX_EXPORT
#endif
GEARBOX_EXPORT const gearbox_module *gearbox_module_init(
    const gearbox_host *host);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GEARBOX_MODULE_H_ */
