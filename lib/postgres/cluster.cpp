#include "postgres/cluster.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "os/child_process.h"
#include "os/pause_point.h"
#include "os/process_error.h"
#include "os/run_files.h"
#include "postgres/cluster_template.h"
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
// exec. Only async-signal-safe calls; never returns. The child stays in dedupsim's process
// group (a signal to the run's group reaches it), with SIGINT and SIGTERM back to their
// defaults and unblocked (dedupsim blocks them for its interrupt thread).
[[noreturn]] void ExecChild(const RunAs& as, pid_t parent, const std::string& log,
                            const std::vector<std::string>& argv) {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  sigset_t interrupts;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  ::sigprocmask(SIG_UNBLOCK, &interrupts, nullptr);
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

// The server: forked under the interrupt registry's lock (os/run_files.h), not as a child
// to be killed on an interrupt (a ChildProcess, as initdb is) but with in_parent recording
// its pid where the registered cleanup will stop it with a grace period (StopAndRemove), so
// no interrupt falls between the fork and the record.
pid_t SpawnServer(const RunAs& as, const std::string& log, const std::vector<std::string>& argv,
                  const std::function<void(pid_t)>& in_parent) {
  pid_t parent = ::getpid();
  pid_t pid = run_files::ForkUnderLock(/*kill_on_interrupt=*/false, in_parent);
  if (pid < 0) throw SystemCallFailed("fork", errno);
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
  RemoveTree(folder);
}

std::vector<std::string> InitdbArgs(const std::string& user) {
  return {"--no-sync", "-U", user, "--auth=trust", "-E", "UTF8", "--locale=C"};
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

namespace {

// Makes the data folder with initdb.
void RunInitdb(const std::string& bin, const RunAs& as, const std::string& data,
               const std::string& log, const std::string& user, const std::string& folder) {
  std::vector<std::string> argv = {bin + "/initdb", "-D", data};
  const std::vector<std::string> args = InitdbArgs(user);
  argv.insert(argv.end(), args.begin(), args.end());
  // Owned like every child dedupsim forks (os/child_process.h): registered to be killed and
  // reaped on an interrupt, and killed and reaped if this function is left before it ends.
  const pid_t parent = ::getpid();
  ChildProcess initdb = ChildProcess::Fork();
  if (initdb.in_child()) ExecChild(as, parent, log, argv);
  PauseHere("initdb-started");  // tests interrupt here, while initdb writes the folder
  const std::optional<int> status = initdb.Wait();  // reaped, then forgotten by the registry
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw DatabaseError(fmt::format(
        "initdb ({} as {}) failed: {}{}", bin, as.name, Tail(log, 3),
        as.change ? fmt::format(" (the server runs as {}: every folder above {} must be "
                                "searchable by that user; set TMPDIR to one that is)",
                                as.name, folder)
                  : ""));
  }
}

// Leaves the server's cluster with one database, postgres, the one dedupsim connects to:
// template0 and template1 are only ever used to create a database, which no dedupsim
// command does, and they are two thirds of the files a copy of the template must create.
bool DropTemplateDatabases(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  bool ok = conn != nullptr && PQstatus(conn) == CONNECTION_OK;
  for (const char* sql : {"ALTER DATABASE template0 IS_TEMPLATE false", "DROP DATABASE template0",
                          "ALTER DATABASE template1 IS_TEMPLATE false", "DROP DATABASE template1"}) {
    if (!ok) break;
    PGresult* result = PQexec(conn, sql);
    ok = result != nullptr && PQresultStatus(result) == PGRES_COMMAND_OK;
    if (result != nullptr) PQclear(result);
  }
  if (conn != nullptr) PQfinish(conn);
  return ok;
}

// Starts postgres on data and waits until it answers; "" then, else why it did not start.
// live: where the interrupt's cleanup reads the running server's pid (set as it is forked,
// under the registry's lock; -1 once it is gone).
std::string StartServer(pid_t& server, std::atomic<pid_t>& live, const std::string& folder,
                        int port, const std::string& info, const std::string& bin,
                        const RunAs& as, const std::string& data, const std::string& log) {
  server = SpawnServer(as, log,
                       {bin + "/postgres", "-D", data, "-k", folder, "-p", std::to_string(port),
                        "-c", "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off"},
                       [&live](pid_t pid) { live.store(pid); });
  auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  for (;;) {
    if (PQping(info.c_str()) == PQPING_OK) return "";
    int exited = 0;
    if (::waitpid(server, &exited, WNOHANG) == server) {
      server = -1;
      live.store(-1);
      return fmt::format("the PostgreSQL server ({}) stopped while starting: {}", bin,
                         Tail(log, 3));
    }
    if (SteadyClock::now() > deadline) {
      return fmt::format("the PostgreSQL server ({}) did not start within 60 s: {}", bin,
                         Tail(log, 3));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

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
  // On interrupt (cli/interrupt.h): initdb is killed and reaped first (a registered child),
  // then this cleanup stops the server that runs (its pid is recorded under the registry's
  // lock as it is forked) and removes the folder.
  auto live = std::make_shared<std::atomic<pid_t>>(-1);
  run_files::RegisterCleanup(cluster.folder_, [live, folder = cluster.folder_] {
    StopAndRemove(live->load(), folder);
  });
  cluster.user_ = "dedupsim";
  if (as.change && ::chown(cluster.folder_.c_str(), as.uid, as.gid) != 0) {
    throw DatabaseError(
        fmt::format("chown {} to {}: {}", cluster.folder_, as.name, std::strerror(errno)));
  }
  const std::string data = cluster.folder_ + "/data";
  const std::string log = cluster.folder_ + "/server.log";
  const std::optional<ClusterTemplate> cache =
      ClusterTemplate::For(bin, InitdbArgs(cluster.user_));
  auto start = [&] {
    return StartServer(cluster.server_, *live, cluster.folder_, cluster.port_, cluster.conninfo(),
                       bin, as, data, log);
  };
  // initdb, the server, and the cluster kept as the template (after a clean shutdown, then
  // the server again for the run).
  auto fresh = [&] {
    RunInitdb(bin, as, data, log, cluster.user_, cluster.folder_);
    std::string failed = start();
    if (failed.empty() && cache && DropTemplateDatabases(cluster.conninfo())) {
      StopAndRemove(cluster.server_, "");
      cluster.server_ = -1;
      live->store(-1);
      cache->Keep(data);
      failed = start();
    }
    return failed;
  };
  std::string failure;
  if (cache && cache->CopyTo(data, FileOwner{as.change, as.uid, as.gid})) {
    failure = start();
    if (!failure.empty()) {
      // A template that does not start (damaged after it was checked): made again.
      StopAndRemove(cluster.server_, "");
      cluster.server_ = -1;
      live->store(-1);
      cache->Discard();
      RemoveTree(data);
      failure = fresh();
    }
  } else {
    failure = fresh();
  }
  if (!failure.empty()) throw DatabaseError(failure);
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
