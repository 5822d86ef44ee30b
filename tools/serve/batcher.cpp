// ordo serve: the batching thread (batcher.h).
#include "tools/serve/batcher.h"

#include <exception>
#include <utility>

namespace ordo::serve {

Batcher::Batcher(Pipeline& pipeline, BatchLimits limits)
    : pipeline_(pipeline), limits_(limits), thread_([this] { loop(); }) {}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  arrived_.notify_one();
  thread_.join();
}

std::future<std::vector<std::vector<float>>> Batcher::submit(std::vector<Tokenization> texts) {
  Job job;
  for (const Tokenization& t : texts) job.tokens += t.ids.size();
  job.texts = std::move(texts);
  job.arrived = std::chrono::steady_clock::now();
  auto result = job.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(job));
  }
  arrived_.notify_one();
  return result;
}

void Batcher::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    arrived_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    // Wait for more requests until the batch is full or its first request has waited long enough
    // (with no wait, the batch is what is queued now).
    const auto deadline = queue_.front().arrived + limits_.wait;
    while (limits_.wait.count() > 0) {
      size_t texts = 0, tokens = 0;
      for (const Job& j : queue_) texts += j.texts.size(), tokens += j.tokens;
      if (stopping_ || texts >= size_t(limits_.max_texts) || tokens >= size_t(limits_.max_tokens)) break;
      if (arrived_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    // Take requests in the order they came while they fit; the first always goes.
    std::vector<Job> batch;
    size_t texts = 0, tokens = 0;
    while (!queue_.empty()) {
      const Job& j = queue_.front();
      if (!batch.empty() &&
          (texts + j.texts.size() > size_t(limits_.max_texts) || tokens + j.tokens > size_t(limits_.max_tokens)))
        break;
      texts += j.texts.size(), tokens += j.tokens;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    ++passes_, texts_ += texts;
    lock.unlock();
    run(batch);
    lock.lock();
  }
}

void Batcher::run(std::vector<Job>& batch) {
  std::vector<Tokenization> all;
  for (const Job& j : batch) all.insert(all.end(), j.texts.begin(), j.texts.end());
  try {
    // the model's own pooling and normalization (a sentence-transformers directory's), else the mean
    std::vector<Encoded> rows =
        pipeline_.encode(std::move(all), pipeline_.model_pooling(), pipeline_.model_normalize());
    size_t next = 0;
    for (Job& j : batch) {
      std::vector<std::vector<float>> mine;
      for (size_t i = 0; i < j.texts.size(); ++i) mine.push_back(std::move(rows[next++].values));
      j.done.set_value(std::move(mine));
    }
  } catch (...) {
    // One text spoilt the pass (activations that are not finite): run each request alone, so the
    // others still get their rows and only that request gets the error.
    if (batch.size() == 1) {
      batch[0].done.set_exception(std::current_exception());
      return;
    }
    for (Job& j : batch) {
      std::vector<Job> alone;
      alone.push_back(std::move(j));
      run(alone);
    }
  }
}

}  // namespace ordo::serve
