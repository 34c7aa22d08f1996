// The one table of concurrency models (libevent's eventops[], nginx's `use
// epoll;`). Nothing registers itself from a static initializer: Bazel would
// drop the object.
#include "models/async_model.h"
#include "models/model.h"
#include "models/prefork_model.h"
#include "models/thread_pool_model.h"

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

constexpr std::string_view kModelNames[] = {"prefork", "threadpool", "async"};
static_assert(std::size(kModelNames) == std::size(kModelTable));

}  // namespace

std::unique_ptr<Model> MakeModel(std::string_view name) {
  for (const ModelKind &kind : kModelTable) {
    if (kind.name == name) return kind.make();
  }
  return nullptr;
}

std::span<const std::string_view> ModelNames() { return kModelNames; }

}  // namespace gearbox
