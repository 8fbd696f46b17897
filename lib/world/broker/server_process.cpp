#include "world/broker/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/close_range.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "os/process_error.h"
#include "os/run_files.h"
#include "os/unique_fd.h"
#include "world/broker/broker.h"

extern char** environ;

namespace dedupsim::broker_server {

namespace {

using SteadyClock = std::chrono::steady_clock;

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);
  return 0;
}

}  // namespace

pid_t Start(const Spawn& spawn) {
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : spawn.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  if (!spawn.replace_environment) {
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  }
  for (const std::string& e : spawn.environment) env_strings.push_back(e);
  std::vector<char*> env;
  for (std::string& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  const pid_t parent = ::getpid();
  sigset_t none;
  sigemptyset(&none);
  pid_t pid = run_files::ForkUnderLock(/*kill_on_interrupt=*/false, spawn.record);
  if (pid < 0) throw SystemCallFailed("fork", errno);  // a ProcessError: exit 4
  if (pid > 0) {
    ::setpgid(pid, pid);  // also here: no race with a Stop right after the fork
    return pid;
  }
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, spawn.death_signal);
  if (::getppid() != parent) ::_exit(125);  // dedupsim died before the prctl
  // dedupsim blocks SIGINT and SIGTERM for its interrupt thread: the server takes them.
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int fd = ::open(spawn.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
  }
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  // Nothing else of dedupsim's: a server that outlived it must hold none of its files,
  // sockets or pipes (a pipe held open keeps whoever reads dedupsim's output waiting).
  ::close_range(3, ~0U, 0);
  if (!spawn.working_folder.empty() && ::chdir(spawn.working_folder.c_str()) != 0) ::_exit(126);
  ::execve(args[0], args.data(), env.data());
  ::_exit(127);
}

bool Ended(pid_t pid, int* status) {
  int s = 0;
  pid_t r = ::waitpid(pid, &s, WNOHANG);
  if (r == pid) {
    if (status != nullptr) *status = s;
    return true;
  }
  return r < 0 && errno == ECHILD;
}

void Stop(pid_t pid, int signal, std::chrono::milliseconds grace) noexcept {
  if (pid <= 0) return;
  ::kill(-pid, signal);
  ::kill(pid, signal);
  const auto end = SteadyClock::now() + grace;
  while (SteadyClock::now() < end) {
    if (Ended(pid, nullptr)) {
      ::kill(-pid, SIGKILL);  // whatever of its group is left (a helper it started)
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  int s = 0;
  while (::waitpid(pid, &s, 0) < 0 && errno == EINTR) {
  }
}

std::string MakeFolder(const std::string& what) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dedupsim-" + what + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw BrokerError(fmt::format("cannot create a folder for the {} server ({}): {}", what,
                                  pattern, std::strerror(errno)));
  }
  return buffer.data();
}

void RemoveFolder(const std::string& folder) noexcept {
  if (!folder.empty()) ::nftw(folder.c_str(), &RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) all.push_back(line);
  }
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += (out.empty() ? "" : " | ") + all[i];
  }
  return out.empty() ? "(its log is empty)" : out;
}

int FreePort() {
  const UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw BrokerError(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw BrokerError(
        fmt::format("cannot find a free port on 127.0.0.1: {}", std::strerror(errno)));
  }
  return ntohs(addr.sin_port);
}

bool Listening(int port) {
  const UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace dedupsim::broker_server
