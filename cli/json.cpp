#include "cli/json.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "base/bytes.hpp"
#include "cli/progress.hpp"

namespace cairn::cli {

namespace {

bool printed = false;

// `s` with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD.
boost::json::string validUtf8(std::string_view s) {
  boost::json::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(s[i]);
      continue;
    }
    const std::size_t n = utf8SequenceAt(s, i);
    if (n == 0) {
      out.append("\xEF\xBF\xBD");  // U+FFFD
    } else {
      out.append(s.substr(i, n));
      i += n - 1;
    }
  }
  return out;
}

// `value` rounded to six significant digits (what "%.6g" keeps), so the output holds no
// noise digits.
double sixDigits(double value) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::general, 6);
  double rounded = value;
  std::from_chars(buf, end.ptr, rounded);
  return rounded;
}

}  // namespace

void printJson(const JsonObject& given) {
  const JsonObject o = given.sayingOk();
  if (printed) {
    std::fprintf(stderr, "cairn: internal: a second JSON object was not printed\n");
    return;
  }
  printed = true;
  if (interruptedBy() != 0) {
    // A command a signal interrupted says so in its object (its exit code is 128 + the signal).
    JsonObject marked = o;
    marked.add("interrupted", interruptedName());
    std::fputs(marked.str().c_str(), stdout);
    std::fputc('\n', stdout);
    return;
  }
  std::fputs(o.str().c_str(), stdout);
  std::fputc('\n', stdout);
}

bool jsonPrinted() { return printed; }

std::string JsonObject::str() const {
  const std::string serialized = boost::json::serialize(object_);
  // Boost.JSON escapes the control characters below 0x20 but not DEL. A 0x7f byte can only be
  // inside a string (JSON's syntax never uses it and no UTF-8 multibyte sequence holds it),
  // so escaping it in place keeps the text valid and the line printable.
  std::string out;
  out.reserve(serialized.size());
  for (char c : serialized) {
    if (c == '\x7f') {
      out += "\\u007f";
    } else {
      out += c;
    }
  }
  return out;
}

JsonObject JsonObject::sayingOk() const {
  if (object_.contains("ok")) return *this;
  JsonObject out;
  out.add("ok", true);
  for (const auto& field : object_) out.object_.insert_or_assign(field.key(), field.value());
  return out;
}

JsonObject& JsonObject::put(std::string_view key, boost::json::value value) {
  object_.insert_or_assign(validUtf8(key), std::move(value));
  return *this;
}
JsonObject& JsonObject::add(std::string_view key, std::string_view value) {
  return put(key, validUtf8(value));
}
JsonObject& JsonObject::add(std::string_view key, std::uint64_t value) { return put(key, value); }
JsonObject& JsonObject::add(std::string_view key, std::int64_t value) { return put(key, value); }
JsonObject& JsonObject::add(std::string_view key, double value) {
  if (!std::isfinite(value)) return addNull(key);
  return put(key, sixDigits(value));
}
JsonObject& JsonObject::add(std::string_view key, bool value) { return put(key, value); }
JsonObject& JsonObject::add(std::string_view key, JsonObject value) {
  return put(key, std::move(value.object_));
}
JsonObject& JsonObject::add(std::string_view key, JsonArray value) {
  return put(key, std::move(value.array_));
}
JsonObject& JsonObject::addNull(std::string_view key) { return put(key, nullptr); }

JsonArray& JsonArray::add(JsonObject element) {
  array_.emplace_back(std::move(element.object_));
  return *this;
}

}  // namespace cairn::cli
