#include "os/run_files.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace dedupsim::run_files {

namespace {

// The process the registry belongs to, fixed when the program starts, before any fork.
const pid_t g_owner = ::getpid();

struct Registry {
  std::mutex mutex;
  pid_t owner = g_owner;
  std::vector<std::pair<std::string, bool>> files;  // path, with companions
  std::vector<pid_t> children;
  std::vector<std::pair<std::string, std::function<void()>>> cleanups;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: used until _exit
  return *registry;
}

bool InOwner(const Registry& r) { return r.owner == ::getpid(); }

}  // namespace

std::string CreateAndRegister(const std::function<std::string()>& create, bool companions) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return create();
  std::lock_guard lock(r.mutex);
  std::string path = create();
  r.files.emplace_back(path, companions);
  return path;
}

void Register(const std::string& path, bool companions) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return;
  std::lock_guard lock(r.mutex);
  r.files.emplace_back(path, companions);
}

void Forget(const std::string& path) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return;
  std::lock_guard lock(r.mutex);
  auto it = std::find_if(r.files.begin(), r.files.end(),
                         [&](const auto& entry) { return entry.first == path; });
  if (it != r.files.end()) r.files.erase(it);
}

void RegisterChild(pid_t pid) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return;
  std::lock_guard lock(r.mutex);
  r.children.push_back(pid);
}

void ForgetChild(pid_t pid) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return;
  std::lock_guard lock(r.mutex);
  r.children.erase(std::remove(r.children.begin(), r.children.end(), pid), r.children.end());
}

pid_t ForkUnderLock(bool kill_on_interrupt, const std::function<void(pid_t)>& in_parent) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return ::fork();
  std::lock_guard lock(r.mutex);
  const pid_t pid = ::fork();
  if (pid > 0) {
    if (kill_on_interrupt) r.children.push_back(pid);
    if (in_parent) in_parent(pid);
  }
  return pid;  // the child's copy of the lock is released as it returns
}

void RegisterCleanup(const std::string& key, std::function<void()> cleanup) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return;
  std::lock_guard lock(r.mutex);
  r.cleanups.emplace_back(key, std::move(cleanup));
}

void ForgetCleanup(const std::string& key) {
  Registry& r = TheRegistry();
  if (!InOwner(r)) return;
  std::lock_guard lock(r.mutex);
  std::erase_if(r.cleanups, [&](const auto& entry) { return entry.first == key; });
}

int KillChildrenAndRemoveFiles(int* cleanups) {
  Registry& r = TheRegistry();
  if (cleanups != nullptr) *cleanups = 0;
  if (!InOwner(r)) return 0;
  r.mutex.lock();  // held until _exit: nothing is created or forked after the cleanup
  for (pid_t pid : r.children) ::kill(pid, SIGKILL);
  for (pid_t pid : r.children) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  for (const auto& entry : r.cleanups) entry.second();
  if (cleanups != nullptr) *cleanups = static_cast<int>(r.cleanups.size());
  int removed = 0;
  for (const auto& [path, companions] : r.files) {
    if (::unlink(path.c_str()) == 0) removed++;
    if (!companions) continue;
    for (const char* suffix : {"-wal", "-shm", "-journal"}) {
      if (::unlink((path + suffix).c_str()) == 0) removed++;
    }
  }
  return removed;
}

}  // namespace dedupsim::run_files

namespace dedupsim {

std::string TemporaryNameBeside(const std::string& path, std::string_view tag) {
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string prefix = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  long name_max = ::pathconf(folder.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = 255;
  std::string name = fmt::format(".{}.{}-XXXXXX", base, tag);
  if (name.size() > static_cast<size_t>(name_max)) name = fmt::format(".dedupsim-{}-XXXXXX", tag);
  return prefix + name;
}

}  // namespace dedupsim
