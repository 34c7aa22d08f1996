// TOML -> validated Config. Each section is a list of Fields (key name +
// reader); ReadTable walks a table in source order, so the first error reported
// is the first one in the file, and turns a reader's complaint into
// "file:line:col: [section] key: complaint" at the value (or at the key, for an
// unknown key).
#include "config/loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "config/fields.h"
#include "config/internal.h"
#include "config/toml.h"

namespace gearbox {
namespace {

using config_internal::Bool;
using config_internal::Describe;
using config_internal::Dur;
using config_internal::Field;
using config_internal::InSourceOrder;
using config_internal::Int;
using config_internal::Join;
using config_internal::OneOf;
using config_internal::QuoteToml;

constexpr std::string_view kSections[] = {"server",  "listen",  "threadpool",
                                          "prefork", "async",   "limits",
                                          "log",     "metrics", "route"};
constexpr std::string_view kLogLevels[] = {"trace", "debug",    "info", "warn",
                                           "error", "critical", "off"};
constexpr std::string_view kDefaultSource = "<embedded default>";
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr Duration kYear = std::chrono::hours(24 * 365);

class Loader {
 public:
  // A fallback loader reads only [[listen]] and [[route]] (of the embedded
  // default) and never falls back itself.
  Loader(std::string_view source, const ConfigVocabulary& vocabulary,
         bool fallback)
      : source_(source), vocabulary_(vocabulary), fallback_(fallback) {
    config_.source = source_;
  }

  ConfigResult Load(std::string_view text) {
    if (Parse(text)) Validate();
    if (error_) return *std::move(error_);
    return std::move(config_);
  }

 private:
  bool Fail(const toml::source_position& where, std::string message) {
    error_ = ConfigError{source_, static_cast<int>(where.line),
                         static_cast<int>(where.column), std::move(message)};
    return false;
  }

  // Applies fields to every key of table; any other key is an error.
  bool ReadTable(const std::string& label, const toml::table& table,
                 const std::vector<Field>& fields,
                 std::string_view context = "") {
    for (auto [key, node] : InSourceOrder(table)) {
      const std::string prefix = label + " " + std::string(key->str());
      auto field = std::find_if(
          fields.begin(), fields.end(),
          [&, key = key](auto& f) { return f.name == key->str(); });
      if (field == fields.end()) {
        return Fail(key->source().begin,
                    prefix + ": unknown key" + std::string(context) +
                        " (valid: " + config_internal::FieldNames(fields) +
                        ")");
      }
      if (auto complaint = field->read(*node)) {
        return Fail(node->source().begin, prefix + ": " + *complaint);
      }
    }
    return true;
  }

  bool Parse(std::string_view text) {
#if TOML_EXCEPTIONS
    toml::table root;
    try {
      root = toml::parse(text, std::string_view(source_));
    } catch (const toml::parse_error& e) {
      return Fail(e.source().begin,
                  "TOML syntax error: " + std::string(e.description()));
    }
#else
    toml::parse_result parsed = toml::parse(text, std::string_view(source_));
    if (!parsed) {
      return Fail(
          parsed.error().source().begin,
          "TOML syntax error: " + std::string(parsed.error().description()));
    }
    toml::table root = std::move(parsed).table();
#endif
    for (auto [key, node] : InSourceOrder(root)) {
      if (fallback_ && key->str() != "listen" && key->str() != "route")
        continue;
      if (!Section(*key, *node)) return false;
    }
    return true;
  }

