#include "postgres/libpq.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <string>

#include "store/error.h"

namespace dedupsim {

namespace {

struct Library {
  std::string name;
  void* handle = nullptr;
  std::string error;  // dlerror() when handle is null
};

// Opened once, on first use, by whichever thread comes first; never closed.
const Library& Libpq() {
  static const Library library = [] {
    Library l;
    const char* name = std::getenv("DEDUPSIM_LIBPQ");
    l.name = name != nullptr && *name != '\0' ? name : "libpq.so.5";
    l.handle = ::dlopen(l.name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) {
      const char* error = ::dlerror();
      l.error = error != nullptr ? error : "unknown error";
    }
    return l;
  }();
  return library;
}

// libpq's own definition of name; throws DatabaseError when libpq or the symbol is missing.
void* Symbol(const char* name) {
  RequireLibpq();
  void* symbol = ::dlsym(Libpq().handle, name);
  if (symbol == nullptr) {
    throw DatabaseError(
        fmt::format("the PostgreSQL backend cannot use {}: it has no {}", Libpq().name, name));
  }
  return symbol;
}

// For the functions that free what libpq returned: without libpq there is nothing to free.
// Whether libpq opened is decided once (Libpq() is never retried), so a null kept by the
// caller stays right.
void* SymbolIfLoaded(const char* name) {
  return Libpq().handle != nullptr ? ::dlsym(Libpq().handle, name) : nullptr;
}

}  // namespace

const char* LibpqName() { return Libpq().name.c_str(); }

void RequireLibpq() {
  const Library& l = Libpq();
  if (l.handle == nullptr) {
    throw DatabaseError(fmt::format(
        "the PostgreSQL backend needs libpq and cannot open {} ({}): install libpq (Debian: "
        "libpq5) or set DEDUPSIM_LIBPQ to its path",
        l.name, l.error));
  }
}

}  // namespace dedupsim

