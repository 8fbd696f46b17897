#include "check_batch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "exit_status.h"
#include "os/child_process.h"
#include "os/pipe_io.h"
#include "os/process_error.h"
#include "os/run_files.h"
#include "os/unique_fd.h"

extern char** environ;

namespace dedupsim::cli {

namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

// Terminal columns of UTF-8 text.
size_t Columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The CPUs this process may run on.
std::vector<int> CpusAllowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(static_cast<size_t>(cpu), &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// One file's child: the process, the pipe its JSON line comes on, its temporary folder.
struct Child {
  size_t file = 0;
  int cpu = -1;  // the CPU it runs on (all its threads: the explorer's hand-offs stay there)
  ChildProcess process;  // killed and reaped if the batch ends before it does
  UniqueFd fd;  // the pipe's read end: the child's stdout
  std::string out;
  std::string tmpdir;
  SteadyClock::time_point started;
  bool killed = false;  // past the watchdog's limit
};

// What one file came to.
struct Row {
  bool ready = false;
  nlohmann::ordered_json grade;  // GradeToJson, or FileErrorLine
  std::string text;              // its report (text mode)
  double seconds = 0;            // wall time of its child
};

std::string CleanupKey(pid_t pid) { return fmt::format("check-child-{}", pid); }

// The environment of a child: this one's, with TMPDIR its own folder.
std::vector<std::string> ChildEnvironment(const std::string& tmpdir) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TMPDIR=", 7) != 0) env.emplace_back(*e);
  }
  env.push_back("TMPDIR=" + tmpdir);
  return env;
}

std::string TemporaryRoot() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

