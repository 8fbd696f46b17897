// The key under the --timeline drawing, and its style sheet: every bar, hatch and glyph the
// lanes use, each with what it means ("transaction committed", "waits for a lock",
// "crash"), in rows that wrap at the page's width, drawn with the lanes' own glyphs; and
// the style sheet: the CSS of every class the parts of the drawing use, and the hatch
// pattern of a lock wait.
//
// Pure; thread-safe.
#pragma once

#include <string>

namespace dedupsim::timeline {

// The key drawn from height `top` down; sets *height to the room it takes. write_lock: the
// drawing shows a write lock's hold (SQLite), keyed only then: a PostgreSQL run has none.
std::string Legend(double top, bool write_lock, double* height);

// The <style> and <defs> of the document, as written after its <title>.
const char* Style();

}  // namespace dedupsim::timeline
