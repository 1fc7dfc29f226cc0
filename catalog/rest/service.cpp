#include "catalog/rest/service.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <set>
#include <variant>

#include "catalog/iceberg/table_create.hpp"
#include "catalog/iceberg/table_update.hpp"
#include "catalog/ops/operations.hpp"
#include "catalog/rest/key_bindings.hpp"
#include "catalog/rest/metrics.hpp"
#include "net/s3/sigv4.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;
namespace json = boost::json;
using net::ServerRequest;
using net::ServerResponse;

namespace {

// ---- answers ------------------------------------------------------------------------------

// An error's message quotes what the request sent (a name, a field, a value): at most this much
// of it is sent, and kept with a refusal (key_bindings.hpp).
constexpr std::size_t kMaxErrorMessageBytes = 2048;

// `message` cut to kMaxErrorMessageBytes (at a UTF-8 character's start), saying how much went.
std::string cutMessage(std::string_view message) {
  if (message.size() <= kMaxErrorMessageBytes) return std::string(message);
  std::size_t end = kMaxErrorMessageBytes;
  while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) --end;
  return std::string(message.substr(0, end)) + "... (" + std::to_string(message.size() - end) +
         " bytes cut)";
}

ServerResponse error(int status, std::string_view type, std::string_view reason,
                     std::string_view message) {
  ServerResponse r = net::jsonError(status, type, reason, cutMessage(message));
  if (status == 401) r.headers.push_back({"WWW-Authenticate", "Bearer realm=\"cairn\""});
  if (status == 503) r.headers.push_back({"Retry-After", "1"});
  return r;
}

// The routes answered without a token.
constexpr std::string_view kHealthz = "/healthz";
constexpr std::string_view kReadyz = "/readyz";
constexpr std::string_view kMetrics = "/metrics";

bool unauthenticated(std::string_view target) {
  return target == kHealthz || target == kReadyz || target == kMetrics;
}

// The token of `Authorization: Bearer TOKEN` (RFC 9110 §11.4: the scheme is case-insensitive,
// then one or more spaces); nullopt when the header is not a bearer token.
std::optional<std::string_view> bearerToken(std::string_view text) {
  constexpr std::string_view kScheme = "bearer";
  if (text.size() <= kScheme.size() || text[kScheme.size()] != ' ') return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != kScheme[i]) return std::nullopt;
  }
  text.remove_prefix(kScheme.size());
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return text;
}

ServerResponse error(const CatalogError& e) { return error(e.status, e.type, e.reason, e.message); }

ServerResponse badRequest(std::string_view reason, std::string_view message) {
  return error(400, "BadRequestException", reason, message);
}

ServerResponse jsonAnswer(int status, const json::value& body) {
  ServerResponse r;
  r.status = status;
  r.body = json::serialize(body);
  return r;
}

ServerResponse noContent() {
  ServerResponse r;
  r.status = 204;
  return r;
}

json::array namespaceJson(const Namespace& ns) {
  json::array a;
  for (const auto& level : ns) a.emplace_back(json::string(level));
  return a;
}

json::object propertiesJson(const Properties& p) {
  json::object o;
  for (const auto& [k, v] : p) o.emplace(k, json::string(v));
  return o;
}

json::object identifierJson(const TableIdent& t) {
  json::object o;
  o.emplace("namespace", namespaceJson(t.ns));
  o.emplace("name", json::string(t.name));
  return o;
}

json::array stringsJson(const std::vector<std::string>& items) {
  json::array a;
  for (const auto& s : items) a.emplace_back(json::string(s));
  return a;
}

// Java's suppressHistoricalSnapshots: only the snapshots a ref names.
std::string refsOnly(const TableMetadata& m) {
  TableMetadata copy = m;
  std::set<std::int64_t> named;
  for (const auto& [_, ref] : m.refs) named.insert(ref.snapshotId);
  std::erase_if(copy.snapshots, [&](const Snapshot& s) { return !named.count(s.snapshotId); });
  return serializeTableMetadata(copy);
}

std::string etagOf(const LoadedMetadata& m, bool refs) {
  return "\"" + toHex(m.sha256) + (refs ? "-refs" : "") + "\"";
}

// Storage credentials as the spec spells them: [{"prefix", "config": {...}}].
json::array credentialsJson(const std::vector<StorageCredential>& credentials) {
  json::array out;
  for (const auto& c : credentials) {
    json::object config;
    for (const auto& [k, v] : c.config) config.emplace(k, json::string(v));
    out.emplace_back(json::object{{"prefix", c.prefix}, {"config", std::move(config)}});
  }
  return out;
}

// What a request that asked for vended credentials gets: them, or why there are none.
using Vended = std::variant<std::vector<StorageCredential>, std::string>;

// LoadTableResult (or CommitTableResponse, which has the same two members first). With
// `vended`, the credentials in `storage-credentials`, or the reason there are none in
// `config` (`cairn.storage-credentials`).
ServerResponse tableAnswer(const LoadedTable& t, bool refs, bool withConfig,
                           const std::optional<Vended>& vended = std::nullopt) {
  std::string body = "{";
  if (!t.staged)
    body += "\"metadata-location\":" + json::serialize(json::string(t.metadata->location)) + ",";
  body += "\"metadata\":" + (refs ? refsOnly(t.metadata->metadata) : t.metadata->json);
  if (withConfig) {
    json::object config;
    if (vended && std::holds_alternative<std::string>(*vended)) {
      config["cairn.storage-credentials"] = std::get<std::string>(*vended);
    }
    body += ",\"config\":" + json::serialize(config);
    if (vended && std::holds_alternative<std::vector<StorageCredential>>(*vended)) {
      body += ",\"storage-credentials\":" +
              json::serialize(credentialsJson(std::get<std::vector<StorageCredential>>(*vended)));
    }
  }
  body += "}";
  ServerResponse r;
  r.body = std::move(body);
  if (!t.staged) r.headers.push_back({"ETag", etagOf(*t.metadata, refs)});
  return r;
}

// ---- reading requests -----------------------------------------------------------------------

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding; `plus` also reads '+' as a space (query strings). nullopt for a bad escape.
std::optional<std::string> percentDecode(std::string_view s, bool plus) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hexValue(s[i + 1]), lo = hexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (plus && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// The query's parameters (the first value of each name).
std::optional<std::map<std::string, std::string>> queryOf(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    auto name = percentDecode(pair.substr(0, eq), true);
    auto value = percentDecode(
        eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true);
    if (!name || !value) return std::nullopt;
    out.emplace(std::move(*name), std::move(*value));
  }
  return out;
}

