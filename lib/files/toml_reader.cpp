#include "files/toml_reader.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "os/unique_fd.h"

namespace dedupsim::files {

namespace {

const toml::node& Node(const void* p) { return *static_cast<const toml::node*>(p); }

// The first control character of text (its byte offset and code point): C0 but tab, line
// feed and carriage return; DEL; C1 (U+0080 to U+009F, in UTF-8 C2 80 to C2 9F). Printed,
// any of them could steer the terminal.
std::optional<std::pair<size_t, unsigned>> FirstControl(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return std::pair{i, unsigned{c}};
    if (c == 0xC2 && i + 1 < text.size()) {
      const auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9F) return std::pair{i, unsigned{next}};
    }
  }
  return std::nullopt;
}

Position At(const std::string& file, const toml::source_position& p) {
  return Position{file, static_cast<int>(p.line), static_cast<int>(p.column)};
}

std::string_view TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "true or false";
    default:
      return "a date or time";
  }
}

}  // namespace

Position Value::position() const { return At(file_, Node(node_).source().begin); }

FileError Value::Error(const std::string& message) const { return ErrorAt(position(), message); }
FileError Value::KeyError(const std::string& message) const { return ErrorAt(key_at_, message); }

const std::string& Value::String() const {
  const auto* s = Node(node_).as_string();
  if (s == nullptr) {
    throw Error(fmt::format("{} is {}; expected a string in quotes", key_, TypeName(Node(node_))));
  }
  if (auto control = FirstControl(s->get())) {
    throw TextError(control->first,
                    fmt::format("{} holds a control character (U+{:04X}); write it without one",
                                key_.empty() ? "the string" : key_, control->second));
  }
  return s->get();
}

bool Value::Bool() const {
  const auto* b = Node(node_).as_boolean();
  if (b == nullptr)
    throw Error(fmt::format("{} is {}; expected true", key_, TypeName(Node(node_))));
  return b->get();
}

int64_t Value::Int() const {
  const auto* i = Node(node_).as_integer();
  if (i == nullptr) {
    throw Error(fmt::format("{} is {}; expected an integer", key_, TypeName(Node(node_))));
  }
  return i->get();
}

double Value::Number() const {
  if (const auto* i = Node(node_).as_integer()) return static_cast<double>(i->get());
  const auto* f = Node(node_).as_floating_point();
  if (f == nullptr)
    throw Error(fmt::format("{} is {}; expected a number", key_, TypeName(Node(node_))));
  return f->get();
}

bool Value::IsTable() const { return Node(node_).is_table(); }
bool Value::IsArray() const { return Node(node_).is_array(); }
bool Value::IsString() const { return Node(node_).is_string(); }

std::vector<std::pair<std::string, Value>> Value::Entries() const {
  const auto* t = Node(node_).as_table();
  if (t == nullptr) {
    throw Error(fmt::format("{} is {}; expected a table", key_.empty() ? "the value" : key_,
                            TypeName(Node(node_))));
  }
  std::vector<std::pair<std::string, Value>> entries;
  for (const auto& [k, v] : *t) {
    std::string name(k.str());
    Position key_at = At(file_, k.source().begin);
    if (key_at.line == 0) key_at = At(file_, v.source().begin);
    if (auto control = FirstControl(name)) {
      throw ErrorAt(key_at, fmt::format("a key holds a control character (U+{:04X}); write it "
                                        "without one",
                                        control->second));
    }
    entries.emplace_back(name, Value(&v, name, key_at, file_, source_));
  }
  // toml++ keeps keys sorted; the reader wants them as written.
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    Position pa = a.second.key_position(), pb = b.second.key_position();
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return entries;
}

std::vector<Value> Value::Items() const {
  const auto* a = Node(node_).as_array();
  if (a == nullptr) {
    throw Error(fmt::format("{} is {}; expected an array", key_, TypeName(Node(node_))));
  }
  std::vector<Value> items;
  for (const toml::node& n : *a) {
    items.emplace_back(&n, key_, At(file_, n.source().begin), file_, source_);
  }
  return items;
}

