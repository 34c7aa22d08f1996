// tests/integration/models.bzl's MODELS (passed as --models=a,b,c) must equal
// the daemon's one table of models, in order: otherwise a model would go
// untested, or a test target would run a model that does not exist. Each
// row's description of its config section ([threadpool], ...) must be one
// the loader can follow.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <variant>
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

// A row's section schema is well-formed: its keys are unique, and a pool's
// ceiling names an integer key of the same section (the loader relies on it).
TEST(ModelsListTest, SectionSchemasAreWellFormed) {
  ASSERT_EQ(gearbox::ModelSchemas().size(), gearbox::ModelNames().size());
  for (size_t i = 0; i < gearbox::ModelSchemas().size(); ++i) {
    const gearbox::ModelSchema& schema = gearbox::ModelSchemas()[i];
    EXPECT_EQ(schema.name, gearbox::ModelNames()[i]);
    std::set<std::string_view> keys;
    for (const gearbox::ModelKey& key : schema.keys) {
      EXPECT_TRUE(keys.insert(key.key).second)
          << schema.name << ": key " << key.key << " twice";
      EXPECT_LE(key.min, key.max) << schema.name << "." << key.key;
      if (key.ceiling_of.empty()) continue;
      EXPECT_TRUE(std::holds_alternative<gearbox::IntAt>(key.at))
          << schema.name << "." << key.key;
      bool found = false;
      for (const gearbox::ModelKey& min : schema.keys) {
        found = found || (min.key == key.ceiling_of &&
                          std::holds_alternative<gearbox::IntAt>(min.at));
      }
      EXPECT_TRUE(found) << schema.name << "." << key.key << ": ceiling of "
                         << key.ceiling_of << ", not an integer key here";
    }
  }
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