class Body {
 public:
  static Outcome<Body> parse(const std::string& text, std::string what) {
    auto v = parseStrictJson(text);
    if (!v)
      return refuse(400, "BadRequestException", "malformed-json", what + ": " + v.error().message);
    if (!v->is_object()) {
      return refuse(400, "BadRequestException", "invalid-request", what + ": not a JSON object");
    }
    return Body(std::move(*v), std::move(what));
  }
  const json::value& value() const { return v_; }
  const json::object& object() const { return v_.get_object(); }
  Outcome<void> only(std::initializer_list<std::string_view> keys) const {
    std::set<std::string_view> known(keys);
    for (const auto& kv : object()) {
      if (!known.count(std::string_view(kv.key().data(), kv.key().size()))) {
        return bad("unknown field \"" + std::string(kv.key()) + "\"");
      }
    }
    return {};
  }
  const json::value* find(std::string_view k) const {
    auto it = object().find(json::string_view(k.data(), k.size()));
    return it == object().end() ? nullptr : &it->value();
  }
  Outcome<std::string> string(std::string_view k) const {
    const json::value* v = find(k);
    if (!v) return bad("\"" + std::string(k) + "\" is required");
    if (!v->is_string()) return bad("\"" + std::string(k) + "\" must be a string");
    return std::string(v->get_string());
  }
  Outcome<std::vector<std::string>> strings(std::string_view k, bool required) const {
    const json::value* v = find(k);
    std::vector<std::string> out;
    if (!v || (!required && v->is_null())) {
      if (required) return bad("\"" + std::string(k) + "\" is required");
      return out;
    }
    if (!v->is_array()) return bad("\"" + std::string(k) + "\" must be an array of strings");
    for (const auto& e : v->get_array()) {
      if (!e.is_string()) return bad("\"" + std::string(k) + "\" must be an array of strings");
      out.emplace_back(e.get_string());
    }
    return out;
  }
  Outcome<Properties> properties(std::string_view k) const {
    const json::value* v = find(k);
    Properties out;
    if (!v || v->is_null()) return out;
    if (!v->is_object()) return bad("\"" + std::string(k) + "\" must be an object of strings");
    for (const auto& kv : v->get_object()) {
      if (!kv.value().is_string()) {
        return bad("\"" + std::string(k) + "\" must map strings to strings");
      }
      out.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
    }
    if (auto ok = checkProperties(out, k); !ok) return bad(ok.error().message);
    return out;
  }
  Outcome<TableIdent> identifier(std::string_view k) const {
    const json::value* v = find(k);
    if (!v || !v->is_object()) return bad("\"" + std::string(k) + "\" must be a table identifier");
    Body inner(*v, what_ + "." + std::string(k));
    if (auto ok = inner.only({"namespace", "name"}); !ok) return failureOf(ok);
    auto ns = inner.strings("namespace", true);
    if (!ns) return failureOf(ns);
    auto name = inner.string("name");
    if (!name) return failureOf(name);
    if (auto ok = checkNamespace(*ns); !ok) {
      return refuse(400, "BadRequestException", "invalid-name", ok.error().message);
    }
    if (auto ok = checkName(*name, "table name"); !ok) {
      return refuse(400, "BadRequestException", "invalid-name", ok.error().message);
    }
    return TableIdent{std::move(*ns), std::move(*name)};
  }
  Failure<CatalogError> bad(const std::string& why) const {
    return refuse(400, "BadRequestException", "invalid-request", what_ + ": " + why);
  }

 private:
  Body(json::value v, std::string what) : v_(std::move(v)), what_(std::move(what)) {}
  json::value v_;
  std::string what_;
};

// ---- routes ---------------------------------------------------------------------------------

enum class Route {
  config,
  namespaces,
  namespace_,
  properties,
  tables,
  registerTable,
  table,
  credentials,
  leases,              // cairn: a table's leases (GET, POST)
  lease,               // cairn: one lease (DELETE)
  protectedSnapshots,  // cairn: a table's protected snapshots (POST)
  protectedSnapshot,   // cairn: one protected snapshot (DELETE)
  branches,            // cairn: the lake's catalog branches (GET, POST)
  branch,              // cairn: one branch (GET, DELETE)
  rename,
  transactions,
  views,
  none
};

struct Matched {
  Route route = Route::none;
  std::string templ;
  std::optional<std::string> prefix;  // the lake named in the path
  std::string ns;                     // the namespace segment, decoded
  std::string table;                  // the table segment, decoded
  std::string item;                   // a lease's or a snapshot's id, a branch's name, decoded
  std::optional<std::string> branch;  // the catalog branch of a prefix LAKE~BRANCH
};

std::optional<Matched> match(const std::vector<std::string>& s) {
  Matched m;
  if (s.size() == 1 && s[0] == "config") {
    m.route = Route::config;
    m.templ = "/v1/config";
    return m;
  }
  static const std::set<std::string> kTop = {"namespaces", "tables", "transactions", "views"};
  std::size_t i = 0;
  std::string head = "/v1";
  if (!s.empty() && !kTop.count(s[0])) {
    m.prefix = s[0];
    head = "/v1/{prefix}";
    i = 1;
  }
  const std::size_t n = s.size() - i;
  auto at = [&](std::size_t k) -> const std::string& { return s[i + k]; };
  if (n >= 1 && at(0) == "namespaces") {
    if (n == 1) {
      m.route = Route::namespaces;
      m.templ = head + "/namespaces";
      return m;
    }
    m.ns = at(1);
    if (n == 2) {
      m.route = Route::namespace_;
      m.templ = head + "/namespaces/{namespace}";
    } else if (n == 3 && at(2) == "properties") {
      m.route = Route::properties;
      m.templ = head + "/namespaces/{namespace}/properties";
    } else if (n == 3 && at(2) == "tables") {
      m.route = Route::tables;
      m.templ = head + "/namespaces/{namespace}/tables";
    } else if (n == 3 && at(2) == "register") {
      m.route = Route::registerTable;
      m.templ = head + "/namespaces/{namespace}/register";
    } else if (n == 4 && at(2) == "tables") {
      m.route = Route::table;
      m.table = at(3);
      m.templ = head + "/namespaces/{namespace}/tables/{table}";
    } else if (n == 5 && at(2) == "tables" && at(4) == "credentials") {
      m.route = Route::credentials;
      m.table = at(3);
      m.templ = head + "/namespaces/{namespace}/tables/{table}/credentials";
    } else if ((n == 5 || n == 6) && at(2) == "tables" &&
               (at(4) == "leases" || at(4) == "protected-snapshots")) {
      const bool leases = at(4) == "leases";
      m.table = at(3);
      if (n == 5) {
        m.route = leases ? Route::leases : Route::protectedSnapshots;
        m.templ = head + "/namespaces/{namespace}/tables/{table}/" + at(4);
      } else {
        m.route = leases ? Route::lease : Route::protectedSnapshot;
        m.item = at(5);
        m.templ = head + "/namespaces/{namespace}/tables/{table}/" + at(4) +
                  (leases ? "/{lease}" : "/{snapshot}");
      }
    } else if (n >= 3 && at(2) == "views") {
      m.route = Route::views;
      m.templ = head + "/namespaces/{namespace}/views";
    } else {
      return std::nullopt;
    }
    return m;
  }
  if (n == 1 && at(0) == "branches") {
    m.route = Route::branches;
    m.templ = head + "/branches";
    return m;
  }
  if (n == 2 && at(0) == "branches") {
    m.route = Route::branch;
    m.item = at(1);
    m.templ = head + "/branches/{branch}";
    return m;
  }
  if (n == 2 && at(0) == "tables" && at(1) == "rename") {
    m.route = Route::rename;
    m.templ = head + "/tables/rename";
    return m;
  }
  if (n == 2 && at(0) == "transactions" && at(1) == "commit") {
    m.route = Route::transactions;
    m.templ = head + "/transactions/commit";
    return m;
  }
  if (n == 2 && at(0) == "views" && at(1) == "rename") {
    m.route = Route::views;
    m.templ = head + "/views/rename";
    return m;
  }
  return std::nullopt;
}