namespace {

// Where each byte of a string's text was written: the line and column (in characters, as
// toml++ counts them) of the source character it came from.
struct SourceCursor {
  const std::string* source;
  const std::string& src() const { return *source; }
  size_t at;  // byte index in src
  int line;
  int column;
  void Advance() {  // to the next byte
    if (src()[at] == '\n') {
      ++line;
      column = 1;
    } else if (at + 1 < src().size() && (static_cast<unsigned char>(src()[at + 1]) & 0xC0) != 0x80) {
      ++column;  // the next byte starts a character
    }
    ++at;
  }
  bool Starts(std::string_view s) const { return src().compare(at, s.size(), s) == 0; }
};

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes the string literal at the cursor (any of TOML's four kinds) and records, for each
// byte of the result, where it was written. False when the text is not one it knows.
bool DecodeString(SourceCursor c, std::string& out, std::vector<std::pair<int, int>>& where) {
  const std::string& src = c.src();
  auto emit = [&](std::string_view bytes, const SourceCursor& from) {
    out.append(bytes);
    for (size_t i = 0; i < bytes.size(); ++i) where.emplace_back(from.line, from.column);
  };
  auto newline_here = [&](const SourceCursor& k) {
    return k.Starts("\n") || k.Starts("\r\n");
  };
  const bool multi = c.Starts("\"\"\"") || c.Starts("'''");
  if (c.at >= src.size() || (src[c.at] != '"' && src[c.at] != '\'')) return false;
  const char quote = src[c.at];
  const bool literal = quote == '\'';
  for (int i = 0; i < (multi ? 3 : 1); ++i) c.Advance();
  if (multi && newline_here(c)) {  // the newline right after the opening delimiter is dropped
    if (c.Starts("\r")) c.Advance();
    c.Advance();
  }
  const std::string close(multi ? 3 : 1, quote);
  while (c.at < src.size()) {
    if (c.Starts(close)) {
      if (!multi) return true;
      // Up to two quotes just before the closing three belong to the text.
      size_t run = 0;
      while (c.at + run < src.size() && src[c.at + run] == quote) ++run;
      if (run > 5) return false;
      for (size_t i = 0; i + 3 < run; ++i) {
        emit(std::string(1, quote), c);
        c.Advance();
      }
      return true;
    }
    const SourceCursor here = c;
    const char ch = src[c.at];
    if (ch == '\r' && multi && c.Starts("\r\n")) {  // a CRLF reads as a newline
      c.Advance();
      c.Advance();
      emit("\n", here);
      continue;
    }
    if (!literal && ch == '\\') {
      c.Advance();
      if (c.at >= src.size()) return false;
      const char e = src[c.at];
      // A line-ending backslash: the newline and the whitespace after it are dropped.
      if (multi && (e == ' ' || e == '\t' || e == '\n' || e == '\r')) {
        SourceCursor k = c;
        while (k.at < src.size() && (src[k.at] == ' ' || src[k.at] == '\t')) k.Advance();
        if (!newline_here(k)) return false;
        while (k.at < src.size() &&
               (src[k.at] == ' ' || src[k.at] == '\t' || src[k.at] == '\n' || src[k.at] == '\r')) {
          k.Advance();
        }
        c = k;
        continue;
      }
      static constexpr std::pair<char, char> kSimple[] = {
          {'b', '\b'}, {'t', '\t'}, {'n', '\n'}, {'f', '\f'}, {'r', '\r'}, {'"', '"'}, {'\\', '\\'}};
      bool done = false;
      for (const auto& [name, value] : kSimple) {
        if (e == name) {
          emit(std::string(1, value), here);
          c.Advance();
          done = true;
          break;
        }
      }
      if (done) continue;
      if (e == 'u' || e == 'U') {
        const size_t digits = e == 'u' ? 4 : 8;
        if (c.at + digits >= src.size()) return false;
        uint32_t cp = 0;
        for (size_t i = 1; i <= digits; ++i) {
          const char h = src[c.at + i];
          uint32_t v = 0;
          if (h >= '0' && h <= '9') {
            v = static_cast<uint32_t>(h - '0');
          } else if (h >= 'a' && h <= 'f') {
            v = static_cast<uint32_t>(h - 'a' + 10);
          } else if (h >= 'A' && h <= 'F') {
            v = static_cast<uint32_t>(h - 'A' + 10);
          } else {
            return false;
          }
          cp = cp * 16 + v;
        }
        std::string bytes;
        AppendUtf8(bytes, cp);
        emit(bytes, here);
        for (size_t i = 0; i <= digits; ++i) c.Advance();
        continue;
      }
      return false;  // an escape this reader does not know: no mapping
    }
    if (!multi && ch == '\n') return false;
    emit(std::string_view(&src[c.at], 1), here);
    c.Advance();
  }
  return false;
}

}  // namespace

Position Value::TextPosition(size_t offset) const {
  const Position start = position();
  const auto* s = Node(node_).as_string();
  if (source_ == nullptr || s == nullptr || start.line < 1) return start;
  // The byte where the value starts: its line, then its column in characters.
  SourceCursor c{source_, 0, 1, 1};
  while (c.at < source_->size() && c.line < start.line) c.Advance();
  while (c.at < source_->size() && c.line == start.line && c.column < start.column) c.Advance();
  std::string text;
  std::vector<std::pair<int, int>> where;
  if (!DecodeString(c, text, where) || text != s->get()) return start;
  if (offset >= where.size()) {
    if (where.empty()) return start;
    // Past the end: just after the last character.
    return Position{file_, where.back().first, where.back().second + 1};
  }
  return Position{file_, where[offset].first, where[offset].second};
}

FileError Value::TextError(size_t offset, const std::string& message) const {
  return ErrorAt(TextPosition(offset), message);
}

Document::~Document() = default;
Document::Document(Document&&) noexcept = default;

Document Document::Parse(std::string_view text, const std::string& path) {
  CheckNesting(text, path);
  Document doc;
  doc.text_ = std::make_shared<const std::string>(text);
  try {
    auto table = std::make_shared<toml::table>(toml::parse(*doc.text_, path));
    doc.root_ =
        std::make_unique<Value>(table.get(), "", Position{path, 1, 1}, path, doc.text_.get());
    doc.table_ = table;
  } catch (const toml::parse_error& e) {
    throw ErrorAt(At(path, e.source().begin), std::string(e.description()));
  }
  int lines = 1;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  doc.end_ = Position{path, lines, 1};
  return doc;
}

std::string ReadWholeFile(const std::string& path) {
  auto fail = [&](const std::string& why) { return FileError(fmt::format("{}: {}", path, why)); };
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
  const UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!file) throw fail(fmt::format("cannot be read: {}", std::strerror(errno)));
  const int fd = file.get();
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw fail(fmt::format("cannot be read: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO (a named pipe)"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    throw fail(fmt::format("is {}, not a file to read (expected a .toml file)", what));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    throw fail(fmt::format("holds {} bytes; a consumer or scenario file is at most {} bytes (1 MB)",
                           st.st_size, kMaxFileBytes));
  }
  // Read at most one byte past the cap: a file that grows while it is read is refused too.
  std::string text(kMaxFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw fail(fmt::format("cannot be read: {}", std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxFileBytes) {
    throw fail(fmt::format("grew past {} bytes while it was read; a consumer or scenario file "
                           "is at most 1 MB",
                           kMaxFileBytes));
  }
  text.resize(got);
  return text;
}

void CheckNesting(std::string_view text, const std::string& path) {
  // Where each byte is, for the message (lines and characters, as toml++ counts them).
  auto at = [&](size_t i) {
    int line = 1, column = 1;
    for (size_t k = 0; k < i && k < text.size(); ++k) {
      if (text[k] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    return Position{path, line, column};
  };
  auto too_deep = [&](size_t i) {
    return ErrorAt(at(i), fmt::format("nested deeper than {} levels (tables, dotted keys, arrays "
                                      "and inline tables together); a consumer or scenario file "
                                      "needs a few",
                                      kMaxTomlNesting));
  };
  // Skips the string that starts at i (any of TOML's four kinds); returns the index after it.
  auto skip_string = [&](size_t i) {
    const char q = text[i];
    const bool multi = text.compare(i, 3, std::string(3, q)) == 0;
    size_t j = i + (multi ? 3 : 1);
    while (j < text.size()) {
      if (q == '"' && text[j] == '\\') {
        j += 2;
        continue;
      }
      if (!multi && text[j] == '\n') return j;  // unterminated: toml++ reports it
      if (multi ? text.compare(j, 3, std::string(3, q)) == 0 : text[j] == q) {
        j += multi ? 3 : 1;
        while (multi && j < text.size() && text[j] == q) ++j;  // up to two quotes inside
        return j;
      }
      ++j;
    }
    return j;
  };
  struct Level {
    char open;  // '[' or '{'
    int depth;  // the container's own depth
  };
  std::vector<Level> stack;
  int header_depth = 0;  // the table the lines below the last header fill
  bool key_mode = true;  // reading a key (before '='), else a value
  bool line_start = true;
  int key_dots = 0;
  int value_depth = 0;  // the depth of the value being read
  auto base = [&] { return stack.empty() ? header_depth : stack.back().depth; };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      i = skip_string(i);
      line_start = false;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '\n') {
      if (stack.empty()) {
        key_mode = true;
        key_dots = 0;
      }
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (key_mode && stack.empty() && line_start && c == '[') {  // a table header
      const bool array = text.compare(i, 2, "[[") == 0;
      int segments = 1;
      size_t j = i + (array ? 2 : 1);
      while (j < text.size() && text[j] != ']' && text[j] != '\n') {
        if (text[j] == '"' || text[j] == '\'') {
          j = skip_string(j);
          continue;
        }
        if (text[j] == '.' && ++segments + (array ? 1 : 0) > kMaxTomlNesting) throw too_deep(j);
        ++j;
      }
      header_depth = segments + (array ? 1 : 0);
      i = j;
      line_start = false;
      continue;
    }
    line_start = false;
    if (key_mode) {
      if (c == '.' && base() + ++key_dots + 1 > kMaxTomlNesting) throw too_deep(i);
      if (c == '=') {
        key_mode = false;
        value_depth = base() + key_dots + 1;
        key_dots = 0;
      } else if (c == '}' && !stack.empty()) {  // an empty inline table, or after a ','
        value_depth = stack.back().depth;
        stack.pop_back();
        key_mode = false;
      }
      ++i;
      continue;
    }
    if (c == '[' || c == '{') {
      if (value_depth > kMaxTomlNesting) throw too_deep(i);
      stack.push_back({c, value_depth});
      value_depth += 1;  // its first element
      if (c == '{') {
        key_mode = true;
        key_dots = 0;
      }
    } else if ((c == ']' || c == '}') && !stack.empty()) {
      value_depth = stack.back().depth;
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().open == '{') {
        key_mode = true;
        key_dots = 0;
      } else {
        value_depth = stack.back().depth + 1;
      }
    }
    ++i;
  }
}

}  // namespace dedupsim::files
