// The fuzz test of issue 26: a seeded mutation loop over the examples' consumer and scenario
// files, run for a fixed time (DEDUPSIM_FUZZ_SECONDS, 10 s by default; tools/sanitize.sh
// gives the ASan build its own). Each mutant is a file a student could hand in: bytes
// flipped, cut, repeated, spliced with another example, and pieces an adversary would write
// inserted (comments before statements, ATTACH and VACUUM INTO aimed outside the run's
// folder, fts3_tokenizer, writable_schema, endless recursive WITHs, 100,000-level keys and
// headers, control characters). What must hold for every one:
//   - the readers (files::LoadConsumerFile, files::LoadScenarioFile, the sandbox's check of
//     the SQL on load) return or throw files::FileError naming the file, never anything
//     else and never a crash (the sanitizers watch the process);
//   - every mutant that loads is also run by the binary (`check`, `run --file`) in the
//     run's own folder: it exits 0 to 3, never by a signal, never with "internal error",
//     within a deadline (a hang is killed and fails the test);
//   - nothing outside the run's folder changes: the victim database's bytes are the same
//     and the outside folder holds no new file.
// The mutants follow a fixed seed: a failure names the iteration, and the same build
// replays it (DEDUPSIM_FUZZ_SECONDS large enough to reach it).
//
// Mutation checked by hand: the nesting cap of lib/files/toml_reader.cpp raised from 32 to
// 1,000,000 (the 100,000-level dotted key then overflows toml++'s recursion: the test
// process dies with SIGSEGV, "case 7" of the issue).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "files/consumer_file.h"
#include "files/scenario_file.h"
#include "support.h"

#define ROOT DEDUPSIM_SOURCE_DIR

extern char** environ;

