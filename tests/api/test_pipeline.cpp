// The library, <ordo/ordo.h>: text in, vectors out.
#include <gtest/gtest.h>
#include <ordo/ordo.h>

namespace ordo {
namespace {

TEST(Pipeline, BatchOfEmptyTextsIsZeros) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  for (Pooling pooling : {Pooling::Mean, Pooling::First, Pooling::None}) {
    const auto out = pipeline.encode(std::vector<std::string>{"", ""}, pooling);
    ASSERT_EQ(out.size(), 2u);
    for (const Encoded& e : out) {
      EXPECT_EQ(e.rows, pooling == Pooling::None ? 0 : 1);
      for (float v : e.values) EXPECT_EQ(v, 0.0f);
    }
  }
}

}  // namespace
}  // namespace ordo
