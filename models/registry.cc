// The one table of concurrency models (libevent's eventops[], nginx's `use
// epoll;`). Nothing registers itself from a static initializer: Bazel would
// drop the object.
#include <array>

#include "models/async/async_model.h"
#include "models/async/async_section.h"
#include "models/model.h"
#include "models/prefork/prefork_model.h"
#include "models/prefork/prefork_section.h"
#include "models/threadpool/thread_pool_model.h"
#include "models/threadpool/thread_pool_section.h"

namespace gearbox {
namespace {

struct ModelKind {
  std::string_view name;  // [server] model's value and the section's name
  std::unique_ptr<Model> (*make)();
  std::span<const ModelKey> section;  // the keys of [name]
  int (*max_workers)(const ModelConfig& config);
};

constexpr ModelKind kModelTable[] = {
    {"prefork", &MakePreforkModel, kPreforkKeys, &PreforkMaxWorkers},
    {"threadpool", &MakeThreadPoolModel, kThreadPoolKeys,
     &ThreadPoolMaxWorkers},
    {"async", &MakeAsyncModel, kAsyncKeys, &AsyncMaxWorkers},
};

// Derived from the table: [server] model's valid values and what the config
// loader knows of each model's section.
constexpr auto kModelNames = [] {
  std::array<std::string_view, std::size(kModelTable)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kModelTable[i].name;
  return names;
}();

constexpr auto kModelSchemas = [] {
  std::array<ModelSchema, std::size(kModelTable)> schemas{};
  for (size_t i = 0; i < schemas.size(); ++i) {
    schemas[i] = {kModelTable[i].name, kModelTable[i].section};
  }
  return schemas;
}();

}  // namespace

std::unique_ptr<Model> MakeModel(std::string_view name) {
  for (const ModelKind& kind : kModelTable) {
    if (kind.name != name) continue;
    std::unique_ptr<Model> model = kind.make();
    model->name_ = kind.name;  // Name() is the table's, never a second literal
    model->max_workers_ = kind.max_workers;
    return model;
  }
  return nullptr;
}

std::span<const std::string_view> ModelNames() { return kModelNames; }

std::span<const ModelSchema> ModelSchemas() { return kModelSchemas; }

}  // namespace gearbox
