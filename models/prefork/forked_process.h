// What every process the prefork master forks (worker children and the head
// guard) does first: drop the descriptors it must not hold and take the
// signal dispositions of a worker, not of the master.
#pragma once

#include <set>

namespace gearbox {

// The child inherits every descriptor of the master, including connections of
// another generation draining in the same process and the other ends of the
// hand-off channels. Holding a copy would keep those clients' connections open
// after their owner closes them (and hide a channel's end of stream), so close
// everything but stdio and `keep`.
void CloseInheritedFds(const std::set<int>& keep);

// SIGTERM runs `on_term` (no SA_RESTART: a blocking poll() returns EINTR);
// SIGINT/SIGQUIT kill at once; SIGHUP (reloads are the master's business) and
// SIGPIPE are ignored; the master's blocked-signal mask is cleared; and the
// process gets SIGTERM if the master dies without stopping it.
void SetUpForkedSignals(void (*on_term)(int));

}  // namespace gearbox