// Each definition must match libpq-fe.h's declaration (a C function cannot be overloaded:
// the compiler rejects any other signature). The address is looked up on the first call.
#define DEDUPSIM_LIBPQ_FORWARD(result, name, params, args)                                    \
  extern "C" result name params {                                                             \
    static const auto forward = reinterpret_cast<decltype(&::name)>(dedupsim::Symbol(#name)); \
    return forward args;                                                                      \
  }

// Frees what libpq returned (nothing to do, and nothing thrown, without libpq): safe in
// destructors.
#define DEDUPSIM_LIBPQ_FREE(name, type)                                       \
  extern "C" void name(type pointer) {                                        \
    static const auto forward =                                               \
        reinterpret_cast<decltype(&::name)>(dedupsim::SymbolIfLoaded(#name)); \
    if (forward != nullptr) forward(pointer);                                 \
  }

// Connecting and the connection's state.
DEDUPSIM_LIBPQ_FORWARD(PGconn*, PQconnectdb, (const char* conninfo), (conninfo))
DEDUPSIM_LIBPQ_FORWARD(PGconn*, PQconnectdbParams,
                       (const char* const* keywords, const char* const* values, int expand_dbname),
                       (keywords, values, expand_dbname))
DEDUPSIM_LIBPQ_FORWARD(PGconn*, PQconnectStart, (const char* conninfo), (conninfo))
DEDUPSIM_LIBPQ_FORWARD(PostgresPollingStatusType, PQconnectPoll, (PGconn * conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(PGPing, PQping, (const char* conninfo), (conninfo))
DEDUPSIM_LIBPQ_FORWARD(PGPing, PQpingParams,
                       (const char* const* keywords, const char* const* values, int expand_dbname),
                       (keywords, values, expand_dbname))
DEDUPSIM_LIBPQ_FREE(PQfinish, PGconn*)
DEDUPSIM_LIBPQ_FORWARD(void, PQreset, (PGconn * conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(ConnStatusType, PQstatus, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(PGTransactionStatusType, PQtransactionStatus, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(const char*, PQparameterStatus, (const PGconn* conn, const char* param_name),
                       (conn, param_name))
DEDUPSIM_LIBPQ_FORWARD(int, PQserverVersion, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(char*, PQerrorMessage, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(int, PQsocket, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(int, PQbackendPID, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(char*, PQdb, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(char*, PQuser, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(char*, PQhost, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(char*, PQport, (const PGconn* conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(PQnoticeProcessor, PQsetNoticeProcessor,
                       (PGconn * conn, PQnoticeProcessor proc, void* arg), (conn, proc, arg))
DEDUPSIM_LIBPQ_FORWARD(PQnoticeReceiver, PQsetNoticeReceiver,
                       (PGconn * conn, PQnoticeReceiver proc, void* arg), (conn, proc, arg))
DEDUPSIM_LIBPQ_FORWARD(int, PQlibVersion, (void), ())

// Cancelling a running statement from another thread.
DEDUPSIM_LIBPQ_FORWARD(PGcancel*, PQgetCancel, (PGconn * conn), (conn))
DEDUPSIM_LIBPQ_FREE(PQfreeCancel, PGcancel*)
DEDUPSIM_LIBPQ_FORWARD(int, PQcancel, (PGcancel * cancel, char* errbuf, int errbufsize),
                       (cancel, errbuf, errbufsize))

// Statements, waiting for results, asynchronous sending.
DEDUPSIM_LIBPQ_FORWARD(PGresult*, PQexec, (PGconn * conn, const char* query), (conn, query))
DEDUPSIM_LIBPQ_FORWARD(PGresult*, PQexecParams,
                       (PGconn * conn, const char* command, int nParams, const Oid* paramTypes,
                        const char* const* paramValues, const int* paramLengths,
                        const int* paramFormats, int resultFormat),
                       (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                        resultFormat))
DEDUPSIM_LIBPQ_FORWARD(PGresult*, PQprepare,
                       (PGconn * conn, const char* stmtName, const char* query, int nParams,
                        const Oid* paramTypes),
                       (conn, stmtName, query, nParams, paramTypes))
DEDUPSIM_LIBPQ_FORWARD(PGresult*, PQexecPrepared,
                       (PGconn * conn, const char* stmtName, int nParams,
                        const char* const* paramValues, const int* paramLengths,
                        const int* paramFormats, int resultFormat),
                       (conn, stmtName, nParams, paramValues, paramLengths, paramFormats,
                        resultFormat))
DEDUPSIM_LIBPQ_FORWARD(PGresult*, PQdescribePrepared, (PGconn * conn, const char* stmt),
                       (conn, stmt))
DEDUPSIM_LIBPQ_FORWARD(int, PQsendQuery, (PGconn * conn, const char* query), (conn, query))
DEDUPSIM_LIBPQ_FORWARD(int, PQsendQueryParams,
                       (PGconn * conn, const char* command, int nParams, const Oid* paramTypes,
                        const char* const* paramValues, const int* paramLengths,
                        const int* paramFormats, int resultFormat),
                       (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                        resultFormat))
DEDUPSIM_LIBPQ_FORWARD(int, PQsendPrepare,
                       (PGconn * conn, const char* stmtName, const char* query, int nParams,
                        const Oid* paramTypes),
                       (conn, stmtName, query, nParams, paramTypes))
DEDUPSIM_LIBPQ_FORWARD(int, PQsendQueryPrepared,
                       (PGconn * conn, const char* stmtName, int nParams,
                        const char* const* paramValues, const int* paramLengths,
                        const int* paramFormats, int resultFormat),
                       (conn, stmtName, nParams, paramValues, paramLengths, paramFormats,
                        resultFormat))
DEDUPSIM_LIBPQ_FORWARD(PGresult*, PQgetResult, (PGconn * conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(int, PQisBusy, (PGconn * conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(int, PQconsumeInput, (PGconn * conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(int, PQsetnonblocking, (PGconn * conn, int arg), (conn, arg))
DEDUPSIM_LIBPQ_FORWARD(int, PQflush, (PGconn * conn), (conn))
DEDUPSIM_LIBPQ_FORWARD(PGnotify*, PQnotifies, (PGconn * conn), (conn))

// Results.
DEDUPSIM_LIBPQ_FORWARD(ExecStatusType, PQresultStatus, (const PGresult* res), (res))
DEDUPSIM_LIBPQ_FORWARD(char*, PQresStatus, (ExecStatusType status), (status))
DEDUPSIM_LIBPQ_FORWARD(char*, PQresultErrorMessage, (const PGresult* res), (res))
DEDUPSIM_LIBPQ_FORWARD(char*, PQresultErrorField, (const PGresult* res, int fieldcode),
                       (res, fieldcode))
DEDUPSIM_LIBPQ_FORWARD(int, PQntuples, (const PGresult* res), (res))
DEDUPSIM_LIBPQ_FORWARD(int, PQnfields, (const PGresult* res), (res))
DEDUPSIM_LIBPQ_FORWARD(char*, PQfname, (const PGresult* res, int field_num), (res, field_num))
DEDUPSIM_LIBPQ_FORWARD(int, PQfnumber, (const PGresult* res, const char* field_name),
                       (res, field_name))
DEDUPSIM_LIBPQ_FORWARD(Oid, PQftype, (const PGresult* res, int field_num), (res, field_num))
DEDUPSIM_LIBPQ_FORWARD(Oid, PQftable, (const PGresult* res, int field_num), (res, field_num))
DEDUPSIM_LIBPQ_FORWARD(char*, PQcmdStatus, (PGresult * res), (res))
DEDUPSIM_LIBPQ_FORWARD(char*, PQcmdTuples, (PGresult * res), (res))
DEDUPSIM_LIBPQ_FORWARD(char*, PQgetvalue, (const PGresult* res, int tup_num, int field_num),
                       (res, tup_num, field_num))
DEDUPSIM_LIBPQ_FORWARD(int, PQgetlength, (const PGresult* res, int tup_num, int field_num),
                       (res, tup_num, field_num))
DEDUPSIM_LIBPQ_FORWARD(int, PQgetisnull, (const PGresult* res, int tup_num, int field_num),
                       (res, tup_num, field_num))
DEDUPSIM_LIBPQ_FREE(PQclear, PGresult*)
DEDUPSIM_LIBPQ_FREE(PQfreemem, void*)

// Quoting.
DEDUPSIM_LIBPQ_FORWARD(char*, PQescapeLiteral, (PGconn * conn, const char* str, size_t len),
                       (conn, str, len))
DEDUPSIM_LIBPQ_FORWARD(char*, PQescapeIdentifier, (PGconn * conn, const char* str, size_t len),
                       (conn, str, len))
