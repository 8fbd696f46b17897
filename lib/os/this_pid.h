// getpid() for every event this process stamps, without a system call each time: the value
// is read once per process and forgotten in every child at fork (a pthread_atfork handler).
#pragma once

namespace dedupsim {

int ThisPid();

}  // namespace dedupsim
