// accept() shared by the models: non-blocking, close-on-exec, TCP_NODELAY, and
// a clear answer to descriptor exhaustion. On EMFILE/ENFILE the caller pauses
// accepting for kAcceptPause (as nginx does with its accept events) instead of
// spinning on a listener that stays readable; pending clients wait in the
// kernel backlog and are served once descriptors free up.
#pragma once

#include <chrono>

namespace gearbox {

inline constexpr std::chrono::milliseconds kAcceptPause{100};

enum class AcceptError { kNone, kAgain, kExhausted, kOther };

// Returns the new connection's fd, or -1 with `error` set (kAgain: nothing to
// accept; kExhausted: out of descriptors, pause; kOther: logged, rate-limited).
int AcceptConnection(int listen_fd, AcceptError& error);

// Descriptor-exhaustion events so far (for tests and logs).
unsigned long EmfileEvents();

}  // namespace gearbox