// The methods a route serves; a request's method must be one of them exactly.
std::vector<std::string_view> allowed(Route r) {
  switch (r) {
    case Route::config:
    case Route::credentials:
      return {"GET"};
    case Route::namespaces:
    case Route::tables:
      return {"GET", "POST"};
    case Route::namespace_:
      return {"GET", "HEAD", "DELETE"};
    case Route::properties:
    case Route::registerTable:
    case Route::rename:
    case Route::transactions:
      return {"POST"};
    case Route::table:
      return {"GET", "HEAD", "POST", "DELETE"};
    case Route::leases:
      return {"GET", "POST"};
    case Route::protectedSnapshots:
      return {"POST"};
    case Route::lease:
    case Route::protectedSnapshot:
      return {"DELETE"};
    case Route::branches:
      return {"GET", "POST"};
    case Route::branch:
      return {"GET", "DELETE"};
    default:
      return {};
  }
}

// What a request on a catalog branch (prefix LAKE~BRANCH) may do: read the lake's names, and
// load and commit to its tables (a create transaction is refused by the commit).
bool servedOnBranch(Route r, std::string_view method) {
  const bool read = method == "GET" || method == "HEAD";
  switch (r) {
    case Route::namespaces:
    case Route::namespace_:
    case Route::tables:
    case Route::credentials:
      return read;
    case Route::table:
      return method != "DELETE";
    default:
      return false;
  }
}

std::string joined(const std::vector<std::string_view>& methods) {
  std::string out;
  for (auto m : methods) out += (out.empty() ? "" : ", ") + std::string(m);
  return out;
}

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A request's digest, which its Idempotency-Key binds (key_bindings.hpp, and the logs' records):
// its method, target (the path) and body, each with its length, then the query's parameters,
// decoded and in order, but for a default said aloud (`purgeRequested=false` is the drop
// without it): a drop that purges is another request than one that does not.
Digest requestDigest(const ServerRequest& req) {
  std::string text = "cairn request 1";
  for (const std::string* part : {&req.method, &req.target, &req.body}) {
    text += '\n' + std::to_string(part->size()) + ':' + *part;
  }
  if (auto query = queryOf(req.query)) {
    for (const auto& [name, value] : *query) {
      if (name == "purgeRequested" && value == "false") continue;
      text += "\nq" + std::to_string(name.size()) + ':' + name + std::to_string(value.size()) +
              ':' + value;
    }
  }
  return sha256(asBytes(text));
}

// The statuses of a refusal given again to the same request with the same key (the spec's
// finalized answers); a 5xx is never kept (a retry learns whether the first attempt landed).
bool kept(int status) {
  return status == 400 || status == 404 || status == 406 || status == 409 || status == 422;
}

}  // namespace

struct CatalogService::Impl {
  std::filesystem::path configFile;
  CatalogConfig config;
  std::filesystem::file_time_type configTime{};
  std::uintmax_t configSize = 0;
  std::chrono::steady_clock::time_point configChecked{};
  std::map<std::string, std::unique_ptr<Lake>> lakes;
  CatalogMetrics metrics;

  // The tokens of the configuration file, read again when it changed (checked at most once a
  // second). A file that no longer reads keeps the tokens known before.
  void refreshTokens() {
    const auto now = std::chrono::steady_clock::now();
    if (now - configChecked < std::chrono::seconds(1)) return;
    configChecked = now;
    std::error_code ec;
    const auto time = std::filesystem::last_write_time(configFile, ec);
    if (ec) return;
    const auto size = std::filesystem::file_size(configFile, ec);
    if (ec || (time == configTime && size == configSize)) return;
    auto loaded = loadConfig(configFile);
    if (!loaded) return;
    config.tokens = std::move(loaded->tokens);
    configTime = time;
    configSize = size;
  }

  struct Caller {
    const TokenEntry* token = nullptr;
    Lake* lake = nullptr;
  };

  Outcome<Caller> authenticate(const ServerRequest& req) {
    const std::string* auth = req.header("Authorization");
    if (!auth) {
      return refuse(401, "NotAuthorizedException", "missing-token",
                    "a bearer token is needed (Authorization: Bearer TOKEN)");
    }
    const auto token = bearerToken(*auth);
    if (!token) {
      return refuse(401, "NotAuthorizedException", "missing-token",
                    "the Authorization header is not a bearer token");
    }
    refreshTokens();
    const std::int64_t now = nowMs() / 1000;
    auto check = checkToken(config, *token, now);
    if (check.outcome == TokenCheck::Outcome::expired) {
      return refuse(401, "NotAuthorizedException", "expired-token", "the token has expired");
    }
    if (check.outcome != TokenCheck::Outcome::accepted) {
      return refuse(401, "NotAuthorizedException", "unknown-token", "the token is not known");
    }
    auto lake = lakes.find(check.entry->lake);
    if (lake == lakes.end()) {
      return refuse(401, "NotAuthorizedException", "unknown-token",
                    "the token's lake is not served by this process");
    }
    return Caller{check.entry, lake->second.get()};
  }

  asio::awaitable<Outcome<void>> ready(Lake& lake, OperationBudget& budget) {
    if (lake.readiness().ready) co_return Outcome<void>{};
    auto checked = co_await lake.checkReady(budget);
    if (!checked) {
      co_return refuse(503, "ServiceUnavailableException", "lake-not-ready",
                       "lake " + lake.id() + " is not ready: " + lake.readiness().reason);
    }
    co_return Outcome<void>{};
  }

  Request request(Lake& lake, const ServerRequest& req, Role role) {
    Request r{lake, OperationBudget{}, std::nullopt, nowMs(), config.server.commitRebases, role};
    if (const std::string* key = req.header("Idempotency-Key")) {
      r.idempotencyKey = *key;
      r.requestDigest = requestDigest(req);
    }
    return r;
  }

  asio::awaitable<ServerResponse> serve(const ServerRequest& req, const Matched& m, Caller caller);
  asio::awaitable<ServerResponse> operate(const ServerRequest& req, const Matched& m,
                                          const Caller& caller);
  // A change sent with an Idempotency-Key `key`: operate()d only when `bindings` admits it.
  asio::awaitable<ServerResponse> keyed(const ServerRequest& req, const Matched& m,
                                        const Caller& caller, const std::string& key);
  asio::awaitable<ServerResponse> credentials(const ServerRequest& req, const TableIdent& t,
                                              Request& r);
  asio::awaitable<ServerResponse> leases(const ServerRequest& req, const Matched& m,
                                         const TableIdent& t, Request& r);
  // With `X-Iceberg-Access-Delegation: vended-credentials`, credentials of the class the
  // token's role gives (read: table-read, read-write: table-write) for the loaded table.
  asio::awaitable<std::optional<Vended>> vendFor(const ServerRequest& req, const LoadedTable& t,
                                                 Request& r);
  KeyBindings bindings;
  asio::awaitable<ServerResponse> namespaces(const ServerRequest& req, const Matched& m,
                                             Request& r);
  asio::awaitable<ServerResponse> oneNamespace(const ServerRequest& req, const Namespace& ns,
                                               Request& r);
  asio::awaitable<ServerResponse> tables(const ServerRequest& req, const Namespace& ns, Request& r);
  asio::awaitable<ServerResponse> oneTable(const ServerRequest& req, const TableIdent& t,
                                           Request& r);
  asio::awaitable<ServerResponse> configAnswer(const ServerRequest& req, const Caller& caller);
  asio::awaitable<ServerResponse> branches(const ServerRequest& req, const Matched& m, Request& r);
  asio::awaitable<ServerResponse> readyz();
  // A request's answer (CatalogService::handle counts it).
  asio::awaitable<ServerResponse> answer(const ServerRequest& req);

