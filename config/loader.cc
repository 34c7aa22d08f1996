// TOML -> validated Config. Each section is a list of Fields (key name +
// reader); ReadTable walks a table in source order, so the first error reported
// is the first one in the file, and turns a reader's complaint into
// "file:line:col: [section] key: complaint" at the value (or at the key, for an
// unknown key).
#include "config/loader.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "config/fields.h"
#include "config/internal.h"
#include "config/toml.h"

namespace gearbox {
namespace {

using config_internal::Describe;
using config_internal::Field;
using config_internal::InSourceOrder;
using config_internal::Join;
using config_internal::OneOf;
using config_internal::QuoteToml;

constexpr std::string_view kDefaultSource = "<embedded default>";

// The tables of a file: the fixed ones around one per model, in the model
// table's order (a model's section exists exactly when the model does).
std::vector<std::string_view> SectionNames(
    std::span<const ModelSchema> models) {
  std::vector<std::string_view> names = {"server", "listen"};
  for (const ModelSchema& model : models) names.push_back(model.name);
  for (std::string_view name :
       {"limits", "log", "metrics", "lua", "module", "route"}) {
    names.push_back(name);
  }
  return names;
}

SourcePosition Position(const toml::source_position& at) {
  return {static_cast<int>(at.line), static_cast<int>(at.column)};
}

class Loader {
 public:
  // A fallback loader reads only the tables named in only (the [[listen]] or
  // [[route]] the file left out, from the embedded default) and never falls
  // back itself.
  Loader(std::string_view source, const ConfigVocabulary& vocabulary,
         std::vector<std::string_view> only = {})
      : source_(source),
        vocabulary_(vocabulary),
        only_(std::move(only)),
        fallback_(!only_.empty()),
        sections_(SectionNames(vocabulary.models)) {
    config_.source = source_;
    const size_t slash = source_.rfind('/');
    config_.lua.base_dir =
        slash == std::string::npos ? "." : source_.substr(0, slash);
    config_.model_schemas = vocabulary.models;
    for (const ModelSchema& model : vocabulary.models) {
      model_names_.push_back(model.name);
    }
    for (const HandlerSchema& schema : vocabulary.handlers) {
      (schema.fault_test_only ? fault_test_names_ : handler_names_)
          .push_back(schema.name);
    }
  }

  ConfigResult Load(std::string_view text) {
    if (Parse(text)) Validate();
    if (error_) return *std::move(error_);
    return std::move(config_);
  }

 private:
  bool Fail(SourcePosition where, std::string message) {
    error_ = ConfigError{source_, where.line, where.column, std::move(message)};
    return false;
  }
  bool Fail(const toml::source_position& where, std::string message) {
    return Fail(Position(where), std::move(message));
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
    // [[module]] first, wherever it is: routes may name a module.
    const auto sections = InSourceOrder(root);
    for (bool modules : {true, false}) {
      for (auto [key, node] : sections) {
        if ((key->str() == "module") != modules) continue;
        if (fallback_ &&
            std::find(only_.begin(), only_.end(), key->str()) == only_.end()) {
          continue;
        }
        if (!Section(*key, *node)) return false;
      }
    }
    return true;
  }

  bool Section(const toml::key& key, const toml::node& node) {
    const std::string_view name = key.str();
    if (std::find(sections_.begin(), sections_.end(), name) ==
        sections_.end()) {
      return Fail(
          key.source().begin,
          (node.is_table() ? "unknown table [" + std::string(name) + "]"
                           : "unknown top-level key " + QuoteToml(name)) +
              " (valid tables: " + Join(sections_) + ")");
    }
    if (name == "listen" || name == "route" || name == "module") {
      const toml::array* array = node.as_array();
      if (!array) {
        return Fail(node.source().begin,
                    "[[" + std::string(name) +
                        "]]: expected an array of tables " + "[[" +
                        std::string(name) + "]], got " + Describe(node));
      }
      if (name == "module") return Modules(*array);
      return name == "listen" ? Listeners(*array) : Routes(*array);
    }
    const std::string label = "[" + std::string(name) + "]";
    const toml::table* table = node.as_table();
    if (!table) {
      return Fail(node.source().begin,
                  label + ": expected a table, got " + Describe(node));
    }
    if (name == "server") model_set_ = table->contains("model");
    if (!ReadTable(label, *table, SectionFields(name))) return false;
    const ModelSchema* model = FindModel(name);
    if (auto complaint =
            model ? config_internal::SettleModelSection(*model, &config_)
                  : std::nullopt) {
      const toml::node* at = table->get(complaint->key);
      return Fail(at ? at->source().begin : table->source().begin,
                  label + " " + std::string(complaint->key) + ": " +
                      complaint->message);
    }
    return true;
  }

  // The keys of a plain [table]: a fixed section or a model's.
  std::vector<Field> SectionFields(std::string_view name) {
    if (name == "server") {
      return config_internal::ServerFields(&config_.server, model_names_);
    }
    if (name == "limits") return config_internal::LimitsFields(&config_.limits);
    if (name == "log") return config_internal::LogFields(&config_.log);
    if (name == "metrics") {
      return config_internal::MetricsFields(&config_.metrics);
    }
    if (name == "lua") return config_internal::LuaFields(&config_.lua);
    const ModelSchema* model = FindModel(name);
    if (!model) return {};
    return config_internal::ModelSectionFields(*model, &config_);
  }

