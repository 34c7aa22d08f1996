// The prefork master's table of worker children: one slot per child there
// may be (max_workers), each wanted or not, running or not. It forks, reaps
// and respawns children (a crash storm slows respawning down with
// exponential backoff instead of spinning, and says so loudly), and cuts off
// a child whose request is stuck past its deadline (request_kill.h). It
// grows by forking into free slots and retires children idle long enough
// (the decision is PoolScaler's). The caller (PreforkModel) serializes every
// call.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "models/model.h"
#include "models/prefork/head_guard.h"

namespace gearbox {

class PreforkWorkers {
 public:
  using Clock = std::chrono::steady_clock;

  // `slots` children at most; the head guard's stats slot follows theirs.
  PreforkWorkers(const ModelContext& ctx, size_t slots);

  // The guard's channels go to every child forked from now on (null: none).
  void set_guard(const HeadGuard* guard) { guard_ = guard; }

  // Wants slot `index` filled and forks its child now. The child writes one
  // byte to `ready_fd` once accepting (-1: no one waits). False when fork()
  // failed (retried a second later).
  bool Start(size_t index, int ready_fd);
  // Reaps children that exited and replaces the wanted ones that are due.
  void ReapAndRespawn(Clock::time_point now);
  // Signals every child for a request past deadline + kStuckGrace; SIGKILLs
  // those that did not exit within kKillEscalation of it.
  void KillStuck(Clock::time_point now);

  // Notes which children are active: holding a connection, or having taken
  // one (accepted or handed back) or served a request since the last call.
  void TrackActivity(Clock::time_point now);
  // Forks up to `n` children into free slots; returns how many started.
  int Grow(int n);
  // Retires children idle for `idle_timeout` (highest slots first) while
  // more than `min` are wanted: SIGUSR1, after which a child exits at once
  // (it holds no connection, so none is cut: an nginx keep-alive connection
  // would race its next request). Returns how many; *longest_idle the
  // longest idle time among them.
  int RetireIdle(Clock::time_point now, int min, Clock::duration idle_timeout,
                 Clock::duration* longest_idle);

  // Draining: `sig` to every running child; no respawns from now on.
  void SignalAll(int sig);
  // Reaps what exited; true while any child is still running.
  bool ReapForDrain();
  // SIGKILLs and reaps every running child (`reason` for the log).
  void KillAll(const char* reason);

  size_t slots() const { return children_.size(); }
  // Wanted slots: the current worker count.
  int wanted() const;
  // Wanted children holding a connection.
  int busy() const;
  // A crash storm is being backed off: no growth meanwhile.
  bool storming() const { return backoff_ != Clock::duration::zero(); }
  uint64_t spawned() const { return spawned_; }
  uint64_t exited() const { return exited_; }
  uint64_t recycled() const { return recycled_; }

 private:
  struct Child {
    pid_t pid = 0;        // 0 = not running
    bool wanted = false;  // replaced when it exits
    Clock::time_point respawn_at{};
    // A request being cut off: its start (the slot's current_start_us) and
    // when SIGKILL follows if the child is still there.
    uint64_t killing_start_us = 0;
    Clock::time_point kill_by{};
    // Activity seen last (accepted + requests) and when it last changed.
    uint64_t activity = 0;
    Clock::time_point active_at{};
  };

  bool Spawn(size_t index, int ready_fd);
  void OnExit(size_t index, int status, Clock::time_point now);
  void NoteCrash(Child& c, Clock::time_point now);
  WorkerStats& Slot(size_t index) { return ctx_.stats->Slot(index); }

  const ModelContext& ctx_;
  const HeadGuard* guard_ = nullptr;
  std::vector<Child> children_;
  std::deque<Clock::time_point> deaths_;
  Clock::duration backoff_{};
  bool draining_ = false;
  uint64_t spawned_ = 0, exited_ = 0, recycled_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
};

// "exit=drained", "signal=Killed", ... for the log.
std::string DescribeChildStatus(int status);

}  // namespace gearbox
