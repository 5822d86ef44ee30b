// ordo serve: texts of concurrent requests gathered into one forward pass.
//
// Each request's texts wait in a queue; one thread takes them out in batches and runs each batch as
// one padded encode, then hands every request exactly its own rows. A batch closes when it holds
// max_texts texts or max_tokens tokens, or when its first request has waited `wait` (the rule of
// text-embeddings-inference's router: max_batch_requests, max_batch_tokens). A request is never
// split: one larger than the limits runs as a batch of its own.
//
// Why it can pay: a pass over B short texts costs far less than B passes (the matrix products get
// B times the rows for the same per-pass overhead). It pays when the passes are what a request
// costs; for the default model a pass of one short text is cheaper than its request's HTTP and
// JSON work, and docs/serve.md measures how little batching then gains.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <ordo/ordo.h>

namespace ordo::serve {

// By default the library's one batching policy (Pipeline::kBatchTexts, kBatchTokens), as for the
// command line and Python; ordo serve --batch-texts and --batch-tokens override it.
struct BatchLimits {
  int max_texts = int(Pipeline::kBatchTexts);    // texts in one pass
  int max_tokens = int(Pipeline::kBatchTokens);  // tokens in one pass (the sum of the texts' lengths)
  // The longest the first request of a batch waits for others. 0: none, a batch is what queued up
  // while the last pass ran (text-embeddings-inference's way); more trades latency at low load for
  // fuller batches, and rests on timed waits, which a busy virtual machine can wake seconds late.
  std::chrono::microseconds wait{0};
};

class Batcher {
 public:
  // Starts the batching thread.
  Batcher(Pipeline& pipeline, BatchLimits limits);
  // Runs what is still queued, then ends the thread.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // The mean-pooled vectors (d floats each) of one request's texts, in order, once their batch
  // has run. The future holds the pass's exception (an InputError naming the text) if it failed.
  std::future<std::vector<std::vector<float>>> submit(std::vector<Tokenization> texts);

  // How many passes ran and how many texts they held (for the line at exit).
  size_t passes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return passes_;
  }
  size_t texts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return texts_;
  }

 private:
  struct Job {
    std::vector<Tokenization> texts;
    size_t tokens = 0;
    std::chrono::steady_clock::time_point arrived;
    std::promise<std::vector<std::vector<float>>> done;
  };
  void loop();
  // One pass over the jobs' texts; the rows go back to each job in order.
  void run(std::vector<Job>& batch);

  Pipeline& pipeline_;
  const BatchLimits limits_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  size_t passes_ = 0, texts_ = 0;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace ordo::serve
