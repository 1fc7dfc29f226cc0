#include "engine/store/aws_config.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>

#include "base/bytes.hpp"
#include "net/http/http_client.hpp"
#include "net/s3/s3_client.hpp"

namespace cairn {
namespace {

Failure<std::string> bad(std::string why) { return {std::move(why)}; }

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// A path as the AWS CLI takes it from a variable: a leading "~/" is $HOME.
std::string expandHome(const std::string& path, const AwsEnvironment& env) {
  if (path == "~" || path.starts_with("~/")) {
    if (auto home = env.variable("HOME")) return *home + path.substr(1);
  }
  return path;
}

// The file's text; nullopt when it does not exist. Unreadable or too large: an error.
Result<std::optional<std::string>, std::string> readSharedFile(const std::string& path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (ec) return bad(escapeForDisplay(path) + ": " + ec.message());
  if (!exists) return std::optional<std::string>{};
  if (!std::filesystem::is_regular_file(path, ec)) {
    return bad(escapeForDisplay(path) + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad(escapeForDisplay(path) + ": cannot be read");
  std::string text;
  text.resize(kMaxAwsFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return bad(escapeForDisplay(path) + ": cannot be read");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxAwsFileBytes) {
    return bad(escapeForDisplay(path) + ": larger than " + std::to_string(kMaxAwsFileBytes) +
               " bytes");
  }
  return std::optional<std::string>{std::move(text)};
}

using Sections = std::map<std::string, std::map<std::string, std::string>>;

// A section's name as the AWS CLI takes it: "profile NAME" with any whitespace between the two
// words and NAME possibly quoted is "profile NAME".
std::string sectionName(std::string_view inside) {
  std::string name = trim(inside);
  if (!name.starts_with("profile") || name.size() == 7 || (name[7] != ' ' && name[7] != '\t')) {
    return name;
  }
  std::string rest = trim(std::string_view(name).substr(7));
  if (rest.size() >= 2 && (rest.front() == '"' || rest.front() == '\'') &&
      rest.back() == rest.front()) {
    rest = rest.substr(1, rest.size() - 2);
  }
  return "profile " + rest;
}

std::size_t indentOf(std::string_view raw) {
  std::size_t n = 0;
  while (n < raw.size() && (raw[n] == ' ' || raw[n] == '\t')) ++n;
  return n;
}

// The INI form the AWS CLI reads (Python's configparser): "[section]", "key = value" or
// "key: value", comments starting with '#' or ';', and nested settings (a key with an empty
// value, then lines indented deeper than it).
Result<Sections, std::string> parseSharedFile(const std::string& path, std::string_view text) {
  Sections sections;
  std::map<std::string, std::string>* current = nullptr;
  std::string nestedParent;
  std::size_t parentIndent = 0;
  std::size_t lineNumber = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++lineNumber;
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const std::string where = escapeForDisplay(path) + ":" + std::to_string(lineNumber);
    if (line.front() == '[') {
      const auto close = line.find(']');
      if (close == std::string::npos) return bad(where + ": a section header needs a closing ']'");
      const std::string after = trim(std::string_view(line).substr(close + 1));
      if (!after.empty() && after[0] != '#' && after[0] != ';') {
        return bad(where + ": text after a section header");
      }
      current = &sections[sectionName(std::string_view(line).substr(1, close - 1))];
      nestedParent.clear();
      continue;
    }
    const auto separator = line.find_first_of("=:");
    if (separator == std::string::npos) return bad(where + ": expected KEY = VALUE");
    if (current == nullptr) return bad(where + ": a setting before any [section]");
    const std::string key = lower(trim(std::string_view(line).substr(0, separator)));
    const std::string value = trim(std::string_view(line).substr(separator + 1));
    if (key.empty()) return bad(where + ": a setting without a name");
    const std::size_t indent = indentOf(raw);
    if (!nestedParent.empty() && indent > parentIndent) {
      (*current)[nestedParent + "." + key] = value;
      continue;
    }
    (*current)[key] = value;
    nestedParent = value.empty() ? key : std::string();
    parentIndent = indent;
  }
  return sections;
}

// The file's sections, empty when the file does not exist.
Result<Sections, std::string> loadSharedFile(const std::string& path) {
  auto text = readSharedFile(path);
  if (!text) return failureOf(text);
  if (!*text) return Sections{};
  return parseSharedFile(path, **text);
}

bool isTrue(const std::optional<std::string>& value) { return value && lower(*value) == "true"; }

bool isAwsHost(const std::string& host) {
  return host == "amazonaws.com" || host.ends_with(".amazonaws.com") ||
         host.ends_with(".amazonaws.com.cn");
}

// An endpoint as a variable or a profile may give it: one trailing '/' is allowed.
Result<std::string, std::string> checkedEndpoint(std::string value, const std::string& source) {
  if (value.size() > 1 && value.back() == '/') value.pop_back();
  if (auto parsed = net::parseEndpoint(value); !parsed) {
    return bad(source + ": endpoint " + escapeForDisplay(value) + ": " + parsed.error());
  }
  return value;
}

// The endpoint the environment or the profile configures (with its source), in the AWS CLI's
// order; nullopt when none does (or configured endpoints are to be ignored).
using Sourced = std::optional<std::pair<std::string, std::string>>;  // a value, where from

Result<Sourced, std::string> configuredEndpoint(const AwsEnvironment& env,
                                                const AwsProfile& profile) {
  // The variable, when set, decides; else the profile's setting.
  const auto ignoreInEnv = env.variable("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
  const auto ignoreInProfile = profile.find("ignore_configured_endpoint_urls");
  const bool ignoreConfigured =
      ignoreInEnv ? isTrue(ignoreInEnv) : (ignoreInProfile && isTrue(ignoreInProfile->first));
  if (ignoreConfigured) return Sourced{};
  if (auto v = env.variable("AWS_ENDPOINT_URL_S3")) {
    return Sourced{std::pair{*v, std::string("AWS_ENDPOINT_URL_S3")}};
  }
  // A [services ...] section would come next; it is not read, so a profile that names one is
  // refused here rather than silently passed over.
  if (auto services = profile.find("services")) {
    return bad(services->second + " names services = " + escapeForDisplay(services->first) +
               ": [services] sections are not read; give the endpoint in the store URL or "
               "AWS_ENDPOINT_URL_S3");
  }
  if (auto v = env.variable("AWS_ENDPOINT_URL")) {
    return Sourced{std::pair{*v, std::string("AWS_ENDPOINT_URL")}};
  }
  return profile.find("endpoint_url");
}

}  // namespace

std::string awsRegionalEndpoint(std::string_view service, const std::string& region) {
  const std::string domain = region.starts_with("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
  return "https://" + std::string(service) + "." + region + "." + domain;
}

AwsEnvironment AwsEnvironment::process() {
  return {[](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v != nullptr && *v != '\0') return std::string(v);
    // No HOME (a system service without User=): the user's home directory, as the AWS CLI.
    if (name == "HOME") {
      if (const passwd* user = ::getpwuid(::getuid()); user && user->pw_dir && *user->pw_dir) {
        return std::string(user->pw_dir);
      }
    }
    return std::nullopt;
  }};
}

std::optional<std::pair<std::string, std::string>> AwsProfile::find(const std::string& key) const {
  if (auto it = credentials.find(key); it != credentials.end()) {
    return std::pair{it->second, "profile " + escapeForDisplay(name) + " in " +
                                     escapeForDisplay(credentialsFile)};
  }
  if (auto it = config.find(key); it != config.end()) {
    return std::pair{it->second,
                     "profile " + escapeForDisplay(name) + " in " + escapeForDisplay(configFile)};
  }
  return std::nullopt;
}

Result<AwsProfile, std::string> loadAwsProfile(const AwsEnvironment& env) {
  AwsProfile profile;
  if (auto named = env.variable("AWS_PROFILE")) {
    profile.name = *named;
    profile.nameSource = "AWS_PROFILE";
  } else if (auto legacy = env.variable("AWS_DEFAULT_PROFILE")) {
    profile.name = *legacy;
    profile.nameSource = "AWS_DEFAULT_PROFILE";
  }
  const std::string home = env.variable("HOME").value_or("");
  profile.credentialsFile = expandHome(
      env.variable("AWS_SHARED_CREDENTIALS_FILE").value_or(home + "/.aws/credentials"), env);
  profile.configFile =
      expandHome(env.variable("AWS_CONFIG_FILE").value_or(home + "/.aws/config"), env);

  auto credentials = loadSharedFile(profile.credentialsFile);
  if (!credentials) return failureOf(credentials);
  auto config = loadSharedFile(profile.configFile);
  if (!config) return failureOf(config);
  bool found = false;
  if (auto it = credentials->find(profile.name); it != credentials->end()) {
    profile.credentials = it->second;
    found = true;
  }
  // The config file names profiles "[profile NAME]"; the default may also be "[default]".
  for (const std::string& section :
       {"profile " + profile.name, profile.name == "default" ? "default" : std::string()}) {
    if (section.empty()) continue;
    if (auto it = config->find(section); it != config->end()) {
      profile.config.insert(it->second.begin(), it->second.end());
      found = true;
    }
  }
  if (!found && profile.nameSource != "default") {
    return bad("the AWS profile " + escapeForDisplay(profile.name) + " (" + profile.nameSource +
               ") is in neither " + escapeForDisplay(profile.credentialsFile) + " nor " +
               escapeForDisplay(profile.configFile));
  }
  return profile;
}

Result<StoreUrl, std::string> resolveS3Url(StoreUrl url, const AwsEnvironment& env,
                                           const AwsProfile& profile) {
  if (url.kind != StoreUrl::Kind::s3) return url;

  if (url.region.empty()) {
    Sourced region;
    for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
      if (auto v = env.variable(name); v && !region) region = std::pair{*v, std::string(name)};
    }
    if (!region) region = profile.find("region");
    if (!region) region = std::pair{std::string("us-east-1"), std::string("default")};
    if (!net::isValidRegion(region->first)) {
      return bad(region->second + ": region must be 1..64 letters, digits, '-' or '_'");
    }
    url.region = region->first;
    url.regionSource = region->second;
  }

  if (url.endpoint.empty()) {
    auto configured = configuredEndpoint(env, profile);
    if (!configured) return failureOf(configured);
    const auto& endpoint = *configured;
    if (endpoint) {
      auto checked = checkedEndpoint(endpoint->first, endpoint->second);
      if (!checked) return failureOf(checked);
      url.endpoint = *checked;
      url.endpointSource = endpoint->second;
    } else {
      url.endpoint = awsRegionalEndpoint("s3", url.region);
      url.endpointSource = kAwsRegionalEndpoint;
    }
  }

  if (url.caFile.empty()) {
    if (auto bundle = env.variable("AWS_CA_BUNDLE")) {
      url.caFile = expandHome(*bundle, env);
      url.caSource = "AWS_CA_BUNDLE";
    } else if (auto fromProfile = profile.find("ca_bundle")) {
      url.caFile = expandHome(fromProfile->first, env);
      url.caSource = fromProfile->second;
    }
  }

  if (url.addressing == "auto") {
    if (auto style = profile.find("s3.addressing_style"); style && style->first != "auto") {
      if (style->first != "path" && style->first != "virtual") {
        return bad(style->second + ": s3.addressing_style must be auto, path or virtual");
      }
      url.virtualHost = style->first == "virtual";
      url.addressingSource = style->second;
    } else {
      // Virtual-host style only where it is known to work: AWS, and a bucket whose name is
      // one DNS label (with dots, TLS certificates of *.s3.amazonaws.com do not match).
      auto endpoint = net::parseEndpoint(url.endpoint);
      url.virtualHost =
          endpoint && isAwsHost(endpoint->host) && url.bucket.find('.') == std::string::npos;
      url.addressingSource = "auto";
    }
  }
  return url;
}

Result<AwsCredentials, std::string> resolveAwsCredentials(const AwsEnvironment& env,
                                                          const AwsProfile& profile) {
  auto id = env.variable("AWS_ACCESS_KEY_ID");
  auto secret = env.variable("AWS_SECRET_ACCESS_KEY");
  if (id || secret) {
    if (!id || !secret) {
      return bad(std::string(id ? "AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY"
                                : "AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID"));
    }
    return AwsCredentials{{*id, *secret, env.variable("AWS_SESSION_TOKEN").value_or("")},
                          "environment"};
  }
  // Profiles whose keys come from elsewhere (an assumed role, a process, SSO, a web identity)
  // are not read: refused, rather than signing with the wrong identity or none.
  for (const char* unsupported : {"role_arn", "credential_process", "sso_session", "sso_start_url",
                                  "web_identity_token_file"}) {
    if (auto found = profile.find(unsupported)) {
      return bad(found->second + " sets " + unsupported +
                 ": such profiles are not read; give keys (AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY, or aws_access_key_id and aws_secret_access_key), or an "
                 "embedder's credentials provider");
    }
  }
  // One file holds the pair: the credentials file's profile, else the config file's.
  for (const auto* settings : {&profile.credentials, &profile.config}) {
    const std::string& file =
        settings == &profile.credentials ? profile.credentialsFile : profile.configFile;
    auto key = settings->find("aws_access_key_id");
    auto secretKey = settings->find("aws_secret_access_key");
    if (key == settings->end() && secretKey == settings->end()) continue;
    const std::string where =
        "profile " + escapeForDisplay(profile.name) + " in " + escapeForDisplay(file);
    if (key == settings->end() || secretKey == settings->end() || key->second.empty() ||
        secretKey->second.empty()) {
      return bad(where + " has only half of aws_access_key_id and aws_secret_access_key");
    }
    auto token = settings->find("aws_session_token");
    return AwsCredentials{
        {key->second, secretKey->second, token == settings->end() ? "" : token->second}, where};
  }
  return bad(
      "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile " +
      escapeForDisplay(profile.name) + " aws_access_key_id and aws_secret_access_key in " +
      escapeForDisplay(profile.credentialsFile));
}

Result<StoreUrl, std::string> resolveStoreUrl(const StoreUrl& url) {
  if (url.kind != StoreUrl::Kind::s3) return url;
  const AwsEnvironment env = AwsEnvironment::process();
  auto profile = loadAwsProfile(env);
  if (!profile) return failureOf(profile);
  return resolveS3Url(url, env, *profile);
}

}  // namespace cairn
