#include "tests/unit/config/builtin_vocabulary.h"

#include "daemon/handlers/handlers.h"
#include "models/model.h"

namespace gearbox::testing {

const ConfigVocabulary kVocabulary{ModelSchemas(), HandlerSchemas()};

std::string BuiltInNames() {
  std::string names;
  for (const HandlerSchema& schema : HandlerSchemas()) {
    if (schema.fault_test_only) continue;
    if (!names.empty()) names += ", ";
    names += schema.name;
  }
  return names;
}

}  // namespace gearbox::testing
