// Helpers shared by the tests: a temporary folder removed at the end, running the built
// dedupsim binary with captured output, and a scenario environment on a fresh database.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/message.h"
#include "lesson/scenario.h"
#include "sqlite/database.h"
#include "sqlite/side_store.h"
#include "sqlite/store.h"
#include "trace/trace.h"

namespace dedupsim::testing {

// A fresh folder under $TMPDIR, removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the dedupsim binary built with the tests, with args, no stdin, and returns its exit
// status and what it wrote. NO_COLOR is set unless the test passes its own environment.
CliResult RunCli(const std::vector<std::string>& args,
                 const std::vector<std::string>& extra_env = {});

// This process's environment with each NAME=value of extra in place of the inherited NAME
// (an entry appended after the inherited one would be ignored: getenv finds the first).
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra);

// The dedupsim binary running in the background, no stdin, its stderr read line by line:
// with args, in the folder cwd ("": this one), with the environment EnvironmentWith(env)
// (NO_COLOR is the test's to give), no signal blocked and SIGINT, SIGTERM and SIGHUP at
// their defaults whatever the test runner set (it starts as from a shell). Killed and reaped on destruction if still running.
// Throws when it cannot be started.
class BackgroundRun {
 public:
  BackgroundRun(const std::vector<std::string>& args, const std::vector<std::string>& env,
                const std::string& cwd = "");
  ~BackgroundRun();
  BackgroundRun(const BackgroundRun&) = delete;
  BackgroundRun& operator=(const BackgroundRun&) = delete;

  // Reads stderr until a line containing text; returns it ("" at the end of stderr).
  std::string WaitForLine(const std::string& text);
  // The pid in "dedupsim: paused at POINT pid PID"; throws when stderr ends without it.
  pid_t PausedPid(const std::string& point);
  void Signal(int signal);
  // Waits for the end; the exit status (128 + signal when killed).
  int Wait();
  // Waits for the end; the raw wait status (WIFEXITED tells a handled interrupt's exit 130
  // from a death by SIGINT, which Wait() reports alike).
  int WaitStatus();
  // The test reaped the process itself (waitpid on pid()): nothing left to kill.
  void Reaped() { pid_ = -1; }
  const std::string& err() const { return seen_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  std::string buffer_;
  std::string seen_;
};

// Runs each command as RunCli does, up to `at_once` at a time (for runs that mostly wait out
// their holds; each run has its own database), and returns the results in the commands'
// order.
std::vector<CliResult> RunCliEach(const std::vector<std::vector<std::string>>& commands,
                                  size_t at_once = 8);

// Runs the dedupsim binary with its stdout and stderr on a pseudo-terminal (so isatty is
// true), with the environment less NO_COLOR and TERM, plus env (e.g. "NO_COLOR=1",
// "TERM=xterm"). Returns what the terminal showed, with "\r\n" turned into "\n".
CliResult RunCliOnTerminal(const std::vector<std::string>& args,
                           const std::vector<std::string>& env);

std::string ReadFile(const std::string& path);
// The fenced block that follows the marker line in a document ("(no marker)" when absent).
std::string DocBlock(const std::string& doc, const std::string& marker);

// Each delivery's outcome with its verdict, "instance outcome verdict" ("-" when not
// judged), under the sub-run it belongs to ("" before the first), in the order recorded:
// what the pictures colour, read from one run's JSON with --trace.
std::map<std::string, std::vector<std::string>> OutcomeVerdicts(const nlohmann::json& run);
void WriteFile(const std::string& path, const std::string& content);
std::vector<std::string> SplitLines(const std::string& text);
// Whether each marker first occurs in text after the marker before it does: "" when they
// all do, else a line naming the marker missing or the pair out of order (for CHECK's
// message). Each is found from the start, so a later copy of a marker never hides an early
// one.
std::string NotInOrder(const std::string& text, const std::vector<std::string>& markers);
// The labels of class css in an SVG timeline (its <text class="css"> elements), each as the
// lines it was wrapped into, in order: a run of consecutive such elements is one label (the
// labels sharing a leader are drawn one after another, each a run of its own class). The
// text is as written in the SVG, XML-escaped.
std::vector<std::vector<std::string>> SvgLabelLines(const std::string& svg, const std::string& css);

// The post's six output lines, from tests/data/post_lines.txt in this repository. Throws
// when the file does not hold six lines, so no comparison is ever skipped.
std::vector<std::string> PostLines();

// Everything a scenario needs, on a temporary database with the given settings.
struct Fixture {
  explicit Fixture(RunOptions run_options = {}, DatabaseSettings settings = {});
  RunOptions options;
  DatabaseFile db;
  SqliteBackend backend{db};
  SqliteSideStores sides{db};
  SystemClock clock;
  Recorder recorder;
  IdGenerator ids{42};
  ScenarioEnv env;
};

// 4 busy-looping child processes per core, killed (SIGKILL, then reaped) when the object
// goes, whether the test passed or not; they also die with the test process.
class CpuHog {
 public:
  CpuHog();
  ~CpuHog();
  CpuHog(const CpuHog&) = delete;
  CpuHog& operator=(const CpuHog&) = delete;
  size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace dedupsim::testing
