/* SPDX-License-Identifier: Apache-2.0 */
/* hello.c: the smallest gearbox module, an immediate answer.
 *
 *   cc -shared -fPIC $(pkg-config --cflags gearbox) hello.c -o libhello.so
 *
 *   [[module]]
 *   name = "hello"
 *   path = "/usr/lib64/gearbox/modules/libhello.so"
 *   [[route]]
 *   path = "/hi"
 *   handler = "hello"
 *   text = "hello from a module\n"      # optional
 */
#include <gearbox/module.h>
#include <stdlib.h>
#include <string.h>

static const gearbox_host *gb;

struct hello {
  char *text;
  size_t size;
};

/* The route's keys (ABI 1.1): `gearboxd -p` shows them with defaults. */
static const gearbox_key keys[] = {
    GEARBOX_KEY_STRING("text", "hello from a module\n", "The response body"),
    GEARBOX_KEY_END,
};

static void *create(gearbox_route *route) {
  gearbox_str text;
  if (!gb->route_string(route, "text", NULL, &text))
    return NULL;
  struct hello *h = malloc(sizeof *h);
  if (!h) return NULL;
  h->text = malloc(text.size + 1);
  if (!h->text) {
    free(h);
    return NULL;
  }
  memcpy(h->text, text.data, text.size);
  h->size = text.size;
  return h;
}

static void destroy(void *handler) {
  struct hello *h = handler;
  free(h->text);
  free(h);
}

/* Nothing to keep per request: the exchange is the handler itself. */
static void *start(void *instance, const gearbox_request *request) {
  (void)request;
  return instance;
}

static void resume(void *exchange, const gearbox_wake *wake,
                   gearbox_response *response, gearbox_step *next) {
  const struct hello *h = exchange;
  (void)wake;
  (void)next; /* left at GEARBOX_STEP_DONE: answered */
  gb->set_body(response, h->text, h->size);
}

static void finish(void *exchange) { (void)exchange; }

const gearbox_module *gearbox_module_init(const gearbox_host *host) {
  static const gearbox_module module = {
      .abi_major = GEARBOX_ABI_MAJOR,
      .abi_minor = GEARBOX_ABI_MINOR,
      .struct_size = sizeof(gearbox_module),
      .name = "hello",
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
