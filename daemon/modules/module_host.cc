// gearboxd's side of gearbox_host: route keys for create(), request
// lookups, response setters and logging. Every function checks what a module
// hands it: a module's mistake is logged or reported, never trusted.
#include "daemon/modules/module_host.h"

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "daemon/http/http_syntax.h"
#include "daemon/logging.h"

namespace gearbox {
namespace {

thread_local int t_worker = -1;
thread_local int t_generation = 0;
thread_local WorkerInitState* t_worker_init = nullptr;

std::string_view View(gearbox_str s) {
  return s.size && s.data ? std::string_view(s.data, s.size)
                          : std::string_view();
}
gearbox_str Str(std::string_view s) { return {s.data(), s.size()}; }

// --- route keys ------------------------------------------------------------

void RouteError(gearbox_route* route, const char* key, const char* message) {
  if (route->error) return;  // the first one is the one reported
  route->error = message && *message ? message : "rejected";
  route->error_key = key ? key : "";
  route->error_at = route->route->where;
  if (const RouteParam* param = key ? route->route->params.Find(key) : nullptr;
      param && param->where.in_file()) {
    route->error_at = param->where;
  }
}

std::string Describe(const ParamValue& value) {
  if (const auto* n = std::get_if<int64_t>(&value)) {
    return "integer " + std::to_string(*n);
  }
  if (const auto* b = std::get_if<bool>(&value)) {
    return *b ? "boolean true" : "boolean false";
  }
  if (std::holds_alternative<std::vector<std::string>>(value)) {
    return "an array";
  }
  return "a string";
}

// The key's value once declared, or null when the route does not set it
// (a module with a key list had its defaults filled in before create()).
const ParamValue* Declare(gearbox_route* route, const char* key) {
  if (!key) return nullptr;
  if (route->keys) {
    const RouteParam* param = route->route->params.Find(key);
    if (!param) {
      RouteError(route, nullptr,
                 (std::string("the module reads key ") + key +
                  ", which its key list does not declare")
                     .c_str());
    }
    return param ? &param->value : nullptr;
  }
  if (std::find(route->read.begin(), route->read.end(), key) ==
      route->read.end()) {
    route->read.emplace_back(key);
  }
  const RouteParam* param = route->route->params.Find(key);
  return param ? &param->value : nullptr;
}

int RouteInt(gearbox_route* route, const char* key, int64_t default_value,
             int64_t min, int64_t max, int64_t* out) {
  *out = default_value;
  const ParamValue* value = Declare(route, key);
  if (!value) return route->keys ? 0 : 1;
  const auto* n = std::get_if<int64_t>(value);
  if (!n) {
    RouteError(route, key,
               ("expected an integer, got " + Describe(*value)).c_str());
    return 0;
  }
  if (*n < min || *n > max) {
    RouteError(route, key,
               (std::to_string(*n) + " out of range (" + std::to_string(min) +
                ".." + std::to_string(max) + ")")
                   .c_str());
    return 0;
  }
  *out = *n;
  return 1;
}

int RouteBool(gearbox_route* route, const char* key, int default_value,
              int* out) {
  *out = default_value;
  const ParamValue* value = Declare(route, key);
  if (!value) return route->keys ? 0 : 1;
  const auto* b = std::get_if<bool>(value);
  if (!b) {
    RouteError(route, key,
               ("expected true or false, got " + Describe(*value)).c_str());
    return 0;
  }
  *out = *b ? 1 : 0;
  return 1;
}

int RouteString(gearbox_route* route, const char* key,
                const char* default_value, gearbox_str* out) {
  *out = default_value ? gearbox_str{default_value, strlen(default_value)}
                       : gearbox_str{nullptr, 0};
  const ParamValue* value = Declare(route, key);
  if (!value) return route->keys ? 0 : 1;
  const auto* s = std::get_if<std::string>(value);
  if (!s) {
    RouteError(route, key,
               ("expected a string, got " + Describe(*value)).c_str());
    return 0;
  }
  *out = Str(*s);
  return 1;
}

gearbox_str RoutePath(const gearbox_route* route) {
  return Str(route->route->path);
}

int64_t RouteTimeoutUs(const gearbox_route* route) {
  return route->timeout.count();
}

// --- clock and workers -------------------------------------------------------

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void WorkerError(const gearbox_worker* worker, const char* message) {
  WorkerInitState* init = t_worker_init;
  if (!init || init->worker != worker) {
    LogError("module_misuse",
             "msg=\"worker_error() called outside worker_init(): ignored\"");
    return;
  }
  if (init->failed) return;  // the first reason is the one logged
  init->failed = true;
  init->error = message && *message ? message : "worker_init failed";
}

// --- request ---------------------------------------------------------------

gearbox_str RequestHeader(const gearbox_request* request, const char* name) {
  const std::string_view wanted = name ? name : "";
  for (size_t i = 0; i < request->header_count; ++i) {
    const std::string_view have = View(request->headers[i].name);
    if (have.size() == wanted.size() &&
        strncasecmp(have.data(), wanted.data(), have.size()) == 0) {
      return request->headers[i].value;
    }
  }
  return {nullptr, 0};
}

gearbox_str RequestCapture(const gearbox_request* request, const char* name) {
  const std::string_view wanted = name ? name : "";
  for (size_t i = 0; i < request->capture_count; ++i) {
    if (View(request->captures[i].name) == wanted) {
      return request->captures[i].value;
    }
  }
  return {nullptr, 0};
}

gearbox_str RequestQuery(const gearbox_request* request, const char* key) {
  const std::string_view wanted = key ? key : "";
  std::string_view rest = View(request->query);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == wanted) {
      return eq == std::string_view::npos ? gearbox_str{nullptr, 0}
                                          : Str(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return {nullptr, 0};
}

// --- response --------------------------------------------------------------

void SetStatus(gearbox_response* r, int status) {
  if (status < 200 || status > 599) {
    LogError("module_bad_status", "module={} status={} msg=\"answering 500\"",
             r->module, status);
    status = 500;
    r->response->handler_error = true;
  }
  r->response->status = status;
}

bool Equals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The headers gearboxd frames the response with: a module may not set them.
bool Reserved(std::string_view name) {
  for (const char* reserved :
       {"content-length", "transfer-encoding", "connection", "keep-alive",
        "upgrade", "date", "server", "status"}) {
    if (Equals(name, reserved)) return true;
  }
  return false;
}

int SetHeader(gearbox_response* r, gearbox_str name_str,
              gearbox_str value_str) {
  const std::string_view name = View(name_str);
  const std::string_view value = View(value_str);
  // Control characters but tab are not field content (RFC 9110 5.5).
  const bool bad_value = std::any_of(value.begin(), value.end(), [](char c) {
    return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f;
  });
  if (!http::IsToken(name) || bad_value || Reserved(name)) return -1;
  if (Equals(name, "content-type")) {
    if (value.empty()) return -1;
    r->content_type->assign(value);
    r->response->content_type = *r->content_type;
    return 0;
  }
  std::string& lines = r->response->extra_headers;
  lines.append(name).append(": ").append(value).append("\r\n");
  return 0;
}

void SetBody(gearbox_response* r, const char* data, size_t size) {
  r->response->body.assign(data, data ? size : 0);
}

void AppendBody(gearbox_response* r, const char* data, size_t size) {
  if (data) r->response->body.append(data, size);
}

// --- logging ---------------------------------------------------------------

spdlog::level::level_enum Level(int level) {
  switch (level) {
    case GEARBOX_LOG_DEBUG:
      return spdlog::level::debug;
    case GEARBOX_LOG_INFO:
      return spdlog::level::info;
    case GEARBOX_LOG_WARN:
      return spdlog::level::warn;
    default:
      return spdlog::level::err;
  }
}

int LogEnabled(const gearbox_host*, int level) {
  return spdlog::default_logger_raw()->should_log(Level(level)) ? 1 : 0;
}

// logfmt keys stay keys: anything but [A-Za-z0-9_.-] becomes '_'.
std::string EventKey(const char* event) {
  std::string key = event && *event ? event : "module";
  for (char& c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return key;
}

void Log(const gearbox_host* table, int level, const char* event,
         const char* message) {
  const auto& host = *reinterpret_cast<const ModuleHost*>(table);
  std::string text = message ? message : "";
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line per event
  }
  if (t_worker >= 0) {
    LogAt(Level(level), EventKey(event), "module={} worker={} gen={} msg={}",
          host.name, t_worker, t_generation, LogQuote(text));
  } else {
    LogAt(Level(level), EventKey(event), "module={} msg={}", host.name,
          LogQuote(text));
  }
}

}  // namespace

void InitModuleHost(ModuleHost& host, const std::string& name) {
  static_assert(std::is_standard_layout_v<ModuleHost>);
  snprintf(host.name, sizeof host.name, "%s", name.c_str());
  gearbox_host& t = host.table;
  t = gearbox_host{};
  t.abi_major = GEARBOX_ABI_MAJOR;
  t.abi_minor = GEARBOX_ABI_MINOR;
  t.struct_size = sizeof(gearbox_host);
  t.route_int = &RouteInt;
  t.route_bool = &RouteBool;
  t.route_string = &RouteString;
  t.route_error = &RouteError;
  t.route_path = &RoutePath;
  t.request_header = &RequestHeader;
  t.request_query = &RequestQuery;
  t.set_status = &SetStatus;
  t.set_header = &SetHeader;
  t.set_body = &SetBody;
  t.append_body = &AppendBody;
  t.log = &Log;
  t.log_enabled = &LogEnabled;
  t.now_us = &NowUs;
  t.route_timeout_us = &RouteTimeoutUs;
  t.worker_error = &WorkerError;
  t.request_capture = &RequestCapture;
}

void SetWorkerInit(WorkerInitState* state) { t_worker_init = state; }

void SetModuleLogWorker(int worker, int generation) {
  t_worker = worker;
  t_generation = generation;
}

}  // namespace gearbox
