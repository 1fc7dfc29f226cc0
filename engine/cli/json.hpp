// A small JSON object writer for --json output: one object, keys in the order written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::cli {

class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value);
  JsonObject& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonObject& add(std::string_view key, std::uint64_t value);
  JsonObject& add(std::string_view key, std::int64_t value);
  JsonObject& add(std::string_view key, int value) { return add(key, std::int64_t{value}); }
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, bool value);
  JsonObject& addNull(std::string_view key);
  // `json` must already be valid JSON (a nested object or array).
  JsonObject& addRaw(std::string_view key, std::string_view json);
  std::string str() const { return body_ + "}"; }

 private:
  void key(std::string_view k);
  std::string body_ = "{";
};

// A JSON string literal of `s`: control characters escaped, and bytes that are not valid
// UTF-8 replaced with U+FFFD, so the result is always valid JSON.
std::string jsonString(std::string_view s);

// Prints the command's one JSON object on standard output (a --json command prints exactly
// one, on success and on failure: main() prints a failure object for a command that printed
// none). A second object is refused (an internal error on stderr).
void printJson(const JsonObject& o);
// Whether this process printed its JSON object.
bool jsonPrinted();

}  // namespace cairn::cli
