// The library, <ordo/ordo.h>: text in, vectors out.
#include <gtest/gtest.h>
#include <ordo/ordo.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

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

// The contract in ordo.h: one Pipeline shared by several threads, while another thread changes the
// thread count again and again, gives every caller the vectors one thread alone gives.
TEST(Pipeline, SharedByThreadsWhileTheThreadCountChanges) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  const std::vector<std::vector<std::string>> batches = {
      {"the cat sat on the mat"},
      {"a dog", "colourless green ideas sleep furiously", ""},
      {std::string(200, 'a') + " long text " + std::string(300, 'b'), "short"}};
  set_num_threads(1);
  std::vector<std::vector<Encoded>> alone;
  for (const auto& texts : batches) alone.push_back(pipeline.encode(texts, Pooling::None));

  std::atomic<int> mismatches{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 6; ++r) {
        const size_t k = size_t(i + r) % batches.size();
        const auto out = pipeline.encode(batches[k], Pooling::None);
        for (size_t b = 0; b < out.size(); ++b)
          if (out[b].values != alone[k][b].values) ++mismatches;
      }
    });
  std::thread changer([&] {
    for (int r = 0; !done; ++r) set_num_threads(1 + r % 3);
  });
  for (std::thread& t : threads) t.join();
  done = true;
  changer.join();
  set_num_threads(0);
  EXPECT_EQ(mismatches, 0) << "texts whose vectors differ from the same batch on one thread";
}

}  // namespace
}  // namespace ordo
