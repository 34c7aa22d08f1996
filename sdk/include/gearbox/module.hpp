// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the gearbox authors.
//
// gearbox/module.hpp: an optional header-only C++ (17 or later) layer over
// gearbox/module.h. The C ABI stays the contract: this file only turns its
// callbacks into three classes, and no C++ type crosses the boundary.
//
//   #include <gearbox/module.hpp>
//
//   struct Hello {                      // the route's handler (master, shared)
//     std::string text;
//     static std::unique_ptr<Hello> Create(gearbox::sdk::Route& route) {
//       auto h = std::make_unique<Hello>();
//       h->text = std::string(route.String("text", "hello\n"));
//       return route.ok() ? std::move(h) : nullptr;
//     }
//     struct Instance {                 // one per worker, on its thread
//       Instance(const Hello& hello, const gearbox_worker&) : h(hello) {}
//       std::unique_ptr<gearbox::sdk::Exchange> Start(
//           const gearbox::sdk::Request& request);
//       const Hello& h;
//     };
//   };
//   GEARBOX_CXX_MODULE(Hello, "hello")
//
// A handler type may declare its route keys (ABI 1.1) as a static member:
//   static constexpr gearbox_key kKeys[] = {
//       GEARBOX_KEY_STRING("text", "hello\n", "The response body"),
//       GEARBOX_KEY_END};
//
// Exceptions never cross into gearboxd: one thrown by Create() rejects the
// route, by the Instance's constructor fails that worker's instance (503),
// by Start() answers 500, by Resume() ends the exchange with 500; each is
// logged.
#ifndef GEARBOX_MODULE_HPP_
#define GEARBOX_MODULE_HPP_