  bool Section(const toml::key& key, const toml::node& node) {
    const std::string_view name = key.str();
    if (std::find(std::begin(kSections), std::end(kSections), name) ==
        std::end(kSections)) {
      return Fail(
          key.source().begin,
          (node.is_table() ? "unknown table [" + std::string(name) + "]"
                           : "unknown top-level key " + QuoteToml(name)) +
              " (valid tables: " + Join(kSections) + ")");
    }
    if (name == "listen" || name == "route") {
      const toml::array* array = node.as_array();
      if (!array) {
        return Fail(node.source().begin,
                    "[[" + std::string(name) +
                        "]]: expected an array of tables " + "[[" +
                        std::string(name) + "]], got " + Describe(node));
      }
      return name == "listen" ? Listeners(*array) : Routes(*array);
    }
    const std::string label = "[" + std::string(name) + "]";
    const toml::table* table = node.as_table();
    if (!table) {
      return Fail(node.source().begin,
                  label + ": expected a table, got " + Describe(node));
    }
    if (name == "server") {
      model_set_ = table->contains("model");
      return ReadTable(
          label, *table,
          {{"model", OneOf(vocabulary_.models, "model", &config_.server.model)},
           {"graceful_timeout",
            Dur(&config_.server.graceful_timeout, Duration(0), kYear)},
           {"enable_crash_handler",
            Bool(&config_.server.enable_crash_handler)}});
    }
    if (name == "threadpool") {
      return ReadTable(label, *table,
                       {{"threads", Int(&config_.threadpool.threads, 1, 4096)},
                        {"queue", Int(&config_.threadpool.queue, 1, 1000000)}});
    }
    if (name == "prefork") {
      return ReadTable(
          label, *table,
          {{"workers", Int(&config_.prefork.workers, 1, 1024)},
           {"max_requests", Int(&config_.prefork.max_requests, 0, kMaxInt)}});
    }
    if (name == "async") {
      return ReadTable(label, *table,
                       {{"loops", Int(&config_.async.loops, 1, 256)}});
    }
    if (name == "limits") {
      LimitsConfig& l = config_.limits;
      const Duration min(1);
      return ReadTable(
          label, *table,
          {{"header_timeout", Dur(&l.header_timeout, min, kYear)},
           {"idle_timeout", Dur(&l.idle_timeout, min, kYear)},
           {"body_timeout", Dur(&l.body_timeout, min, kYear)},
           {"send_timeout", Dur(&l.send_timeout, min, kYear)},
           {"max_header_bytes", Int(&l.max_header_bytes, 1024, 1048576)},
           {"max_body_bytes", Int(&l.max_body_bytes, 0, int64_t{1} << 34)},
           {"max_connections", Int(&l.max_connections, 1, 1000000)}});
    }
    if (name == "log") {
      return ReadTable(
          label, *table,
          {{"level", OneOf(kLogLevels, "log level", &config_.log.level)},
           {"access", Bool(&config_.log.access)},
           {"slow", Dur(&config_.log.slow, Duration(0), kYear)}});
    }
    // metrics
    return ReadTable(
        label, *table,
        {{"interval", Dur(&config_.metrics.interval,
                          std::chrono::milliseconds(100), kYear)}});
  }

  static std::string Label(std::string_view array, size_t index) {
    return "[[" + std::string(array) + "]] #" + std::to_string(index + 1);
  }

  bool Listeners(const toml::array& array) {
    listen_set_ = true;
    if (array.empty()) {
      return Fail(array.source().begin,
                  "[[listen]]: at least one listener is required (or leave "
                  "[[listen]] out for the default 127.0.0.1:8080)");
    }
    for (size_t i = 0; i < array.size(); ++i) {
      const toml::table* table = array[i].as_table();
      if (!table) {
        return Fail(array[i].source().begin, Label("listen", i) +
                                                 ": expected a table, got " +
                                                 Describe(array[i]));
      }
      if (!Listener(Label("listen", i), *table)) return false;
    }
    return true;
  }

  bool Listener(const std::string& label, const toml::table& table) {
    ListenConfig listen;
    if (!ReadTable(label, table, config_internal::ListenFields(&listen))) {
      return false;
    }
    const toml::node* address = table.get("address");
    if (!address) {
      return Fail(table.source().begin,
                  label + ": missing required key \"address\"");
    }
    if (const toml::node* mode = table.get("unix_mode");
        mode && !config_internal::IsUnixAddress(listen.address)) {
      return Fail(mode->source().begin,
                  label + " unix_mode: only applies to \"unix:\" addresses");
    }
    const toml::node* name = table.get("name");
    if (!name)
      listen.name = listen.protocol == Protocol::kFastCgi ? "fastcgi" : "http";
    const int line = static_cast<int>(table.source().begin.line);
    for (size_t j = 0; j < config_.listen.size(); ++j) {
      if (config_.listen[j].address == listen.address) {
        return Fail(address->source().begin,
                    label + " address: duplicate address " +
                        QuoteToml(listen.address) + " (first at line " +
                        std::to_string(listen_lines_[j]) + ")");
      }
      if (config_.listen[j].name == listen.name) {
        return Fail(name ? name->source().begin : table.source().begin,
                    label + " name: duplicate listener name " +
                        QuoteToml(listen.name) + " (first at line " +
                        std::to_string(listen_lines_[j]) +
                        "); give each [[listen]] a unique name" +
                        (name ? "" : " (it defaults to the protocol)"));
      }
    }
    config_.listen.push_back(std::move(listen));
    listen_lines_.push_back(line);
    return true;
  }

  bool Routes(const toml::array& array) {
    routes_set_ = true;  // even when empty: "route = []" means no routes at all
    for (size_t i = 0; i < array.size(); ++i) {
      const toml::table* table = array[i].as_table();
      if (!table) {
        return Fail(array[i].source().begin, Label("route", i) +
                                                 ": expected a table, got " +
                                                 Describe(array[i]));
      }
      if (!Route(Label("route", i), *table)) return false;
    }
    return true;
  }

