/* bad_abi: a module that claims another ABI: major 2 (ABI_MAJOR=2) or a
 * minor newer than gearboxd's (ABI_MINOR=99). gearboxd must refuse it. */
#include <gearbox/module.h>

#ifndef ABI_MAJOR
#define ABI_MAJOR GEARBOX_ABI_MAJOR
#endif
#ifndef ABI_MINOR
#define ABI_MINOR GEARBOX_ABI_MINOR
#endif

static void *create(gearbox_route *route) { return route; }
static void *start(void *instance, const gearbox_request *request) {
  (void)request;
  return instance;
}
static void resume(void *exchange, const gearbox_wake *wake,
                   gearbox_response *response, gearbox_step *next) {
  (void)exchange, (void)wake, (void)response, (void)next;
}
static void finish(void *exchange) { (void)exchange; }

const gearbox_module *gearbox_module_init(const gearbox_host *host) {
  static const gearbox_module module = {
      .abi_major = ABI_MAJOR,
      .abi_minor = ABI_MINOR,
      .struct_size = sizeof(gearbox_module),
      .name = "bad_abi",
      .create = create,
      .start = start,
      .resume = resume,
      .finish = finish,
  };
  (void)host;
  return &module;
}