#include <gearbox/module.h>

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace gearbox::sdk {

inline const gearbox_host*& Host() {
  static const gearbox_host* host = nullptr;  // one per loaded copy
  return host;
}

inline std::string_view View(gearbox_str s) {
  return s.size ? std::string_view(s.data, s.size) : std::string_view();
}
inline gearbox_str Str(std::string_view s) { return {s.data(), s.size()}; }

// gearboxd's clock (CLOCK_MONOTONIC), in microseconds.
inline int64_t NowUs() { return Host()->now_us(); }

inline void Log(int level, const char* event, const std::string& message) {
  if (Host()->log_enabled(Host(), level)) {
    Host()->log(Host(), level, event, message.c_str());
  }
}

// A [[route]]'s keys, during Create(). A failed read has been reported
// (file:line:col) and makes ok() false.
class Route {
 public:
  explicit Route(gearbox_route* route) : route_(route) {}
  int64_t Int(const char* key, int64_t fallback, int64_t min, int64_t max) {
    int64_t v = fallback;
    ok_ = Host()->route_int(route_, key, fallback, min, max, &v) && ok_;
    return v;
  }
  bool Bool(const char* key, bool fallback) {
    int v = fallback;
    ok_ = Host()->route_bool(route_, key, fallback, &v) && ok_;
    return v != 0;
  }
  // Valid during Create(): copy it.
  std::string_view String(const char* key, const char* fallback) {
    gearbox_str v{};
    ok_ = Host()->route_string(route_, key, fallback, &v) && ok_;
    return View(v);
  }
  void Error(const char* key, const std::string& message) {
    Host()->route_error(route_, key, message.c_str());
    ok_ = false;
  }
  std::string_view path() const { return View(Host()->route_path(route_)); }
  // The route's deadline (its timeout, else [limits] request_timeout).
  int64_t timeout_us() const { return Host()->route_timeout_us(route_); }
  bool ok() const { return ok_; }

 private:
  gearbox_route* route_;
  bool ok_ = true;
};

// The request, valid during Start() only.
class Request {
 public:
  explicit Request(const gearbox_request* r) : r_(r) {}
  std::string_view method() const { return View(r_->method); }
  std::string_view path() const { return View(r_->path); }
  std::string_view query() const { return View(r_->query); }
  std::string_view body() const { return View(r_->body); }
  std::string_view Header(const char* name) const {
    return View(Host()->request_header(r_, name));
  }
  std::string_view Query(const char* key) const {
    return View(Host()->request_query(r_, key));
  }
  // ABI 1.1: the path capture `name` ("id" of "/items/{id}"), the client's
  // address, the HTTP version, the listener.
  std::string_view Capture(const char* name) const {
    return View(Host()->request_capture(r_, name));
  }
  std::string_view client_address() const { return View(r_->client_address); }
  uint32_t version_major() const { return r_->version_major; }
  uint32_t version_minor() const { return r_->version_minor; }
  std::string_view listener() const { return View(r_->listener); }
  std::string_view protocol() const { return View(r_->protocol); }
  const gearbox_request& raw() const { return *r_; }

 private:
  const gearbox_request* r_;
};

class Response {
 public:
  explicit Response(gearbox_response* r) : r_(r) {}
  void Status(int status) { Host()->set_status(r_, status); }
  bool Header(std::string_view name, std::string_view value) {
    return Host()->set_header(r_, Str(name), Str(value)) == 0;
  }
  void Body(std::string_view body) {
    Host()->set_body(r_, body.data(), body.size());
  }
  void Append(std::string_view more) {
    Host()->append_body(r_, more.data(), more.size());
  }

 private:
  gearbox_response* r_;
};

// What an exchange needs next.
class Step {
 public:
  static Step Done() { return Step(); }
  static Step Timer(int64_t timeout_us) {
    Step s;
    gearbox_wait_timer(&s.step_, timeout_us);
    return s;
  }
  struct Fd {
    int fd;
    uint32_t events;  // GEARBOX_FD_READABLE | GEARBOX_FD_WRITABLE
  };
  // At most GEARBOX_MAX_WAIT_FDS (more are dropped).
  static Step Fds(int64_t timeout_us, std::initializer_list<Fd> fds) {
    Step s;
    for (const Fd& f : fds) gearbox_wait_fd(&s.step_, f.fd, f.events);
    gearbox_wait_fds(&s.step_, timeout_us);
    return s;
  }
  void CopyTo(gearbox_step* next) const {
    next->kind = step_.kind;
    next->timeout_us = step_.timeout_us;
    next->nfds = step_.nfds;
    for (uint32_t i = 0; i < step_.nfds; ++i) next->fds[i] = step_.fds[i];
  }

 private:
  Step() = default;
  gearbox_step step_{sizeof(gearbox_step), GEARBOX_STEP_DONE, 0, 0, {}};
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  // wake.why is GEARBOX_WAKE_START on the first call.
  virtual Step Resume(const gearbox_wake& wake, Response& response) = 0;
};

// An exchange that answers at its first Resume().
template <typename Fn>
class Immediate final : public Exchange {
 public:
  explicit Immediate(Fn fn) : fn_(std::move(fn)) {}
  Step Resume(const gearbox_wake&, Response& response) override {
    fn_(response);
    return Step::Done();
  }

 private:
  Fn fn_;
};
template <typename Fn>
std::unique_ptr<Exchange> Immediately(Fn fn) {
  return std::make_unique<Immediate<Fn>>(std::move(fn));
}

// The C callbacks for a handler type H (see the example at the top).
template <typename H>
struct Callbacks {
  using Instance = typename H::Instance;

  static void* Create(gearbox_route* raw) {
    Route route(raw);
    try {
      std::unique_ptr<H> h = H::Create(route);
      if (h && route.ok()) return h.release();
      if (route.ok()) route.Error(nullptr, "the module rejected the route");
    } catch (const std::exception& e) {
      route.Error(nullptr, e.what());
    }
    return nullptr;
  }
  static void Destroy(void* handler) { delete static_cast<H*>(handler); }
  // An exception from the Instance's constructor fails this worker's
  // instance (host->worker_error): the route answers 503 on the worker.
  static void* WorkerInit(void* handler, const gearbox_worker* worker) {
    try {
      return new Instance(*static_cast<const H*>(handler), *worker);
    } catch (const std::exception& e) {
      Host()->worker_error(worker, e.what());
      return nullptr;
    }
  }
  static void WorkerExit(void*, void* instance) {
    delete static_cast<Instance*>(instance);
  }
  static void* Start(void* instance, const gearbox_request* raw) {
    try {
      return static_cast<Instance*>(instance)->Start(Request(raw)).release();
    } catch (const std::exception& e) {
      Log(GEARBOX_LOG_ERROR, "module_exception", e.what());
      return nullptr;
    }
  }
  static void Resume(void* exchange, const gearbox_wake* wake,
                     gearbox_response* raw, gearbox_step* next) {
    Response response(raw);
    try {
      static_cast<Exchange*>(exchange)->Resume(*wake, response).CopyTo(next);
    } catch (const std::exception& e) {
      Log(GEARBOX_LOG_ERROR, "module_exception", e.what());
      response.Status(500);
      response.Body("internal error\n");
      next->kind = GEARBOX_STEP_DONE;
    }
  }
  static void Finish(void* exchange) {
    delete static_cast<Exchange*>(exchange);
  }

  // H::kKeys (a gearbox_key array ended by GEARBOX_KEY_END) when H declares
  // its route keys, else null.
  template <typename T, typename = void>
  struct KeysOf {
    static const gearbox_key* Get() { return nullptr; }
  };
  template <typename T>
  struct KeysOf<T, std::void_t<decltype(T::kKeys)>> {
    static const gearbox_key* Get() { return T::kKeys; }
  };

  static const gearbox_module* Module(const gearbox_host* host,
                                      const char* name) {
    Host() = host;
    static const gearbox_module module = {GEARBOX_ABI_MAJOR,
                                          GEARBOX_ABI_MINOR,
                                          sizeof(gearbox_module),
                                          name,
                                          &Create,
                                          &Destroy,
                                          &WorkerInit,
                                          &WorkerExit,
                                          &Start,
                                          &Resume,
                                          &Finish,
                                          KeysOf<H>::Get()};
    return &module;
  }
};

}  // namespace gearbox::sdk

// Defines gearbox_module_init() for handler type H.
#define GEARBOX_CXX_MODULE(H, name)                                    \
  extern "C" GEARBOX_EXPORT const gearbox_module* gearbox_module_init( \
      const gearbox_host* host) {                                      \
    return ::gearbox::sdk::Callbacks<H>::Module(host, name);           \
  }

#endif  // GEARBOX_MODULE_HPP_
