// Test-only pause points and settings, for the races the tests must hit every time (a kill right after
// fork, an interrupt in a run's first milliseconds). In a build with DEDUPSIM_PAUSE_POINTS
// (the test build: CMake option DEDUPSIM_TESTS) a point named in the environment variable
// DEDUPSIM_PAUSE_AT (a name, or several separated by commas) writes "dedupsim: paused at NAME pid PID" on stderr and then
// stops there; in any other build the calls compile to nothing and the variable is never
// read.
#pragma once

namespace dedupsim {

// Blocks the calling thread for ever (signals still reach the process: the test ends it
// with SIGINT, SIGTERM or SIGKILL).
void PauseHere(const char* name);
// Stops the whole process with SIGSTOP; the test continues it with SIGCONT.
void StopHere(const char* name);

// A test-only setting: in the test build, the positive integer in the environment variable
// name (read once per call); 0 when it is unset or not a positive integer, and always 0 in
// any other build, which never reads the variable.
long TestOnlySetting(const char* name);

}  // namespace dedupsim
