#include "files/expression.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>

namespace dedupsim::files {

struct ExpressionNode {
  enum class Kind { kLiteral, kName, kList, kUnary, kBinary, kChoice };
  Kind kind = Kind::kLiteral;
  Position at;
  nlohmann::json literal;  // kLiteral
  std::string text;        // kName: the name; kUnary, kBinary: the operator
  std::vector<std::shared_ptr<const ExpressionNode>> args;
};

namespace {

using Node = std::shared_ptr<const ExpressionNode>;

struct Token {
  enum class Kind { kInt, kString, kName, kOperator, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;
  int64_t value = 0;
  size_t offset = 0;
};

class Parser {
 public:
  Parser(std::string_view text, const Position& at) : text_(text), at_(at) { Lex(); }

  Node Whole() {
    Node node = Choice();
    if (Peek().kind != Token::Kind::kEnd) {
      throw Error(Peek().offset,
                  fmt::format("unexpected '{}' (expected an operator or the end)", Peek().text));
    }
    return node;
  }

 private:
  Position At(size_t offset) const {
    Position p = at_;
    p.column += static_cast<int>(offset);
    return p;
  }
  FileError Error(size_t offset, const std::string& message) const {
    return ErrorAt(At(offset), fmt::format("{} in: {}", message, text_));
  }

  void Lex() {
    size_t i = 0;
    while (i < text_.size()) {
      char c = text_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      Token t;
      t.offset = i;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        t.kind = Token::Kind::kInt;
        while (i < text_.size() && std::isdigit(static_cast<unsigned char>(text_[i]))) {
          if (t.value > (std::numeric_limits<int64_t>::max() - (text_[i] - '0')) / 10) {
            throw Error(t.offset, "integer too large");
          }
          t.value = t.value * 10 + (text_[i] - '0');
          ++i;
        }
        t.text = std::string(text_.substr(t.offset, i - t.offset));
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        t.kind = Token::Kind::kName;
        while (i < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_')) {
          ++i;
        }
        t.text = std::string(text_.substr(t.offset, i - t.offset));
      } else if (c == '"' || c == '\'') {
        t.kind = Token::Kind::kString;
        size_t end = text_.find(c, i + 1);
        if (end == std::string_view::npos) throw Error(i, "a text is not closed");
        t.text = std::string(text_.substr(i + 1, end - i - 1));
        i = end + 1;
      } else {
        t.kind = Token::Kind::kOperator;
        static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">="};
        std::string_view two = text_.substr(i, 2);
        bool found = false;
        for (std::string_view op : kTwo) found = found || two == op;
        if (found) {
          t.text = std::string(two);
          i += 2;
        } else if (std::string_view("+-*/()<>?:,[]").find(c) != std::string_view::npos) {
          t.text = std::string(1, c);
          ++i;
        } else {
          throw Error(i, fmt::format("unexpected character '{}'", c));
        }
      }
      tokens_.push_back(std::move(t));
    }
    Token end;
    end.offset = text_.size();
    end.text = "end";
    tokens_.push_back(end);
  }

  const Token& Peek() const { return tokens_[next_]; }
  bool Accept(std::string_view op) {
    const Token& t = Peek();
    if ((t.kind == Token::Kind::kOperator || t.kind == Token::Kind::kName) && t.text == op) {
      ++next_;
      return true;
    }
    return false;
  }
  void Expect(std::string_view op) {
    if (!Accept(op)) {
      throw Error(Peek().offset, fmt::format("expected '{}', found '{}'", op, Peek().text));
    }
  }

  Node Make(ExpressionNode::Kind kind, size_t offset, std::string text, std::vector<Node> args) {
    auto node = std::make_shared<ExpressionNode>();
    node->kind = kind;
    node->at = At(offset);
    node->text = std::move(text);
    node->args = std::move(args);
    return node;
  }