// Starts `dedupsim check --worker FILE ...` with its stdout on a pipe and TMPDIR a folder
// of its own, which the interrupt cleanup (and the parent, once the child is reaped) removes.
Child Start(const BatchOptions& options, size_t file, int cpu) {
  Child c;
  c.file = file;
  c.cpu = cpu;
  std::string pattern = TemporaryRoot() + "/dedupsim-check-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    throw std::runtime_error(fmt::format("cannot create a folder in {}: {}", TemporaryRoot(),
                                         std::strerror(errno)));
  }
  c.tmpdir = name.data();
  std::vector<std::string> args{"dedupsim", "check", "--worker", options.files[file]};
  args.insert(args.end(), options.child_args.begin(), options.child_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = ChildEnvironment(c.tmpdir);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  Pipe pipe;
  try {
    pipe = MakePipe(O_CLOEXEC);  // ProcessError when the system refuses
  } catch (const ProcessError&) {
    fs::remove_all(c.tmpdir);
    throw;
  }
  c.started = SteadyClock::now();
  try {
    c.process = ChildProcess::Fork();
  } catch (const ProcessError&) {
    fs::remove_all(c.tmpdir);
    throw;
  }
  if (c.process.in_child()) {
    // Each child on a CPU of its own (while there are enough): the explorer would otherwise
    // pin itself to whichever CPU it started on, maybe its neighbour's.
    if (cpu >= 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(static_cast<size_t>(cpu), &one);
      ::sched_setaffinity(0, sizeof one, &one);
    }
    ::dup2(pipe.write.get(), STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
    ::execve("/proc/self/exe", argv.data(), envp.data());
    ::_exit(127);
  }
  pipe.write.reset();  // the child's copy is the only one: its end is the pipe's EOF
  c.fd = std::move(pipe.read);
  // On an interrupt its folder is removed; run_files kills and reaps the child (registered
  // as it was forked) before it runs any cleanup, so the child creates nothing more.
  run_files::RegisterCleanup(CleanupKey(c.process.pid()), [dir = c.tmpdir] {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  });
  return c;
}

// The child ended (its pipe closed): reap it, remove its folder, read its line.
Row Finish(const BatchOptions& options, Child& c) {
  c.fd.reset();
  const std::optional<int> status = c.process.Wait();
  run_files::ForgetCleanup(CleanupKey(c.process.pid()));
  std::error_code ignored;
  fs::remove_all(c.tmpdir, ignored);
  Row row;
  row.ready = true;
  row.seconds = std::chrono::duration<double>(SteadyClock::now() - c.started).count();
  const std::string& file = options.files[c.file];
  auto died = [&](const std::string& why) {
    row.grade = FileErrorLine(file, fmt::format("{}: not graded: {}", file, why));
  };
  if (c.killed) {
    died(fmt::format("the grading did not end within {:.0f} s (its budget was {:.0f} s); stopped",
                     row.seconds, options.budget.count()));
    return row;
  }
  if (!status) {
    died(fmt::format("the grading process {}", DescribeWaitStatus(status)));
    return row;
  }
  if (WIFSIGNALED(*status)) {
    died(fmt::format("the grading process died of signal {}", WTERMSIG(*status)));
    return row;
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    died(fmt::format("the grading process exited with status {}", WEXITSTATUS(*status)));
    return row;
  }
  nlohmann::ordered_json line = nlohmann::ordered_json::parse(c.out, nullptr, false);
  if (line.is_discarded() || !line.is_object()) {
    died("the grading process wrote no result");
  } else if (line.contains("grade")) {
    row.grade = line["grade"];
    row.text = line.value("text", "");
  } else {
    row.grade = line;
  }
  return row;
}

// The summary: one line per file, the verdict of each fault, the score, the seconds.
std::string Summary(const BatchOptions& options, const std::vector<Row>& rows, int jobs,
                    double wall) {
  std::vector<std::string> faults;  // the columns, from the first graded file
  for (const Row& r : rows) {
    if (r.grade.contains("cells")) {
      for (const auto& c : r.grade["cells"]) faults.push_back(c["fault"].get<std::string>());
      break;
    }
  }
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> header{"file"};
  header.insert(header.end(), faults.begin(), faults.end());
  header.insert(header.end(), {"score", "seconds"});
  table.push_back(header);
  std::vector<std::string> errors;  // the rows that are errors, in full under the table
  int passed = 0, failed = 0, partial = 0, bad = 0;
  int sqlite_only = 0;  // cells passed with SQLite refusing a stale transaction's write
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::vector<std::string> line{options.files[i]};
    const std::string verdict = r.grade.value("verdict", "error");
    if (verdict == "error") {
      ++bad;
      line.emplace_back("error (below)");
      errors.push_back(r.grade["error"].value("text", ""));
      table.push_back(line);
      continue;
    }
    if (verdict == "passes") ++passed;
    if (verdict == "FAILS") ++failed;
    if (verdict != "passes" && verdict != "FAILS") ++partial;
    for (const auto& c : r.grade["cells"]) {
      std::string status = c["expected"] == "any" ? "-" : c["passed"].get<bool>() ? "ok" : "FAIL";
      if (!c["exhaustive"].get<bool>() && status == "ok") status = "ok*";
      if (status == "ok" && c.value("staleRefusals", int64_t{0}) > 0) {
        status = "ok†";
        ++sqlite_only;
      }
      line.push_back(status);
    }
    line.push_back(fmt::format("{}/{}", r.grade["score"]["points"].get<int>(),
                               r.grade["score"]["of"].get<int>()));
    line.push_back(fmt::format("{:.1f}", r.seconds));
    table.push_back(line);
  }
  std::vector<size_t> widths;
  for (const auto& row : table) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      // An error row's one cell spans the rest: it does not widen a column.
      if (row.size() == 2 && i == 1 && row.size() < header.size()) continue;
      widths[i] = std::max(widths[i], Columns(row[i]));
    }
  }
  std::string out = "\nsummary\n";
  for (const auto& row : table) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - Columns(row[i]) + 2, ' ');
    }
    out += line + "\n";
  }
  for (const std::string& e : errors) out += "  " + e + "\n";
  if (partial > 0) {
    out += "  ok*: no failure found, but the budget cut the search short (not exhaustive)\n";
  }
  if (sqlite_only > 0) {
    out += "  ok†: passes on SQLite, where SQLite refused a write of a transaction that had read "
           "before another instance wrote (SQLITE_BUSY); PostgreSQL would not: see the file's "
           "note\n";
  }
  out += fmt::format(
      "{} files: {} pass, {} fail, {} not exhaustive, {} not graded (errors); {:.1f} s on {} "
      "jobs\n",
      rows.size(), passed, failed, partial, bad, wall, jobs);
  return out;
}

}  // namespace

std::optional<std::vector<std::string>> ConsumerFilesOf(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::string> in;
    for (const fs::directory_entry& e : fs::directory_iterator(input, ec)) {
      // Not only regular files: a FIFO, a device or a link to one named *.toml is a row of
      // its own, refused unread by the loader, never skipped without a word.
      if (e.path().extension() == ".toml") in.push_back(e.path().string());
    }
    if (ec) {
      fmt::print(stderr, "dedupsim: {}: cannot be read: {}\n", input, ec.message());
      return std::nullopt;
    }
    if (in.empty()) {
      fmt::print(stderr, "dedupsim: {}: no .toml file in this folder\n", input);
      return std::nullopt;
    }
    std::sort(in.begin(), in.end());
    files.insert(files.end(), in.begin(), in.end());
  }
  return files;
}

nlohmann::ordered_json FileErrorLine(const std::string& path, const std::string& what) {
  int line = 0;
  int column = 0;
  std::string message = what;
  const std::string prefix = path + ":";
  if (what.rfind(prefix, 0) == 0) {
    std::string rest = what.substr(prefix.size());
    int l = 0, c = 0, used = 0;
    if (std::sscanf(rest.c_str(), "%d:%d: %n", &l, &c, &used) == 2 && used > 0) {
      line = l;
      column = c;
      message = rest.substr(static_cast<size_t>(used));
    } else if (rest.rfind(" ", 0) == 0) {
      message = rest.substr(1);
    }
  }
  return {{"file", path},
          {"verdict", "error"},
          {"error", {{"message", message}, {"line", line}, {"column", column}, {"text", what}}}};
}

