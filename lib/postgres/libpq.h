// libpq, loaded when the PostgreSQL backend is first used, not when dedupsim starts.
//
// dedupsim is not linked against libpq: linked, the dynamic loader would map libpq and the
// twenty libraries it needs (OpenSSL, Kerberos, LDAP, GnuTLS, ...) into every command, a
// SQLite `run` included, before main. Instead libpq.cpp defines each libpq function the
// code calls (PQconnectdb, PQexec, ...) with libpq-fe.h's own signature: the first call
// opens the system's libpq (its soname, found as the loader finds any library) and each
// function forwards to libpq's. Callers include libpq-fe.h and call PQ* as usual.
//
// A libpq function the code starts to call is added to the list in libpq.cpp (the link
// fails with an undefined reference to it until then; the compiler checks its signature).
#pragma once

namespace dedupsim {

// The library the PostgreSQL backend opens: $DEDUPSIM_LIBPQ when set (a path or a
// soname), otherwise libpq's soname, libpq.so.5.
const char* LibpqName();

// Opens libpq now if it is not open yet. Throws DatabaseError (one line naming the library
// and why it could not be opened) when it cannot be opened: called before a command does
// anything for PostgreSQL (before starting a throwaway server), and by every forwarding
// function on its first call.
void RequireLibpq();

}  // namespace dedupsim
