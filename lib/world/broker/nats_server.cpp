#include "world/broker/nats_server.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "world/broker/broker.h"
#include "world/broker/server_process.h"
#include "os/run_files.h"

namespace dedupsim {

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string FindProgram() {
  if (const char* env = std::getenv("DEDUPSIM_NATS_SERVER"); env != nullptr && *env != '\0') {
    return env;
  }
  std::vector<std::string> folders;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream in(path);
    for (std::string f; std::getline(in, f, ':');) folders.push_back(f);
  }
  folders.insert(folders.end(), {"/usr/sbin", "/usr/bin"});
  for (const std::string& f : folders) {
    std::string candidate = f + "/nats-server";
    if (!f.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw BrokerError(
      "--broker nats needs nats-server, which was not found on PATH, /usr/sbin or /usr/bin "
      "(install the nats-server package: sh tools/setup.sh --tests), or set "
      "DEDUPSIM_NATS_SERVER, or give --broker-url");
}

// The client URL from the ports file nats-server writes into folder once it listens.
std::string ReadPortsFile(const std::string& folder) {
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return "";
  std::string found;
  while (const dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".ports") == 0) found = name;
  }
  ::closedir(dir);
  if (found.empty()) return "";
  std::ifstream in(folder + "/" + found);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("nats") || !j["nats"].is_array() || j["nats"].empty()) {
    return "";  // being written
  }
  return j["nats"][0].get<std::string>();
}

}  // namespace

NatsServer NatsServer::Start() {
  const std::string program = FindProgram();
  NatsServer server;
  server.folder_ = broker_server::MakeFolder("nats");
  run_files::RegisterCleanup(server.folder_, [folder = server.folder_] {
    broker_server::RemoveFolder(folder);
  });
  const std::string log = server.folder_ + "/server.log";
  broker_server::Spawn spawn;
  spawn.argv = {program, "--jetstream", "--addr", "127.0.0.1", "--port", "-1", "--store_dir",
                server.folder_ + "/store", "--ports_file_dir", server.folder_};
  spawn.log = log;
  server.pid_ = broker_server::Start(spawn);
  run_files::ForgetCleanup(server.folder_);
  run_files::RegisterCleanup(server.folder_, [pid = server.pid_, folder = server.folder_] {
    broker_server::Stop(pid, SIGTERM, std::chrono::seconds(5));
    broker_server::RemoveFolder(folder);
  });
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  for (;;) {
    server.url_ = ReadPortsFile(server.folder_);
    if (!server.url_.empty()) break;
    int status = 0;
    if (broker_server::Ended(server.pid_, &status)) {
      server.pid_ = -1;
      throw BrokerError(fmt::format("nats-server ({}) stopped while starting: {}", program,
                                    broker_server::Tail(log, 3)));
    }
    if (SteadyClock::now() > deadline) {
      throw BrokerError(fmt::format("nats-server ({}) did not start within 30 s: {}", program,
                                    broker_server::Tail(log, 3)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return server;
}

NatsServer::NatsServer(NatsServer&& other) noexcept
    : folder_(std::move(other.folder_)), url_(std::move(other.url_)), pid_(other.pid_) {
  other.folder_.clear();
  other.pid_ = -1;
}

NatsServer::~NatsServer() { Stop(); }

void NatsServer::Stop() noexcept {
  if (!folder_.empty()) run_files::ForgetCleanup(folder_);
  broker_server::Stop(pid_, SIGTERM, std::chrono::seconds(5));
  broker_server::RemoveFolder(folder_);
  pid_ = -1;
  folder_.clear();
}

}  // namespace dedupsim
