#!/usr/bin/env python3
"""`cairn completion bash` and the man page `cairn manpage` writes (the build installs both).

Usage: test_completion_cli.py /path/to/cairn

The completion script is sourced into bash and asked as bash asks it (COMP_WORDS,
COMP_CWORD): subcommands at each level, a command's options, an option's fixed values, an
option's value never taken for a subcommand. The man page names every subcommand `--help`
lists and every option of one, uses only the man macros it means to, and escapes what roff
would read as a request.
"""
import re
import subprocess

from cli_support import cairn, check, finish, run

script = run("completion", "bash")
check(script.returncode == 0 and b"complete -o default -F _cairn cairn" in script.stdout,
      f"completion bash prints a script: {script.stderr!r}")
path = "/tmp/cairn-completion-test.bash"
with open(path, "wb") as f:
    f.write(script.stdout)


def complete(line):
    """The words bash would offer for the last word of `line` (a trailing space: a new word)."""
    words = line.split(" ")
    program = (f"source {path}\n"
               f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\n"
               "_cairn\n"
               "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    r = subprocess.run(["bash", "-c", program], capture_output=True)
    check(r.returncode == 0, f"{line!r}: bash runs the script: {r.stderr!r}")
    return [w for w in r.stdout.decode().splitlines() if w]


check(sorted(complete("cairn ch")) == ["checkpoint", "checkpoint-objects"],
      f"cairn ch: {complete('cairn ch')}")
top = complete("cairn ")
for name in ("lake", "serve", "vacuum", "backup", "recover", "completion", "--version"):
    check(name in top, f"cairn <tab> offers {name}: {top}")
check("manpage" not in top, f"the hidden manpage command is not offered: {top}")
check(complete("cairn lake g") == ["gc"], f"cairn lake g: {complete('cairn lake g')}")
check("--progress" in complete("cairn lake gc --pro"), "cairn lake gc --pro")
check(sorted(complete("cairn checkpoint --progress a")) == ["always", "auto"],
      f"--progress's values: {complete('cairn checkpoint --progress a')}")
# "lake" is --store's value here, not the lake command: vacuum's options are offered.
after_value = complete("cairn vacuum --store lake --")
check("--apply" in after_value and "--grace-seconds" in after_value and "gc" not in after_value,
      f"an option's value is not a subcommand: {after_value}")
# A directory argument: nothing of the script's own, so bash completes file names.
check(complete("cairn checkpoint --store x.json db") == [], "a positional is left to bash")

man = run("manpage")
check(man.returncode == 0 and man.stdout.startswith(b".TH CAIRN 1 "),
      f"manpage prints a man page: {man.stdout[:80]!r}")
page = man.stdout.decode()
sections = re.findall(r'^\.SS "cairn ([a-z -]+?)(?: [A-Z]+)*"$', page.replace("\\-", "-"), re.M)
help_text = run("--help").stdout.decode()
listed = re.findall(r"^  ([a-z][a-z-]+)\s", help_text.split("Subcommands:")[-1], re.M)
check(len(listed) >= 15, f"--help lists the subcommands: {listed}")
for name in listed:
    check(name in sections, f"the man page has a section for {name}: {sections}")
for nested in ("lake gc", "lake expire", "token create", "completion bash"):
    check(nested in sections, f"the man page has {nested}")
check("manpage" not in sections, "the hidden command has no section")
macros = set(re.findall(r"^\.([A-Za-z]+)", page, re.M))
check(macros <= {"TH", "SH", "SS", "TP", "B", "I", "PP"}, f"only the man macros meant: {macros}")
# Every text line that starts with a dot or a quote is escaped (\&): roff would read it as a
# request; no lone backslash (help texts are escaped as \e).
for line in page.splitlines():
    if line.startswith("'"):
        check(False, f"a line read as a request: {line!r}")
    check(not re.search(r"\\(?![-&efIRB\"e])", line), f"an unescaped backslash: {line!r}")
check(r"\-\-progress" in page and r"\-\-metrics\-file" in page, "options appear with their dashes")
finish()
