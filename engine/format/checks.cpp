#include "engine/format/checks.hpp"

#include <string>

#include "engine/format/journal_format.hpp"

namespace cairn {

Res<Digest> lineageId(ByteView journalHeaderBytes) {
  auto header = decodeJournalHeader(journalHeaderBytes);
  if (!header) return failureOf(header);
  if (header->bytes.size() != journalHeaderBytes.size()) {
    return err(Errc::format, "journal header has trailing bytes");
  }
  return sha256(header->bytes);
}

Res<void> requireBinding(const Head& head, const Uuid& ns, const Uuid& publisher,
                         const Digest& lineage) {
  const HeadFields& f = head.fields();
  if (f.ns != ns) {
    return err(Errc::binding, "head namespace " + f.ns.text() + " is not " + ns.text());
  }
  if (f.publisher != publisher) {
    return err(Errc::binding,
               "head publisher " + f.publisher.text() + " is not " + publisher.text());
  }
  if (f.lineage != lineage) {
    return err(Errc::binding,
               "head lineage " + toHex(f.lineage) + " is not the journal's " + toHex(lineage));
  }
  return {};
}

Res<void> requireSuccessor(const Head& previous, const Head& next) {
  const HeadFields& a = previous.fields();
  const HeadFields& b = next.fields();
  auto refuse = [](std::string why) { return err(Errc::transition, std::move(why)); };
  if (a.revision >= limits::kMaxRevision) return refuse("revision INT64_MAX cannot advance");
  if (b.revision != a.revision + 1) {
    return refuse("revision " + std::to_string(b.revision) + " does not follow " +
                  std::to_string(a.revision));
  }
  if (a.ns != b.ns || a.publisher != b.publisher || a.lineage != b.lineage) {
    return refuse("namespace, publisher or lineage changed");
  }
  if (a.publication == b.publication) return refuse("publication id was reused");
  if (b.predecessor != previous.reference()) {
    return refuse("predecessor is not the exact previous head " + toHex(previous.id()));
  }
  if (b.prefixSequence < a.prefixSequence) {
    return refuse("prefix sequence went back from " + std::to_string(a.prefixSequence) + " to " +
                  std::to_string(b.prefixSequence));
  }
  if (b.prefixSequence == a.prefixSequence) {
    if (b.prefixLength != a.prefixLength || b.prefixSha256 != a.prefixSha256) {
      return refuse("unchanged cutoff " + std::to_string(a.prefixSequence) +
                    " with a different prefix length or hash");
    }
    return {};
  }
  // Each added frame takes at least 16 bytes. Both lengths are <= 2^53 and the sequence
  // difference is <= 2^28, so nothing below overflows.
  std::uint64_t added = b.prefixSequence - a.prefixSequence;
  if (b.prefixLength <= a.prefixLength ||
      b.prefixLength - a.prefixLength < limits::kFrameOverheadBytes * added) {
    return refuse("prefix length " + std::to_string(b.prefixLength) + " cannot hold " +
                  std::to_string(added) + " more frames after " + std::to_string(a.prefixLength));
  }
  return {};
}

Res<Manifest> bindManifest(const Head& head, ByteView manifestBytes) {
  const HeadFields& f = head.fields();
  auto refuse = [](std::string why) { return err(Errc::manifest, std::move(why)); };
  if (manifestBytes.size() != f.manifestLength) {
    return refuse("manifest has " + std::to_string(manifestBytes.size()) +
                  " bytes, the head declares " + std::to_string(f.manifestLength));
  }
  if (sha256(manifestBytes) != f.manifestSha256) {
    return refuse("manifest SHA-256 is not the head's " + toHex(f.manifestSha256));
  }
  auto m = decodeManifest(manifestBytes);
  if (!m) return refuse(m.error().message);
  if (m->lineage != f.lineage) return refuse("manifest lineage differs from the head's");
  if (m->prefix.sequence != f.prefixSequence || m->prefix.length != f.prefixLength ||
      m->prefix.sha256 != f.prefixSha256) {
    return refuse("manifest prefix differs from the head's");
  }
  return m;
}

}  // namespace cairn
