/* contract: a test module on the raw C ABI (1.1) that exercises what
 * gearbox/module.h promises, one promise per ?do=:
 *   info        "timeout_us=N clock_skew_us=N label=L": route_timeout_us()
 *               from create(), now_us() against CLOCK_MONOTONIC
 *   reset       three resumes (FDS wait on two fds, TIMER, answer); the body
 *               lists `next` as each resume() found it: "kind/nfds/timeout"
 *   connect     a non-blocking connect() to a closed loopback port, waited
 *               on WRITABLE: "ready=<r|w|e> so_error=refused"
 *   sigpipe     write() (no MSG_NOSIGNAL) to a pipe and a socket whose
 *               reader is gone: "pipe=EPIPE socket=EPIPE"
 *   close       closes the fd it waited on inside resume(), waits on a new
 *               one (the number is reused), twice: "reused=1 wakes=...";
 *               ?after=deadline: the first wait ends at its timeout
 *   request     the 1.1 request fields: "version=1.1 listener=L protocol=P
 *               client=C captures=name:value,... id=V" (id: request_capture)
 *   pool        waits on the worker instance's own socketpair, kept across
 *               exchanges: "worker=W pool_fd=N uses=N"; a read that meets EAGAIN
 *               (another exchange took the byte) waits again
 * Route keys (declared): label (required), fail_worker_init (bool).
 */
#define _GNU_SOURCE /* pipe2 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gearbox/module.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const gearbox_host *gb;

static const gearbox_key keys[] = {
    GEARBOX_KEY_REQUIRED_STRING("label", "Names the route in answers"),
    GEARBOX_KEY_BOOL("fail_worker_init", 0,
                     "worker_init() fails (worker_error)"),
    GEARBOX_KEY_END,
};

struct route {
  char label[64];
  int fail_worker_init;
  int64_t timeout_us;
};

struct instance {
  const struct route *route;
  int pool[2]; /* [0] waited on by exchanges, [1] written to */
  long uses;
  int worker;
};

enum what { INFO, RESET, CONNECT, SIGPIPE_, CLOSE, POOL, REQUEST };

struct exchange {
  struct instance *in;
  enum what what;
  int after_deadline;
  int fds[2];
  int listener; /* CONNECT: the bound, not listening, socket */
  int round;
  int reused;
  char text[512];
  size_t len;
};

static void say(struct exchange *x, const char *format, long a, long b,
                long c) {
  if (x->len >= sizeof x->text) return;
  int n = snprintf(x->text + x->len, sizeof x->text - x->len, format, a, b, c);
  if (n > 0) x->len += (size_t)n;
}

static void *create(gearbox_route *r) {
  gearbox_str label;
  int fail = 0;
  if (!gb->route_string(r, "label", NULL, &label) ||
      !gb->route_bool(r, "fail_worker_init", 0, &fail))
    return NULL;
  struct route *route = calloc(1, sizeof *route);
  if (!route) return NULL;
  snprintf(route->label, sizeof route->label, "%.*s", (int)label.size,
           label.data);
  route->fail_worker_init = fail;
  route->timeout_us = gb->route_timeout_us(r);
  return route;
}

static void destroy(void *handler) { free(handler); }

static void *worker_init(void *handler, const gearbox_worker *worker) {
  const struct route *route = handler;
  if (route->fail_worker_init) {
    gb->worker_error(worker, "asked to fail by fail_worker_init");
    return NULL;
  }
  struct instance *in = calloc(1, sizeof *in);
  if (!in) return NULL;
  in->route = route;
  in->worker = worker->index;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                 in->pool) != 0) {
    free(in);
    gb->worker_error(worker, "socketpair failed");
    return NULL;
  }
  return in;
}

static void worker_exit(void *handler, void *instance) {
  struct instance *in = instance;
  (void)handler;
  close(in->pool[0]);
  close(in->pool[1]);
  free(in);
}

static int is(gearbox_str v, const char *s) {
  return v.size == strlen(s) && memcmp(v.data, s, v.size) == 0;
}

static void append(struct exchange *x, const char *label, gearbox_str v) {
  if (x->len >= sizeof x->text) return;
  int n = snprintf(x->text + x->len, sizeof x->text - x->len, "%s%.*s", label,
                   (int)v.size, v.data ? v.data : "");
  if (n > 0) x->len += (size_t)n;
  if (x->len > sizeof x->text) x->len = sizeof x->text;
}

