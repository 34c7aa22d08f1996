// [[listen]]: each entry read, its address and name unique in the file.
#include <algorithm>
#include <string>

#include "config/fields.h"
#include "config/internal.h"
#include "config/loader_internal.h"

namespace gearbox::config_internal {

bool Loader::Listeners(const toml::array& array) {
  listen_set_ = true;
  if (array.empty()) {
    return Fail(array.source().begin,
                "[[listen]]: at least one listener is required (or leave "
                "[[listen]] out for the default 127.0.0.1:8080)");
  }
  return EachTable(array, "listen", &Loader::Listener);
}

bool Loader::Listener(const std::string& label, const toml::table& table) {
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

}  // namespace gearbox::config_internal
