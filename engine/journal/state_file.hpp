// The publisher state file in a database directory (engine/format/publisher_state.hpp): read
// bounded and checked, never taken for absent when it is damaged. The journal reads it when
// it opens (what it proves acknowledged protects the tail); the publisher reads and writes it.
#pragma once

#include <filesystem>
#include <optional>

#include "engine/error.hpp"
#include "engine/format/publisher_state.hpp"

namespace cairn {

// DIR/publisher.state decoded; std::nullopt when there is none (a journal-only database). A
// damaged file is an error, never a reset. Blocking (one small file).
Res<std::optional<PublisherState>> readPublisherStateFile(const std::filesystem::path& dir);

}  // namespace cairn
