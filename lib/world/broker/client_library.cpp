#include "world/broker/client_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "world/broker/broker.h"

namespace dedupsim {

ClientLibrary::ClientLibrary(const char* env, const char* soname, const char* what,
                             const char* package)
    : env_(env), soname_(soname), what_(what), package_(package) {}

const ClientLibrary::Opened& ClientLibrary::Open() const {
  // One per library object; the objects are function-local statics of the forwarding files.
  static std::mutex mu;
  static std::map<const ClientLibrary*, Opened>* opened = new std::map<const ClientLibrary*, Opened>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = opened->find(this);
  if (it != opened->end()) return it->second;
  Opened o;
  const char* name = std::getenv(env_);
  o.name = name != nullptr && *name != '\0' ? name : soname_;
  o.handle = ::dlopen(o.name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (o.handle == nullptr) {
    const char* error = ::dlerror();
    o.error = error != nullptr ? error : "unknown error";
  }
  return opened->emplace(this, std::move(o)).first->second;
}

const std::string& ClientLibrary::name() const { return Open().name; }

void ClientLibrary::Require() const {
  const Opened& o = Open();
  if (o.handle == nullptr) {
    throw BrokerError(fmt::format("{} needs {} and cannot open it ({}): install {} or set {} to its path",
                                  what_, o.name, o.error, package_, env_));
  }
}

void* ClientLibrary::Symbol(const char* symbol) const {
  Require();
  void* found = ::dlsym(Open().handle, symbol);
  if (found == nullptr) {
    throw BrokerError(fmt::format("{} cannot use {}: it has no {}", what_, Open().name, symbol));
  }
  return found;
}

void* ClientLibrary::SymbolIfLoaded(const char* symbol) const {
  const Opened& o = Open();
  return o.handle != nullptr ? ::dlsym(o.handle, symbol) : nullptr;
}

}  // namespace dedupsim
