// The command line's one option layer (docs/decisions/0056-one-option-layer-checks-every.md): every
// option of every command is checked by its text while the command line is parsed, before any
// command runs, so a bad value is a usage error (exit 2) that has created, opened or sent nothing.
//
// CLI11 alone reads "-5" into an unsigned option as 2^64 - 5, "010" as octal, "nan" and "inf"
// into a double that every range check lets through, and an overflowing number as the largest
// one. checkEveryOption puts a strict reading in front of every numeric option, whatever
// command added it and however; each option's own CLI::Range then checks its bounds.
#pragma once

#include <CLI/CLI.hpp>

namespace cairn::cli {

// A text option whose empty value means something (a key prefix: "" is every key). Every
// other text option refuses "", so that an empty id never stands for "not given".
CLI::Option* allowEmpty(CLI::Option* option);

// Walks every option of `app` and of all its subcommands (call it once every command is
// added): an unsigned option (UINT) takes only decimal digits that fit in 64 bits, a signed
// one (INT) a '-' and digits that fit, a FLOAT a finite decimal number; each is rewritten to
// its plain decimal form, so CLI11's own conversion and Range read exactly that value. A text
// option refuses "" unless allowEmpty.
void checkEveryOption(CLI::App& app);

}  // namespace cairn::cli