  // A request's route and caller, or the answer it gets without them (404, 400, 401): all
  // that its header tells, before its body is read.
  struct Admitted {
    Matched m;
    Caller caller;
  };
  std::variant<ServerResponse, Admitted> admit(const ServerRequest& req);
  // The header phase (net::HeaderCheck): admit()'s refusal, counted, or nullopt.
  std::optional<ServerResponse> checkHeader(const ServerRequest& req);
};

CatalogService::CatalogService(std::filesystem::path configFile, CatalogConfig config,
                               std::vector<std::unique_ptr<Lake>> lakes)
    : impl_(std::make_shared<Impl>()) {
  impl_->configFile = std::move(configFile);
  impl_->config = std::move(config);
  std::error_code ec;
  impl_->configTime = std::filesystem::last_write_time(impl_->configFile, ec);
  impl_->configSize = std::filesystem::file_size(impl_->configFile, ec);
  impl_->configChecked = std::chrono::steady_clock::now();
  for (auto& lake : lakes) {
    const std::string id = lake->id();
    impl_->lakes.emplace(id, std::move(lake));
  }
}

const std::vector<std::string>& CatalogService::endpoints() {
  static const std::vector<std::string> kEndpoints = {
      "GET /v1/{prefix}/namespaces",
      "POST /v1/{prefix}/namespaces",
      "GET /v1/{prefix}/namespaces/{namespace}",
      "HEAD /v1/{prefix}/namespaces/{namespace}",
      "DELETE /v1/{prefix}/namespaces/{namespace}",
      "POST /v1/{prefix}/namespaces/{namespace}/properties",
      "GET /v1/{prefix}/namespaces/{namespace}/tables",
      "POST /v1/{prefix}/namespaces/{namespace}/tables",
      "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "POST /v1/{prefix}/namespaces/{namespace}/register",
      "POST /v1/{prefix}/tables/rename",
      "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
  };
  return kEndpoints;
}

asio::awaitable<void> CatalogService::checkReadiness() {
  for (auto& [_, lake] : impl_->lakes) {
    OperationBudget budget;
    co_await lake->checkReady(budget);
  }
}

asio::awaitable<ServerResponse> CatalogService::Impl::configAnswer(const ServerRequest& req,
                                                                   const Caller& caller) {
  auto query = queryOf(req.query);
  if (!query) co_return badRequest("invalid-request", "the query string does not decode");
  std::string prefix = caller.lake->id();
  if (auto w = query->find("warehouse"); w != query->end()) {
    // LAKE or LAKE~BRANCH: a branch is a catalog of its own to an engine.
    const std::string& warehouse = w->second;
    const auto tilde = warehouse.find('~');
    if (warehouse.substr(0, tilde) != caller.lake->id()) {
      // The same refusal whether that lake exists or not: nothing of another lake shows.
      co_return error(403, "ForbiddenException", "wrong-lake",
                      "the token does not grant access to warehouse \"" + warehouse + "\"");
    }
    if (tilde != std::string::npos) {
      Request r = request(*caller.lake, req, caller.token->role);
      r.branch = warehouse.substr(tilde + 1);
      if (auto ok = checkBranchName(*r.branch); !ok) {
        co_return badRequest("invalid-branch", ok.error().message);
      }
      if (auto ok = co_await ready(*caller.lake, r.budget); !ok) co_return error(ok.error());
      auto view = co_await readLake(r);
      if (!view) co_return error(view.error());
      if (auto ok = needBranch(r, (*view)->dir); !ok) co_return error(ok.error());
      prefix = warehouse;
    }
  }
  json::object body;
  body.emplace("defaults", json::object{});
  body.emplace("overrides", json::object{{"prefix", prefix}});
  body.emplace("endpoints", stringsJson(CatalogService::endpoints()));
  body.emplace("idempotency-key-lifetime", std::string(kIdempotencyLifetime));
  co_return jsonAnswer(200, body);
}

asio::awaitable<ServerResponse> CatalogService::Impl::readyz() {
  std::string problems;
  json::object lakesJson;
  for (auto& [id, lake] : lakes) {
    OperationBudget budget;
    auto checked = co_await lake->checkReady(budget);
    lakesJson.emplace(id, checked ? "ready" : lake->readiness().reason);
    if (!checked) problems += (problems.empty() ? "" : "; ") + id + ": " + lake->readiness().reason;
  }
  if (!problems.empty()) {
    co_return error(503, "ServiceUnavailableException", "lake-not-ready", problems);
  }
  co_return jsonAnswer(200, json::object{{"status", "ready"}, {"lakes", std::move(lakesJson)}});
}

void CatalogService::attachTo(net::ServerOptions& options) const {
  options.headerCheck = [impl = impl_](const ServerRequest& req) { return impl->checkHeader(req); };
  options.probeTargets = {std::string(kHealthz), std::string(kReadyz)};
}

