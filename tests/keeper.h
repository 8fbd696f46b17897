// The keeper process of the CTest fixtures that share one server across a label's tests
// (tests/postgres/pg_fixture.cpp, tests/brokers/rabbit_fixture.cpp): `start` forks a keeper
// that owns the server, writes its address and the keeper's pid to the state folder and
// holds the server until SIGTERM; `stop` sends that SIGTERM and waits until the keeper is
// gone.
//
// The keeper detaches from CTest's output pipes (CTest waits for them to close) and starts
// its own session; its stderr goes to STATE_DIR/keeper.log, printed when the start fails.
#pragma once

#include <functional>
#include <string>

namespace dedupsim::testing {

struct KeeperNames {
  const char* tool;          // the fixture's name, at the head of its messages: "pg_fixture"
  const char* server;        // what it keeps, in its messages: "cluster"
  const char* address_file;  // the file of STATE_DIR the server's address is written to
  int stop_seconds;          // how long `stop` waits for the keeper to go
};

// Run in the keeper: starts the server, calls hold(its address), which records it and
// returns once the keeper is asked to stop, then stops the server. A throw is a failed start.
using Serve = std::function<void(const std::function<void(const std::string& address)>& hold)>;

// Starts a keeper for the state folder dir (made if missing; a keeper already recorded
// there is stopped first) and returns 0 once the server answers, 3 if it did not start.
int StartKeeper(const KeeperNames& names, const std::string& dir, const Serve& serve);

// Stops the keeper recorded in dir and removes the state files: 0, or 3 if none is
// recorded or it did not stop in time.
int StopKeeper(const KeeperNames& names, const std::string& dir);

}  // namespace dedupsim::testing
