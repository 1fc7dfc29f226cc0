#include "engine/store/s3_store.hpp"

#include <algorithm>

#include "engine/runtime/async.hpp"
#include "engine/store/aws_config.hpp"
#include "net/s3/s3_client.hpp"

namespace cairn {

namespace asio = boost::asio;

namespace {

StoreStatus mapStatus(net::S3Status s) {
  switch (s) {
    case net::S3Status::ok:
      return StoreStatus::ok;
    case net::S3Status::missing:
      return StoreStatus::missing;
    case net::S3Status::preconditionFailed:
      return StoreStatus::preconditionFailed;
    case net::S3Status::conflict:
      return StoreStatus::conflict;
    case net::S3Status::uncertain:
      return StoreStatus::uncertain;
    case net::S3Status::failure:
      return StoreStatus::failure;
  }
  return StoreStatus::failure;
}

Failure<StoreOutcome> outcomeOf(const net::S3Outcome& o) {
  return {StoreOutcome{mapStatus(o.status), o.message, o.http, o.code}};
}

// Why nothing conditional is sent: a store seen accepting a write it had to refuse (failure),
// or one whose behaviour could not be found out (undetermined), in one line.
Failure<StoreOutcome> refusal(const net::ProbeReport& report) {
  return storeFail(report.verdict == net::ProbeVerdict::notEnforced ? StoreStatus::failure
                                                                    : StoreStatus::undetermined,
                   report.verdictLine());
}

}  // namespace

struct S3Store::Impl {
  asio::any_io_executor executor;
  net::S3Config config;
  bool autoDialect = false;
  std::unique_ptr<net::S3Client> client;
  std::optional<net::ProbeReport> probed;
  AsyncMutex probing;  // one probe at a time; the others wait for its report
  // Clients replaced after a probe stay alive: operations may still be running on them.
  std::vector<std::unique_ptr<net::S3Client>> retired;
  std::string description;
  StoreTransportStats probeTransport;  // the probes' own clients' requests, summed
  // Vacuum's DELETEs (removeFenced): a client with the batch's deadline, and the requests of
  // those replaced, summed.
  std::unique_ptr<net::S3Client> fenced;
  std::chrono::steady_clock::time_point fencedUntil;
  StoreTransportStats fencedTransport;

