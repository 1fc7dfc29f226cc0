#include "catalog/access/credentials.hpp"

#include <boost/json.hpp>
#include <cstdio>
#include <ctime>

namespace cairn::catalog {

namespace json = boost::json;

namespace {

bool keyPartChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/';
}

// A key prefix that can stand in an ARN as it is: only key characters, no wildcards.
Res<std::string> plain(std::string_view part, std::string_view what) {
  for (char c : part) {
    if (!keyPartChar(c)) {
      return err(Errc::usage, std::string(what) + " holds '" + std::string(1, c) +
                                  "', which a session policy cannot hold as a plain character");
    }
  }
  if (!part.empty() && (part.front() == '/' || part.back() == '/')) {
    return err(Errc::usage, std::string(what) + " must not start or end with '/'");
  }
  return std::string(part);
}

// "PREFIX/" for a non-empty prefix, "" for the bucket's root.
std::string dir(const std::string& prefix) { return prefix.empty() ? "" : prefix + "/"; }

json::object statement(std::string_view effect, std::initializer_list<std::string_view> actions,
                       std::initializer_list<std::string> resources) {
  json::array a;
  for (auto x : actions) a.emplace_back(json::string(x));
  json::array r;
  for (const auto& x : resources) r.emplace_back(json::string(x));
  json::object s;
  s["Effect"] = json::string(effect);
  s["Action"] = std::move(a);
  s["Resource"] = std::move(r);
  return s;
}

json::object listUnder(const std::string& bucket, const std::string& prefix) {
  json::object s = statement("Allow", {"s3:ListBucket"}, {"arn:aws:s3:::" + bucket});
  s["Condition"] = json::object{
      {"StringLike", json::object{{"s3:prefix", json::array{json::string(prefix + "*")}}}}};
  return s;
}

}  // namespace

std::string_view credentialClassName(CredentialClass c) {
  switch (c) {
    case CredentialClass::tableRead:
      return "table-read";
    case CredentialClass::tableWrite:
      return "table-write";
    case CredentialClass::resultRead:
      return "result-read";
    case CredentialClass::archive:
      return "archive";
  }
  return "table-read";
}

std::optional<CredentialClass> parseCredentialClass(std::string_view text) {
  for (auto c : kCredentialClasses) {
    if (credentialClassName(c) == text) return c;
  }
  return std::nullopt;
}

std::uint32_t CredentialDurations::of(CredentialClass c) const {
  switch (c) {
    case CredentialClass::tableRead:
      return tableRead;
    case CredentialClass::tableWrite:
      return tableWrite;
    case CredentialClass::resultRead:
      return resultRead;
    case CredentialClass::archive:
      return archive;
  }
  return tableRead;
}

void CredentialDurations::set(CredentialClass c, std::uint32_t seconds) {
  switch (c) {
    case CredentialClass::tableRead:
      tableRead = seconds;
      break;
    case CredentialClass::tableWrite:
      tableWrite = seconds;
      break;
    case CredentialClass::resultRead:
      resultRead = seconds;
      break;
    case CredentialClass::archive:
      archive = seconds;
      break;
  }
}

Res<void> checkLakePrefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() > 256) return err(Errc::usage, "a prefix is 1..256 bytes");
  if (auto ok = plain(prefix, "the prefix"); !ok) return failureOf(ok);
  if (prefix.starts_with("ns-") || prefix == "tables" || prefix.starts_with("tables/")) {
    return err(Errc::usage, "a prefix may not start with ns- or be under tables/");
  }
  return {};
}

