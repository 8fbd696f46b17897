// The tiny expression language of scenario files: what --check expects of a figure
// (`reserved = "quantity * 2"`) and how many copies a delivery sends (`copies =
// "deliveries"`). Documented in docs/files.md:
//   literals   12  true  false  "text"  [a, b]
//   names      a figure of the file, or an option: quantity, deliveries, holdMs, staggerMs,
//              crashMode, instances
//   operators  (high to low) unary - and not; * /; + -; == != < <= > >=; and; or;
//              cond ? a : b
// Integers are 64-bit; + - * / take integers, `and`/`or`/`not` booleans; == and != compare
// any two values. A mistake is a FileError at FILE:LINE:COLUMN of the character.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "files/consumer_file.h"

namespace dedupsim::files {

struct ExpressionNode;

class Expression {
 public:
  Expression() = default;
  // Throws FileError at the offending character; `at` is where the text starts (its first
  // character, not the quote before it).
  static Expression Parse(std::string_view text, const Position& at);

  // The value, with names looked up by `lookup` (nullopt: no such name). Throws FileError
  // at the name or operator that cannot be evaluated.
  using Lookup = std::function<std::optional<nlohmann::json>(std::string_view name)>;
  nlohmann::json Evaluate(const Lookup& lookup) const;

  // Every name the expression uses, with where it is written.
  std::vector<std::pair<std::string, Position>> Names() const;
  const std::string& text() const { return text_; }
  bool empty() const { return root_ == nullptr; }

 private:
  std::string text_;
  std::shared_ptr<const ExpressionNode> root_;
};

}  // namespace dedupsim::files
