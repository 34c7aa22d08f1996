// The one table of concurrency models (libevent's eventops[], nginx's `use
// epoll;`). Nothing registers itself from a static initializer: Bazel would
// drop the object.
#include <array>

#include "models/async/async_model.h"
#include "models/model.h"
#include "models/prefork/prefork_model.h"
#include "models/threadpool/thread_pool_model.h"

namespace gearbox {
namespace {

struct ModelKind {
  std::string_view name;
  std::unique_ptr<Model> (*make)();
};

constexpr ModelKind kModelTable[] = {
    {"prefork", &MakePreforkModel},
    {"threadpool", &MakeThreadPoolModel},
    {"async", &MakeAsyncModel},
};

// Derived from the table: [server] model's valid values and, through the
// config loader's vocabulary, the per-model sections a file may have.
constexpr auto kModelNames = [] {
  std::array<std::string_view, std::size(kModelTable)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kModelTable[i].name;
  return names;
}();

}  // namespace

std::unique_ptr<Model> MakeModel(std::string_view name) {
  for (const ModelKind& kind : kModelTable) {
    if (kind.name != name) continue;
    std::unique_ptr<Model> model = kind.make();
    model->name_ = kind.name;  // Name() is the table's, never a second literal
    return model;
  }
  return nullptr;
}

std::span<const std::string_view> ModelNames() { return kModelNames; }

}  // namespace gearbox
