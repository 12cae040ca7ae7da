// A persistent pool of decode threads for the list overloads of the decode operators
// (torch_ops.cpp). Torch-free.
#pragma once
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace trivium {

// A persistent pool of decode threads for lists. Each keeps its malloc arena, so the
// pages of the images a call frees serve the next call's images; the main thread's
// heap is trimmed back to the system when a list of images is freed, and new threads
// start new arenas, both page-faulting every image afresh. Threads are created on
// demand, never joined (the process ends them), and forgotten in a forked child.
class DecodePool {
public:
    // Runs task(i) for every i < n on up to `threads` pool threads, each taking the
    // next index; returns when all are done. The caller only waits (a single item
    // runs on the caller).
    void run(size_t n, size_t threads, const std::function<void(size_t)>& task) {
        if (n == 1) return task(0);  // one item: a hand-over would cost more than it saves
        auto batch = std::make_shared<Batch>(task, n, std::min(threads, n));
        {
            std::lock_guard<std::mutex> lock(mutex_);
            while (workers_ < batch->runners) {
                std::thread([this] { work(); }).detach();
                ++workers_;
            }
            for (size_t r = 0; r < batch->runners; ++r) queue_.push_back(batch);
        }
        wake_.notify_all();
        std::unique_lock<std::mutex> lock(batch->mutex);
        batch->done.wait(lock, [&] { return batch->finished == batch->runners; });
    }

private:
    struct Batch {
        Batch(const std::function<void(size_t)>& t, size_t count, size_t r)
            : task(t), n(count), runners(r) {}
        const std::function<void(size_t)>& task;
        const size_t n, runners;
        std::atomic<size_t> next{0};
        std::mutex mutex;
        std::condition_variable done;
        size_t finished = 0;
    };

    void work() {
        for (;;) {
            std::shared_ptr<Batch> batch;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return !queue_.empty(); });
                batch = std::move(queue_.front());
                queue_.pop_front();
            }
            for (size_t i; (i = batch->next.fetch_add(1)) < batch->n;) batch->task(i);
            {
                std::lock_guard<std::mutex> lock(batch->mutex);
                ++batch->finished;
            }
            batch->done.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Batch>> queue_;
    size_t workers_ = 0;
};

// The process's pool: created on first use (two threads racing keep one; a pool starts
// no thread before its first list), and forgotten (leaked) in a forked child.
inline std::atomic<DecodePool*> decode_pool{nullptr};

inline DecodePool& get_decode_pool() {
    static const bool registered = [] {
        pthread_atfork(nullptr, nullptr, [] { decode_pool.store(nullptr); });
        return true;
    }();
    (void)registered;
    DecodePool* pool = decode_pool.load();
    if (pool != nullptr) return *pool;
    auto* created = new DecodePool();
    if (decode_pool.compare_exchange_strong(pool, created)) return *created;
    delete created;
    return *pool;
}

}  // namespace trivium
