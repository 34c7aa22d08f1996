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
 *                             ever uses it, so it needs no locks. It may fail
 *                             (1.1: host->worker_error): the route then
 *                             answers 503 on that worker.
 *      start / resume / finish  one exchange (request), on the worker that
 *                             started it, never on two threads at once.
 *                             An async loop runs many exchanges of one
 *                             instance interleaved, one callback at a time.
 *      worker_exit(instance)  when the worker stops cleanly (not on a crash).
 *      destroy(handler)       master, after the generation has drained.
 *  - Callbacks must not block: a blocking call holds its worker (prefork,
 *    threadpool) or stalls every connection of its loop (async). Wait through
 *    resume()'s gearbox_step instead: a timer, or fds readable/writable with
 *    a timeout. Every kind of wait works under every concurrency model; a
 *    module never learns which model runs it.
 *  - Time: every timeout in this header is relative, in microseconds from
 *    the moment resume() returns. host->now_us() (1.1) is gearboxd's clock
 *    (CLOCK_MONOTONIC): use it for the module's own arithmetic. Every wait
 *    also ends at the route's deadline (its `timeout`, else [limits]
 *    request_timeout; host->route_timeout_us() in create()): past it the
 *    client gets 504 and finish() runs, with no further resume().
 *  - Signals: SIGPIPE is ignored in every process of gearboxd, under every
 *    model: a write to a socket or pipe whose reader is gone fails with
 *    EPIPE and never kills the worker. Leave signal dispositions alone.
 *  - File descriptors (the module's own: backend sockets, timerfds, pipes):
 *      - gearboxd never reads, writes or closes them, and stops watching an
 *        fd before it calls resume() or finish() for the wait that named it.
 *        So resume() may close an fd it waited on (and ask for a wait on a
 *        new one, which may reuse the number), and finish() may close the
 *        exchange's fds.
 *      - An fd may outlive an exchange: a worker instance may keep a pool of
 *        backend connections, and successive exchanges (of any connection)
 *        may wait on the same fd. Make it non-blocking and close-on-exec.
 *      - Two exchanges may wait on one fd at the same time (only an async
 *        loop runs two exchanges of an instance at once): both are woken
 *        when it is ready, and the one that reads second may meet EAGAIN:
 *        it waits again. Better: let one exchange own a pooled fd at a time.
 *      - Close an fd only while no other exchange waits on it (give it back
 *        to the pool, or close it from the exchange that holds it). An fd
 *        closed under another exchange's wait leaves that exchange waiting
 *        until its timeout.
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
#define GEARBOX_ABI_MINOR 1

/* Bytes, not NUL-terminated. size 0 (data may be NULL): empty or absent. */
typedef struct gearbox_str {
  const char *data;
  size_t size;
} gearbox_str;

typedef struct gearbox_header {
  gearbox_str name; /* as the client sent it; compare case-insensitively */
  gearbox_str value;
} gearbox_header;

/* A capture of the route's path pattern (1.1): `{id}` in "/items/{id}"
 * names it; the value is the request's segment, percent-decoded once. */
typedef struct gearbox_capture {
  gearbox_str name;
  gearbox_str value;
} gearbox_capture;

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

  /* --- ABI 1.1: gearboxd >= 1.1 always fills these; a 1.0 module's struct
   * ends above and never reads them. --- */
  /* The client's HTTP version: 1 and 1 for HTTP/1.1. Over FastCGI, the
   * version the front end reports (SERVER_PROTOCOL): "HTTP/2.0" is 2, 0. */
  uint32_t version_major;
  uint32_t version_minor;
  /* The listener it came in on: its [[listen]] name ("http", "fastcgi", or
   * systemd's FileDescriptorName=) and its protocol ("http" or
   * "fastcgi"). */
  gearbox_str listener;
  gearbox_str protocol;
  /* The client's IP address as text ("203.0.113.7", "2001:db8::1"). From a
   * peer in [server] trusted_proxies (default: unix-socket peers and
   * loopback, where the packaged nginx connects from): the rightmost
   * X-Forwarded-For entry that is not itself trusted, else X-Real-IP, or
   * over FastCGI the front end's REMOTE_ADDR; from any other peer, the
   * peer's address. Size 0 when unknown (a unix-socket peer that names no
   * client). */
  gearbox_str client_address;
  /* The matched route's path captures, in pattern order (none for an exact
   * or prefix route). host->request_capture() finds one by name. */
  const gearbox_capture *captures;
  size_t capture_count;
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
/* In a wake only: an error or hang-up is pending on the fd. It comes with
 * the events the wait asked for (a failed connect() wakes a WRITABLE wait as
 * WRITABLE | ERROR, under every model): read or write to learn more, or, for
 * a non-blocking connect(), getsockopt(fd, SOL_SOCKET, SO_ERROR) for the
 * reason (ECONNREFUSED, ...). gearboxd only polls: SO_ERROR is still there. */
#define GEARBOX_FD_ERROR 4u
#define GEARBOX_MAX_WAIT_FDS 4

typedef struct gearbox_fd_wait {
  int fd;
  uint32_t events; /* GEARBOX_FD_READABLE | GEARBOX_FD_WRITABLE */
  uint32_t ready;  /* in a gearbox_wake: what happened */
} gearbox_fd_wait;

enum gearbox_step_kind {
  GEARBOX_STEP_DONE = 0,  /* the response is complete */
  GEARBOX_STEP_TIMER = 1, /* resume after timeout_us */
  GEARBOX_STEP_FDS = 2,   /* resume when an fd is ready, or after timeout_us */
};

/* A timeout_us that never ends a wait by itself: the route's deadline (504)
 * still does. 0 or less: at once (a TIMER resumes on the next turn; an FDS
 * wait whose fds are not ready wakes with GEARBOX_WAKE_DEADLINE). */
#define GEARBOX_NO_TIMEOUT INT64_MAX

/* What an exchange needs next: resume()'s answer. Before every resume()
 * gearboxd resets the whole struct: kind DONE, timeout_us 0, nfds 0, fds
 * zeroed. So a resume() that sets nothing answers, and gearbox_wait_fd()
 * always starts from an empty list. Use the helpers below to ask for a
 * wait. */
typedef struct gearbox_step {
  uint32_t struct_size;
  uint32_t kind;      /* enum gearbox_step_kind */
  int64_t timeout_us; /* relative, in microseconds: TIMER's delay, FDS's
                         longest wait (not a deadline: see now_us) */
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
 * `timeout_us` microseconds from now (GEARBOX_WAKE_DEADLINE); a relative
 * timeout, not a deadline. GEARBOX_NO_TIMEOUT: until an fd is ready or the
 * route's deadline. Add the fds first or after: order does not matter. */
static inline void gearbox_wait_fds(gearbox_step *next, int64_t timeout_us) {
  next->kind = GEARBOX_STEP_FDS;
  next->timeout_us = timeout_us;
}

/* Adds an fd to an FDS step (`next` starts empty on every resume()).
 * Returns 0, or -1 when GEARBOX_MAX_WAIT_FDS are there already. The module
 * owns the fd (see "File descriptors" at the top). */
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

  /* Route keys, during create() only. gearboxd owns the keys every route
   * has: path, methods, handler, timeout; a module never sees them, and may
   * not declare them. Every other key of the route
   * is the module's.
   *
   * A module that lists its keys (gearbox_module.keys, 1.1) has them checked
   * before create() (type, bounds, required) and shown by `gearboxd -p` with
   * their defaults; the getters then return the declared default for an
   * absent key (their default_value argument is not used), and reading an
   * undeclared key is an error. Without a list, reading a key declares it:
   * after create() returns, a key of the route that the module never read is
   * an error ("unknown key").
   *
   * A wrong type or a value outside [min, max] is reported by gearboxd at
   * the key's file:line:col; the getter returns 0 then, and create() should
   * return NULL. Absent keys give the default and return 1. A NULL
   * default_value does not make a key required: route_string then gives
   * {NULL, 0} for an absent key. To require a key, declare it with
   * GEARBOX_KEY_REQUIRED, or check and call route_error(). */
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
  /* Both copy `data` at once: the module's buffer may be freed or reused as
   * soon as they return. The body is sent once the exchange is DONE. */
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

  /* --- ABI 1.1 ---
   * A module built against 1.1 loads only into a gearboxd that provides at
   * least 1.1, so it may call these without checking struct_size. */

  /* gearboxd's clock: CLOCK_MONOTONIC in microseconds, the clock its
   * timeouts run on. Anywhere, on any thread. */
  int64_t (*now_us)(void);
  /* During create(): the route's deadline in microseconds, handler start to
   * response complete (its `timeout`, else [limits] request_timeout). Past
   * it the client gets 504 and the exchange is finished: bound backend waits
   * by less, to answer 502/504 with a body of the module's own. */
  int64_t (*route_timeout_us)(const gearbox_route *route);
  /* During worker_init() only: this worker's instance cannot be made (a
   * file it needs, an allocation). gearboxd logs `message` (level=error
   * event=module_worker_init_failed module= worker= gen=), ignores what
   * worker_init() returns and calls no worker_exit() for it: free what it
   * made before returning. The route then answers 503 (with Retry-After) on
   * this worker until the worker stops; a reload or a new worker tries
   * again. A backend that is down is not a reason: connect lazily and answer
   * 502/503 per request instead, so the worker recovers with the backend. */
  void (*worker_error)(const gearbox_worker *worker, const char *message);
  /* The value of the path capture `name` ("id" for "/items/{id}"); size 0
   * if the route has none of that name (or it matched empty, as a
   * `{rest...}` may). */
  gearbox_str (*request_capture)(const gearbox_request *request,
                                 const char *name);
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

/* A route key the module declares (1.1), as built-in handlers declare theirs:
 * gearboxd checks a route's keys against the list before create(), and
 * `gearboxd -p` prints every key with its default and doc line. */
enum gearbox_key_type {
  GEARBOX_TYPE_INT = 1,    /* a TOML integer in [min, max] */
  GEARBOX_TYPE_BOOL = 2,   /* true or false */
  GEARBOX_TYPE_STRING = 3, /* a TOML string */
};
#define GEARBOX_KEY_REQUIRED 1u /* flags: a route must set it */

typedef struct gearbox_key {
  const char *name;           /* a bare TOML key; NULL ends the list */
  uint32_t type;              /* enum gearbox_key_type */
  uint32_t flags;             /* GEARBOX_KEY_REQUIRED or 0 */
  int64_t int_default;        /* INT, and BOOL (0 or 1) */
  int64_t min, max;           /* INT: inclusive bounds */
  const char *string_default; /* STRING: NULL is "" */
  const char *doc;            /* one line, for -p: "The delay in ms" */
} gearbox_key;

#define GEARBOX_KEY_INT(name, default_value, min, max, doc) \
  {(name), GEARBOX_TYPE_INT, 0, (default_value), (min), (max), NULL, (doc)}
#define GEARBOX_KEY_BOOL(name, default_value, doc) \
  {(name), GEARBOX_TYPE_BOOL, 0, (default_value), 0, 1, NULL, (doc)}
#define GEARBOX_KEY_STRING(name, default_value, doc) \
  {(name), GEARBOX_TYPE_STRING, 0, 0, 0, 0, (default_value), (doc)}
#define GEARBOX_KEY_REQUIRED_STRING(name, doc) \
  {(name), GEARBOX_TYPE_STRING, GEARBOX_KEY_REQUIRED, 0, 0, 0, NULL, (doc)}
#define GEARBOX_KEY_END {NULL, 0, 0, 0, 0, 0, NULL, NULL}

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
   * passed to start() is the handler itself. To fail, call
   * host->worker_error() (1.1) before returning: the route answers 503 on
   * this worker. A 1.0 module cannot fail here: connect to backends lazily
   * and answer 502/503 while one is down. */
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
   * closed, the route's deadline passed, the server stops). Its waits are
   * already removed: free the state and close its fds here. Called exactly
   * once per start() that returned non-NULL. */
  void (*finish)(void *exchange);

  /* --- ABI 1.1 (a 1.0 module's struct ends above: gearboxd reads only
   * struct_size bytes) --- */

  /* Optional: the route keys, ended by GEARBOX_KEY_END; NULL: the module
   * declares keys by reading them (see gearbox_host's route getters). */
  const gearbox_key *keys;
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
