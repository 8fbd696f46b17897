#include "store/tables_reader.h"

namespace dedupsim {

TablesSnapshot SnapshotAfter(const TraceEvent& after) {
  TablesSnapshot snap;
  snap.seq = after.seq;
  snap.at_us = after.at_us;
  snap.pid = after.pid;
  snap.kind = after.kind;
  snap.instance = after.instance;
  snap.detail = after.detail;
  return snap;
}

}  // namespace dedupsim
