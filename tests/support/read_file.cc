#include "tests/support/read_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gearbox::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace gearbox::testing