  Node Choice() {
    Node cond = Or();
    size_t offset = Peek().offset;
    if (!Accept("?")) return cond;
    Node yes = Choice();
    Expect(":");
    Node no = Choice();
    return Make(ExpressionNode::Kind::kChoice, offset, "?", {cond, yes, no});
  }
  Node Or() {
    Node left = And();
    for (size_t offset = Peek().offset; Accept("or"); offset = Peek().offset) {
      left = Make(ExpressionNode::Kind::kBinary, offset, "or", {left, And()});
    }
    return left;
  }
  Node And() {
    Node left = Compare();
    for (size_t offset = Peek().offset; Accept("and"); offset = Peek().offset) {
      left = Make(ExpressionNode::Kind::kBinary, offset, "and", {left, Compare()});
    }
    return left;
  }
  Node Compare() {
    Node left = Sum();
    for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">"}) {
      size_t offset = Peek().offset;
      if (Accept(op))
        return Make(ExpressionNode::Kind::kBinary, offset, std::string(op), {left, Sum()});
    }
    return left;
  }
  Node Sum() {
    Node left = Product();
    for (;;) {
      size_t offset = Peek().offset;
      if (Accept("+")) {
        left = Make(ExpressionNode::Kind::kBinary, offset, "+", {left, Product()});
      } else if (Accept("-")) {
        left = Make(ExpressionNode::Kind::kBinary, offset, "-", {left, Product()});
      } else {
        return left;
      }
    }
  }
  Node Product() {
    Node left = Unary();
    for (;;) {
      size_t offset = Peek().offset;
      if (Accept("*")) {
        left = Make(ExpressionNode::Kind::kBinary, offset, "*", {left, Unary()});
      } else if (Accept("/")) {
        left = Make(ExpressionNode::Kind::kBinary, offset, "/", {left, Unary()});
      } else {
        return left;
      }
    }
  }
  Node Unary() {
    size_t offset = Peek().offset;
    if (Accept("-")) return Make(ExpressionNode::Kind::kUnary, offset, "-", {Unary()});
    if (Accept("not")) return Make(ExpressionNode::Kind::kUnary, offset, "not", {Unary()});
    return Primary();
  }
  Node Primary() {
    const Token t = Peek();
    if (t.kind == Token::Kind::kInt || t.kind == Token::Kind::kString) {
      ++next_;
      auto node = Make(ExpressionNode::Kind::kLiteral, t.offset, "", {});
      auto* n = const_cast<ExpressionNode*>(node.get());
      if (t.kind == Token::Kind::kInt) {
        n->literal = t.value;
      } else {
        n->literal = t.text;
      }
      return node;
    }
    if (t.kind == Token::Kind::kName) {
      if (t.text == "and" || t.text == "or" || t.text == "not") {
        throw Error(t.offset, fmt::format("expected a value, found '{}'", t.text));
      }
      ++next_;
      if (t.text == "true" || t.text == "false") {
        auto node = Make(ExpressionNode::Kind::kLiteral, t.offset, "", {});
        const_cast<ExpressionNode*>(node.get())->literal = t.text == "true";
        return node;
      }
      return Make(ExpressionNode::Kind::kName, t.offset, t.text, {});
    }
    if (Accept("(")) {
      Node inside = Choice();
      Expect(")");
      return inside;
    }
    if (Accept("[")) {
      std::vector<Node> items;
      if (!Accept("]")) {
        do {
          items.push_back(Choice());
        } while (Accept(","));
        Expect("]");
      }
      return Make(ExpressionNode::Kind::kList, t.offset, "[", std::move(items));
    }
    throw Error(t.offset, fmt::format("expected a value (a number, true, false, \"text\", a "
                                      "name or a parenthesis), found '{}'",
                                      t.text));
  }

  std::string_view text_;
  Position at_;
  std::vector<Token> tokens_;
  size_t next_ = 0;
};

std::string TypeName(const nlohmann::json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_boolean()) return "a boolean";
  if (v.is_string()) return "a text";
  if (v.is_array()) return "a list";
  if (v.is_null()) return "nothing (no row)";
  return "a number";
}

