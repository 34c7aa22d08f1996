#include "config/params.h"

#include <cstdio>
#include <cstdlib>

#include "config/internal.h"
#include "config/loader.h"

namespace gearbox {

const ParamSpec* HandlerSchema::Find(std::string_view key) const {
  for (const ParamSpec& spec : params) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

void RouteParams::Set(std::string_view key, ParamValue value,
                      SourcePosition where) {
  for (RouteParam& param : entries_) {
    if (param.key == key) {
      param.value = std::move(value);
      param.where = where;
      return;
    }
  }
  entries_.push_back({std::string(key), std::move(value), where});
}

const RouteParam* RouteParams::Find(std::string_view key) const {
  for (const RouteParam& param : entries_) {
    if (param.key == key) return &param;
  }
  return nullptr;
}

template <typename T>
const T& RouteParams::Get(std::string_view key, const char* type) const {
  const RouteParam* param = Find(key);
  const T* value = param ? std::get_if<T>(&param->value) : nullptr;
  if (!value) {
    // A handler reads a key its schema does not declare with this type.
    fprintf(stderr, "route parameter \"%.*s\": %s, expected %s\n",
            static_cast<int>(key.size()), key.data(),
            param ? "another type" : "missing", type);
    abort();
  }
  return *value;
}

int64_t RouteParams::Int(std::string_view key) const {
  return Get<int64_t>(key, "an integer");
}

bool RouteParams::Bool(std::string_view key) const {
  return Get<bool>(key, "a boolean");
}

const std::string& RouteParams::Text(std::string_view key) const {
  return Get<std::string>(key, "a string");
}

const std::vector<std::string>& RouteParams::List(std::string_view key) const {
  return Get<std::vector<std::string>>(key, "an array of strings");
}

RouteParams DefaultParams(const HandlerSchema& schema) {
  RouteParams params;
  for (const ParamSpec& spec : schema.params) {
    switch (spec.type) {
      case ParamType::kInt:
        params.Set(spec.key, spec.int_default);
        break;
      case ParamType::kBool:
        params.Set(spec.key, spec.bool_default);
        break;
      case ParamType::kString:
      case ParamType::kHeaderValue:
        params.Set(spec.key, std::string(spec.text_default));
        break;
      case ParamType::kStringList:
        params.Set(spec.key, std::vector<std::string>());
        break;
    }
  }
  return params;
}

const HandlerSchema* FindSchema(std::span<const HandlerSchema> schemas,
                                std::string_view name) {
  for (const HandlerSchema& schema : schemas) {
    if (schema.name == name) return &schema;
  }
  return nullptr;
}

std::string DescribeParam(const HandlerSchema& schema, const ParamSpec& spec) {
  std::string line(spec.doc);
  switch (spec.type) {
    case ParamType::kInt: {
      // The lower bound of a cap is the key it caps (the loader checks it).
      std::string min = std::to_string(spec.min);
      for (const ParamSpec& other : schema.params) {
        if (other.at_most == spec.key) min = std::string(other.key);
      }
      line += spec.max == kNoMax ? ": >= " + min
                                 : ": " + min + ".." + std::to_string(spec.max);
      line += " (default " + std::to_string(spec.int_default) + ").";
      break;
    }
    case ParamType::kBool:
      line += spec.bool_default ? " (default true)." : " (default false).";
      break;
    case ParamType::kString:
    case ParamType::kHeaderValue:
      line +=
          " (default " + config_internal::QuoteToml(spec.text_default) + ").";
      break;
    case ParamType::kStringList:
      line += " (default []).";
      break;
  }
  return line;
}

namespace {

bool IsBareKey(std::string_view key) {
  if (key.empty()) return false;
  for (const char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// What is wrong with spec on its own, or nullopt.
std::optional<std::string> CheckSpec(const ParamSpec& spec) {
  const std::string key(spec.key);
  if (!IsBareKey(spec.key)) return "key \"" + key + "\" is not a bare TOML key";
  for (const std::string_view route_key : RouteKeys()) {
    if (spec.key == route_key) return "key " + key + " is a key of every route";
  }
  if (spec.type == ParamType::kInt &&
      (spec.min > spec.max || spec.int_default < spec.min ||
       spec.int_default > spec.max)) {
    return key + ": default " + std::to_string(spec.int_default) + " outside " +
           std::to_string(spec.min) + ".." + std::to_string(spec.max);
  }
  if (spec.type == ParamType::kHeaderValue && spec.text_default.empty()) {
    return key + ": a header value needs a non-empty default";
  }
  if ((spec.redact || spec.check) && spec.type != ParamType::kString) {
    return key + ": check and redact apply to strings only";
  }
  if (!spec.at_most.empty() && spec.type != ParamType::kInt) {
    return key + ": at_most applies to integers only";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> CheckSchema(const HandlerSchema& schema) {
  const std::string name(schema.name);
  if (schema.name.empty()) return "a handler schema without a name";
  for (size_t i = 0; i < schema.params.size(); ++i) {
    const ParamSpec& spec = schema.params[i];
    if (auto problem = CheckSpec(spec)) return name + ": " + *problem;
    for (size_t j = 0; j < i; ++j) {
      if (schema.params[j].key == spec.key) {
        return name + ": key " + std::string(spec.key) + " declared twice";
      }
    }
    if (spec.at_most.empty()) continue;
    const ParamSpec* cap = schema.Find(spec.at_most);
    if (!cap || cap == &spec || cap->type != ParamType::kInt) {
      return name + ": " + std::string(spec.key) + " at_most " +
             std::string(spec.at_most) + ": not another integer key";
    }
    if (cap->int_default < spec.int_default) {
      return name + ": default " + std::string(spec.key) + " exceeds default " +
             std::string(cap->key);
    }
  }
  return std::nullopt;
}

std::optional<std::string> MissingCheckedParam(const HandlerSchema& schema,
                                               const RouteParams& params) {
  for (const ParamSpec& spec : schema.params) {
    if (!spec.check) continue;
    const RouteParam& param = *params.Find(spec.key);
    if (param.where.in_file()) continue;  // checked as it was read
    std::string problem = spec.check(std::get<std::string>(param.value));
    if (!problem.empty())
      return "missing key " + param.key + " (" + problem + ")";
  }
  return std::nullopt;
}

}  // namespace gearbox
