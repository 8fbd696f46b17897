// A plain libpq program, no dedupsim code in it: what hung-consumer's killed half measures,
// done the shortest way, as the yardstick for the lesson's own figure (docs/postgres.md).
//
// A child process connects, BEGINs, INSERTs a key into an Inbox table and stays there.
// The parent's waiter connection BEGINs and sends the same INSERT, which waits for the
// child's transaction. Once a third connection sees the waiter blocked (wait_event_type
// Lock, looked at before the kill, never after), the parent SIGKILLs the child and times
// from kill() to the moment the waiter's answer has arrived on its socket (poll on the
// socket, nothing else in between): the server noticing the dead client, rolling its
// transaction back and letting the waiter go on.
//
//   pg-kill-to-go-on CONNINFO [ROUNDS]
//
// Prints one line per round: "kill-to-go-on-ms <ms>". Makes a schema of its own
// (kill_to_go_on), which must not exist, and drops it at the end.
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void Die(const std::string& what, PGconn* c) {
  std::fprintf(stderr, "pg-kill-to-go-on: %s: %s\n", what.c_str(), c ? PQerrorMessage(c) : "");
  std::exit(1);
}

PGconn* Connect(const char* conninfo) {
  PGconn* c = PQconnectdb(conninfo);
  if (PQstatus(c) != CONNECTION_OK) Die("connect", c);
  return c;
}

void Exec(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  const ExecStatusType s = PQresultStatus(r);
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) Die(sql, c);
  PQclear(r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pg-kill-to-go-on CONNINFO [ROUNDS]\n");
    return 2;
  }
  const char* conninfo = argv[1];
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  PGconn* admin = Connect(conninfo);
  Exec(admin, "CREATE SCHEMA kill_to_go_on");
  Exec(admin, "CREATE TABLE kill_to_go_on.inbox (message_id text PRIMARY KEY)");
  PGconn* waiter = Connect(conninfo);
  const std::string waiter_pid = std::to_string(PQbackendPID(waiter));
  for (int round = 0; round < rounds; ++round) {
    const std::string insert =
        "INSERT INTO kill_to_go_on.inbox VALUES ('m" + std::to_string(round) + "')";
    int ready[2];
    if (::pipe(ready) != 0) Die("pipe", nullptr);
    const pid_t child = ::fork();
    if (child == 0) {
      PGconn* holder = Connect(conninfo);
      Exec(holder, "BEGIN");
      Exec(holder, insert);
      const char one = 1;
      if (::write(ready[1], &one, 1) != 1) _exit(1);
      for (;;) ::pause();
    }
    char byte = 0;
    if (::read(ready[0], &byte, 1) != 1) Die("the holder did not start", nullptr);
    ::close(ready[0]);
    ::close(ready[1]);
    Exec(waiter, "BEGIN");
    if (PQsendQuery(waiter, insert.c_str()) == 0) Die("send", waiter);
    // Blocked? Asked from the admin connection before the kill.
    const std::string look =
        "SELECT 1 FROM pg_stat_activity WHERE pid = " + waiter_pid + " AND wait_event_type = 'Lock'";
    for (;;) {
      PGresult* r = PQexec(admin, look.c_str());
      const bool blocked = PQntuples(r) == 1;
      PQclear(r);
      if (blocked) break;
      ::usleep(1000);
    }
    const auto killed = std::chrono::steady_clock::now();
    ::kill(child, SIGKILL);
    const int fd = PQsocket(waiter);
    for (;;) {
      if (PQconsumeInput(waiter) == 0) Die("read", waiter);
      if (PQisBusy(waiter) == 0) break;
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, -1);
    }
    const auto answered = std::chrono::steady_clock::now();
    bool ok = true;
    while (PGresult* r = PQgetResult(waiter)) {
      ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
      PQclear(r);
    }
    if (!ok) Die("the waiter's INSERT failed", waiter);
    Exec(waiter, "ROLLBACK");
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) Die("the holder was not killed", nullptr);
    std::printf("kill-to-go-on-ms %.3f\n",
                std::chrono::duration<double, std::milli>(answered - killed).count());
    std::fflush(stdout);
  }
  PQfinish(waiter);
  Exec(admin, "DROP SCHEMA kill_to_go_on CASCADE");
  PQfinish(admin);
  return 0;
}
