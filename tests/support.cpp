#include "support.h"

#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace dedupsim::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/dedupsim-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

namespace {

std::string Drain(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    // NO_COLOR is the caller's to give: inherited, it would color nothing a test reads.
    if (entry.rfind("NO_COLOR=", 0) == 0) continue;
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || name_of(x) == name_of(entry);
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

BackgroundRun::BackgroundRun(const std::vector<std::string>& args,
                             const std::vector<std::string>& env, const std::string& cwd) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<std::string> argv_storage{DEDUPSIM_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = EnvironmentWith(env);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = posix_spawn(&pid_, DEDUPSIM_BINARY, &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    pid_ = -1;
    ::close(pipe_fds[0]);
    throw std::runtime_error("posix_spawn failed");
  }
  err_ = pipe_fds[0];
}

BackgroundRun::~BackgroundRun() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (err_ >= 0) ::close(err_);
}

std::string BackgroundRun::WaitForLine(const std::string& text) {
  for (;;) {
    auto nl = buffer_.find('\n');
    while (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      seen_ += line + "\n";
      if (line.find(text) != std::string::npos) return line;
      nl = buffer_.find('\n');
    }
    char chunk[512];
    ssize_t n = ::read(err_, chunk, sizeof chunk);
    if (n <= 0) return "";
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

pid_t BackgroundRun::PausedPid(const std::string& point) {
  std::string line = WaitForLine("paused at " + point + " pid ");
  if (line.empty()) {
    throw std::runtime_error("stderr ended without \"paused at " + point + " pid\":\n" + seen_);
  }
  return static_cast<pid_t>(std::stol(line.substr(line.rfind(' ') + 1)));
}

void BackgroundRun::Signal(int signal) { ::kill(pid_, signal); }

int BackgroundRun::Wait() {
  const int status = WaitStatus();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int BackgroundRun::WaitStatus() {
  char chunk[512];
  ssize_t n;
  while ((n = ::read(err_, chunk, sizeof chunk)) > 0) buffer_.append(chunk, static_cast<size_t>(n));
  seen_ += buffer_;
  buffer_.clear();
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

CliResult RunCli(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  // Close-on-exec: a binary started meanwhile by another thread (RunCliEach) must not hold
  // this run's write ends open, or this run's output would not end with its process.
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);

  std::vector<std::string> argv_storage{DEDUPSIM_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_storage = EnvironmentWith(extra_env);
  if (extra_env.empty()) env_storage.push_back("NO_COLOR=1");
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid;
  int rc = posix_spawn(&pid, DEDUPSIM_BINARY, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error("posix_spawn failed");
  CliResult result;
  std::thread err_reader([&] { result.err = Drain(err_pipe[0]); });
  result.out = Drain(out_pipe[0]);
  err_reader.join();
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::vector<CliResult> RunCliEach(const std::vector<std::vector<std::string>>& commands,
                                  size_t at_once) {
  std::vector<CliResult> results(commands.size());
  std::vector<std::exception_ptr> errors(commands.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (size_t w = 0; w < std::min(at_once, commands.size()); ++w) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < commands.size(); i = next++) {
        try {
          results[i] = RunCli(commands[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    });
  }
  for (std::thread& t : workers) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

CliResult RunCliOnTerminal(const std::vector<std::string>& args,
                           const std::vector<std::string>& env) {
  std::vector<std::string> argv_storage{DEDUPSIM_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (entry.rfind("NO_COLOR=", 0) == 0 || entry.rfind("TERM=", 0) == 0) continue;
    env_storage.push_back(entry);
  }
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  int master = -1;
  struct winsize size {};
  size.ws_col = 120;
  size.ws_row = 40;
  pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    ::execve(DEDUPSIM_BINARY, argv.data(), envp.data());
    ::_exit(127);
  }
  CliResult result;
  std::string raw;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n > 0) {
      raw.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EOF, or EIO once the child has closed the terminal
    }
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  for (char c : raw) {
    if (c != '\r') result.out.push_back(c);
  }
  return result;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::vector<std::string>> OutcomeVerdicts(const nlohmann::json& run) {
  std::map<std::string, std::vector<std::string>> out;
  std::string part;
  for (const auto& e : run["events"]) {
    if (e["kind"] == "part") part = e["detail"];
    if (e["op"] != "outcome") continue;
    const std::string verdict = e.value("verdict", "");
    out[part].push_back(e["instance"].get<std::string>() + " " + e["detail"].get<std::string>() +
                        " " + (verdict.empty() ? "-" : verdict));
  }
  return out;
}

std::string DocBlock(const std::string& doc, const std::string& marker) {
  size_t at = doc.find(marker);
  if (at == std::string::npos) return "(no marker)";
  size_t open = doc.find("```", at);
  size_t start = doc.find('\n', open) + 1;
  size_t close = doc.find("\n```", start);
  return doc.substr(start, close - start + 1);
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string NotInOrder(const std::string& text, const std::vector<std::string>& markers) {
  size_t previous = 0;
  for (size_t i = 0; i < markers.size(); ++i) {
    const size_t at = text.find(markers[i]);
    if (at == std::string::npos) return "not found: " + markers[i];
    if (i > 0 && at <= previous) {
      return "\"" + markers[i] + "\" (at " + std::to_string(at) + ") does not come after \"" +
             markers[i - 1] + "\" (at " + std::to_string(previous) + ")";
    }
    previous = at;
  }
  return "";
}

std::vector<std::vector<std::string>> SvgLabelLines(const std::string& svg,
                                                    const std::string& css) {
  const std::string open = "<text class=\"" + css + "\" ";
  std::vector<std::vector<std::string>> labels;
  bool in_label = false;
  for (const std::string& line : SplitLines(svg)) {
    const size_t text = line.find('>') + 1;
    const size_t close = line.rfind("</text>");
    if (line.rfind(open, 0) != 0 || close == std::string::npos || close < text) {
      in_label = false;
      continue;
    }
    if (!in_label) labels.emplace_back();
    in_label = true;
    labels.back().push_back(line.substr(text, close - text));
  }
  return labels;
}

std::vector<std::string> PostLines() {
  std::vector<std::string> lines = SplitLines(ReadFile(DEDUPSIM_POST_LINES));
  if (lines.size() != 6) {
    throw std::runtime_error(std::string("expected the post's six lines in ") +
                             DEDUPSIM_POST_LINES);
  }
  return lines;
}

Fixture::Fixture(RunOptions run_options, DatabaseSettings settings)
    : options(run_options),
      db(DatabaseFile::CreateTemporary(settings)),
      env{options, backend, sides, clock, recorder, ids} {}

CpuHog::CpuHog() {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < 4 * cores; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
    if (pid > 0) pids_.push_back(pid);
  }
}

CpuHog::~CpuHog() {
  for (pid_t pid : pids_) ::kill(pid, SIGKILL);
  for (pid_t pid : pids_) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
}

}  // namespace dedupsim::testing
