#include "files/toml_reader.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dedupsim::files {

namespace {

const toml::node& Node(const void* p) { return *static_cast<const toml::node*>(p); }

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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw FileError(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  return out.str();
}

}  // namespace dedupsim::files
