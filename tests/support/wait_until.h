// Bounded waits on an observable condition, for tests: a test that waits for
// what it needs (a log line, a counter, a process state) instead of sleeping
// a fixed time neither flakes on a slow host nor idles on a fast one.
#pragma once

#include <chrono>
#include <functional>

namespace gearbox::testing {

using Millis = std::chrono::milliseconds;

// Calls `done` until it returns true or `timeout` has passed (it is called
// once more at the deadline), pausing `every` between calls. True when it
// returned true.
bool WaitUntil(const std::function<bool()>& done, Millis timeout,
               std::chrono::microseconds every = Millis(5));

}  // namespace gearbox::testing
