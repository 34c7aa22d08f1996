// TOML -> validated Config: the document, its top-level tables and the checks
// that need the whole file. Each section is a list of Fields (key name +
// reader); ReadTable walks a table in source order, so the first error reported
// is the first one in the file, and turns a reader's complaint into
// "file:line:col: [section] key: complaint" at the value (or at the key, for an
// unknown key). The [[listen]], [[module]] and [[route]] entries are read in
// listen_loader.cc, module_loader.cc and route_loader.cc.
#include "config/loader.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "config/fields.h"
#include "config/internal.h"
#include "config/loader_internal.h"
#include "config/toml.h"

namespace gearbox {
namespace config_internal {
namespace {

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

}  // namespace

SourcePosition Position(const toml::source_position& at) {
  return {static_cast<int>(at.line), static_cast<int>(at.column)};
}

std::string Loader::Label(std::string_view array, size_t index) {
  return "[[" + std::string(array) + "]] #" + std::to_string(index + 1);
}

Loader::Loader(std::string_view source, const ConfigVocabulary& vocabulary,
               std::vector<std::string_view> only)
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

ConfigResult Loader::Load(std::string_view text) {
  if (Parse(text)) Validate();
  if (error_) return *std::move(error_);
  return std::move(config_);
}

bool Loader::Fail(SourcePosition where, std::string message) {
  error_ = ConfigError{source_, where.line, where.column, std::move(message)};
  return false;
}

bool Loader::Fail(const toml::source_position& where, std::string message) {
  return Fail(Position(where), std::move(message));
}

bool Loader::ReadTable(const std::string& label, const toml::table& table,
                       const std::vector<Field>& fields,
                       std::string_view context) {
  for (auto [key, node] : InSourceOrder(table)) {
    const std::string prefix = label + " " + std::string(key->str());
    auto field =
        std::find_if(fields.begin(), fields.end(),
                     [&, key = key](auto& f) { return f.name == key->str(); });
    if (field == fields.end()) {
      return Fail(key->source().begin,
                  prefix + ": unknown key" + std::string(context) +
                      " (valid: " + config_internal::FieldNames(fields) + ")");
    }
    if (auto complaint = field->read(*node)) {
      return Fail(node->source().begin, prefix + ": " + *complaint);
    }
  }
  return true;
}

bool Loader::Parse(std::string_view text) {
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

bool Loader::Section(const toml::key& key, const toml::node& node) {
  const std::string_view name = key.str();
  if (std::find(sections_.begin(), sections_.end(), name) == sections_.end()) {
    return Fail(key.source().begin,
                (node.is_table() ? "unknown table [" + std::string(name) + "]"
                                 : "unknown top-level key " + QuoteToml(name)) +
                    " (valid tables: " + Join(sections_) + ")");
  }
  if (name == "listen" || name == "route" || name == "module") {
    const toml::array* array = node.as_array();
    if (!array) {
      return Fail(node.source().begin, "[[" + std::string(name) +
                                           "]]: expected an array of tables " +
                                           "[[" + std::string(name) +
                                           "]], got " + Describe(node));
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
    return Fail(
        at ? at->source().begin : table->source().begin,
        label + " " + std::string(complaint->key) + ": " + complaint->message);
  }
  return true;
}

// The keys of a plain [table]: a fixed section or a model's.
std::vector<Field> Loader::SectionFields(std::string_view name) {
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
const ModelSchema* Loader::FindModel(std::string_view name) const {
  for (const ModelSchema& model : vocabulary_.models) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

// [[name]]: each element must be a table, read by entry.
bool Loader::EachTable(const toml::array& array, std::string_view name,
                       bool (Loader::*entry)(const std::string&,
                                             const toml::table&)) {
  for (size_t i = 0; i < array.size(); ++i) {
    const toml::table* table = array[i].as_table();
    if (!table) {
      return Fail(
          array[i].source().begin,
          Label(name, i) + ": expected a table, got " + Describe(array[i]));
    }
    if (!(this->*entry)(Label(name, i), *table)) return false;
  }
  return true;
}

// Defaults that depend on the whole file; checks of defaults the file left
// alone.
void Loader::Validate() {
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

}  // namespace config_internal

ConfigResult LoadConfigString(std::string_view toml, std::string_view source,
                              const ConfigVocabulary& vocabulary) {
  return config_internal::Loader(source, vocabulary).Load(toml);
}

}  // namespace gearbox