nlohmann::json Eval(const ExpressionNode& n, const Expression::Lookup& lookup) {
  using Kind = ExpressionNode::Kind;
  switch (n.kind) {
    case Kind::kLiteral:
      return n.literal;
    case Kind::kName: {
      std::optional<nlohmann::json> v = lookup(n.text);
      if (!v)
        throw ErrorAt(n.at, fmt::format("unknown name '{}' (expected a figure of this file "
                                        "or an option: quantity, deliveries, holdMs, "
                                        "staggerMs, crashMode, instances)",
                                        n.text));
      return *v;
    }
    case Kind::kList: {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& item : n.args) list.push_back(Eval(*item, lookup));
      return list;
    }
    case Kind::kChoice: {
      nlohmann::json cond = Eval(*n.args[0], lookup);
      if (!cond.is_boolean()) {
        throw ErrorAt(n.at, fmt::format("the condition before '?' is {}, expected a boolean",
                                        TypeName(cond)));
      }
      return Eval(*n.args[cond.get<bool>() ? 1 : 2], lookup);
    }
    case Kind::kUnary: {
      nlohmann::json v = Eval(*n.args[0], lookup);
      if (n.text == "-") {
        if (!v.is_number_integer()) {
          throw ErrorAt(n.at, fmt::format("'-' takes an integer, not {}", TypeName(v)));
        }
        return -v.get<int64_t>();
      }
      if (!v.is_boolean())
        throw ErrorAt(n.at, fmt::format("'not' takes a boolean, not {}", TypeName(v)));
      return !v.get<bool>();
    }
    case Kind::kBinary:
      break;
  }
  const std::string& op = n.text;
  nlohmann::json a = Eval(*n.args[0], lookup);
  if (op == "and" || op == "or") {
    if (!a.is_boolean())
      throw ErrorAt(n.at, fmt::format("'{}' takes booleans, not {}", op, TypeName(a)));
    if (op == "and" && !a.get<bool>()) return false;
    if (op == "or" && a.get<bool>()) return true;
    nlohmann::json b = Eval(*n.args[1], lookup);
    if (!b.is_boolean())
      throw ErrorAt(n.at, fmt::format("'{}' takes booleans, not {}", op, TypeName(b)));
    return b.get<bool>();
  }
  nlohmann::json b = Eval(*n.args[1], lookup);
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (!a.is_number_integer() || !b.is_number_integer()) {
    throw ErrorAt(n.at,
                  fmt::format("'{}' takes integers, not {} and {}", op, TypeName(a), TypeName(b)));
  }
  const int64_t x = a.get<int64_t>();
  const int64_t y = b.get<int64_t>();
  if (op == "+") return x + y;
  if (op == "-") return x - y;
  if (op == "*") return x * y;
  if (op == "/") {
    if (y == 0) throw ErrorAt(n.at, "division by zero");
    return x / y;
  }
  if (op == "<") return x < y;
  if (op == "<=") return x <= y;
  if (op == ">") return x > y;
  return x >= y;
}

void CollectNames(const ExpressionNode& n, std::vector<std::pair<std::string, Position>>& out) {
  if (n.kind == ExpressionNode::Kind::kName) out.emplace_back(n.text, n.at);
  for (const auto& arg : n.args) CollectNames(*arg, out);
}

}  // namespace

Expression Expression::Parse(std::string_view text, const Position& at) {
  Expression e;
  e.text_ = std::string(text);
  e.root_ = Parser(e.text_, at).Whole();
  return e;
}

nlohmann::json Expression::Evaluate(const Lookup& lookup) const { return Eval(*root_, lookup); }

std::vector<std::pair<std::string, Position>> Expression::Names() const {
  std::vector<std::pair<std::string, Position>> out;
  if (root_) CollectNames(*root_, out);
  return out;
}

}  // namespace dedupsim::files