int RunBatch(const BatchOptions& options) {
  const std::vector<int> cpus = CpusAllowed();
  const int jobs =
      options.jobs > 0 ? options.jobs : std::max(1, static_cast<int>(cpus.size()));
  // The CPU with the fewest running children.
  auto least_used = [&](const std::vector<Child>& running) {
    int best = -1;
    size_t fewest = SIZE_MAX;
    for (int cpu : cpus) {
      size_t n = static_cast<size_t>(std::count_if(running.begin(), running.end(),
                                                   [&](const Child& c) { return c.cpu == cpu; }));
      if (n < fewest) {
        fewest = n;
        best = cpu;
      }
    }
    return best;
  };
  // A child that outlives three budgets and half a minute is stuck: it is stopped and its
  // file is an error row. (The budget stops every search, and every statement, well before.)
  const bool limited = options.budget.count() > 0;
  const auto limit = std::chrono::duration_cast<SteadyClock::duration>(
      options.budget * 3 + std::chrono::duration<double>(30));
  const auto started = SteadyClock::now();
  std::vector<Row> rows(options.files.size());
  std::vector<Child> running;
  size_t next = 0;     // the next file to start
  size_t printed = 0;  // files printed, in order
  auto print_ready = [&] {
    while (printed < rows.size() && rows[printed].ready) {
      Row& r = rows[printed];
      if (options.json) {
        nlohmann::ordered_json j = r.grade;
        j["wallSeconds"] = r.seconds;
        fmt::print("{}\n", j.dump());
      } else if (r.grade.value("verdict", "") == "error") {
        fmt::print("{}{}\n", printed > 0 ? "\n" : "", r.grade["error"].value("text", ""));
      } else {
        fmt::print("{}{}", printed > 0 ? "\n" : "", r.text);
      }
      std::fflush(stdout);
      ++printed;
    }
  };
  while (printed < rows.size()) {
    while (next < options.files.size() && running.size() < static_cast<size_t>(jobs)) {
      try {
        running.push_back(Start(options, next, least_used(running)));
      } catch (const std::exception& e) {
        rows[next].ready = true;
        rows[next].grade = FileErrorLine(options.files[next],
                                         fmt::format("{}: not graded: {}", options.files[next],
                                                     e.what()));
      }
      ++next;
    }
    if (running.empty()) {
      print_ready();
      continue;
    }
    std::vector<pollfd> fds;
    for (const Child& c : running) fds.push_back({c.fd.get(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), 200);
    if (n < 0 && errno != EINTR) break;
    for (size_t i = running.size(); i-- > 0;) {
      Child& c = running[i];
      bool ended = false;
      if (fds[i].revents != 0) {
        char buffer[65536];
        ssize_t got = ::read(c.fd.get(), buffer, sizeof buffer);
        if (got > 0) {
          c.out.append(buffer, static_cast<size_t>(got));
        } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
          ended = true;
        }
      }
      if (!ended && limited && !c.killed && SteadyClock::now() - c.started > limit) {
        c.process.Signal(SIGKILL);
        c.killed = true;  // its pipe closes: it ends on a later read
      }
      if (ended) {
        rows[c.file] = Finish(options, c);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    print_ready();
  }
  const double wall = std::chrono::duration<double>(SteadyClock::now() - started).count();
  int passed = 0, failed = 0, partial = 0, bad = 0;
  for (const Row& r : rows) {
    const std::string verdict = r.grade.value("verdict", "error");
    if (verdict == "passes") {
      ++passed;
    } else if (verdict == "FAILS") {
      ++failed;
    } else if (verdict == "error") {
      ++bad;
    } else {
      ++partial;
    }
  }
  if (options.json) {
    fmt::print("{}\n", nlohmann::ordered_json{{"summary",
                                               {{"files", rows.size()},
                                                {"passed", passed},
                                                {"failed", failed},
                                                {"notExhaustive", partial},
                                                {"errors", bad},
                                                {"seconds", wall},
                                                {"jobs", jobs},
                                                {"budgetSeconds", options.budget.count()},
                                                {"seed", options.seed}}}}
                           .dump());
  } else {
    fmt::print("{}", Summary(options, rows, jobs, wall));
  }
  std::fflush(stdout);
  if (bad > 0) return kExitUsage;
  if (failed > 0) return kExitCheckFailed;
  if (partial > 0) return kExitNotExhaustive;
  return kExitOk;
}

}  // namespace dedupsim::cli
