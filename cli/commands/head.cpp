// cairn head decode FILE|- [--json]
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/json.hpp"
#include "engine/format/head.hpp"

namespace cairn::cli {
namespace {

// Reads at most limit + 1 bytes, so an over-long image is detected without reading it all.
Res<Bytes> readBounded(const std::string& path, std::size_t limit) {
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) return err(Errc::io, "cannot open " + path);
  Bytes out(limit + 1);
  std::size_t n = std::fread(out.data(), 1, out.size(), f);
  bool failed = std::ferror(f) != 0;
  if (f != stdin) std::fclose(f);
  if (failed) return err(Errc::io, "cannot read " + path);
  out.resize(n);
  return out;
}

JsonObject headJson(const Head& h) {
  const HeadFields& f = h.fields();
  HeadReference pred = f.predecessor.value_or(HeadReference{});
  return JsonObject{}
      .add("ok", true)
      .add("namespace", f.ns.text())
      .add("publisher", f.publisher.text())
      .add("publication", f.publication.text())
      .add("lineage", toHex(f.lineage))
      .add("revision", f.revision)
      .add("manifest_sha256", toHex(f.manifestSha256))
      .add("manifest_length", std::uint64_t{f.manifestLength})
      .add("prefix_sequence", f.prefixSequence)
      .add("prefix_length", f.prefixLength)
      .add("prefix_sha256", toHex(f.prefixSha256))
      .add("predecessor_sha256", toHex(pred.id))
      .add("predecessor_length", std::uint64_t{pred.length})
      .add("id", toHex(h.id()))
      .add("footer", toHex(h.footer()));
}

void printText(const Head& h) {
  const HeadFields& f = h.fields();
  std::cout << "id                 " << toHex(h.id()) << "\n"
            << "revision           " << f.revision << "\n"
            << "namespace          " << f.ns.text() << "\n"
            << "publisher          " << f.publisher.text() << "\n"
            << "publication        " << f.publication.text() << "\n"
            << "lineage            " << toHex(f.lineage) << "\n"
            << "manifest           " << toHex(f.manifestSha256) << " (" << f.manifestLength
            << " bytes)\n"
            << "prefix             sequence " << f.prefixSequence << ", " << f.prefixLength
            << " bytes, sha256 " << toHex(f.prefixSha256) << "\n"
            << "predecessor        "
            << (f.predecessor ? toHex(f.predecessor->id) : std::string("none")) << "\n"
            << "footer             " << toHex(h.footer()) << "\n";
}

}  // namespace

void addHeadCommands(CLI::App& app, int& exitCode) {
  CLI::App* head = app.add_subcommand("head", "inspect checkpoint head images");
  head->require_subcommand(1);
  CLI::App* decode = head->add_subcommand("decode", "decode and check a 256-byte head image");
  struct Options {
    std::string path;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();  // lives as long as the callback that holds it
  decode->add_option("FILE", opt->path, "head image file, or - for standard input")->required();
  decode->add_flag("--json", opt->json, "print one JSON object");
  decode->callback([&exitCode, opt] {
    auto bytes = readBounded(opt->path, limits::kHeadBytes);
    if (!bytes) {
      exitCode = report(bytes.error());
      return;
    }
    auto h = decodeHead(*bytes);
    if (!h) {
      exitCode = report(h.error());
      return;
    }
    if (opt->json) {
      printJson(headJson(*h));
    } else {
      printText(*h);
    }
    exitCode = 0;
  });
}

}  // namespace cairn::cli
