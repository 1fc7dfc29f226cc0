// The --json output of the command line, on Boost.JSON (the project's one JSON writer): one
// object per command, keys in the order written, nested objects and arrays built as values.
// Every string that goes in, keys included, is made valid UTF-8 first (bytes that are not
// become U+FFFD), so the output is valid JSON whatever bytes a server or a file supplied.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::cli {

class JsonArray;

class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value);
  JsonObject& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonObject& add(std::string_view key, std::uint64_t value);
  JsonObject& add(std::string_view key, std::int64_t value);
  JsonObject& add(std::string_view key, int value) { return add(key, std::int64_t{value}); }
  // Six significant digits, as the text output prints; not finite -> null.
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, bool value);
  JsonObject& add(std::string_view key, JsonObject value);
  JsonObject& add(std::string_view key, JsonArray value);
  JsonObject& addNull(std::string_view key);
  // One line: serialized by Boost.JSON, with DEL escaped as well as the control characters.
  std::string str() const;
  // This object, or, when it does not say "ok", a copy that begins with "ok": true (what
  // printJson prints: every object says whether the command succeeded).
  JsonObject sayingOk() const;

 private:
  friend class JsonArray;
  // A key written twice keeps its first place and takes the later value.
  JsonObject& put(std::string_view key, boost::json::value value);
  boost::json::object object_;
};

// An array of objects (the lists the commands print: objects, checks, entries).
class JsonArray {
 public:
  JsonArray& add(JsonObject element);

 private:
  friend class JsonObject;
  boost::json::array array_;
};

// Prints the command's one JSON object on standard output (a --json command prints exactly
// one, on success and on failure: main() prints a failure object for a command that printed
// none). A second object is refused (an internal error on stderr). An object without "ok" is
// printed with "ok": true first (a failure always says "ok": false).
void printJson(const JsonObject& o);
// Whether this process printed its JSON object.
bool jsonPrinted();

}  // namespace cairn::cli
