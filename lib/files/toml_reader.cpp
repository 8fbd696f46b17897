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
    entries.emplace_back(name, Value(&v, name, key_at, file_));
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
  for (const toml::node& n : *a) items.emplace_back(&n, key_, At(file_, n.source().begin), file_);
  return items;
}

Document::~Document() = default;
Document::Document(Document&&) noexcept = default;

Document Document::Parse(std::string_view text, const std::string& path) {
  Document doc;
  try {
    auto table = std::make_shared<toml::table>(toml::parse(text, path));
    doc.root_ = std::make_unique<Value>(table.get(), "", Position{path, 1, 1}, path);
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