  net::S3Client* fencedClient(std::chrono::steady_clock::time_point answerBy);
  void addRetired(const net::S3Client& c) {
    const net::HttpClientStats h = c.httpStats();
    fencedTransport.attempts += h.requestsSent;
    fencedTransport.retries += h.retries;
    fencedTransport.timeouts += h.timeouts;
  }
};

S3Store::S3Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Store::~S3Store() = default;

Result<std::unique_ptr<S3Store>, std::string> S3Store::open(
    asio::any_io_executor executor, const StoreUrl& given,
    std::shared_ptr<net::S3CredentialsProvider> credentials) {
  const AwsEnvironment env = AwsEnvironment::process();
  auto profile = loadAwsProfile(env);
  if (!profile) return failureOf(profile);
  auto resolved = resolveS3Url(given, env, *profile);
  if (!resolved) return failureOf(resolved);
  const StoreUrl& url = *resolved;
  auto impl = std::make_unique<Impl>();
  impl->executor = executor;
  net::S3Config& c = impl->config;
  c.endpoint = url.endpoint;
  c.region = url.region;
  c.bucket = url.bucket;
  c.rootPrefix = url.root.empty() ? "" : url.root + "/";
  c.addressing = url.virtualHost ? net::S3Addressing::virtualHost : net::S3Addressing::path;
  c.caFile = url.caFile;
  c.requestTimeout = std::chrono::milliseconds(url.requestTimeoutMs);
  // Resolving, connecting and the TLS handshake are inside timeout_ms too (at most the
  // client's own 5 s): a server that accepts and never answers is bounded by what was asked.
  c.connectTimeout = std::min(c.connectTimeout, c.requestTimeout);
  c.maxConnections = url.connections.value_or(kDefaultStoreConnections);
  if (credentials) {
    c.credentialsProvider = std::move(credentials);
  } else {
    auto keys = resolveAwsCredentials(env, *profile);
    if (!keys) return failureOf(keys);
    c.accessKey = std::move(keys->keys.accessKey);
    c.secretKey = std::move(keys->keys.secretKey);
    c.sessionToken = std::move(keys->keys.sessionToken);
  }
  impl->autoDialect = url.dialect == "auto";
  c.dialect = url.dialect == "rgw" ? net::S3Dialect::rgw : net::S3Dialect::aws;
  auto client = net::S3Client::create(executor, c);
  if (!client) return failureOf(client);
  impl->client = std::move(*client);
  impl->description = url.text;
  return std::unique_ptr<S3Store>(new S3Store(std::move(impl)));
}

std::string S3Store::describe() const { return impl_->description; }

std::optional<StoreTransportStats> S3Store::transportStats() const {
  StoreTransportStats out = impl_->probeTransport;
  out.attempts += impl_->fencedTransport.attempts;
  out.retries += impl_->fencedTransport.retries;
  out.timeouts += impl_->fencedTransport.timeouts;
  auto add = [&out](const net::S3Client& client) {
    const net::HttpClientStats h = client.httpStats();
    out.attempts += h.requestsSent;
    out.retries += h.retries;
    out.timeouts += h.timeouts;
  };
  add(*impl_->client);
  if (impl_->fenced) add(*impl_->fenced);
  for (const auto& retired : impl_->retired) add(*retired);
  return out;
}

asio::awaitable<net::ProbeReport> S3Store::probe() {
  if (impl_->probed) co_return *impl_->probed;
  auto guard = co_await impl_->probing.lock();
  if (impl_->probed) co_return *impl_->probed;
  net::ProbeReport report = co_await net::probeConditions(*impl_->client, ".cairn-probe/");
  impl_->probeTransport.attempts += report.transport.requestsSent;
  impl_->probeTransport.retries += report.transport.retries;
  impl_->probeTransport.timeouts += report.transport.timeouts;
  // Only a store found to enforce conditions is remembered: a failed probe (or one the network
  // cut short) runs again next time, and nothing is ever sent on its strength.
  if (!report.enforced) co_return report;
  if (report.dialect && *report.dialect != impl_->config.dialect) {
    impl_->config.dialect = *report.dialect;
    auto client = net::S3Client::create(impl_->executor, impl_->config);
    if (client) {
      impl_->retired.push_back(std::move(impl_->client));
      impl_->client = std::move(*client);
    }
  }
  impl_->probed = report;
  co_return report;
}

asio::awaitable<StoreResult<StoredObject>> S3Store::get(std::string key, std::uint64_t maxBytes) {
  Bytes fresh;  // a named local: GCC 12 mishandles non-trivial temporaries in co_await
  co_return co_await getInto(std::move(key), maxBytes, std::move(fresh));
}

asio::awaitable<StoreResult<StoredObject>> S3Store::getInto(std::string key, std::uint64_t maxBytes,
                                                            Bytes storage) {
  if (!isValidObjectKey(key)) co_return storeFail(StoreStatus::failure, "invalid key " + key);
  auto r = co_await impl_->client->get(key, static_cast<std::size_t>(maxBytes), std::move(storage));
  if (!r.outcome.ok()) co_return outcomeOf(r.outcome);
  co_return StoredObject{std::move(r.body), std::move(r.etag)};
}

asio::awaitable<StoreResult<ObjectInfo>> S3Store::head(std::string key) {
  if (!isValidObjectKey(key)) co_return storeFail(StoreStatus::failure, "invalid key " + key);
  auto r = co_await impl_->client->head(key);
  if (!r.outcome.ok()) co_return outcomeOf(r.outcome);
  co_return ObjectInfo{key, r.size, std::move(r.etag), r.modifiedUnixSeconds};
}

asio::awaitable<StoreResult<std::string>> S3Store::putIfAbsent(std::string key, ByteView bytes) {
  co_return co_await create(std::move(key), bytes, std::nullopt);
}

asio::awaitable<StoreResult<std::string>> S3Store::putIfAbsentHashed(std::string key,
                                                                     ByteView bytes,
                                                                     Digest sha256) {
  co_return co_await create(std::move(key), bytes, sha256);
}

asio::awaitable<StoreResult<std::string>> S3Store::create(std::string key, ByteView bytes,
                                                          std::optional<Digest> sha256) {
  if (!isValidObjectKey(key)) co_return storeFail(StoreStatus::failure, "invalid key " + key);
  net::PutOptions options;
  options.condition = net::PutCondition::ifNoneMatch;
  options.sha256 = sha256;
  auto r = co_await impl_->client->put(key, bytes, std::move(options));
  if (!r.outcome.ok()) co_return outcomeOf(r.outcome);
  co_return std::move(r.etag);
}

asio::awaitable<StoreResult<std::string>> S3Store::rewrite(std::string key, ByteView bytes) {
  if (!isValidObjectKey(key)) co_return storeFail(StoreStatus::failure, "invalid key " + key);
  auto r = co_await impl_->client->put(key, bytes, net::PutCondition::none);
  if (!r.outcome.ok()) co_return outcomeOf(r.outcome);
  co_return std::move(r.etag);
}

asio::awaitable<StoreResult<std::string>> S3Store::putIfMatch(std::string key, ByteView bytes,
                                                              std::string etag) {
  if (!isValidObjectKey(key)) co_return storeFail(StoreStatus::failure, "invalid key " + key);
  if (impl_->autoDialect) {
    auto report = co_await probe();
    if (!report.enforced) co_return refusal(report);
  }
  auto r = co_await impl_->client->put(key, bytes, net::PutCondition::ifMatch, etag);
  if (!r.outcome.ok()) co_return outcomeOf(r.outcome);
  co_return std::move(r.etag);
}

asio::awaitable<StoreResult<void>> S3Store::requireConditionalWrites() {
  // An explicit dialect is the operator's statement about the store; auto checks it.
  if (!impl_->autoDialect) co_return StoreResult<void>{};
  auto report = co_await probe();
  if (!report.enforced) co_return refusal(report);
  co_return StoreResult<void>{};
}

asio::awaitable<StoreResult<void>> S3Store::remove(std::string key) {
  if (!isValidObjectKey(key)) co_return storeFail(StoreStatus::failure, "invalid key " + key);
  auto r = co_await impl_->client->remove(key);
  if (!r.ok()) co_return outcomeOf(r);
  co_return StoreResult<void>{};
}

// A client whose every request is over by `answerBy` (S3Config::deadline bounds the pool
// wait and the connect as well as the exchange): one per deadline, so per delete batch.
net::S3Client* S3Store::Impl::fencedClient(std::chrono::steady_clock::time_point answerBy) {
  if (!fenced || fencedUntil != answerBy) {
    net::S3Config c = client->config();
    c.deadline = answerBy;
    auto made = net::S3Client::create(executor, c);
    if (!made) return nullptr;
    if (fenced) addRetired(*fenced);
    fenced = std::move(*made);  // operations still running on the old one keep it alive
    fencedUntil = answerBy;
  }
  return fenced.get();
}

asio::awaitable<StoreResult<void>> S3Store::removeFenced(std::string key, DeleteFence fence) {
  if (!isValidObjectKey(key)) co_return storeFail(StoreStatus::failure, "invalid key " + key);
  const auto now = std::chrono::steady_clock::now();
  if (now > fence.sendBy) {
    co_return storeFail(StoreStatus::preconditionFailed,
                        key + " was not deleted: its DELETE came after its deadline");
  }
  net::S3Client* client = impl_->fencedClient(fence.answerBy);
  if (client == nullptr) co_return storeFail(StoreStatus::failure, "DELETE " + key + ": no client");
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(fence.answerBy - now);
  auto r = co_await client->removeOnce(key, std::max(left, std::chrono::milliseconds(1)));
  if (!r.ok()) co_return outcomeOf(r);
  co_return StoreResult<void>{};
}

asio::awaitable<StoreResult<ListPage>> S3Store::list(std::string prefix, std::string continuation,
                                                     int maxKeys) {
  auto r = co_await impl_->client->list(prefix, continuation, std::clamp(maxKeys, 1, kMaxListPage));
  if (!r.outcome.ok()) co_return outcomeOf(r.outcome);
  ListPage page;
  for (auto& e : r.entries) {
    // What a server lists is checked as cairn's own keys are: a key outside the key grammar
    // (control characters, bytes that forge output lines) or outside the prefix asked for is
    // refused, never handed on.
    if (!isValidObjectKey(e.key)) {
      co_return storeFail(StoreStatus::failure,
                          "list " + prefix + ": the store lists a key that is not a valid key: " +
                              boundedDisplay(e.key, kMaxObjectKeyBytes));
    }
    if (!e.key.starts_with(prefix)) {
      co_return storeFail(
          StoreStatus::failure,
          "list " + prefix + ": the store lists a key outside the prefix: " + e.key);
    }
    page.objects.push_back(ObjectInfo{e.key, e.size, e.etag, e.modifiedUnixSeconds});
  }
  page.continuation = std::move(r.continuation);
  co_return page;
}

}  // namespace cairn
