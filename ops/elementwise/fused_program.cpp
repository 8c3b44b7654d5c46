// Program text of srt::fused_elementwise: the op table, the parser and the printer.
#include "ops/elementwise/fused_program.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

#include <c10/util/Exception.h>

namespace srt::ops::fused {
namespace {

// Operand positions, one character each: S a value (tensor or scalar input, or a temp),
// V a value or a number literal, N a number literal, O a number literal or None, T a string
// literal. Lower case: may be left out (then every later one is left out too).
struct OpSpec {
  OpKind op;
  const char* name;
  const char* operands;
};

constexpr OpSpec kOps[] = {
    {OpKind::kAdd, "add", "SVn"},
    {OpKind::kSub, "sub", "SVn"},
    {OpKind::kRsub, "rsub", "SVn"},
    {OpKind::kMul, "mul", "SV"},
    {OpKind::kDiv, "div", "SV"},
    {OpKind::kRelu, "relu", "S"},
    {OpKind::kSigmoid, "sigmoid", "S"},
    {OpKind::kTanh, "tanh", "S"},
    {OpKind::kExp, "exp", "S"},
    {OpKind::kLog, "log", "S"},
    {OpKind::kSqrt, "sqrt", "S"},
    {OpKind::kRsqrt, "rsqrt", "S"},
    {OpKind::kNeg, "neg", "S"},
    {OpKind::kAbs, "abs", "S"},
    {OpKind::kReciprocal, "reciprocal", "S"},
    {OpKind::kSilu, "silu", "S"},
    {OpKind::kHardswish, "hardswish", "S"},
    {OpKind::kHardsigmoid, "hardsigmoid", "S"},
    {OpKind::kGelu, "gelu", "St"},
    {OpKind::kLeakyRelu, "leaky_relu", "Sn"},
    {OpKind::kClamp, "clamp", "SOO"},
    {OpKind::kClampMin, "clamp_min", "SN"},
    {OpKind::kClampMax, "clamp_max", "SN"},
    {OpKind::kPow, "pow", "SN"},
    {OpKind::kGt, "gt", "SV"},
    {OpKind::kLt, "lt", "SV"},
    {OpKind::kGe, "ge", "SV"},
    {OpKind::kLe, "le", "SV"},
    {OpKind::kEq, "eq", "SV"},
    {OpKind::kNe, "ne", "SV"},
    {OpKind::kWhere, "where", "SVV"},
};

const OpSpec& spec(OpKind op) {
  for (const OpSpec& entry : kOps) {
    if (entry.op == op) {
      return entry;
    }
  }
  TORCH_INTERNAL_ASSERT(false, "fused_elementwise: op ", static_cast<int>(op), " has no spec");
}

bool fits(char position, const Operand& operand) {
  switch (std::toupper(position)) {
  case 'S':
    return operand.isValue();
  case 'V':
    return operand.isValue() || operand.kind == Operand::Kind::kNumber;
  case 'N':
    return operand.kind == Operand::Kind::kNumber;
  case 'O':
    return operand.kind == Operand::Kind::kNumber || operand.kind == Operand::Kind::kNone;
  case 'T':
    return operand.kind == Operand::Kind::kString;
  }
  return false;
}

const char* describePosition(char position) {
  switch (std::toupper(position)) {
  case 'S':
    return "an input or a computed value";
  case 'V':
    return "an input, a computed value or a number";
  case 'N':
    return "a number literal";
  case 'O':
    return "a number literal or None";
  case 'T':
    return "a string literal";
  }
  return "?";
}

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Program parse() {
    while (true) {
      skipSpace();
      // A binding `name = expr;` starts with an identifier followed by '='.
      const size_t start = pos_;
      if (std::isalpha(peek()) || peek() == '_') {
        const std::string name = identifier();
        skipSpace();
        if (peek() == '=') {
          ++pos_;
          TORCH_CHECK(bound_.count(name) == 0, error(start, "'" + name + "' is bound twice"));
          TORCH_CHECK(!isInputName(name),
                      error(start, "'" + name + "' names an input and cannot be bound"));
          const Operand value = expression();
          TORCH_CHECK(value.kind == Operand::Kind::kTemp,
                      error(start, "'" + name + "' must be bound to an op's result"));
          bound_[name] = value.index;
          skipSpace();
          expect(';');
          continue;
        }
      }
      pos_ = start;
      const Operand result = expression();
      skipSpace();
      TORCH_CHECK(pos_ == text_.size(), error(pos_, "expected the end of the program"));
      TORCH_CHECK(result.kind == Operand::Kind::kTemp,
                  error(start, "the result must be an op's result"));
      // The result is the last instruction; a program ending in a bound name (`t0 = ...; t0`)
      // says the same thing.
      TORCH_CHECK(result.index + 1 == program_.code.size(),
                  error(start, "the result must be the last computed value"));
      return std::move(program_);
    }
  }

private:
  Operand expression() {
    skipSpace();
    const size_t start = pos_;
    const char c = peek();
    if (c == '\'' || c == '"') {
      return Operand::string(quoted());
    }
    if (std::isdigit(c) || c == '-' || c == '+' || c == '.') {
      return Operand::literal(number());
    }
    TORCH_CHECK(std::isalpha(c) || c == '_', error(start, "expected an expression"));
    const std::string name = identifier();
    skipSpace();
    if (peek() == '(') {
      return call(name, start);
    }
    if (name == "None") {
      return Operand::none();
    }
    if (name == "inf" || name == "nan") {
      return Operand::literal(name == "inf" ? std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::quiet_NaN());
    }
    if (isInputName(name)) {
      const unsigned long index = std::stoul(name.substr(1));
      TORCH_CHECK(index < 65536, error(start, "input index too large"));
      program_.num_inputs = std::max<uint32_t>(program_.num_inputs, index + 1);
      return Operand::input(static_cast<uint32_t>(index));
    }
    auto found = bound_.find(name);
    TORCH_CHECK(found != bound_.end(), error(start, "unknown name '" + name + "'"));
    return Operand::temp(found->second);
  }