namespace dedupsim::testing::fuzz_test {

namespace {

namespace fs = std::filesystem;

struct Seed {
  std::string name;  // the example's file name
  std::string text;
  bool scenario = false;
};

std::vector<Seed> Corpus() {
  std::vector<Seed> seeds;
  for (const char* kind : {"consumers", "scenarios"}) {
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(std::string(ROOT) + "/examples/" + kind)) {
      if (e.path().extension() == ".toml") paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());  // a fixed order: the seed decides the rest
    for (const fs::path& p : paths) {
      seeds.push_back({p.filename().string(), ReadFile(p.string()), kind[0] == 's'});
    }
  }
  return seeds;
}

// Pieces an adversary writes into a file; paths point outside the run's folder.
std::vector<std::string> Dictionary(const std::string& victim, const std::string& outside) {
  std::vector<std::string> d = {
      "/*CREATE*/ ", "-- SELECT\n", "/* */", ";", "\"\"\"", "'", "\"", "\\", "\\u001b", "\n",
      "[[step]]\n", "[[step]]\nsql = \"", "schema = \"\"\"\n", "[[figure]]\nname = \"f\"\nsql = \"",
      "[[consumer]]\nname = \"c\"\nfile = \"", "[[deliver]]\nto = \"c\"\n",
      "\"\"\"\n", "on-duplicate = \"rollback-and-ack\"\n", "begin = \"immediate\"\n",
      "commit = true\n", "rollback = true\n", "hook = \"BeforeCommit\"\n",
      "ATTACH '" + victim + "' AS v; DELETE FROM v.t;",
      "VACUUM INTO '" + outside + "/copy.db'", "/*SELECT*/ VACUUM INTO '" + outside + "/c2.db'",
      "SELECT fts3_tokenizer('simple', x'4141414141414141')",
      "CREATE VIRTUAL TABLE f USING fts3(a); INSERT INTO f VALUES ('x');",
      "SELECT load_extension('" + outside + "/x.so')", "PRAGMA writable_schema=ON;",
      "UPDATE sqlite_master SET sql = 'x';", "DROP TABLE Inbox;",
      "CREATE TRIGGER t AFTER UPDATE ON StockItems BEGIN DELETE FROM Inbox; END;",
      "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
      "SELECT zeroblob(1000000000)", "SELECT randomblob(100000000)",
      ":MessageId", ":Quantity", ":BookId", ":Now", ":Consumer", "{reserved}", "{{",
      "file = \"/dev/zero\"\n", "file = \"" + outside + "\"\n", "file = \"../consumers\"\n",
      "= 99999999999999999999999\n", "= nan\n", "= 1e999\n", "= [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
      "= {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a = {a =",
      "\x01", "\x7f", "\xc2\x9b", "\xff\xfe", std::string(1, '\0'), "\r\n", "\t"};
  std::string deep_key = "a";
  for (int i = 0; i < 100'000; ++i) deep_key += ".a";
  d.push_back("\n" + deep_key + " = 1\n");
  std::string deep_header = "[t";
  for (int i = 0; i < 50'000; ++i) deep_header += ".t";
  d.push_back("\n" + deep_header + "]\n");
  return d;
}

std::string Mutate(std::mt19937_64& rng, const std::vector<Seed>& seeds, const Seed& base,
                   const std::vector<std::string>& dict) {
  std::string s = base.text;
  auto pick = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int ops = 1 + static_cast<int>(rng() % 4);
  for (int op = 0; op < ops; ++op) {
    const size_t at = pick(s.size() + 1);
    switch (rng() % 6) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:  // cut a range
        s.erase(at, pick(64) + 1);
        break;
      case 2:  // repeat a range
        s.insert(at, s.substr(pick(s.size() + 1), pick(256) + 1));
        break;
      case 3:  // splice: the head of this one, the tail of another example
      {
        const std::string& other = seeds[pick(seeds.size())].text;
        s = s.substr(0, at) + other.substr(pick(other.size() + 1));
        break;
      }
      default: {  // an adversary's piece (twice as likely), half the time at a line's start
        size_t where = at;
        if (rng() % 2 == 0) {
          const size_t line = s.rfind('\n', at == 0 ? 0 : at - 1);
          where = line == std::string::npos ? 0 : line + 1;
        }
        s.insert(where, dict[pick(dict.size())]);
        break;
      }
    }
  }
  return s;
}

struct Outcome {
  int status = 0;  // the wait status
  bool hung = false;
  std::string err;
};

// Runs the binary in folder with TMPDIR there, killing it (and failing) past the deadline.
Outcome RunInFolder(const std::vector<std::string>& args, const std::string& folder,
                    std::chrono::seconds deadline) {
  std::vector<std::string> argv_s = {DEDUPSIM_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s =
      EnvironmentWith({"TMPDIR=" + folder + "/tmp", "NO_COLOR=1"});
  std::vector<char*> env;
  for (std::string& e : env_s) env.push_back(e.data());
  env.push_back(nullptr);
  const std::string err_path = folder + "/stderr.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addchdir_np(&actions, folder.c_str());
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(spawned == 0);
  Outcome o;
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    const pid_t done = ::waitpid(pid, &o.status, WNOHANG);
    REQUIRE(done >= 0);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > end) {
      o.hung = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &o.status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  o.err = ReadFile(err_path);
  fs::remove(err_path);
  return o;
}

std::vector<std::string> FilesIn(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(folder)) names.push_back(e.path());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("fuzz: mutated consumer and scenario files never crash, hang or escape their folder",
          "[fuzz]") {
  const char* seconds_env = std::getenv("DEDUPSIM_FUZZ_SECONDS");
  const int seconds = seconds_env != nullptr ? std::atoi(seconds_env) : 10;
  REQUIRE(seconds > 0);
  TempDir outside;  // someone else's folder: a victim database, nothing else
  const std::string victim = outside.File("victim.db");
  REQUIRE(RunCli({"run", "naive", "--db", victim}).exit_code == 0);  // a database with rows
  const std::string victim_bytes = ReadFile(victim);
  const std::vector<std::string> outside_before = FilesIn(outside.path());

  TempDir work;  // the run's folder: examples/ laid out as in the repository
  fs::create_directories(work.File("consumers"));
  fs::create_directories(work.File("scenarios"));
  fs::create_directories(work.File("tmp"));
  const std::vector<Seed> seeds = Corpus();
  REQUIRE(seeds.size() >= 10);
  for (const Seed& s : seeds) {
    WriteFile(work.File((s.scenario ? "scenarios/" : "consumers/") + s.name), s.text);
  }
  const std::vector<std::string> dict = Dictionary(victim, outside.path());

  std::mt19937_64 rng(20261203);
  int64_t loads = 0, loaded = 0, runs = 0;
  const auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (int64_t i = 0; std::chrono::steady_clock::now() < stop; ++i) {
    const Seed& base = seeds[rng() % seeds.size()];
    const std::string text = Mutate(rng, seeds, base, dict);
    const std::string path =
        work.File(base.scenario ? "scenarios/fuzz-mutant.toml" : "consumers/fuzz-mutant.toml");
    WriteFile(path, text);
    INFO("iteration " << i << " (seed 20261203), a mutant of " << base.name);
    bool ok = false;
    ++loads;
    try {
      if (base.scenario) {
        (void)files::LoadScenarioFile(path);
      } else {
        (void)files::LoadConsumerFile(path);
      }
      ok = true;
    } catch (const files::FileError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.rfind(path + ":", 0) == 0);  // the file named, at its place
    } catch (const std::exception& e) {
      FAIL_CHECK("not a FileError: " << e.what());
    }
    // Every mutant that loads, and one in 20 of the others, through the binary.
    if (ok || i % 20 == 0) {
      loaded += ok ? 1 : 0;
      ++runs;
      const std::vector<std::string> args =
          base.scenario ? std::vector<std::string>{"run", "--file", path}
                        : std::vector<std::string>{"check", path};
      const Outcome o = RunInFolder(args, work.path(), std::chrono::seconds(60));
      INFO("dedupsim " << args[0] << " " << args.back() << ": " << o.err);
      CHECK_FALSE(o.hung);
      CHECK(WIFEXITED(o.status));
      if (WIFEXITED(o.status)) CHECK(WEXITSTATUS(o.status) <= 3);
      CHECK(o.err.find("internal error") == std::string::npos);
      CHECK(fs::is_empty(work.File("tmp")));  // its temporary files removed
    }
    fs::remove(path);
  }
  // Outside the run's folder nothing changed.
  CHECK(ReadFile(victim) == victim_bytes);
  CHECK(FilesIn(outside.path()) == outside_before);
  // The loop did its work: the count of mutants, and that some loaded and ran.
  WARN("fuzz: " << loads << " mutants in " << seconds << " s, " << loaded << " loaded, " << runs
                << " run by the binary");
  CHECK(loaded > 0);
}

}  // namespace dedupsim::testing::fuzz_test