  // The model table's row named name, or null.
  const ModelSchema* FindModel(std::string_view name) const {
    for (const ModelSchema& model : vocabulary_.models) {
      if (model.name == name) return &model;
    }
    return nullptr;
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

  bool Modules(const toml::array& array) {
    for (size_t i = 0; i < array.size(); ++i) {
      const toml::table* table = array[i].as_table();
      if (!table) {
        return Fail(array[i].source().begin, Label("module", i) +
                                                 ": expected a table, got " +
                                                 Describe(array[i]));
      }
      if (!Module(Label("module", i), *table)) return false;
    }
    return true;
  }

  bool Module(const std::string& label, const toml::table& table) {
    ModuleConfig module;
    module.where = Position(table.source().begin);
    if (!ReadTable(label, table, config_internal::ModuleFields(&module))) {
      return false;
    }
    const toml::node* name = table.get("name");
    const toml::node* path = table.get("path");
    if (!name || !path) {
      return Fail(table.source().begin,
                  label + ": missing required key " +
                      (name ? "\"path\" (the .so file)"
                            : "\"name\" (what routes' handler = names)"));
    }
    if (FindSchema(vocabulary_.handlers, module.name)) {
      // Every built-in name is taken, the fault-test ones too.
      std::vector<std::string_view> taken = handler_names_;
      taken.insert(taken.end(), fault_test_names_.begin(),
                   fault_test_names_.end());
      return Fail(name->source().begin,
                  label + " name: " + QuoteToml(module.name) +
                      " is a built-in handler; give the module another name "
                      "(built-in: " +
                      Join(taken) + ")");
    }
    for (const ModuleConfig& other : config_.modules) {
      if (other.name == module.name) {
        return Fail(name->source().begin,
                    label + " name: duplicate module name " +
                        QuoteToml(module.name) + " (first at line " +
                        std::to_string(other.where.line) + ")");
      }
    }
    module.path_at = Position(path->source().begin);
    // Relative to the file that names it, not to gearboxd's working directory.
    const size_t slash = source_.rfind('/');
    if (module.path[0] != '/' && slash != std::string::npos) {
      module.path = source_.substr(0, slash + 1) + module.path;
    }
    config_.modules.push_back(std::move(module));
    return true;
  }

  bool IsModule(std::string_view name) const {
    return std::any_of(config_.modules.begin(), config_.modules.end(),
                       [&](const ModuleConfig& m) { return m.name == name; });
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
    route.where = Position(table.source().begin);
    // The handler decides which other keys are valid, so it is read first.
    const toml::node* handler = table.get("handler");
    std::vector<std::string_view> valid = handler_names_;
    for (const ModuleConfig& m : config_.modules) valid.push_back(m.name);
    if (!handler) {
      return Fail(table.source().begin,
                  label + ": missing required key \"handler\" (one of " +
                      Join(valid) + ")");
    }
    std::vector<std::string_view> accepted = valid;
    accepted.insert(accepted.end(), fault_test_names_.begin(),
                    fault_test_names_.end());
    if (OneOf(accepted, "handler", &route.handler)(*handler)) {
      // The complaint lists what a user may pick: not the fault-test ones.
      return Fail(handler->source().begin,
                  label + " handler: " +
                      *OneOf(valid, "handler", &route.handler)(*handler));
    }
    route.handler_at = Position(handler->source().begin);
    if (IsModule(route.handler)) return ModuleRoute(label, table, route);
    const HandlerSchema& schema =
        *FindSchema(vocabulary_.handlers, route.handler);
    if (schema.fault_test_only) {
      fault_test_routes_.emplace_back(Position(handler->source().begin),
                                      schema.name);
    }
    route.params = DefaultParams(schema);
    if (!ReadTable(label, table, config_internal::RouteFields(&route, schema),
                   " for handler " + QuoteToml(route.handler))) {
      return false;
    }
    return AddRoute(label, table, route, &schema);
  }

  // A module's route: every key but path and handler goes, as written, to
  // the module's create(), which checks it (daemon/modules/).
  bool ModuleRoute(const std::string& label, const toml::table& table,
                   RouteConfig& route) {
    route.module = true;
    std::vector<Field> fields = config_internal::RouteKeyFields(&route);
    const size_t route_keys = fields.size();
    for (auto [key, node] : InSourceOrder(table)) {
      const bool route_key =
          std::any_of(fields.begin(), fields.begin() + route_keys,
                      [key = key](auto& f) { return f.name == key->str(); });
      if (!route_key) {
        fields.push_back(
            {key->str(), config_internal::RawParam(key->str(), &route.params)});
      }
    }
    if (!ReadTable(label, table, fields)) return false;
    return AddRoute(label, table, route, nullptr);
  }

  // Checks what every route needs (a pattern no other route conflicts with)
  // and a built-in handler's
  // caps, and keeps it.
  bool AddRoute(const std::string& label, const toml::table& table,
                RouteConfig& route, const HandlerSchema* schema) {
    const toml::node* path = table.get("path");
    if (!path) {
      return Fail(table.source().begin,
                  label + ": missing required key \"path\"");
    }
    if (schema && !CapsHold(label, *schema, route.params)) return false;
    if (auto missing = schema ? MissingCheckedParam(*schema, route.params)
                              : std::nullopt) {
      return Fail(table.source().begin, label + ": " + *missing);
    }
    if (!NoConflict(label, route)) return false;
    config_.routes.push_back(std::move(route));
    return true;
  }

  // Go's rule: of two routes that match a common request, one must be more
  // specific. O(n) per route, O(n^2) per file: a thousand routes check in
  // about a second's fraction, once per load.
  bool NoConflict(const std::string& label, const RouteConfig& route) {
    for (size_t j = 0; j < config_.routes.size(); ++j) {
      const RouteConfig& other = config_.routes[j];
      auto why = RouteConflict(route.pattern, route.methods, other.pattern,
                               other.methods);
      if (!why) continue;
      return Fail(route.path_at,
                  label + " path: " + QuoteToml(RouteDisplay(route)) +
                      " conflicts with " + Label("route", j) + " " +
                      QuoteToml(RouteDisplay(other)) + " (line " +
                      std::to_string(other.path_at.line) + ", column " +
                      std::to_string(other.path_at.column) + "): " + *why);
    }
    return true;
  }

  // A default must not exceed the cap a query parameter may raise it to
  // (ParamSpec::at_most). The error points at the cap when the file set it.
  bool CapsHold(const std::string& label, const HandlerSchema& schema,
                const RouteParams& params) {
    for (const ParamSpec& spec : schema.params) {
      if (spec.at_most.empty()) continue;
      const RouteParam& value = *params.Find(spec.key);
      const RouteParam& cap = *params.Find(spec.at_most);
      const int64_t v = std::get<int64_t>(value.value);
      const int64_t c = std::get<int64_t>(cap.value);
      if (c >= v) continue;
      if (cap.where.in_file()) {
        return Fail(cap.where, label + " " + cap.key + ": " +
                                   std::to_string(c) + " is less than " +
                                   value.key + " (" + std::to_string(v) + ")");
      }
      return Fail(value.where, label + " " + value.key + ": " +
                                   std::to_string(v) + " exceeds the default " +
                                   cap.key + " (" + std::to_string(c) +
                                   "); set " + cap.key + " too");
    }
    return true;
  }

  // Defaults that depend on the whole file; checks of defaults the file left
  // alone.
  void Validate() {
    for (const ModelSchema& model : vocabulary_.models) {
      // Sections the file left out: their defaults always fit.
      config_internal::SettleModelSection(model, &config_);
    }
    if (!fallback_ && (!listen_set_ || !routes_set_)) {
      // Listeners and routes left out come from the embedded default (only
      // those: its routes need not suit the vocabulary of a file with its own).
      std::vector<std::string_view> missing;
      if (!listen_set_) missing.push_back("listen");
      if (!routes_set_) missing.push_back("route");
      ConfigResult fallback = Loader(kDefaultSource, vocabulary_, missing)
                                  .Load(EmbeddedDefaultConfig());
      if (auto* error = std::get_if<ConfigError>(&fallback)) {
        error_ = *error;
        return;
      }
      Config& defaults = std::get<Config>(fallback);
      if (!listen_set_) config_.listen = std::move(defaults.listen);
      if (!routes_set_) config_.routes = std::move(defaults.routes);
    }
    if (!fault_test_routes_.empty() && !config_.server.enable_crash_handler) {
      // A handler that kills the process must never be one typo away.
      const auto& [where, name] = fault_test_routes_.front();
      Fail(where, "[[route]] handler: " + QuoteToml(name) +
                      " is for fault tests only; set [server] "
                      "enable_crash_handler = true to allow it");
      return;
    }
    const auto& models = model_names_;
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
  std::vector<std::string_view> only_;
  bool fallback_;
  std::vector<std::string_view> sections_;       // valid top-level tables
  std::vector<std::string_view> handler_names_;  // valid values of handler
  // Fault-test-only handlers (crash): accepted, but left out of the lists
  // an error shows, so that nobody picks one from a list of suggestions.
  std::vector<std::string_view> fault_test_names_;
  std::vector<std::string_view> model_names_;  // valid values of model
  Config config_;
  std::optional<ConfigError> error_;
  bool model_set_ = false;
  bool listen_set_ = false;
  bool routes_set_ = false;
  std::vector<int> listen_lines_;  // line of each [[listen]] in config_.listen
  // The handler value of each route whose handler is fault_test_only.
  std::vector<std::pair<SourcePosition, std::string_view>> fault_test_routes_;
};

}  // namespace

ConfigResult LoadConfigString(std::string_view toml, std::string_view source,
                              const ConfigVocabulary& vocabulary) {
  return Loader(source, vocabulary).Load(toml);
}

}  // namespace gearbox