  Operand call(const std::string& name, size_t start) {
    const std::optional<OpKind> op = opFromName(name);
    TORCH_CHECK(op.has_value(), error(start, "unknown op '" + name + "'"));
    expect('(');
    Instruction instruction{*op, {}};
    skipSpace();
    if (peek() != ')') {
      while (true) {
        instruction.args.push_back(expression());
        skipSpace();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        break;
      }
    }
    expect(')');
    const std::string problem = checkInstruction(instruction);
    TORCH_CHECK(problem.empty(), error(start, problem));
    program_.code.push_back(std::move(instruction));
    return Operand::temp(static_cast<uint32_t>(program_.code.size() - 1));
  }

  c10::Scalar number() {
    const size_t start = pos_;
    size_t end = pos_;
    if (text_[end] == '-' || text_[end] == '+') {
      ++end;
    }
    const std::string_view rest = text_.substr(end);
    if (rest.substr(0, 3) == "inf" || rest.substr(0, 3) == "nan") {
      pos_ = end + 3;
      const double value = rest[0] == 'i' ? std::numeric_limits<double>::infinity()
                                          : std::numeric_limits<double>::quiet_NaN();
      return text_[start] == '-' ? -value : value;
    }
    bool is_double = false;
    while (end < text_.size() && (std::isdigit(text_[end]) || text_[end] == '.' ||
                                  text_[end] == 'e' || text_[end] == 'E' ||
                                  ((text_[end] == '-' || text_[end] == '+') &&
                                   (text_[end - 1] == 'e' || text_[end - 1] == 'E')))) {
      is_double = is_double || !std::isdigit(text_[end]);
      ++end;
    }
    const std::string token(text_.substr(start, end - start));
    char* parsed_end = nullptr;
    errno = 0;
    c10::Scalar value;
    if (is_double) {
      value = std::strtod(token.c_str(), &parsed_end);
    } else {
      value = static_cast<int64_t>(std::strtoll(token.c_str(), &parsed_end, 10));
    }
    TORCH_CHECK(parsed_end == token.c_str() + token.size() && errno == 0 && !token.empty(),
                error(start, "malformed number '" + token + "'"));
    pos_ = end;
    return value;
  }

  std::string quoted() {
    const size_t start = pos_;
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    TORCH_CHECK(end != std::string_view::npos, error(start, "unterminated string"));
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  std::string identifier() {
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(text_[pos_]) || text_[pos_] == '_')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  static bool isInputName(const std::string& name) {
    if (name.size() < 2 || name[0] != 'x') {
      return false;
    }
    for (size_t i = 1; i < name.size(); ++i) {
      if (!std::isdigit(name[i])) {
        return false;
      }
    }
    return true;
  }

  void expect(char c) {
    skipSpace();
    TORCH_CHECK(peek() == c, error(pos_, std::string("expected '") + c + "'"));
    ++pos_;
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(text_[pos_])) {
      ++pos_;
    }
  }

  std::string error(size_t at, const std::string& what) const {
    return "srt::fused_elementwise: bad program \"" + std::string(text_) + "\" at character " +
           std::to_string(at) + ": " + what;
  }