/* The request is valid during start() only: the answer is written now. */
static void describe(struct exchange *x, const gearbox_request *r) {
  say(x, "version=%ld.%ld", (long)r->version_major, (long)r->version_minor, 0);
  append(x, " listener=", r->listener);
  append(x, " protocol=", r->protocol);
  append(x, " client=", r->client_address);
  append(x, " captures=", (gearbox_str){"", 0});
  for (size_t i = 0; i < r->capture_count; ++i) {
    append(x, i ? "," : "", r->captures[i].name);
    append(x, ":", r->captures[i].value);
  }
  append(x, " id=", gb->request_capture(r, "id"));
}

static void *start(void *instance, const gearbox_request *request) {
  static const char *names[] = {"info",  "reset", "connect", "sigpipe",
                                "close", "pool",  "request"};
  gearbox_str what = gb->request_query(request, "do");
  struct exchange *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  x->in = instance;
  x->fds[0] = x->fds[1] = x->listener = -1;
  for (int i = 0; i < 7; ++i) {
    if (is(what, names[i])) x->what = (enum what)i;
  }
  x->after_deadline = is(gb->request_query(request, "after"), "deadline");
  if (x->what == REQUEST) describe(x, request);
  return x;
}

static void close_fds(struct exchange *x) {
  for (int i = 0; i < 2; ++i) {
    if (x->fds[i] >= 0) close(x->fds[i]);
    x->fds[i] = -1;
  }
}

static const char *errno_name(int e) {
  return e == EPIPE ? "EPIPE" : e == ECONNREFUSED ? "refused" : "other";
}

static void info(struct exchange *x) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t mono = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  const int64_t skew = gb->now_us() - mono;
  say(x, "timeout_us=%ld clock_skew_us=%ld", (long)x->in->route->timeout_us,
      (long)(skew < 0 ? -skew : skew), 0);
  x->len += (size_t)snprintf(x->text + x->len, sizeof x->text - x->len,
                             " label=%s", x->in->route->label);
}

/* The fds of `next` as resume() found them, then a wait of the round's kind.
 * Returns 1 while waiting. */
static int reset(struct exchange *x, gearbox_step *next) {
  say(x, "%ld/%ld/%ld,", (long)next->kind, (long)next->nfds,
      (long)next->timeout_us);
  if (x->round == 0) {
    if (pipe2(x->fds, O_NONBLOCK | O_CLOEXEC) != 0) return 0;
    if (write(x->fds[1], "x", 1) != 1) return 0;
    gearbox_wait_fd(next, x->fds[0], GEARBOX_FD_READABLE);
    gearbox_wait_fd(next, x->fds[1], GEARBOX_FD_WRITABLE);
    gearbox_wait_fds(next, 5000000);
    return 1;
  }
  if (x->round == 1) {
    gearbox_wait_timer(next, 1000);
    return 1;
  }
  return 0;
}

static int connect_refused(struct exchange *x, const gearbox_wake *wake,
                           gearbox_step *next) {
  if (x->round == 0) {
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Bound, never listening: the port stays ours, and refuses. */
    x->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    x->fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (x->listener < 0 || x->fds[0] < 0 ||
        bind(x->listener, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(x->listener, (struct sockaddr *)&a, &len) != 0)
      return 0;
    if (connect(x->fds[0], (struct sockaddr *)&a, sizeof a) == 0 ||
        errno != EINPROGRESS) {
      say(x, "connect_errno=%ld", errno, 0, 0);
      return 0;
    }
    gearbox_wait_fd(next, x->fds[0], GEARBOX_FD_WRITABLE);
    gearbox_wait_fds(next, 5000000);
    return 1;
  }
  int error = 0;
  socklen_t len = sizeof error;
  getsockopt(x->fds[0], SOL_SOCKET, SO_ERROR, &error, &len);
  x->len += (size_t)snprintf(
      x->text + x->len, sizeof x->text - x->len, "ready=%s%s%s so_error=%s",
      gearbox_wake_ready(wake, 0, GEARBOX_FD_READABLE) ? "r" : "",
      gearbox_wake_ready(wake, 0, GEARBOX_FD_WRITABLE) ? "w" : "",
      gearbox_wake_ready(wake, 0, GEARBOX_FD_ERROR) ? "e" : "",
      errno_name(error));
  return 0;
}

static void sigpipe(struct exchange *x) {
  int p[2], s[2];
  const char *pipe_result = "setup", *socket_result = "setup";
  if (pipe2(p, O_CLOEXEC) == 0) {
    close(p[0]);
    pipe_result = write(p[1], "x", 1) < 0 ? errno_name(errno) : "written";
    close(p[1]);
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) == 0) {
    close(s[0]);
    socket_result = write(s[1], "x", 1) < 0 ? errno_name(errno) : "written";
    close(s[1]);
  }
  x->len += (size_t)snprintf(x->text + x->len, sizeof x->text - x->len,
                             "pipe=%s socket=%s", pipe_result, socket_result);
}

