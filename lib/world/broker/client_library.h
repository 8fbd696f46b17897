// A client library (cnats, rabbitmq-c) loaded the first time a broker needs it, never when
// dedupsim starts, as libpq is (postgres/libpq.h): a command on the simulated broker maps
// neither library nor what they need. The forwarding file of each library (nats_library.cpp,
// amqp_library.cpp) defines each C function the code calls with the header's own signature
// (DEDUPSIM_CLIENT_FORWARD): its first call opens the library and looks the function up.
// Callers include the library's header and call its functions as usual.
//
// Opened once per process, by whichever thread comes first; never closed. Thread-safe.
#pragma once

#include <string>

namespace dedupsim {

class ClientLibrary {
 public:
  // env: the variable naming another file to open instead of soname; what: what needs it
  // ("the NATS broker"); package: the Debian package that has it.
  ClientLibrary(const char* env, const char* soname, const char* what, const char* package);

  // The file opened (or tried): $env when set, else soname.
  const std::string& name() const;
  // Opens the library if it is not open yet. Throws BrokerError (one line naming the file
  // and why it could not be opened) when it cannot be opened.
  void Require() const;
  // The library's definition of symbol; throws BrokerError when it has none.
  void* Symbol(const char* symbol) const;
  // The definition, or null when the library could not be opened (for functions that free
  // what the library returned: without the library there is nothing to free).
  void* SymbolIfLoaded(const char* symbol) const;

 private:
  struct Opened {
    std::string name;
    void* handle = nullptr;
    std::string error;
  };
  const Opened& Open() const;

  const char* env_;
  const char* soname_;
  const char* what_;
  const char* package_;
};

}  // namespace dedupsim

// Defines the C function `name` to forward to library's (a ClientLibrary returned by
// `library()`); the compiler checks that the signature is the header's.
#define DEDUPSIM_CLIENT_FORWARD(library, result, name, params, args)                        \
  extern "C" result name params {                                                           \
    static const auto forward = reinterpret_cast<decltype(&::name)>(library().Symbol(#name)); \
    return forward args;                                                                    \
  }

// The same for a function returning nothing that frees what the library returned: without
// the library, nothing to do (safe in destructors).
#define DEDUPSIM_CLIENT_FREE(library, name, params, args)                                   \
  extern "C" void name params {                                                             \
    static const auto forward =                                                             \
        reinterpret_cast<decltype(&::name)>(library().SymbolIfLoaded(#name));               \
    if (forward != nullptr) forward args;                                                   \
  }
