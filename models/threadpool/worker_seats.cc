#include "models/threadpool/worker_seats.h"

namespace gearbox {

WorkerSeats::WorkerSeats(int seats, size_t workers)
    : free_(seats), seat_(new Seat[workers]), workers_(workers) {}

bool WorkerSeats::Acquire(size_t worker, Clock::time_point give_up,
                          bool* idle) {
  std::unique_lock<std::mutex> lock(mu_);
  followers_.fetch_add(1, std::memory_order_relaxed);
  auto ready = [this] { return closed_ || free_ > 0; };
  bool woke = true;
  if (give_up == Clock::time_point::max()) {
    cv_.wait(lock, ready);
  } else {
    woke = cv_.wait_until(lock, give_up, ready);
  }
  followers_.fetch_sub(1, std::memory_order_relaxed);
  if (!woke) *idle = true;
  if (!woke || closed_) return false;
  --free_;
  seat_[worker].held.store(true, std::memory_order_relaxed);
  return true;
}

void WorkerSeats::Give() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++free_;
  }
  cv_.notify_one();
}

void WorkerSeats::Release(size_t worker) {
  if (seat_[worker].held.exchange(false)) Give();
}

bool WorkerSeats::Retake(uint64_t now_us, uint64_t after_us) {
  if (followers() == 0) return false;
  bool pending = false;  // a seated worker busy, not past the limit yet
  for (size_t i = 0; i < workers_; ++i) {
    const uint64_t since = seat_[i].busy_since_us.load();
    if (since == 0 || !seat_[i].held.load()) continue;
    // A turn that began after now_us was read is not past the limit.
    if (now_us < since + after_us) {
      pending = true;
    } else if (seat_[i].held.exchange(false)) {
      Give();
    }
  }
  return pending;
}

void WorkerSeats::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace gearbox
