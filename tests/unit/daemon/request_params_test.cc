#include <gtest/gtest.h>

#include "daemon/request.h"

namespace gearbox {
namespace {

TEST(RequestParamsTest, FindsCapturesByName) {
  Request request;
  request.params[0] = {"id", "123"};
  request.params[1] = {"rest", ""};
  request.param_count = 2;
  EXPECT_EQ(request.Param("id"), "123");
  ASSERT_NE(request.FindParam("rest"), nullptr);
  EXPECT_EQ(request.FindParam("rest")->value, "");
  EXPECT_EQ(request.FindParam("missing"), nullptr);
  EXPECT_EQ(request.Param("missing"), "");
  EXPECT_EQ(request.Params().size(), 2u);
}

TEST(RequestParamsTest, OnlyTheCountedCapturesAreSeen) {
  Request request;
  request.params[0] = {"id", "1"};
  request.params[1] = {"stale", "from an earlier request"};
  request.param_count = 1;
  EXPECT_EQ(request.FindParam("stale"), nullptr);
  EXPECT_EQ(request.Params().size(), 1u);
}

}  // namespace
}  // namespace gearbox
