// The server's compute side: a fixed set of slots (one engine::Session each, all on one shared
// Model) and one compute thread that runs them all in one forward pass per step (continuous
// batching): the next token of every generating slot plus prompt chunks in the rest of an
// n_batch-token budget, so the weights are read once for all clients and a long prompt never
// holds up the others' streams for more than one pass. Requests beyond the slots wait in a
// bounded queue; beyond the queue, submit() refuses them (the HTTP layer answers 503).
// See docs/server.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.hpp"

namespace qinfer::server {

// One request, as the HTTP layer validated it.
struct Job {
  enum class Kind { kCompletion, kEmbedding };
  Kind kind = Kind::kCompletion;
  std::vector<TokenId> prompt;               // completion: the prompt's tokens
  std::vector<std::vector<TokenId>> inputs;  // embedding: one token list per input
  engine::SamplerParams sampler;
  int64_t max_tokens = -1;  // < 0: until an end-of-generation token or the context is full
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

// A request in flight: the compute thread produces, the HTTP handler consumes. Text comes out
// in complete UTF-8 pieces, with any tail that could still grow into a stop string held back.
class Task {
 public:
  explicit Task(Job job) : job(std::move(job)) {}
  const Job job;

  // What the handler reads once the task is done.
  struct Result {
    std::string finish_reason;  // "stop", "length", "cancelled", or "error"
    std::string error;          // when finish_reason is "error"
    int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
    double prompt_ms = 0, gen_ms = 0;
    std::vector<std::vector<float>> embeddings;
  };

  // Handler side. Waits up to `timeout_ms` for text or the end: returns the text produced since
  // the last call (possibly empty) and sets `done` once the task has finished.
  std::string wait_text(int timeout_ms, bool& done);
  void wait_done();
  Result result() const;
  // Any thread: the client has gone or the server is stopping.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Compute side.
  void emit(std::string_view text);
  void finish(Result r);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool done_ = false;
  Result result_;
  std::atomic<bool> cancelled_{false};
};

struct SchedulerOptions {
  int n_slots = 1;
  int64_t n_ctx_slot = 0;  // each slot's context
  int n_threads = 0;
  int n_batch = 512;         // the most prompt tokens one step evaluates
  int max_queue = 32;        // requests waiting for a slot beyond which submit() refuses
  bool cache_prompt = true;  // reuse a slot's cached prefix of the new prompt
  TensorType cache_k = TensorType::F16, cache_v = TensorType::F16;
};

// Counters for /metrics, summed over the server's life.
struct Stats {
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_tokens = 0;
  double prompt_seconds = 0, gen_seconds = 0;
  int64_t tasks_done = 0, tasks_cancelled = 0;
  int busy_slots = 0, queued = 0, n_slots = 0;
};

class Scheduler {
 public:
  Scheduler(std::shared_ptr<const engine::Model> model, const SchedulerOptions& options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the task; false when every slot is busy and the queue is full.
  bool submit(const std::shared_ptr<Task>& task);
  // Cancels every queued and running task and stops the compute thread.
  void shutdown();
  Stats stats() const;
  int64_t n_ctx_slot() const { return options_.n_ctx_slot; }

 private:
  struct Slot {
    Slot(std::shared_ptr<const engine::Model> model, const engine::SessionOptions& o)
        : session(std::move(model), o) {}
    engine::Session session;
    std::vector<TokenId> cached;  // the tokens in the session's cache, in order
    std::shared_ptr<Task> task;
    size_t prompt_done = 0;  // prompt tokens in the cache
    std::optional<engine::Sampler> sampler;
    Utf8Stream utf8;
    std::string text;  // generated so far (cut at a stop string)
    size_t sent = 0;   // bytes of `text` handed to the task
    Task::Result result;
    std::chrono::steady_clock::time_point t0;
  };

  void loop();
  // Finishes the queued tasks whose clients have gone (mu_ held).
  void drop_cancelled_locked();
  void start(Slot& slot, std::shared_ptr<Task> task);
  // One forward pass for every busy slot: a sampled token from each generating slot, and
  // prompt chunks in the rest of the n_batch budget. Appends the slots whose task ended.
  void run_pass(std::vector<Slot*>& finished);
  // Samples a generating slot's next token; nullopt when its task has ended.
  std::optional<TokenId> sample(Slot& slot);
  void run_embedding(Slot& slot);
  void fail(Slot& slot, const std::string& message);
  void end(Slot& slot, const std::string& reason);
  // Hands the task the text that can no longer become part of a stop string.
  void send_safe_text(Slot& slot, bool all);

  std::shared_ptr<const engine::Model> model_;
  SchedulerOptions options_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  int busy_ = 0;
  bool stopping_ = false;
  size_t first_prompt_slot_ = 0;  // where the prompt chunks' turn starts, rotating
  Stats stats_;
  std::thread thread_;
};

}  // namespace qinfer::server
