#include "cli/options.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace cairn::cli {

namespace {

// The name of the validator allowEmpty adds (it checks nothing).
constexpr const char* kEmptyAllowed = "cairn-empty-allowed";
// The longest numeric text read (a double's longest exact decimal form is shorter).
constexpr std::size_t kMaxNumberText = 64;

// The option's own type, without the descriptions of its validators ("UINT:UINT in [..]").
std::string baseType(const CLI::Option& option) {
  const std::string full = option.get_type_name();
  return full.substr(0, full.find(':'));
}

// `text` read whole as a T by std::from_chars (base 10: no sign on an unsigned, no '+', no
// space, no "0x", no exponent on an integer); nullopt otherwise, or out of T's range.
template <typename T>
std::optional<T> readWhole(const std::string& text) {
  if (text.empty() || text.size() > kMaxNumberText) return std::nullopt;
  T value{};
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || at != end) return std::nullopt;
  return value;
}

// A transform: `text` becomes the plain decimal form of the T it holds, or the refusal.
template <typename T>
std::string strictNumber(std::string& text, const char* expected) {
  const auto value = readWhole<T>(text);
  if constexpr (std::is_floating_point_v<T>) {
    if (value && std::isfinite(*value)) return {};  // strtold reads back the same value
  } else {
    if (value) {
      text = std::to_string(*value);  // no leading zero: CLI11 reads "010" as octal
      return {};
    }
  }
  return "\"" + text.substr(0, kMaxNumberText) + "\" is not " + expected;
}

bool hasValidator(CLI::Option& option, const std::string& name) {
  try {
    return option.get_validator(name) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

void checkOption(CLI::Option& option) {
  if (option.get_expected_max() == 0) return;  // a flag
  const std::string type = baseType(option);
  if (type == "UINT") {
    option.transform(CLI::Validator(
        [](std::string& text) {
          return strictNumber<std::uint64_t>(text, "a whole number 0..18446744073709551615");
        },
        ""));
  } else if (type == "INT") {
    option.transform(CLI::Validator(
        [](std::string& text) { return strictNumber<std::int64_t>(text, "a whole number"); }, ""));
  } else if (type == "FLOAT") {
    option.transform(CLI::Validator(
        [](std::string& text) { return strictNumber<double>(text, "a finite decimal number"); },
        ""));
  } else if (!hasValidator(option, kEmptyAllowed)) {
    option.check(CLI::Validator(
        [](std::string& text) { return std::string(text.empty() ? "must not be empty" : ""); },
        ""));
  }
}

}  // namespace

CLI::Option* allowEmpty(CLI::Option* option) {
  return option->check(CLI::Validator([](std::string&) { return std::string{}; }, ""),
                       kEmptyAllowed);
}

void checkEveryOption(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) checkOption(*option);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    checkEveryOption(*sub);
  }
}

}  // namespace cairn::cli