  std::string_view text_;
  size_t pos_ = 0;
  Program program_;
  std::map<std::string, uint32_t> bound_;
};

} // namespace

const char* opName(OpKind op) {
  return spec(op).name;
}

std::optional<OpKind> opFromName(std::string_view name) {
  for (const OpSpec& entry : kOps) {
    if (name == entry.name) {
      return entry.op;
    }
  }
  return std::nullopt;
}

bool returnsBool(OpKind op) {
  switch (op) {
  case OpKind::kGt:
  case OpKind::kLt:
  case OpKind::kGe:
  case OpKind::kLe:
  case OpKind::kEq:
  case OpKind::kNe:
    return true;
  default:
    return false;
  }
}

std::string checkInstruction(const Instruction& instruction) {
  const OpSpec& op = spec(instruction.op);
  const std::string_view positions(op.operands);
  size_t required = 0;
  while (required < positions.size() && std::isupper(positions[required])) {
    ++required;
  }
  const size_t given = instruction.args.size();
  if (given < required || given > positions.size()) {
    std::ostringstream message;
    message << op.name << " takes " << required;
    if (positions.size() > required) {
      message << " to " << positions.size();
    }
    message << " operands, got " << given;
    return message.str();
  }
  for (size_t i = 0; i < given; ++i) {
    if (!fits(positions[i], instruction.args[i])) {
      return std::string(op.name) + " operand " + std::to_string(i) + " must be " +
             describePosition(positions[i]);
    }
  }
  if (instruction.op == OpKind::kGelu && given == 2 && instruction.args[1].text != "none" &&
      instruction.args[1].text != "tanh") {
    return "gelu's approximation must be 'none' or 'tanh', got '" + instruction.args[1].text + "'";
  }
  if (instruction.op == OpKind::kWhere && !instruction.args[1].isValue() &&
      !instruction.args[2].isValue()) {
    return "where needs a tensor for self or other";
  }
  return "";
}

Program parseProgram(std::string_view text) {
  return Parser(text).parse();
}

std::string printNumber(const c10::Scalar& number) {
  if (!number.isFloatingPoint()) {
    return std::to_string(number.toLong());
  }
  const double value = number.toDouble();
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value > 0 ? "inf" : "-inf";
  }
  // The shortest text that reads back as the same double.
  char buffer[32];
  const std::to_chars_result written = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, written.ptr);
  if (text.find_first_of(".e") == std::string::npos) {
    text += ".0"; // keeps it a double: 2.0 promotes an int tensor, 2 does not
  }
  return text;
}

namespace {

class Printer {
public:
  explicit Printer(const Program& program) : program_(program), uses_(program.code.size(), 0) {
    for (const Instruction& instruction : program.code) {
      for (const Operand& operand : instruction.args) {
        if (operand.kind == Operand::Kind::kTemp) {
          ++uses_.at(operand.index);
        }
      }
    }
  }

  std::string print() {
    TORCH_CHECK(!program_.code.empty(), "srt::fused_elementwise: an empty program has no text");
    std::string text;
    names_.assign(program_.code.size(), "");
    size_t next_name = 0;
    for (size_t i = 0; i + 1 < program_.code.size(); ++i) {
      if (uses_[i] > 1) {
        names_[i] = "t" + std::to_string(next_name++);
        text += names_[i] + " = " + expression(i) + "; ";
      }
    }
    return text + expression(program_.code.size() - 1);
  }

private:
  std::string expression(size_t index) {
    const Instruction& instruction = program_.code[index];
    std::string text = std::string(opName(instruction.op)) + "(";
    for (size_t i = 0; i < instruction.args.size(); ++i) {
      text += (i == 0 ? "" : ", ") + operand(instruction.args[i]);
    }
    return text + ")";
  }

  std::string operand(const Operand& operand) {
    switch (operand.kind) {
    case Operand::Kind::kInput:
      return "x" + std::to_string(operand.index);
    case Operand::Kind::kTemp:
      return names_.at(operand.index).empty() ? expression(operand.index) : names_[operand.index];
    case Operand::Kind::kNumber:
      return printNumber(operand.number);
    case Operand::Kind::kNone:
      return "None";
    case Operand::Kind::kString:
      return "'" + operand.text + "'";
    }
    return "?";
  }

  const Program& program_;
  std::vector<size_t> uses_;
  std::vector<std::string> names_;
};

} // namespace

std::string printProgram(const Program& program) {
  return Printer(program).print();
}

} // namespace srt::ops::fused
