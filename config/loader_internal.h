// The Loader behind LoadConfigString, shared by the files that read one part
// of a document each (loader.cc, listen_loader.cc, module_loader.cc,
// route_loader.cc); not part of the config/ API.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/fields.h"
#include "config/loader.h"
#include "config/toml.h"

namespace gearbox::config_internal {

SourcePosition Position(const toml::source_position& at);

// Reads one TOML document into a Config; the first error, in file order, ends
// the load.
class Loader {
 public:
  // A fallback loader reads only the tables named in only (the [[listen]] or
  // [[route]] the file left out, from the embedded default) and never falls
  // back itself.
  Loader(std::string_view source, const ConfigVocabulary& vocabulary,
         std::vector<std::string_view> only = {});

  ConfigResult Load(std::string_view text);

 private:
  bool Fail(SourcePosition where, std::string message);
  bool Fail(const toml::source_position& where, std::string message);

  // Applies fields to every key of table; any other key is an error.
  bool ReadTable(const std::string& label, const toml::table& table,
                 const std::vector<Field>& fields,
                 std::string_view context = "");
  bool Parse(std::string_view text);
  bool Section(const toml::key& key, const toml::node& node);
  std::vector<Field> SectionFields(std::string_view name);
  const ModelSchema* FindModel(std::string_view name) const;
  static std::string Label(std::string_view array, size_t index);
  bool EachTable(const toml::array& array, std::string_view name,
                 bool (Loader::*entry)(const std::string&, const toml::table&));
  void Validate();

  // listen_loader.cc
  bool Listeners(const toml::array& array);
  bool Listener(const std::string& label, const toml::table& table);

  // module_loader.cc
  bool Modules(const toml::array& array);
  bool Module(const std::string& label, const toml::table& table);
  bool IsModule(std::string_view name) const;

  // route_loader.cc
  bool Routes(const toml::array& array);
  bool Route(const std::string& label, const toml::table& table);
  bool ModuleRoute(const std::string& label, const toml::table& table,
                   RouteConfig& route);
  bool AddRoute(const std::string& label, const toml::table& table,
                RouteConfig& route, const HandlerSchema* schema);
  bool NoConflict(const std::string& label, const RouteConfig& route);
  bool CapsHold(const std::string& label, const HandlerSchema& schema,
                const RouteParams& params);

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

}  // namespace gearbox::config_internal
