#include "engine/journal/state_file.hpp"

#include <fcntl.h>

#include "io/file.hpp"

namespace cairn {

Res<std::optional<PublisherState>> readPublisherStateFile(const std::filesystem::path& dir) {
  const auto path = dir / kPublisherStateFile;
  auto file = io::File::open(path, O_RDONLY);
  if (!file) {
    if (file.error() == std::errc::no_such_file_or_directory) {
      return std::optional<PublisherState>{};
    }
    return err(Errc::io, "cannot open " + path.string() + ": " + file.error().message());
  }
  // One byte more than the largest valid file, so an oversized file is seen as such.
  Bytes bytes(kMaxPublisherStateBytes + 1);
  auto n = file->readFullAt(bytes, 0);
  if (!n) return err(Errc::io, "cannot read " + path.string() + ": " + n.error().message());
  bytes.resize(*n);
  auto state = decodePublisherState(bytes);
  if (!state) {
    return Failure<Error>{Error{state.error().code,
                                path.string() +
                                    " is damaged (never reset; restore it or recover the "
                                    "database): " +
                                    state.error().message,
                                path.string()}};
  }
  return std::optional<PublisherState>{std::move(*state)};
}

}  // namespace cairn
