// `cairn completion bash` and `cairn manpage`: both written from the command tree itself (every
// subcommand, option and help text as registered), so neither can drift from the command.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/progress.hpp"

namespace cairn::cli {

namespace {

struct OptionDoc {
  std::vector<std::string> names;  // "--store", "-q"
  std::string value;               // the value's name, empty for a flag
  std::string help;
  bool required = false;
};

struct CommandDoc {
  std::string path;  // "lake gc"; empty for cairn itself
  std::string help;
  std::vector<std::string> positionals;  // "DIR"
  std::vector<OptionDoc> options;
  std::vector<std::string> children;  // direct subcommands, by name
};

bool hidden(const CLI::App* cmd) { return cmd->get_group().empty(); }

void walk(const CLI::App* cmd, const std::string& path, std::vector<CommandDoc>& out) {
  CommandDoc d;
  d.path = path;
  d.help = cmd->get_description();
  for (const CLI::Option* o : cmd->get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    if (o->get_positional() && o->get_lnames().empty() && o->get_snames().empty()) {
      d.positionals.push_back(o->get_name());
      continue;
    }
    OptionDoc od;
    for (const std::string& s : o->get_snames()) od.names.push_back("-" + s);
    for (const std::string& l : o->get_lnames()) od.names.push_back("--" + l);
    if (od.names.empty()) continue;
    if (o->get_items_expected_max() > 0) od.value = "VALUE";
    od.help = o->get_description();
    od.required = o->get_required();
    d.options.push_back(std::move(od));
  }
  std::vector<const CLI::App*> subs;
  for (const CLI::App* sub : cmd->get_subcommands([](const CLI::App*) { return true; })) {
    if (hidden(sub)) continue;
    d.children.push_back(sub->get_name());
    subs.push_back(sub);
  }
  out.push_back(std::move(d));
  for (const CLI::App* sub : subs) {
    walk(sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

// The values an option takes, where they are a fixed set.
const std::map<std::string, std::string>& valueChoices() {
  static const std::map<std::string, std::string> choices{{"--progress", kProgressModes}};
  return choices;
}

std::string bashScript(const std::vector<CommandDoc>& commands, const std::string& version) {
  std::string paths;
  std::set<std::string> valuedNames;  // options that take a value, in any command
  for (const CommandDoc& c : commands) {
    std::vector<std::string> w = c.children;
    for (const OptionDoc& o : c.options) {
      for (const std::string& n : o.names) {
        w.push_back(n);
        if (!o.value.empty()) valuedNames.insert(n);
      }
    }
    paths += "    \"" + c.path + "\") words=\"" + join(w) + "\" ;;\n";
  }
  const std::string valued = join({valuedNames.begin(), valuedNames.end()});
  std::string choices;
  for (const auto& [option, values] : valueChoices()) {
    choices += "      " + option + ") COMPREPLY=($(compgen -W \"" + values +
               "\" -- \"$cur\")); return ;;\n";
  }
  // The command path is the words that name subcommands in turn; an option's value is
  // skipped, so "--store lake" is not the lake command. Where nothing matches (a directory,
  // a file), -o default completes file names.
  return "# bash completion for cairn " + version +
         " (cairn completion bash; docs/operations.md)\n"
         "_cairn() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
         "  local path=\"\" i w next words\n"
         "  local valued=\"" +
         valued +
         "\"\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    w=\"${COMP_WORDS[i]}\"\n"
         "    if [[ \" $valued \" == *\" $w \"* ]]; then ((i++)); continue; fi\n"
         "    [[ \"$w\" == -* ]] && continue\n"
         "    next=\"${path:+$path }$w\"\n"
         "    if _cairn_words \"$next\" > /dev/null; then path=\"$next\"; fi\n"
         "  done\n"
         "  case \"$prev\" in\n" +
         choices +
         "  esac\n"
         "  if [[ \" $valued \" == *\" $prev \"* ]]; then return; fi\n"
         "  words=\"$(_cairn_words \"$path\")\"\n"
         "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
         "}\n"
         "_cairn_words() {\n"
         "  local words\n"
         "  case \"$1\" in\n" +
         paths +
         "    *) return 1 ;;\n"
         "  esac\n"
         "  printf '%s\\n' \"$words\"\n"
         "}\n"
         "complete -o default -F _cairn cairn\n";
}

// roff text: a backslash doubled, and a line that would start with '.' or '\'' escaped.
std::string roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

std::string manPage(const std::vector<CommandDoc>& commands, const std::string& version) {
  std::string out =
      ".TH CAIRN 1 \"\" \"cairn " + roff(version) +
      "\" \"User Commands\"\n"
      ".SH NAME\n"
      "cairn \\- a durable journal published as verified checkpoints to object storage, and "
      "an Iceberg REST catalog\n"
      ".SH SYNOPSIS\n"
      ".B cairn\n"
      ".I COMMAND\n"
      "[\\fIOPTIONS\\fR]\n"
      ".SH DESCRIPTION\n"
      "Records are appended to a local journal and acknowledged once they are on disk; "
      "checkpoints of the journal are published to a store (a directory or S3) as immutable "
      "objects, and a conditional write of one head selects the current one. The commands "
      "below operate a database directory, a store, and the catalog (cairn serve).\n"
      ".PP\n"
      "Every command takes \\fB\\-\\-help\\fR. The documentation of the installed version is "
      "in docs/ of its source: operations.md (the commands, exit codes, progress and "
      "signals), stores.md (store URLs, AWS settings), catalog.md.\n"
      ".SH EXIT STATUS\n"
      "0 success; 1 the operation failed; 2 usage; 3 busy (another process owns the "
      "directory); 4 uncertain (the outcome is unknown; a pending intent records it); 5 "
      "undetermined (whether the store enforces conditional writes could not be found out); "
      "130 and 143 interrupted by SIGINT or SIGTERM.\n"
      ".SH COMMANDS\n";
  for (const CommandDoc& c : commands) {
    if (c.path.empty()) continue;
    out += ".SS \"cairn " + roff(c.path);
    for (const std::string& p : c.positionals) out += " " + roff(p);
    out += "\"\n" + roff(c.help) + "\n";
    for (const OptionDoc& o : c.options) {
      if (std::find(o.names.begin(), o.names.end(), "--help") != o.names.end()) continue;
      out += ".TP\n.B ";
      std::string names;
      for (const std::string& n : o.names) names += (names.empty() ? "" : ", ") + roff(n);
      out += names;
      if (!o.value.empty()) out += " \\fI" + o.value + "\\fR";
      out += "\n" + roff(o.help) + (o.required ? " (required)" : "") + "\n";
    }
  }
  out +=
      ".SH ENVIRONMENT\n"
      "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION, "
      "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_CA_BUNDLE, AWS_CONFIG_FILE, "
      "AWS_SHARED_CREDENTIALS_FILE: as the AWS CLI reads them (docs/stores.md).\n";
  return out;
}

}  // namespace

void addCompletionCommands(CLI::App& app, int& exitCode, const std::string& version) {
  CLI::App* completion = app.add_subcommand("completion", "print a shell completion script");
  completion->require_subcommand(1);
  CLI::App* bash = completion->add_subcommand(
      "bash", "the bash script (source it, or put it in /etc/bash_completion.d/cairn)");
  bash->callback([&app, &exitCode, version] {
    std::vector<CommandDoc> commands;
    walk(&app, "", commands);
    std::fputs(bashScript(commands, version).c_str(), stdout);
    exitCode = 0;
  });
  // Hidden (no group): the build runs it to write the installed man page, cairn.1.
  CLI::App* man = app.add_subcommand("manpage", "print the man page (roff)");
  man->group("");
  man->callback([&app, &exitCode, version] {
    std::vector<CommandDoc> commands;
    walk(&app, "", commands);
    std::fputs(manPage(commands, version).c_str(), stdout);
    exitCode = 0;
  });
}

}  // namespace cairn::cli
