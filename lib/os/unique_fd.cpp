#include "os/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/process_error.h"

namespace dedupsim {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Pipe MakePipe(int flags) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) throw SystemCallFailed("pipe", errno);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

ProcessError SystemCallFailed(const char* call, int error_number) {
  return ProcessError(std::string(call) + ": " + std::strerror(error_number));
}

}  // namespace dedupsim
