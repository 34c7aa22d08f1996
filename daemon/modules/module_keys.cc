#include "daemon/modules/module_keys.h"

#include "config/loader.h"

namespace gearbox {
namespace {

// An unterminated list reads past its end: stop at a size no module needs.
constexpr size_t kMaxKeys = 256;

std::string Describe(const ParamValue& value) {
  if (std::holds_alternative<int64_t>(value)) return "an integer";
  if (std::holds_alternative<bool>(value)) return "a boolean";
  if (std::holds_alternative<std::string>(value)) return "a string";
  return "an array";
}

// What is wrong with `value` for `spec`, or nullopt.
std::optional<std::string> Check(const ParamSpec& spec,
                                 const ParamValue& value) {
  switch (spec.type) {
    case ParamType::kInt: {
      const auto* n = std::get_if<int64_t>(&value);
      if (!n) return "expected an integer, got " + Describe(value);
      if (*n < spec.min || *n > spec.max) {
        return std::to_string(*n) + " out of range (" +
               std::to_string(spec.min) + ".." + std::to_string(spec.max) + ")";
      }
      return std::nullopt;
    }
    case ParamType::kBool:
      if (std::holds_alternative<bool>(value)) return std::nullopt;
      return "expected true or false, got " + Describe(value);
    default:
      if (std::holds_alternative<std::string>(value)) return std::nullopt;
      return "expected a string, got " + Describe(value);
  }
}

}  // namespace

std::unique_ptr<const ModuleKeys> ModuleKeys::Read(const char* module,
                                                   const gearbox_key* keys,
                                                   std::string* error) {
  std::unique_ptr<ModuleKeys> keep(new ModuleKeys());
  ModuleKeys& out = *keep;
  out.name_ = module;
  size_t n = 0;
  while (n < kMaxKeys && keys[n].name) ++n;
  if (n == kMaxKeys) {
    *error = "its key list has no GEARBOX_KEY_END within " +
             std::to_string(kMaxKeys) + " entries";
    return nullptr;
  }
  out.docs_.reserve(n);  // the specs view these strings: no reallocation
  for (size_t i = 0; i < n; ++i) {
    const gearbox_key& k = keys[i];
    const bool required = (k.flags & GEARBOX_KEY_REQUIRED) != 0;
    std::string doc = k.doc ? k.doc : "";
    if (required) doc += doc.empty() ? "required" : " (required)";
    out.docs_.push_back(std::move(doc));
    out.required_.push_back(required);
    ParamSpec spec;
    if (k.type == GEARBOX_TYPE_INT) {
      spec = IntParam(k.name, k.int_default, k.min, k.max, out.docs_.back());
    } else if (k.type == GEARBOX_TYPE_BOOL) {
      if (k.int_default != 0 && k.int_default != 1) {
        *error =
            std::string("key ") + k.name + ": a boolean's default is 0 or 1";
        return nullptr;
      }
      spec = BoolParam(k.name, k.int_default != 0, out.docs_.back());
    } else if (k.type == GEARBOX_TYPE_STRING) {
      spec = StringParam(k.name, k.string_default ? k.string_default : "",
                         out.docs_.back());
    } else {
      *error = std::string("key ") + k.name + ": unknown type " +
               std::to_string(k.type) + " (GEARBOX_TYPE_INT, _BOOL, _STRING)";
      return nullptr;
    }
    out.specs_.push_back(spec);
  }
  out.schema_ = {out.name_, "", out.specs_, false};
  if (auto problem = CheckSchema(out.schema_)) {
    *error = "its key list: " + *problem;
    return nullptr;
  }
  return keep;
}

std::optional<std::string> ModuleKeys::Apply(RouteParams& params,
                                             SourcePosition* where) const {
  for (const RouteParam& param : params.entries()) {
    const ParamSpec* spec = schema_.Find(param.key);
    *where = param.where;
    if (!spec) {
      std::string valid;
      for (const ParamSpec& s : specs_) {
        valid += (valid.empty() ? "" : ", ") + std::string(s.key);
      }
      return param.key + ": unknown key for module \"" + name_ +
             "\" (valid: " + (valid.empty() ? "none" : valid) + ")";
    }
    if (auto problem = Check(*spec, param.value)) {
      return param.key + ": module \"" + name_ + "\": " + *problem;
    }
  }
  RouteParams ordered = DefaultParams(schema_);
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (const RouteParam* given = params.Find(specs_[i].key)) {
      ordered.Set(given->key, given->value, given->where);
    } else if (required_[i]) {
      *where = {};
      return "module \"" + name_ + "\": missing required key " +
             std::string(specs_[i].key);
    }
  }
  params = std::move(ordered);
  return std::nullopt;
}

}  // namespace gearbox
