// Small helpers for the pipes between dedupsim and the child processes it forks (crash
// modes, process instances): whole writes and reads that survive EINTR, and a wait status
// in words.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace dedupsim {

// Writes all of data, retrying after EINTR; stops quietly if the reader is gone.
void WriteAll(int fd, const std::string& data);
// Reads until EOF.
std::string ReadAll(int fd);
// Reads until a newline (not included) or EOF, a block at a time: for a pipe that carries
// one line, since what the last read brought after the newline is dropped.
std::string ReadLine(int fd);
// Waits until fd has data or its writers are gone (EOF), or timeout passes; retries after
// EINTR. True when readable.
bool WaitReadable(int fd, std::chrono::milliseconds timeout);
// "exited with status 3", "was killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int status);
// The same for a child whose status may be unknown (os/child_process.h): nullopt is
// "ended, but waitpid could not tell how".
std::string DescribeWaitStatus(std::optional<int> status);

}  // namespace dedupsim