asio::awaitable<ServerResponse> CatalogService::handle(const ServerRequest& req) {
  const std::shared_ptr<Impl> self = impl_;
  if (req.target == kMetrics) {
    // Unauthenticated, as /healthz and /readyz: it names lakes and routes, no table.
    std::vector<Lake*> lakes;
    for (const auto& [id, lake] : self->lakes) lakes.push_back(lake.get());
    ServerResponse r;
    self->metrics.keyBindings(self->bindings.bytes(), self->bindings.size());
    r.body = self->metrics.text(lakes);
    r.headers.push_back({"Content-Type", "text/plain; version=0.0.4; charset=utf-8"});
    r.route = "/metrics";
    co_return r;
  }
  // Counted once answered; a request whose handler threw is counted as a 500 of no route.
  struct InFlight {
    Impl& impl;
    const ServerRequest& req;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    bool ended = false;
    void end(std::string_view route, int status) {
      ended = true;
      impl.metrics.ended(
          req.method, route, status,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    ~InFlight() {
      if (!ended) end({}, 500);
    }
  };
  self->metrics.started();
  InFlight counted{*self, req};
  ServerResponse r = co_await self->answer(req);
  counted.end(r.route, r.status);
  co_return r;
}

asio::awaitable<ServerResponse> CatalogService::Impl::answer(const ServerRequest& req) {
  Impl& s = *this;
  if (req.target == kHealthz) {
    ServerResponse r = jsonAnswer(200, json::object{{"status", "live"}});
    r.route = kHealthz;
    co_return r;
  }
  if (req.target == kReadyz) {
    ServerResponse r = co_await s.readyz();
    r.route = kReadyz;
    co_return r;
  }
  auto admitted = s.admit(req);
  if (auto* refusal = std::get_if<ServerResponse>(&admitted)) co_return std::move(*refusal);
  auto& [m, caller] = std::get<Admitted>(admitted);
  ServerResponse r = co_await s.serve(req, m, caller);
  r.route = m.templ;
  r.lake = caller.lake->id();
  co_return r;
}

std::variant<ServerResponse, CatalogService::Impl::Admitted> CatalogService::Impl::admit(
    const ServerRequest& req) {
  // The path's segments after /v1, each percent-decoded.
  std::vector<std::string> segments;
  std::string_view path = req.target;
  if (!path.starts_with("/v1/")) {
    return error(404, "NoSuchRouteException", "no-such-route", "no route " + req.target);
  }
  path.remove_prefix(4);
  while (true) {
    const std::size_t slash = path.find('/');
    auto decoded = percentDecode(path.substr(0, slash), false);
    if (!decoded) return badRequest("invalid-path", "the path does not percent-decode");
    segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  auto m = match(segments);
  if (!m) return error(404, "NoSuchRouteException", "no-such-route", "no route " + req.target);
  if (m->prefix) {
    if (const auto tilde = m->prefix->find('~'); tilde != std::string::npos) {
      m->branch = m->prefix->substr(tilde + 1);
      m->prefix->resize(tilde);
    }
  }
  auto caller = authenticate(req);
  if (!caller) {
    ServerResponse r = error(caller.error());
    r.route = m->templ;
    return r;
  }
  return Admitted{std::move(*m), *caller};
}

std::optional<ServerResponse> CatalogService::Impl::checkHeader(const ServerRequest& req) {
  if (unauthenticated(req.target)) return std::nullopt;
  auto admitted = admit(req);
  auto* refusal = std::get_if<ServerResponse>(&admitted);
  if (!refusal) return std::nullopt;
  metrics.started();  // counted as handle() counts an answer
  metrics.ended(req.method, refusal->route, refusal->status, 0);
  return std::move(*refusal);
}

asio::awaitable<ServerResponse> CatalogService::Impl::serve(const ServerRequest& req,
                                                            const Matched& m, Caller caller) {
  Lake& lake = *caller.lake;
  if (m.prefix && *m.prefix != lake.id()) {
    co_return error(403, "ForbiddenException", "wrong-lake",
                    "the token does not grant access to lake \"" + *m.prefix + "\"");
  }
  if (m.route == Route::views) {
    co_return error(406, "UnsupportedOperationException", "views-not-served",
                    "views are not served by this catalog");
  }
  const auto methods = allowed(m.route);
  if (std::find(methods.begin(), methods.end(), req.method) == methods.end()) {
    ServerResponse r = error(405, "MethodNotAllowedException", "method-not-allowed",
                             "this route does not serve that method");
    r.headers.push_back({"Allow", joined(methods)});
    co_return r;
  }
  if (m.branch) {
    if (auto ok = checkBranchName(*m.branch); !ok) {
      co_return badRequest("invalid-branch", ok.error().message);
    }
    if (!servedOnBranch(m.route, req.method)) {
      co_return error(406, "UnsupportedOperationException", "not-on-branch",
                      "on a catalog branch tables are loaded and committed to; namespaces, "
                      "tables, leases and branches are changed through the lake's own prefix " +
                          lake.id());
    }
  }
  // Only GET and HEAD read; every other method the route serves changes the lake.
  const bool mutation = req.method != "GET" && req.method != "HEAD";
  if (mutation && caller.token->role != Role::readWrite) {
    co_return error(403, "ForbiddenException", "read-only-token",
                    "the token may read this lake, not change it");
  }
  if (m.route == Route::config) co_return co_await configAnswer(req, caller);
  if (m.route == Route::transactions) {
    co_return error(406, "UnsupportedOperationException", "multi-table-transaction",
                    "a commit to several tables cannot be made atomic here: each table has its "
                    "own head (docs/catalog.md); commit each table on its own");
  }
  const std::string* key = req.header("Idempotency-Key");
  if (key) {
    if (auto ok = checkIdempotencyKey(*key); !ok) {
      co_return badRequest("invalid-idempotency-key", ok.error().message);
    }
  }
  if (!mutation || !key) co_return co_await operate(req, m, caller);
  co_return co_await keyed(req, m, caller, *key);
}

asio::awaitable<ServerResponse> CatalogService::Impl::keyed(const ServerRequest& req,
                                                            const Matched& m, const Caller& caller,
                                                            const std::string& key) {
  // The key binds the request it was first used for in this process, from its admission on
  // (before its operation runs): another request with it is refused, the same one while it is
  // in flight told to retry, a refusal given again (the spec's finalized 4xx); a success is
  // replayed from the log's record of it, by any process (operations.hpp), which also tells
  // another request from it.
  auto entered = bindings.enter(caller.lake->id() + '\n' + key, requestDigest(req),
                                std::chrono::steady_clock::now());
  using Entered = KeyBindings::Entered;
  switch (entered.kind) {
    case Entered::Kind::admitted:
      break;
    case Entered::Kind::kept:
      co_return *entered.refusal;
    case Entered::Kind::other:
      co_return error(422, "UnprocessableEntityException", "idempotency-key-reused",
                      "this Idempotency-Key was used by another request (another route, target "
                      "or body); a key binds the request it was first used for");
    case Entered::Kind::flying:
      co_return error(503, "ServiceUnavailableException", "idempotency-key-in-flight",
                      "this request, with this Idempotency-Key, is in flight already; retry it "
                      "with the same key to learn its answer");
    case Entered::Kind::full:
      co_return error(503, "ServiceUnavailableException", "idempotency-keys-in-flight",
                      "too many requests with an Idempotency-Key are in flight; retry later");
  }
  ServerResponse answer = co_await operate(req, m, caller);
  // A key the log shows another request holds stays that one's (whose answer this is not).
  const bool reused = answer.status == 422 &&
                      answer.body.find(R"("reason":"idempotency-key-reused")") != std::string::npos;
  if (reused) {
    entered.flight.abandon();
  } else {
    // A 5xx keeps the digest alone: the same request is judged afresh (the log tells whether
    // it landed), another one is refused.
    entered.flight.land(kept(answer.status) ? std::optional<ServerResponse>(answer) : std::nullopt);
  }
  co_return answer;
}

asio::awaitable<ServerResponse> CatalogService::Impl::operate(const ServerRequest& req,
                                                              const Matched& m,
                                                              const Caller& caller) {
  Lake& lake = *caller.lake;
  Request r = request(lake, req, caller.token->role);
  r.branch = m.branch;
  if (auto ok = co_await ready(lake, r.budget); !ok) co_return error(ok.error());
  if (m.route == Route::branches || m.route == Route::branch) {
    co_return co_await branches(req, m, r);
  }
  if (r.branch) {
    auto view = co_await readLake(r);
    if (!view) co_return error(view.error());
    if (auto ok = needBranch(r, (*view)->dir); !ok) co_return error(ok.error());
  }
  if (m.route == Route::namespaces) co_return co_await namespaces(req, m, r);
  if (m.route == Route::rename) {
    auto body = Body::parse(req.body, "rename request");
    if (!body) co_return error(body.error());
    if (auto ok = body->only({"source", "destination"}); !ok) co_return error(ok.error());
    auto from = body->identifier("source");
    if (!from) co_return error(from.error());
    auto to = body->identifier("destination");
    if (!to) co_return error(to.error());
    auto done = co_await renameTable(r, *from, *to);
    co_return done ? noContent() : error(done.error());
  }
  auto ns = splitNamespace(m.ns);
  if (!ns) co_return badRequest("invalid-name", ns.error().message);
  switch (m.route) {
    case Route::namespace_:
    case Route::properties:
      if (m.route == Route::properties) {
        auto body = Body::parse(req.body, "properties update");
        if (!body) co_return error(body.error());
        if (auto ok = body->only({"removals", "updates"}); !ok) co_return error(ok.error());
        auto removals = body->strings("removals", false);
        if (!removals) co_return error(removals.error());
        auto updates = body->properties("updates");
        if (!updates) co_return error(updates.error());
        for (const auto& k : *removals) {
          if (updates->count(k)) {
            co_return error(422, "UnprocessableEntityException", "key-updated-and-removed",
                            "\"" + k + "\" is both updated and removed");
          }
        }
        auto done = co_await updateNamespace(r, *ns, *removals, *updates);
        if (!done) co_return error(done.error());
        std::vector<std::string> updated;
        for (const auto& [k, _] : done->updates) updated.push_back(k);
        co_return jsonAnswer(200, json::object{{"updated", stringsJson(updated)},
                                               {"removed", stringsJson(done->removals)},
                                               {"missing", stringsJson(done->missing)}});
      }
      co_return co_await oneNamespace(req, *ns, r);
    case Route::tables:
      co_return co_await tables(req, *ns, r);
    case Route::registerTable: {
      auto body = Body::parse(req.body, "register request");
      if (!body) co_return error(body.error());
      if (auto ok = body->only({"name", "metadata-location", "overwrite"}); !ok) {
        co_return error(ok.error());
      }
      auto name = body->string("name");
      if (!name) co_return error(name.error());
      auto location = body->string("metadata-location");
      if (!location) co_return error(location.error());
      if (const json::value* overwrite = body->find("overwrite")) {
        if (!overwrite->is_bool())
          co_return badRequest("invalid-request", "overwrite is a boolean");
        if (overwrite->get_bool()) {
          co_return error(406, "UnsupportedOperationException", "overwrite-not-supported",
                          "registering over an existing table is not supported");
        }
      }
      const TableIdent t{*ns, *name};
      auto loaded = co_await registerTable(r, t, *location);
      if (!loaded) co_return error(loaded.error());
      auto vended = co_await vendFor(req, *loaded, r);
      co_return tableAnswer(*loaded, false, true, vended);
    }
    case Route::table:
    case Route::credentials:
    case Route::leases:
    case Route::lease:
    case Route::protectedSnapshots:
    case Route::protectedSnapshot: {
      if (auto ok = checkName(m.table, "table name"); !ok) {
        co_return badRequest("invalid-name", ok.error().message);
      }
      const TableIdent t{*ns, m.table};
      if (m.route == Route::credentials) co_return co_await credentials(req, t, r);
      if (m.route == Route::table) co_return co_await oneTable(req, t, r);
      co_return co_await leases(req, m, t, r);
    }
    default:
      co_return error(404, "NoSuchRouteException", "no-such-route", "no route " + req.target);
  }
}

asio::awaitable<ServerResponse> CatalogService::Impl::namespaces(const ServerRequest& req,
                                                                 const Matched&, Request& r) {
  if (req.method == "GET") {
    auto query = queryOf(req.query);
    if (!query) co_return badRequest("invalid-request", "the query string does not decode");
    std::optional<Namespace> parent;
    if (auto p = query->find("parent"); p != query->end() && !p->second.empty()) {
      auto split = splitNamespace(p->second);
      if (!split) co_return badRequest("invalid-name", split.error().message);
      parent = std::move(*split);
    }
    auto view = co_await readLake(r);
    if (!view) co_return error(view.error());
    if (parent && !(*view)->dir.knows(*parent)) {
      co_return error(404, "NoSuchNamespaceException", "no-such-namespace",
                      "Namespace does not exist: " + displayName(*parent));
    }
    json::array list;
    for (const auto& ns : (*view)->dir.children(parent)) list.emplace_back(namespaceJson(ns));
    co_return jsonAnswer(200, json::object{{"namespaces", std::move(list)}});
  }
  auto body = Body::parse(req.body, "create namespace request");
  if (!body) co_return error(body.error());
  if (auto ok = body->only({"namespace", "properties"}); !ok) co_return error(ok.error());
  auto ns = body->strings("namespace", true);
  if (!ns) co_return error(ns.error());
  if (auto ok = checkNamespace(*ns); !ok) co_return badRequest("invalid-name", ok.error().message);
  auto properties = body->properties("properties");
  if (!properties) co_return error(properties.error());
  auto created = co_await createNamespace(r, *ns, *properties);
  if (!created) co_return error(created.error());
  co_return jsonAnswer(200, json::object{{"namespace", namespaceJson(created->ns)},
                                         {"properties", propertiesJson(created->properties)}});
}

asio::awaitable<ServerResponse> CatalogService::Impl::oneNamespace(const ServerRequest& req,
                                                                   const Namespace& ns,
                                                                   Request& r) {
  if (req.method == "DELETE") {
    auto dropped = co_await dropNamespace(r, ns);
    co_return dropped ? noContent() : error(dropped.error());
  }
  auto view = co_await readLake(r);
  if (!view) co_return error(view.error());
  auto it = (*view)->dir.namespaces.find(ns);
  if (it == (*view)->dir.namespaces.end()) {
    if (req.method == "HEAD") {
      ServerResponse missing;
      missing.status = 404;
      co_return missing;
    }
    co_return error(404, "NoSuchNamespaceException", "no-such-namespace",
                    "Namespace does not exist: " + displayName(ns));
  }
  if (req.method == "HEAD") co_return noContent();
  co_return jsonAnswer(200, json::object{{"namespace", namespaceJson(ns)},
                                         {"properties", propertiesJson(it->second)}});
}

asio::awaitable<ServerResponse> CatalogService::Impl::tables(const ServerRequest& req,
                                                             const Namespace& ns, Request& r) {
  if (req.method == "GET") {
    auto view = co_await readLake(r);
    if (!view) co_return error(view.error());
    if (!(*view)->dir.namespaces.count(ns)) {
      co_return error(404, "NoSuchNamespaceException", "no-such-namespace",
                      "Namespace does not exist: " + displayName(ns));
    }
    json::array list;
    for (const auto& t : (*view)->dir.tablesIn(ns)) list.emplace_back(identifierJson(t));
    co_return jsonAnswer(200, json::object{{"identifiers", std::move(list)}});
  }
  auto body = parseStrictJson(req.body);
  if (!body)
    co_return badRequest("malformed-json", "create table request: " + body.error().message);
  auto create = parseCreateTableRequest(*body);
  if (!create) co_return badRequest("invalid-request", create.error().message);
  auto loaded = co_await createTable(r, ns, *create);
  if (!loaded) co_return error(loaded.error());
  std::optional<Vended> vended;
  if (!loaded->staged) vended = co_await vendFor(req, *loaded, r);
  co_return tableAnswer(*loaded, false, true, vended);
}

asio::awaitable<ServerResponse> CatalogService::Impl::oneTable(const ServerRequest& req,
                                                               const TableIdent& t, Request& r) {
  auto query = queryOf(req.query);
  if (!query) co_return badRequest("invalid-request", "the query string does not decode");
  if (req.method == "DELETE") {
    bool purge = false;
    if (auto p = query->find("purgeRequested"); p != query->end()) {
      if (p->second != "true" && p->second != "false") {
        co_return badRequest("invalid-request", "purgeRequested is true or false");
      }
      purge = p->second == "true";  // the files go by garbage collection (cairn lake gc)
    }
    auto dropped = co_await dropTable(r, t, purge);
    co_return dropped ? noContent() : error(dropped.error());
  }
  if (req.method == "POST") {
    auto body = parseStrictJson(req.body);
    if (!body) co_return badRequest("malformed-json", "commit request: " + body.error().message);
    auto commit = parseCommitTableRequest(*body);
    if (!commit) co_return badRequest("invalid-request", commit.error().message);
    auto done = co_await commitTable(r, t, *commit);
    ServerResponse reply = done ? tableAnswer(*done, false, false) : error(done.error());
    metrics.commit(CatalogMetrics::outcomeOf(reply.status, r.rebases));
    co_return reply;
  }
  bool refs = false;
  if (auto mode = query->find("snapshots"); mode != query->end()) {
    if (mode->second != "all" && mode->second != "refs") {
      co_return badRequest("invalid-request", "snapshots is all or refs");
    }
    refs = mode->second == "refs";
  }
  std::optional<AsOf> asOf;
  if (auto a = query->find("as-of"); a != query->end() && req.method == "GET") {
    auto parsed = parseAsOf(a->second);
    if (!parsed) co_return error(parsed.error());
    asOf = *parsed;
  }
  Outcome<LoadedTable> loaded = refuse(500, "", "", "");
  if (asOf) {
    loaded = co_await loadTableAsOf(r, t, *asOf);
  } else {
    loaded = co_await loadTable(r, t);
  }
  if (!loaded) {
    if (req.method == "HEAD" && loaded.error().status == 404) {
      ServerResponse missing;
      missing.status = 404;
      co_return missing;
    }
    co_return error(loaded.error());
  }
  if (req.method == "HEAD") co_return noContent();
  const std::string etag = etagOf(*loaded->metadata, refs);
  if (const std::string* inm = req.header("If-None-Match")) {
    if (*inm == "*" || inm->find(etag) != std::string::npos) {
      ServerResponse notModified;
      notModified.status = 304;
      notModified.headers.push_back({"ETag", etag});
      co_return notModified;
    }
  }
  auto vended = co_await vendFor(req, *loaded, r);
  co_return tableAnswer(*loaded, refs, true, vended);
}

namespace {

// The credentials route of a table, relative to the catalog's URI (its namespace's levels
// joined by %1F, each part percent-encoded).
std::string refreshPathOf(const Lake& lake, const TableIdent& t) {
  std::string ns;
  for (std::size_t i = 0; i < t.ns.size(); ++i) {
    if (i > 0) ns += "%1F";
    ns += net::uriEncode(t.ns[i], true);
  }
  return "v1/" + lake.id() + "/namespaces/" + ns + "/tables/" + net::uriEncode(t.name, true) +
         "/credentials";
}

bool wantsVended(const ServerRequest& req) {
  const std::string* header = req.header("X-Iceberg-Access-Delegation");
  if (!header) return false;
  std::string_view rest = *header;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == "vended-credentials") return true;
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return false;
}

}  // namespace

asio::awaitable<std::optional<Vended>> CatalogService::Impl::vendFor(const ServerRequest& req,
                                                                     const LoadedTable& t,
                                                                     Request& r) {
  if (!wantsVended(req)) co_return std::nullopt;
  const CredentialClass c =
      r.role == Role::readWrite ? CredentialClass::tableWrite : CredentialClass::tableRead;
  std::string location = t.metadata->metadata.location;
  std::string refresh = refreshPathOf(r.lake, t.ident);
  auto vended = co_await r.lake.vend(c, std::move(location), std::move(refresh));
  if (!vended) co_return Vended{vended.error().reason};
  co_return Vended{std::move(*vended)};
}

namespace {

json::object branchJson(const std::string& name, const Branch& b, const LakeDirectory& dir,
                        std::int64_t nowMs) {
  json::object o;
  o.emplace("name", name);
  o.emplace("branch-id", b.id.text());
  o.emplace("parent", b.parent ? json::value(*b.parent) : json::value(nullptr));
  o.emplace("depth", b.depth);
  o.emplace("created-ms", b.createdMs);
  if (b.expiresMs) o.emplace("expires-ms", *b.expiresMs);
  o.emplace("expired", b.expiresMs && *b.expiresMs <= nowMs);
  if (b.maxSnapshotAgeMs) o.emplace("max-snapshot-age-ms", *b.maxSnapshotAgeMs);
  if (b.minSnapshotsToKeep) o.emplace("min-snapshots-to-keep", *b.minSnapshotsToKeep);
  json::array forked;
  for (auto it = dir.forks.lower_bound({name, ""});
       it != dir.forks.end() && it->first.first == name; ++it) {
    const Fork& f = it->second;
    json::object fo;
    fo.emplace("table-uuid", it->first.second);
    fo.emplace("log-uuid", f.log.text());
    fo.emplace("from-branch", f.fromBranch ? json::value(*f.fromBranch) : json::value(nullptr));
    fo.emplace("from-log-uuid", f.fromLog.text());
    fo.emplace("from-revision", f.fromRevision);
    fo.emplace("from-metadata-location", f.fromMetadataLocation);
    fo.emplace("forked-ms", f.forkedMs);
    forked.emplace_back(std::move(fo));
  }
  o.emplace("forked-tables", std::move(forked));
  return o;
}

Outcome<std::optional<std::int64_t>> optionalInt(const Body& body, std::string_view key) {
  const json::value* v = body.find(key);
  if (!v) return std::optional<std::int64_t>{};
  if (!v->is_int64()) {
    return refuse(400, "BadRequestException", "invalid-request", std::string(key) + ": an integer");
  }
  return std::optional<std::int64_t>(v->get_int64());
}

}  // namespace

// GET/POST /v1/{lake}/branches, GET/DELETE /v1/{lake}/branches/{branch} (docs/catalog.md,
// "Branches").
asio::awaitable<ServerResponse> CatalogService::Impl::branches(const ServerRequest& req,
                                                               const Matched& m, Request& r) {
  if (r.branch) {
    co_return error(406, "UnsupportedOperationException", "not-on-branch",
                    "branches are listed, created and dropped through the lake's own prefix");
  }
  if (req.method == "DELETE") {
    auto dropped = co_await dropBranch(r, m.item);
    co_return dropped ? noContent() : error(dropped.error());
  }
  std::optional<std::string> made;
  if (req.method == "POST") {
    auto body = Body::parse(req.body, "branch request");
    if (!body) co_return error(body.error());
    if (auto ok = body->only(
            {"name", "parent", "ttl-seconds", "max-snapshot-age-ms", "min-snapshots-to-keep"});
        !ok) {
      co_return error(ok.error());
    }
    BranchRequest what;
    auto name = body->string("name");
    if (!name) co_return error(name.error());
    what.name = *name;
    if (body->find("parent")) {
      auto parent = body->string("parent");
      if (!parent) co_return error(parent.error());
      what.parent = *parent;
    }
    auto ttl = optionalInt(*body, "ttl-seconds");
    if (!ttl) co_return error(ttl.error());
    auto age = optionalInt(*body, "max-snapshot-age-ms");
    if (!age) co_return error(age.error());
    auto keep = optionalInt(*body, "min-snapshots-to-keep");
    if (!keep) co_return error(keep.error());
    what.ttlSeconds = *ttl;
    what.maxSnapshotAgeMs = *age;
    what.minSnapshotsToKeep = *keep;
    auto created = co_await createBranch(r, what);
    if (!created) co_return error(created.error());
    made = created->name;
  }
  auto view = co_await readLake(r);
  if (!view) co_return error(view.error());
  const LakeDirectory& dir = (*view)->dir;
  if (m.route == Route::branch || made) {
    const std::string& name = made ? *made : m.item;
    auto it = dir.branches.find(name);
    if (it == dir.branches.end()) {
      co_return error(404, "NotFoundException", "no-such-branch", "Branch does not exist: " + name);
    }
    co_return jsonAnswer(200, branchJson(name, it->second, dir, r.nowMs));
  }
  json::array list;
  for (const auto& [name, b] : dir.branches) list.emplace_back(branchJson(name, b, dir, r.nowMs));
  co_return jsonAnswer(200, json::object{{"branches", std::move(list)}});
}

asio::awaitable<ServerResponse> CatalogService::Impl::leases(const ServerRequest& req,
                                                             const Matched& m, const TableIdent& t,
                                                             Request& r) {
  auto parseId = [](const std::string& text) -> std::optional<std::int64_t> {
    if (text.empty() || text.size() > 20) return std::nullopt;
    std::size_t used = 0;
    try {
      const long long v = std::stoll(text, &used);
      if (used != text.size()) return std::nullopt;
      return v;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  if (m.route == Route::leases && req.method == "GET") {
    auto loaded = co_await loadTable(r, t);
    if (!loaded) co_return error(loaded.error());
    auto view = co_await readLake(r);
    if (!view) co_return error(view.error());
    json::array leases;
    for (const auto& [id, lease] : (*view)->dir.leasesOf(loaded->uuid, r.nowMs)) {
      json::object o{
          {"lease-id", id}, {"taken-at-ms", lease.takenMs}, {"expires-at-ms", lease.expiresMs}};
      if (lease.snapshotId) o["snapshot-id"] = *lease.snapshotId;
      if (lease.prefix) o["prefix"] = *lease.prefix;
      leases.push_back(std::move(o));
    }
    json::array protectedIds;
    for (auto id : (*view)->dir.protectedOf(loaded->uuid)) protectedIds.push_back(id);
    co_return jsonAnswer(200, json::object{{"leases", std::move(leases)},
                                           {"protected-snapshots", std::move(protectedIds)}});
  }
  if (m.route == Route::leases) {
    auto body = Body::parse(req.body, "lease request");
    if (!body) co_return error(body.error());
    if (auto ok = body->only({"ttl-seconds", "snapshot-id", "prefix"}); !ok) {
      co_return error(ok.error());
    }
    LeaseRequest what;
    const json::value* ttl = body->find("ttl-seconds");
    if (!ttl || !ttl->is_int64())
      co_return badRequest("invalid-request", "ttl-seconds: an integer");
    what.ttlSeconds = ttl->get_int64();
    if (const json::value* sid = body->find("snapshot-id")) {
      if (!sid->is_int64()) co_return badRequest("invalid-request", "snapshot-id: an integer");
      what.snapshotId = sid->get_int64();
    }
    if (body->find("prefix")) {
      auto prefix = body->string("prefix");
      if (!prefix) co_return error(prefix.error());
      what.prefix = *prefix;
    }
    auto taken = co_await takeLease(r, t, what);
    if (!taken) co_return error(taken.error());
    json::object o{{"lease-id", taken->lease.text()},
                   {"taken-at-ms", taken->held.takenMs},
                   {"expires-at-ms", taken->held.expiresMs}};
    if (taken->held.snapshotId) o["snapshot-id"] = *taken->held.snapshotId;
    if (taken->held.prefix) o["prefix"] = *taken->held.prefix;
    co_return jsonAnswer(200, o);
  }
  if (m.route == Route::lease) {
    auto lease = Uuid::parse(m.item);
    if (!lease) co_return badRequest("invalid-request", "a lease id is a UUID");
    auto done = co_await releaseLease(r, t, *lease);
    co_return done ? noContent() : error(done.error());
  }
  std::optional<std::int64_t> snapshot;
  if (m.route == Route::protectedSnapshot) {
    snapshot = parseId(m.item);
  } else {
    auto body = Body::parse(req.body, "protect request");
    if (!body) co_return error(body.error());
    if (auto ok = body->only({"snapshot-id"}); !ok) co_return error(ok.error());
    const json::value* sid = body->find("snapshot-id");
    if (sid && sid->is_int64()) snapshot = sid->get_int64();
  }
  if (!snapshot) co_return badRequest("invalid-request", "a snapshot id is an integer");
  auto done = co_await protectSnapshot(r, t, *snapshot, m.route == Route::protectedSnapshots);
  co_return done ? noContent() : error(done.error());
}

asio::awaitable<ServerResponse> CatalogService::Impl::credentials(const ServerRequest& req,
                                                                  const TableIdent& t, Request& r) {
  auto query = queryOf(req.query);
  if (!query) co_return badRequest("invalid-request", "the query string does not decode");
  CredentialClass c =
      r.role == Role::readWrite ? CredentialClass::tableWrite : CredentialClass::tableRead;
  if (auto asked = query->find("class"); asked != query->end()) {
    auto parsed = parseCredentialClass(asked->second);
    if (!parsed) {
      co_return badRequest("invalid-request",
                           "class is table-read, table-write, result-read or archive");
    }
    c = *parsed;
  }
  const bool writes = c == CredentialClass::tableWrite || c == CredentialClass::archive;
  if (writes && r.role != Role::readWrite) {
    co_return error(403, "ForbiddenException", "class-not-allowed",
                    "a read token gets only table-read or result-read credentials");
  }
  auto loaded = co_await loadTable(r, t);
  if (!loaded) co_return error(loaded.error());
  std::string location = loaded->metadata->metadata.location;
  std::string refresh = refreshPathOf(r.lake, t);
  if (c != CredentialClass::tableWrite && c != CredentialClass::tableRead) {
    refresh += "?class=" + std::string(credentialClassName(c));
  }
  auto vended = co_await r.lake.vend(c, std::move(location), std::move(refresh));
  if (!vended) {
    switch (vended.error().kind) {
      case VendRefusal::Kind::unavailable:
        co_return error(406, "UnsupportedOperationException", "no-credentials",
                        vended.error().reason);
      case VendRefusal::Kind::refused:
        co_return error(406, "UnsupportedOperationException", "policy-unavailable",
                        vended.error().reason);
      case VendRefusal::Kind::sts:
        co_return error(503, "ServiceUnavailableException", "sts-unavailable",
                        vended.error().reason);
    }
  }
  co_return jsonAnswer(200, json::object{{"storage-credentials", credentialsJson(*vended)}});
}

}  // namespace cairn::catalog