  bool Route(const std::string& label, const toml::table& table) {
    RouteConfig route;
    // The handler decides which other keys are valid, so it is read first.
    const toml::node* handler = table.get("handler");
    if (!handler) {
      return Fail(table.source().begin,
                  label + ": missing required key \"handler\" (one of " +
                      Join(vocabulary_.handlers) + ")");
    }
    if (auto complaint =
            OneOf(vocabulary_.handlers, "handler", &route.handler)(*handler)) {
      return Fail(handler->source().begin, label + " handler: " + *complaint);
    }
    const std::string& h = route.handler;
    if (h == "crash") crash_routes_.push_back(handler->source().begin);
    const std::vector<Field> fields = config_internal::RouteFields(&route);
    if (!ReadTable(label, table, fields, " for handler " + QuoteToml(h))) {
      return false;
    }
    const toml::node* path = table.get("path");
    if (!path) {
      return Fail(table.source().begin,
                  label + ": missing required key \"path\"");
    }
    if (h == "wait" &&
        !CapAtLeast(label, table, "ms", route.ms, "max_ms", route.max_ms)) {
      return false;
    }
    if (h == "burn" &&
        !CapAtLeast(label, table, "us", route.us, "max_us", route.max_us)) {
      return false;
    }
    for (size_t j = 0; j < config_.routes.size(); ++j) {
      if (config_.routes[j].path == route.path) {
        return Fail(path->source().begin,
                    label + " path: duplicate route " + QuoteToml(route.path) +
                        " (first at line " + std::to_string(route_lines_[j]) +
                        ")");
      }
    }
    route_lines_.push_back(static_cast<int>(path->source().begin.line));
    config_.routes.push_back(std::move(route));
    return true;
  }

  // The default (value) must not exceed the cap a query parameter may ask for.
  bool CapAtLeast(const std::string& label, const toml::table& table,
                  std::string_view key, int64_t value, std::string_view cap_key,
                  int64_t cap) {
    if (cap >= value) return true;
    if (const toml::node* cap_node = table.get(cap_key)) {
      return Fail(cap_node->source().begin,
                  label + " " + std::string(cap_key) + ": " +
                      std::to_string(cap) + " is less than " +
                      std::string(key) + " (" + std::to_string(value) + ")");
    }
    return Fail(table.get(key)->source().begin,
                label + " " + std::string(key) + ": " + std::to_string(value) +
                    " exceeds the default " + std::string(cap_key) + " (" +
                    std::to_string(cap) + "); set " + std::string(cap_key) +
                    " too");
  }

  // Defaults that depend on the whole file; checks of defaults the file left
  // alone.
  void Validate() {
    if (!fallback_ && (!listen_set_ || !routes_set_)) {
      // Listeners and routes left out come from the embedded default.
      ConfigResult fallback = Loader(kDefaultSource, vocabulary_, true)
                                  .Load(EmbeddedDefaultConfig());
      if (auto* error = std::get_if<ConfigError>(&fallback)) {
        error_ = *error;
        return;
      }
      Config& defaults = std::get<Config>(fallback);
      if (!listen_set_) config_.listen = std::move(defaults.listen);
      if (!routes_set_) config_.routes = std::move(defaults.routes);
    }
    if (!crash_routes_.empty() && !config_.server.enable_crash_handler) {
      // A handler that kills the process must never be one typo away.
      Fail(crash_routes_.front(),
           "[[route]] handler: \"crash\" is for fault tests only; set [server] "
           "enable_crash_handler = true to allow it");
      return;
    }
    const auto& models = vocabulary_.models;
    if (!fallback_ && !model_set_ &&
        std::find(models.begin(), models.end(), config_.server.model) ==
            models.end()) {
      error_ = ConfigError{source_, 0, 0,
                           "[server] model: the default model " +
                               QuoteToml(config_.server.model) +
                               " is not available; set one of " + Join(models)};
    }
  }

  std::string source_;
  const ConfigVocabulary& vocabulary_;
  bool fallback_;
  Config config_;
  std::optional<ConfigError> error_;
  bool model_set_ = false;
  bool listen_set_ = false;
  bool routes_set_ = false;
  std::vector<int> listen_lines_;  // line of each [[listen]] in config_.listen
  std::vector<int> route_lines_;
  std::vector<toml::source_position>
      crash_routes_;  // line of each route's path in config_.routes
};

}  // namespace

ConfigResult LoadConfigString(std::string_view toml, std::string_view source,
                              const ConfigVocabulary& vocabulary) {
  return Loader(source, vocabulary, false).Load(toml);
}

ConfigResult LoadConfigFile(const std::string& path,
                            const ConfigVocabulary& vocabulary) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ConfigError{path, 0, 0, std::strerror(errno)};
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      close(fd);
      return ConfigError{path, 0, 0, std::strerror(saved)};
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return LoadConfigString(text, path, vocabulary);
}

}  // namespace gearbox
