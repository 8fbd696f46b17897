#include "postgres/cluster.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ftw.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "os/run_files.h"
#include "postgres/libpq.h"
#include "store/error.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

bool Executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

bool HasServer(const std::string& bin) {
  return Executable(bin + "/initdb") && Executable(bin + "/postgres");
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += (out.empty() ? "" : " | ") + all[i];
  }
  return out;
}

struct RunAs {
  bool change = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

// PostgreSQL refuses to run as root: as root, pick the unprivileged user to run it as.
RunAs ChooseUser() {
  RunAs as;
  if (::geteuid() != 0) {
    const passwd* me = ::getpwuid(::geteuid());
    as.name = me ? me->pw_name : "";
    return as;
  }
  for (const char* candidate : {"postgres", "nobody"}) {
    if (const passwd* pw = ::getpwnam(candidate)) {
      as.change = true;
      as.uid = pw->pw_uid;
      as.gid = pw->pw_gid;
      as.name = candidate;
      return as;
    }
  }
  throw DatabaseError(
      "running as root, and neither a 'postgres' nor a 'nobody' user exists to run the server as");
}

// In a forked child: become the user, tie our life to the parent's, send output to log,
// exec. Only async-signal-safe calls; never returns.
[[noreturn]] void ExecChild(const RunAs& as, pid_t parent, const std::string& log,
                            const std::vector<std::string>& argv) {
  ::setpgid(0, 0);  // the terminal's Ctrl-C goes to dedupsim, which stops the server itself
  if (as.change) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(as.gid) != 0 || ::setuid(as.uid) != 0) _exit(126);
  }
  // After the credentials change, which would clear it.
  ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
  if (::getppid() != parent) _exit(125);
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  _exit(127);
}

pid_t Spawn(const RunAs& as, const std::string& log, const std::vector<std::string>& argv) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw DatabaseError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) ExecChild(as, parent, log, argv);
  return pid;
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// waitpid with a deadline: true when the child is gone.
bool WaitUntil(pid_t pid, std::chrono::milliseconds limit) {
  auto end = SteadyClock::now() + limit;
  while (SteadyClock::now() < end) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);
  return 0;
}

// Stops the server (fast shutdown, then harder) and removes the folder; either may be unset.
void StopAndRemove(pid_t server, const std::string& folder) noexcept {
  if (server > 0) {
    // Fast shutdown: open transactions roll back, connections close.
    ::kill(server, SIGINT);
    if (!WaitUntil(server, std::chrono::seconds(10))) {
      ::kill(server, SIGQUIT);
      if (!WaitUntil(server, std::chrono::seconds(5))) {
        ::kill(server, SIGKILL);
        WaitFor(server);
      }
    }
  }
  if (!folder.empty()) ::nftw(folder.c_str(), &RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

std::string FindServerBinDir() {
  if (const char* env = std::getenv("DEDUPSIM_PG_BINDIR"); env != nullptr && *env != '\0') {
    if (!HasServer(env)) {
      throw DatabaseError(fmt::format("DEDUPSIM_PG_BINDIR={}: no initdb and postgres there", env));
    }
    return env;
  }
  const std::string root = "/usr/lib/postgresql";
  std::string best;
  double best_version = -1;
  if (DIR* dir = ::opendir(root.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      char* end = nullptr;
      double version = std::strtod(entry->d_name, &end);
      if (end == entry->d_name || *end != '\0') continue;
      std::string bin = root + "/" + entry->d_name + "/bin";
      if (version > best_version && HasServer(bin)) {
        best = bin;
        best_version = version;
      }
    }
    ::closedir(dir);
  }
  if (best.empty()) {
    throw DatabaseError(
        "PostgreSQL's server programs were not found in /usr/lib/postgresql/*/bin (install the "
        "postgresql package: sh tools/setup.sh), or set DEDUPSIM_PG_BINDIR");
  }
  return best;
}

ThrowawayCluster ThrowawayCluster::Start() {
  RequireLibpq();  // before a server is started for a command that could not talk to it
  const std::string bin = FindServerBinDir();
  const RunAs as = ChooseUser();
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dedupsim-pg-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw DatabaseError(fmt::format("cannot create a folder for the PostgreSQL cluster ({}): {}",
                                    pattern, std::strerror(errno)));
  }
  ThrowawayCluster cluster;
  cluster.folder_ = buffer.data();
  // On interrupt (cli/interrupt.h): the folder, and the server once it runs, go too.
  run_files::RegisterCleanup(cluster.folder_,
                             [folder = cluster.folder_] { StopAndRemove(-1, folder); });
  cluster.user_ = "dedupsim";
  if (as.change && ::chown(cluster.folder_.c_str(), as.uid, as.gid) != 0) {
    throw DatabaseError(
        fmt::format("chown {} to {}: {}", cluster.folder_, as.name, std::strerror(errno)));
  }
  const std::string data = cluster.folder_ + "/data";
  const std::string log = cluster.folder_ + "/server.log";

  pid_t initdb = Spawn(as, log,
                       {bin + "/initdb", "--no-sync", "-D", data, "-U", cluster.user_,
                        "--auth=trust", "-E", "UTF8", "--locale=C"});
  int status = WaitFor(initdb);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw DatabaseError(fmt::format(
        "initdb ({} as {}) failed: {}{}", bin, as.name, Tail(log, 3),
        as.change ? fmt::format(" (the server runs as {}: every folder above {} must be "
                                "searchable by that user; set TMPDIR to one that is)",
                                as.name, cluster.folder_)
                  : ""));
  }
  cluster.server_ = Spawn(
      as, log,
      {bin + "/postgres", "-D", data, "-k", cluster.folder_, "-p", std::to_string(cluster.port_),
       "-c", "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off"});
  run_files::ForgetCleanup(cluster.folder_);
  run_files::RegisterCleanup(cluster.folder_, [server = cluster.server_, folder = cluster.folder_] {
    StopAndRemove(server, folder);
  });
  const std::string conninfo = cluster.conninfo();
  auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  for (;;) {
    if (PQping(conninfo.c_str()) == PQPING_OK) break;
    int exited = 0;
    if (::waitpid(cluster.server_, &exited, WNOHANG) == cluster.server_) {
      cluster.server_ = -1;
      throw DatabaseError(
          fmt::format("the PostgreSQL server ({}) stopped while starting: {}", bin, Tail(log, 3)));
    }
    if (SteadyClock::now() > deadline) {
      throw DatabaseError(fmt::format("the PostgreSQL server ({}) did not start within 60 s: {}",
                                      bin, Tail(log, 3)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cluster;
}

ThrowawayCluster::ThrowawayCluster(ThrowawayCluster&& other) noexcept
    : folder_(std::move(other.folder_)),
      user_(std::move(other.user_)),
      server_(other.server_),
      port_(other.port_) {
  other.folder_.clear();
  other.server_ = -1;
}

ThrowawayCluster::~ThrowawayCluster() { Stop(); }

std::string ThrowawayCluster::conninfo() const {
  return fmt::format("host={} port={} dbname=postgres user={}", folder_, port_, user_);
}

void ThrowawayCluster::Stop() noexcept {
  // First take the interrupt's cleanup back: if the interrupt thread is already running it,
  // this waits (for _exit); otherwise only this call stops and removes.
  if (!folder_.empty()) run_files::ForgetCleanup(folder_);
  StopAndRemove(server_, folder_);
  server_ = -1;
  folder_.clear();
}

}  // namespace dedupsim
