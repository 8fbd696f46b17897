// SQL text as people read it, never as a decision: the one-line form a trace and a
// message show, cut when long, and where a statement's first token starts. These follow
// SQLite's tokenizer only as far as comments and quotes go (-- to the end of the line,
// /* to */, '...', "...", [...], `...`), which reads PostgreSQL's comments and quotes the
// same way; what a statement is and does is read from the database's own parse (the check
// of store/untrusted_sql.h), never from here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dedupsim {

// The statement on one line: each comment becomes a space, runs of whitespace outside
// quotes become one space, leading and trailing whitespace go. SQLite reads the result as
// the same statement (comments are whitespace to it), with the same parameters in the same
// order.
std::string SqlOneLine(std::string_view sql);

// SqlOneLine, cut after about max_chars (on a UTF-8 boundary) with "... (N bytes)" saying
// how long the whole was: a 600 KB statement is not echoed whole in a message.
std::string SqlForMessage(std::string_view sql, size_t max_chars = 160);

// Where the parameter name (":BookId", "?2") is written in text at or after from, outside
// comments and quotes, and not as the start of a longer name; npos when it is not.
size_t FindSqlParameter(std::string_view text, std::string_view name, size_t from = 0);

// "name" with every " doubled: an identifier SQLite reads as exactly name.
std::string QuoteSqlIdentifier(std::string_view name);

// The offset of the first byte at or after from that is neither whitespace nor inside a
// comment (text.size() when there is none).
size_t SkipSpaceAndComments(std::string_view text, size_t from);

}  // namespace dedupsim
