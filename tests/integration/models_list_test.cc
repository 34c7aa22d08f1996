// tests/integration/models.bzl's MODELS (passed as --models=a,b,c) must equal
// the daemon's one table of models, in order: otherwise a model would go
// untested, or a test target would run a model that does not exist. Likewise
// for the typed per-model sections of the config ([threadpool], ...): the
// loader accepts a model's section when the model is in the table, and reads
// it into ModelConfig's part for that model.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.h"
#include "models/model.h"

namespace {

std::vector<std::string>& BzlModels() {
  static std::vector<std::string> models;
  return models;
}

bool ParseModels(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, 9) != "--models=") continue;
    std::string_view list = arg.substr(9);
    while (!list.empty()) {
      size_t comma = list.find(',');
      BzlModels().emplace_back(list.substr(0, comma));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    return true;
  }
  fprintf(stderr, "models_list_test: pass --models=NAME,NAME,...\n");
  return false;
}

TEST(ModelsListTest, BzlListEqualsRegistry) {
  std::vector<std::string> registry;
  for (std::string_view name : gearbox::ModelNames()) {
    registry.emplace_back(name);
  }
  EXPECT_EQ(BzlModels(), registry)
      << "MODELS in tests/integration/models.bzl must list exactly the models "
         "of models/registry.cc, in table order";
}

TEST(ModelsListTest, ConfigSectionsEqualRegistry) {
  const std::vector<std::string_view> registry(gearbox::ModelNames().begin(),
                                               gearbox::ModelNames().end());
  EXPECT_EQ(gearbox::ModelSectionNames(), registry)
      << "config/fields.cc's kModelSections must have one typed section per "
         "model of models/registry.cc, in table order";
}

TEST(ModelsListTest, EveryListedModelCanBeMade) {
  for (const std::string& name : BzlModels()) {
    std::unique_ptr<gearbox::Model> model = gearbox::MakeModel(name);
    if (!model) {
      ADD_FAILURE() << "MakeModel(\"" << name << "\") returned null";
      continue;
    }
    EXPECT_EQ(model->Name(), name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!ParseModels(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
