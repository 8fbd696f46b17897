// Errors of processes and pipes: the system refused a fork or a pipe, or a child process
// ended in a way nobody planned. Neither is the database's fault, so they are not
// DatabaseErrors: the command line maps a ProcessError to exit 4, and says what failed.
#pragma once

#include <stdexcept>
#include <string>

namespace dedupsim {

class ProcessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "pipe: Too many open files": what failed (the system call) and errno's words.
ProcessError SystemCallFailed(const char* call, int error_number);

}  // namespace dedupsim