Res<std::string> sessionPolicy(CredentialClass c, const PolicyScope& scope, std::size_t maxChars) {
  if (scope.bucket.empty()) return err(Errc::usage, "a policy needs a bucket");
  std::string bucket, root, table, results, archive;
  CAIRN_ASSIGN(bucket, plain(scope.bucket, "the bucket"));
  if (bucket.find('/') != std::string::npos) return err(Errc::usage, "a bucket holds no '/'");
  CAIRN_ASSIGN(root, plain(scope.lakeRoot, "the lake's root"));
  const std::string arn = "arn:aws:s3:::" + bucket + "/";
  json::array statements;
  auto underTable = [&]() -> Res<void> {
    CAIRN_ASSIGN(table, plain(scope.tableLocation, "the table's location"));
    if (table.empty() || table == root || !table.starts_with(dir(root))) {
      return err(Errc::usage, "the table's location is not below the lake's root");
    }
    statements.emplace_back(statement("Allow", {"s3:GetObject"}, {arn + table + "/*"}));
    statements.emplace_back(listUnder(bucket, table + "/"));
    return {};
  };
  auto putUnder = [&](const std::string& prefix) {
    statements.emplace_back(statement(
        "Allow", {"s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
        {arn + prefix + "/*"}));
  };
  auto lakePrefix = [&](const std::string& prefix, std::string_view what) -> Res<std::string> {
    std::string p;
    CAIRN_ASSIGN(p, plain(prefix, what));
    if (p.empty()) return err(Errc::usage, std::string(what) + " is not configured");
    return dir(root) + p;
  };
  switch (c) {
    case CredentialClass::tableRead:
      CAIRN_TRY(underTable());
      break;
    case CredentialClass::tableWrite:
      CAIRN_TRY(underTable());
      putUnder(table);
      break;
    case CredentialClass::resultRead: {
      std::string p;
      CAIRN_ASSIGN(p, lakePrefix(scope.resultsPrefix, "the results prefix"));
      statements.emplace_back(statement("Allow", {"s3:GetObject"}, {arn + p + "/*"}));
      statements.emplace_back(listUnder(bucket, p + "/"));
      break;
    }
    case CredentialClass::archive: {
      CAIRN_TRY(underTable());
      std::string p;
      CAIRN_ASSIGN(p, lakePrefix(scope.archivePrefix, "the archive prefix"));
      putUnder(p);
      break;
    }
  }
  // The catalog's own objects: nothing, whatever an Allow above would let through.
  statements.emplace_back(statement("Deny", {"s3:*"}, {arn + dir(root) + "ns-*"}));
  if (c == CredentialClass::tableWrite || c == CredentialClass::archive) {
    statements.emplace_back(
        statement("Deny", {"s3:PutObject"}, {arn + table + "/metadata/*.metadata.json"}));
  }
  json::object policy;
  policy["Version"] = "2012-10-17";
  policy["Statement"] = std::move(statements);
  std::string text = json::serialize(policy);
  if (text.size() > maxChars) {
    return err(Errc::usage, "the " + std::string(credentialClassName(c)) + " policy is " +
                                std::to_string(text.size()) + " characters, over the store's " +
                                std::to_string(maxChars));
  }
  return text;
}

std::optional<std::int64_t> parseIsoTimeMs(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  if (t.size() < 20 || t.back() != 'Z' || t[4] != '-' || t[7] != '-' || t[10] != 'T' ||
      t[13] != ':' || t[16] != ':') {
    return std::nullopt;
  }
  auto number = [&](std::size_t at, std::size_t n, int& out) {
    out = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      out = out * 10 + (t[i] - '0');
    }
    return true;
  };
  int year, month, day, hour, minute, second;
  if (!number(0, 4, year) || !number(5, 2, month) || !number(8, 2, day) || !number(11, 2, hour) ||
      !number(14, 2, minute) || !number(17, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  int millis = 0;
  std::size_t at = 19;
  if (t[at] == '.') {
    std::size_t digits = 0;
    for (++at; at < t.size() - 1; ++at, ++digits) {
      if (t[at] < '0' || t[at] > '9') return std::nullopt;
      if (digits < 3) millis = millis * 10 + (t[at] - '0');
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 3; ++digits) millis *= 10;
  }
  if (at != t.size() - 1) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t seconds = ::timegm(&tm);
  return std::int64_t(seconds) * 1000 + millis;
}

}  // namespace cairn::catalog
