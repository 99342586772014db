#include "tools/server/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace qinfer::server {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

std::string Task::wait_text(int timeout_ms, bool& done) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return done_ || !pending_.empty(); });
  done = done_;
  std::string out;
  out.swap(pending_);
  return out;
}

void Task::wait_done() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return done_; });
}

Task::Result Task::result() const {
  std::lock_guard lock(mu_);
  return result_;
}

void Task::emit(std::string_view text) {
  {
    std::lock_guard lock(mu_);
    pending_ += text;
  }
  cv_.notify_all();
}

void Task::finish(Result r) {
  {
    std::lock_guard lock(mu_);
    result_ = std::move(r);
    done_ = true;
  }
  cv_.notify_all();
}

Scheduler::Scheduler(std::shared_ptr<const engine::Model> model, const SchedulerOptions& options)
    : model_(std::move(model)), options_(options) {
  for (int i = 0; i < options_.n_slots; ++i) {
    slots_.push_back(
        std::make_unique<Slot>(model_, engine::SessionOptions{.n_ctx = options_.n_ctx_slot,
                                                              .cache_k = options_.cache_k,
                                                              .cache_v = options_.cache_v,
                                                              .n_threads = options_.n_threads}));
  }
  stats_.n_slots = options_.n_slots;
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

bool Scheduler::submit(const std::shared_ptr<Task>& task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    drop_cancelled_locked();
    const int free_slots = options_.n_slots - busy_;
    if (static_cast<int>(queue_.size()) >= free_slots + options_.max_queue) return false;
    queue_.push_back(task);
  }
  cv_.notify_all();
  return true;
}

void Scheduler::shutdown() {
  std::deque<std::shared_ptr<Task>> queued;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    queued.swap(queue_);
    for (auto& slot : slots_)
      if (slot->task) slot->task->cancel();
  }
  cv_.notify_all();
  for (auto& task : queued) task->finish({.finish_reason = "cancelled"});
  if (thread_.joinable()) thread_.join();
}

void Scheduler::drop_cancelled_locked() {
  std::erase_if(queue_, [&](const std::shared_ptr<Task>& task) {
    if (!task->cancelled()) return false;
    task->finish({.finish_reason = "cancelled"});
    ++stats_.tasks_cancelled;
    return true;
  });
}

Stats Scheduler::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.busy_slots = busy_;
  s.queued = static_cast<int>(queue_.size());
  return s;
}

void Scheduler::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    // Each waiting task takes the free slot whose cache shares the longest prefix with its
    // prompt (a chat's next turn finds its conversation where it left it).
    drop_cancelled_locked();
    while (!queue_.empty() && busy_ < options_.n_slots) {
      std::shared_ptr<Task> task = std::move(queue_.front());
      queue_.pop_front();
      Slot* best = nullptr;
      size_t best_len = 0;
      for (auto& slot : slots_) {
        if (slot->task) continue;
        const size_t len = common_prefix(slot->cached, task->job.prompt);
        if (best == nullptr || len > best_len) best = slot.get(), best_len = len;
      }
      ++busy_;
      start(*best, std::move(task));
    }
    if (busy_ == 0) {
      if (stopping_) return;
      cv_.wait(lock);
      continue;
    }
    lock.unlock();
    // Only this thread touches the slots' sessions; the lock guards the queue, the slots' task
    // pointers and the counters.
    std::vector<Slot*> finished;
    run_pass(finished);
    lock.lock();
    for (Slot* slot : finished) {
      const Task::Result& r = slot->result;
      stats_.prompt_tokens += r.prompt_tokens - r.cached_tokens;
      stats_.cached_tokens += r.cached_tokens;
      stats_.generated_tokens += r.completion_tokens;
      stats_.prompt_seconds += r.prompt_ms / 1000.0;
      stats_.gen_seconds += r.gen_ms / 1000.0;
      ++(r.finish_reason == "cancelled" ? stats_.tasks_cancelled : stats_.tasks_done);
      slot->task.reset();
      --busy_;
    }
  }
}

void Scheduler::start(Slot& slot, std::shared_ptr<Task> task) {
  slot.task = std::move(task);
  slot.result = {};
  slot.text.clear();
  slot.sent = 0;
  slot.utf8 = {};
  slot.sampler.reset();
  slot.t0 = Clock::now();
  const std::vector<TokenId>& prompt = slot.task->job.prompt;
  size_t keep = 0;
  if (options_.cache_prompt && !prompt.empty()) {
    // Keep the cached prefix, but evaluate at least the prompt's last token for its logits.
    keep = std::min(common_prefix(slot.cached, prompt), prompt.size() - 1);
  }
  slot.session.truncate(static_cast<int64_t>(keep));
  slot.cached.resize(keep);
  slot.prompt_done = keep;
  slot.result.cached_tokens = static_cast<int64_t>(keep);
  slot.result.prompt_tokens = static_cast<int64_t>(prompt.size());
}

