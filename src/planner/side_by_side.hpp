// SPDX-License-Identifier: MIT
// Independent tasks run side by side on the machine's cores, their outcomes read back in order.
// The planner's simulations are pure functions of their inputs, so it runs the next few it may
// need at once and takes their results one by one as a sequential search would: what it finds and
// counts does not depend on how many cores there are.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace optadvisor {

/// One task's result, or the exception it threw (rethrown where the result is read).
template <class T>
struct Outcome {
  std::optional<T> value;
  std::exception_ptr error;
  T& get() {
    if (error) std::rethrow_exception(error);
    return *value;
  }
};

/// Threads tasks run on: one per core, at least one, at most 64.
inline std::size_t side_by_side_threads() {
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 64);
}

/// Tasks 0 .. n - 1 started in index order by this thread and `threads - 1` helpers, none more than
/// `lead` past the one read last: at(i) waits for task i, running the next ones itself meanwhile.
/// Tasks past the last read are wasted work, never seen (the default lead keeps every core busy
/// and wastes at most one task per helper); the destructor stops the helpers (and waits for those running).
template <class T>
class RunAhead {
 public:
  RunAhead(std::size_t n, std::function<T(std::size_t)> task, std::size_t lead = side_by_side_threads() - 1,
           std::size_t threads = side_by_side_threads())
      : task_(std::move(task)), outcomes_(n), done_(n, false), lead_(lead) {
    for (std::size_t t = 1; t < std::min(n, threads); ++t) {
      try {
        helpers_.emplace_back([this] { help(); });
      } catch (const std::system_error&) {
        break;  // no more threads to be had: those started, and this one, do the rest
      }
    }
  }
  RunAhead(const RunAhead&) = delete;
  RunAhead& operator=(const RunAhead&) = delete;
  ~RunAhead() {
    {
      const std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    changed_.notify_all();
    for (std::thread& h : helpers_) h.join();
  }

  std::size_t size() const { return outcomes_.size(); }

  /// Task i's outcome, once it is done.
  Outcome<T>& at(std::size_t i) {
    std::unique_lock lock(mutex_);
    read_ = std::max(read_, i);
    changed_.notify_all();  // the window moved on
    while (!done_[i]) {
      if (may_start()) {
        run_next(lock);  // task i, or one after it in the window, while task i runs elsewhere
      } else {
        changed_.wait(lock);
      }
    }
    return outcomes_[i];
  }

 private:
  void help() {
    std::unique_lock lock(mutex_);
    while (!stopped_) {
      if (may_start()) {
        run_next(lock);
      } else if (next_ >= outcomes_.size()) {
        return;
      } else {
        changed_.wait(lock);
      }
    }
  }

  /// Whether the next task is within the window (called with the lock held).
  bool may_start() const { return next_ < outcomes_.size() && next_ <= read_ + lead_; }

  /// Runs the next task unlocked; called and returns with the lock held.
  void run_next(std::unique_lock<std::mutex>& lock) {
    const std::size_t i = next_++;
    lock.unlock();
    Outcome<T> out;
    try {
      out.value.emplace(task_(i));
    } catch (...) {
      out.error = std::current_exception();
    }
    lock.lock();
    outcomes_[i] = std::move(out);
    done_[i] = true;
    changed_.notify_all();
  }

  std::function<T(std::size_t)> task_;
  std::vector<Outcome<T>> outcomes_;
  std::vector<bool> done_;
  std::size_t lead_;
  std::size_t next_ = 0, read_ = 0;
  bool stopped_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::thread> helpers_;
};

}  // namespace optadvisor