/* Round 0 waits on a pipe (with a byte, or empty until its deadline). Each
 * later wake closes the pipe inside resume() and waits on a new one with a
 * byte, whose numbers the kernel reuses. */
static int close_in_resume(struct exchange *x, const gearbox_wake *wake,
                           gearbox_step *next) {
  static const char *why[] = {"start", "timer", "ready", "deadline"};
  x->len += (size_t)snprintf(x->text + x->len, sizeof x->text - x->len, "%s,",
                             wake->why < 4 ? why[wake->why] : "?");
  if (x->round == 3) return 0;
  const int old = x->fds[0];
  close_fds(x);
  if (pipe2(x->fds, O_NONBLOCK | O_CLOEXEC) != 0) return 0;
  if (x->round > 0 && x->fds[0] == old) x->reused = 1;
  if ((x->round > 0 || !x->after_deadline) && write(x->fds[1], "x", 1) != 1)
    return 0;
  gearbox_wait_fd(next, x->fds[0], GEARBOX_FD_READABLE);
  gearbox_wait_fds(next, x->round == 0 && x->after_deadline ? 20000 : 5000000);
  return 1;
}

static int pool(struct exchange *x, const gearbox_wake *wake,
                gearbox_step *next) {
  struct instance *in = x->in;
  if (wake->why == GEARBOX_WAKE_START) {
    if (write(in->pool[1], "x", 1) != 1) return 0;
  } else if (wake->why == GEARBOX_WAKE_FDS_READY) {
    char byte;
    if (read(in->pool[0], &byte, 1) == 1) {
      say(x, "worker=%ld pool_fd=%ld uses=%ld", in->worker, in->pool[0],
          ++in->uses);
      return 0;
    }
    if (errno != EAGAIN) return 0;
  } else {
    return 0; /* the deadline: answered without pool_fd= */
  }
  gearbox_wait_fd(next, in->pool[0], GEARBOX_FD_READABLE);
  gearbox_wait_fds(next, 5000000);
  return 1;
}

static void resume(void *exchange, const gearbox_wake *wake,
                   gearbox_response *response, gearbox_step *next) {
  struct exchange *x = exchange;
  int waiting = 0;
  switch (x->what) {
    case INFO:
      info(x);
      break;
    case RESET:
      waiting = reset(x, next);
      break;
    case CONNECT:
      waiting = connect_refused(x, wake, next);
      break;
    case SIGPIPE_:
      sigpipe(x);
      break;
    case CLOSE:
      waiting = close_in_resume(x, wake, next);
      if (!waiting) say(x, " reused=%ld", x->reused, 0, 0);
      break;
    case POOL:
      waiting = pool(x, wake, next);
      break;
    case REQUEST:
      break; /* described in start() */
  }
  x->round++;
  if (waiting) return;
  say(x, "\n", 0, 0, 0);
  gb->set_body(response, x->text, x->len);
}

static void finish(void *exchange) {
  struct exchange *x = exchange;
  close_fds(x);
  if (x->listener >= 0) close(x->listener);
  free(x);
}

const gearbox_module *gearbox_module_init(const gearbox_host *host) {
  static const gearbox_module module = {
      .abi_major = GEARBOX_ABI_MAJOR,
      .abi_minor = GEARBOX_ABI_MINOR,
      .struct_size = sizeof(gearbox_module),
      .name = "contract",
      .create = create,
      .destroy = destroy,
      .worker_init = worker_init,
      .worker_exit = worker_exit,
      .start = start,
      .resume = resume,
      .finish = finish,
      .keys = keys,
  };
  gb = host;
  return &module;
}