void Scheduler::run_pass(std::vector<Slot*>& finished) {
  std::vector<Slot*> batch;
  std::vector<std::vector<TokenId>> tokens;
  int64_t budget = options_.n_batch;
  // The generating slots' next tokens first (and whole embedding tasks, which run alone).
  for (auto& owned : slots_) {
    Slot& slot = *owned;
    if (!slot.task) continue;
    try {
      if (slot.task->cancelled()) {
        end(slot, "cancelled");
      } else if (slot.task->job.kind == Job::Kind::kEmbedding) {
        run_embedding(slot);
      } else if (slot.prompt_done < slot.task->job.prompt.size()) {
        continue;  // a prompt chunk, below
      } else if (const std::optional<TokenId> next = sample(slot)) {
        batch.push_back(&slot);
        tokens.push_back({*next});
        --budget;
        continue;
      }
    } catch (const std::exception& e) {
      fail(slot, e.what());
    }
    finished.push_back(&slot);
  }
  // Prompt chunks in the rest of the budget, the slots taking turns to go first.
  budget = std::max<int64_t>(budget, 1);
  const size_t n_slots = slots_.size();
  for (size_t i = 0; i < n_slots && budget > 0; ++i) {
    Slot& slot = *slots_[(first_prompt_slot_ + i) % n_slots];
    if (!slot.task || slot.task->job.kind != Job::Kind::kCompletion ||
        std::find(finished.begin(), finished.end(), &slot) != finished.end())
      continue;
    const std::vector<TokenId>& prompt = slot.task->job.prompt;
    if (slot.prompt_done >= prompt.size()) continue;
    const auto take =
        std::min<size_t>(static_cast<size_t>(budget), prompt.size() - slot.prompt_done);
    batch.push_back(&slot);
    tokens.emplace_back(prompt.begin() + static_cast<std::ptrdiff_t>(slot.prompt_done),
                        prompt.begin() + static_cast<std::ptrdiff_t>(slot.prompt_done + take));
    budget -= static_cast<int64_t>(take);
  }
  first_prompt_slot_ = (first_prompt_slot_ + 1) % n_slots;
  if (batch.empty()) return;

  std::vector<engine::Session*> sessions;
  for (Slot* slot : batch) sessions.push_back(&slot->session);
  const auto t = Clock::now();
  try {
    engine::Session::eval_batch(sessions, tokens);
  } catch (const std::exception& e) {
    for (Slot* slot : batch) {
      fail(*slot, e.what());
      finished.push_back(slot);
    }
    return;
  }
  const double ms = ms_since(t);
  for (size_t i = 0; i < batch.size(); ++i) {
    Slot& slot = *batch[i];
    slot.cached.insert(slot.cached.end(), tokens[i].begin(), tokens[i].end());
    if (slot.prompt_done < slot.task->job.prompt.size()) {
      slot.prompt_done += tokens[i].size();
      slot.result.prompt_ms += ms;
    } else {
      slot.result.gen_ms += ms;
    }
  }
}

std::optional<TokenId> Scheduler::sample(Slot& slot) {
  const Job& job = slot.task->job;
  const Tokenizer& tok = *model_->tokenizer;
  if (!slot.sampler) {
    engine::SamplerParams sp = job.sampler;
    if (job.ignore_eos) {
      for (TokenId id = 0; id < model_->config.n_vocab; ++id)
        if (tok.is_end_of_generation(id)) sp.logit_bias.emplace_back(id, -INFINITY);
    }
    slot.sampler.emplace(sp);
  }
  const auto t = Clock::now();
  const TokenId id = slot.sampler->sample(slot.session.logits(), slot.cached);
  if (tok.is_end_of_generation(id)) {
    slot.result.gen_ms += ms_since(t);
    end(slot, "stop");
    return std::nullopt;
  }
  ++slot.result.completion_tokens;
  slot.text += slot.utf8.push(tok.piece(id));
  size_t stop_at = std::string::npos;
  for (const std::string& s : job.stop) {
    if (!s.empty()) stop_at = std::min(stop_at, slot.text.find(s));
  }
  slot.result.gen_ms += ms_since(t);
  if (stop_at != std::string::npos) {
    slot.text.resize(stop_at);
    slot.utf8 = {};
    end(slot, "stop");
    return std::nullopt;
  }
  send_safe_text(slot, false);
  const bool at_max = job.max_tokens >= 0 && slot.result.completion_tokens >= job.max_tokens;
  if (at_max || slot.session.n_past() + 1 > slot.session.n_ctx()) {
    end(slot, "length");
    return std::nullopt;
  }
  return id;
}

void Scheduler::fail(Slot& slot, const std::string& message) {
  slot.session.reset();
  slot.cached.clear();
  slot.result.error = message;
  end(slot, "error");
}

void Scheduler::run_embedding(Slot& slot) {
  const Job& job = slot.task->job;
  const auto t = Clock::now();
  slot.cached.clear();  // embed() uses the cache as scratch
  for (const auto& tokens : job.inputs) {
    if (slot.task->cancelled()) {
      end(slot, "cancelled");
      return;
    }
    slot.result.embeddings.push_back(slot.session.embed(tokens, Pooling::kMean, true));
    slot.result.prompt_tokens += static_cast<int64_t>(tokens.size());
  }
  slot.result.prompt_ms = ms_since(t);
  end(slot, "stop");
}

void Scheduler::send_safe_text(Slot& slot, bool all) {
  size_t safe = slot.text.size();
  if (!all) {
    // Hold back a tail that is the beginning of a stop string.
    for (const std::string& s : slot.task->job.stop) {
      for (size_t k = std::min(s.size() - (s.empty() ? 0 : 1), slot.text.size()); k > 0; --k) {
        if (std::string_view(slot.text).ends_with(std::string_view(s).substr(0, k))) {
          safe = std::min(safe, slot.text.size() - k);
          break;
        }
      }
    }
  }
  if (safe > slot.sent) {
    slot.task->emit(std::string_view(slot.text).substr(slot.sent, safe - slot.sent));
    slot.sent = safe;
  }
}

void Scheduler::end(Slot& slot, const std::string& reason) {
  if (reason == "stop" || reason == "length") {
    slot.text += slot.utf8.flush();
    send_safe_text(slot, true);
  }
  slot.result.finish_reason = reason;
  slot.task->finish(slot.result);
}

}  // namespace qinfer::server
