// The base of every error whose cause is what a user handed dedupsim (a consumer or
// scenario file, the SQL in it), as opposed to dedupsim's own failure or a database it
// cannot use. Its message already names the file (FILE:LINE:COLUMN) and what to do; the
// command line reports it as it is, with the usage status (2). Layers that run a user's
// code on their threads (the explorer's instances) carry it through unchanged, so it is
// never reported as an internal error.
#pragma once

#include <stdexcept>

namespace dedupsim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dedupsim
