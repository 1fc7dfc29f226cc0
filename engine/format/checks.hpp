// Pure checks between heads, journals and manifests (docs/formats.md §4), one code each.
#pragma once

#include "base/sha256.hpp"
#include "engine/error.hpp"
#include "engine/format/head.hpp"
#include "engine/format/manifest.hpp"

namespace cairn {

// SHA-256 of a journal header image, after checking it decodes (code `format`).
Res<Digest> lineageId(ByteView journalHeaderBytes);

// Code `binding`: the head's namespace, publisher and lineage equal values the caller supplies
// independently (configuration and the owned journal; never the head itself).
Res<void> requireBinding(const Head& head, const Uuid& ns, const Uuid& publisher,
                         const Digest& lineage);

// Code `transition`: `next` is a valid successor of `previous` (docs/formats.md §4).
Res<void> requireSuccessor(const Head& previous, const Head& next);

// Code `manifest`: the manifest bytes are the ones the head names, and declare its lineage and
// prefix. Returns the decoded manifest.
Res<Manifest> bindManifest(const Head& head, ByteView manifestBytes);

}  // namespace cairn
