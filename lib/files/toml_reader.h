// A small reader over toml++ for the files dedupsim reads (consumers, scenarios): every
// value keeps where it was written, so each mistake is reported as FILE:LINE:COLUMN. Only
// toml_reader.cpp includes toml++ (a large header); the rest of lib/files sees this.
//
// Why TOML: no indentation to get wrong, strings and multi-line strings for SQL without
// quoting rules, arrays of tables ([[step]]) read like the steps of a handler, and toml++
// gives the line and column of every key and value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "files/consumer_file.h"

namespace dedupsim::files {

// One value of a document, with the key it was written under. Valid while its Document is.
class Value {
 public:
  // node: a toml::node (kept opaque so that toml++ stays out of this header); source: the
  // document's text, which the Value must not outlive.
  Value(const void* node, std::string key, Position key_at, std::string file,
        const std::string* source = nullptr)
      : node_(node),
        key_(std::move(key)),
        key_at_(std::move(key_at)),
        file_(std::move(file)),
        source_(source) {}

  const std::string& key() const { return key_; }
  Position position() const;  // where the value starts
  Position key_position() const { return key_at_; }

  // Each throws FileError at the value when it has another type. A string may hold no
  // control character but tab and line breaks (an escape like \u001b would reach the
  // terminal when it is printed): refused at the character.
  const std::string& String() const;
  bool Bool() const;
  int64_t Int() const;
  double Number() const;  // an integer or a float
  bool IsTable() const;
  bool IsArray() const;
  bool IsString() const;
  // A table's keys in the order written.
  std::vector<std::pair<std::string, Value>> Entries() const;
  // An array's items.
  std::vector<Value> Items() const;

  FileError Error(const std::string& message) const;     // at the value
  FileError KeyError(const std::string& message) const;  // at its key

  // A string's byte offset (in String()) as the place in the file it was written: the line
  // and column of that character, through escapes, line-ending backslashes and the newline
  // a multi-line string drops. The value's own position when the mapping is unknown.
  Position TextPosition(size_t offset) const;
  FileError TextError(size_t offset, const std::string& message) const;

 private:
  const void* node_;
  std::string key_;
  Position key_at_;
  std::string file_;
  const std::string* source_;
};

class Document {
 public:
  // Throws FileError at the place toml++ found a syntax error, or where the text nests
  // too deep (CheckNesting), or at a key holding a control character.
  static Document Parse(std::string_view text, const std::string& path);
  ~Document();
  Document(Document&&) noexcept;
  Document& operator=(Document&&) = delete;

  const Value& root() const { return *root_; }
  Position end() const { return end_; }

 private:
  Document() = default;
  std::shared_ptr<const std::string> text_;  // the source, which values map positions into
  std::shared_ptr<void> table_;  // the parsed toml::table
  std::unique_ptr<Value> root_;
  Position end_;
};

// The most a consumer or scenario file may hold, and how deep its tables, dotted keys,
// arrays and inline tables may nest (docs/reliability.md, "Input").
inline constexpr size_t kMaxFileBytes = 1 << 20;
inline constexpr int kMaxTomlNesting = 32;

// The whole file, which must be a regular file of at most kMaxFileBytes: a directory, a
// FIFO, a device or a larger file is refused without being read (or waited on). Throws
// FileError ("FILE: ... ") naming what it is.
std::string ReadWholeFile(const std::string& path);

// Throws FileError at the first place where text nests deeper than kMaxTomlNesting: table
// headers ([a.b.c]), dotted keys (a.b.c = 1), arrays and inline tables, together. A lexical
// pass, before toml++ (whose recursion a 100,000-level key would overflow) reads the text.
void CheckNesting(std::string_view text, const std::string& path);

}  // namespace dedupsim::files
