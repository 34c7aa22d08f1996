/* version: answers "version <VERSION>" (a -D at build time), after ?ms=N
 * milliseconds if asked: two builds of one file stand for a module rebuilt
 * between two reloads. */
#include <gearbox/module.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VERSION
#error "build with -DVERSION=N"
#endif

static const gearbox_host *gb;
static char answer[32];

static void *create(gearbox_route *route) {
  (void)route;
  return answer;
}

static void *start(void *instance, const gearbox_request *request) {
  (void)instance;
  gearbox_str ms = gb->request_query(request, "ms");
  long *wait = malloc(sizeof *wait);
  if (wait) *wait = ms.size && ms.size < 6 ? atol(ms.data) : 0;
  return wait;
}

static void resume(void *exchange, const gearbox_wake *wake,
                   gearbox_response *response, gearbox_step *next) {
  long *wait = exchange;
  if (wake->why == GEARBOX_WAKE_START && *wait > 0) {
    gearbox_wait_timer(next, *wait * 1000);
    return;
  }
  gb->set_body(response, answer, strlen(answer));
}

static void finish(void *exchange) { free(exchange); }

const gearbox_module *gearbox_module_init(const gearbox_host *host) {
  static const gearbox_module module = {
      .abi_major = GEARBOX_ABI_MAJOR,
      .abi_minor = GEARBOX_ABI_MINOR,
      .struct_size = sizeof(gearbox_module),
      .name = "version",
      .create = create,
      .start = start,
      .resume = resume,
      .finish = finish,
  };
  gb = host;
  snprintf(answer, sizeof answer, "version %d\n", VERSION);
  return &module;
}
