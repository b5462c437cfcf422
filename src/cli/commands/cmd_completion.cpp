// SPDX-License-Identifier: MIT
// `optadvisor completion bash|zsh|fish` and the hidden `optadvisor man`: shell
// completion scripts and the man page, generated from the CLI11 app itself
// (every subcommand and option as parsed), so they cannot drift from the real
// options. Device, model, format and engine ids are written into the scripts
// when they are generated: completing is then instant and needs no process,
// and the ids are exactly those of the binary (plus any --data-dir overlay
// given to the generating run). The build generates both for `cmake --install`.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "optadvisor/base/version.hpp"
#include "base/strings.hpp"

namespace optadvisor::cli {
namespace {

/// One option or positional of one command.
struct OptionSpec {
  std::vector<std::string> names;  ///< "--format", "-m"; empty for a positional
  std::string positional;          ///< the positional's name
  std::string value_name;          ///< "TEXT", "FILE", ... without the choices
  std::string description;
  bool takes_value = false;
  std::vector<std::string> choices;  ///< from an IsMember check: {text,json,markdown}
  /// What completes its value: "choices", "file", "dir", "hardware", "model", "quant", "engine" or "" (free text).
  std::string kind;
};

/// One command: "optadvisor", "optadvisor hw", "optadvisor hw list", ...
struct CommandSpec {
  std::string path;
  std::string description;
  std::vector<OptionSpec> options;
  std::vector<OptionSpec> positionals;
  std::vector<std::pair<std::string, std::string>> subcommands;  ///< name, description
};

struct Ids {
  std::vector<std::string> hardware, model, quant, engine;
};

/// "TEXT:{text,json,markdown}" -> {"text", "json", "markdown"}.
std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> out;
  const auto open = type_name.find(":{");
  if (open == std::string::npos) return out;
  const auto close = type_name.find('}', open);
  std::string list = type_name.substr(open + 2, close == std::string::npos ? std::string::npos : close - open - 2);
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

OptionSpec option_spec(const CLI::Option& opt, const std::string& path) {
  OptionSpec o;
  for (const auto& s : opt.get_snames()) o.names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) o.names.push_back("--" + l);
  if (opt.get_positional() && o.names.empty()) o.positional = opt.get_name(true);
  o.description = opt.get_description();
  o.takes_value = opt.get_expected_max() > 0;  // flags expect 0 values
  const std::string type = opt.get_type_name();
  o.value_name = type.substr(0, type.find(':'));
  o.choices = choices_of(type);
  if (!o.takes_value) return o;
  if (!o.choices.empty())
    o.kind = "choices";
  else if (o.value_name == "FILE")
    o.kind = "file";
  else if (o.value_name == "DIR")
    o.kind = "dir";
  for (const auto& l : opt.get_lnames()) {
    if (l == "hw") o.kind = "hardware";
    if (l == "model") o.kind = "model";
    if (l == "quant") o.kind = "quant";
    if (l == "engine") o.kind = "engine";
  }
  // `hw show NAME` takes a device name as its positional.
  if (!o.positional.empty() && path == "optadvisor hw show") o.kind = "hardware";
  return o;
}

/// Every visible command, depth first; hidden ones (empty group) and their options are left out.
void walk(const CLI::App& app, const std::string& path, std::vector<CommandSpec>& out) {
  CommandSpec c;
  c.path = path;
  c.description = app.get_description();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;
    OptionSpec o = option_spec(*opt, path);
    (o.names.empty() ? c.positionals : c.options).push_back(std::move(o));
  }
  const auto subs = app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
  for (const CLI::App* sub : subs) c.subcommands.emplace_back(sub->get_name(), sub->get_description());
  out.push_back(std::move(c));
  for (const CLI::App* sub : subs) walk(*sub, path + " " + sub->get_name(), out);
}

/// Options of the main command that apply after any subcommand (CLI11 falls
/// through to them). The advisor's options sit on the main command too
/// (`optadvisor --hw H --goal G`) but no other command takes them; they are
/// exactly the options of `advise`.
std::vector<OptionSpec> global_options(const std::vector<CommandSpec>& commands) {
  std::set<std::string> advisor;
  for (const auto& c : commands)
    if (c.path == "optadvisor advise")
      for (const auto& o : c.options)
        for (const auto& n : o.names) advisor.insert(n);
  std::vector<OptionSpec> out;
  for (const auto& o : commands.front().options) {
    const bool is_advisor = std::any_of(o.names.begin(), o.names.end(), [&](const std::string& n) { return advisor.count(n) > 0; });
    const bool is_help = std::find(o.names.begin(), o.names.end(), "--help") != o.names.end();
    if (!is_advisor && !is_help) out.push_back(o);
  }
  return out;
}

/// A command's options plus the global ones it does not define itself (none for the main command).
std::vector<OptionSpec> with_globals(const CommandSpec& c, const std::vector<OptionSpec>& globals) {
  std::vector<OptionSpec> out = c.options;
  if (c.path == "optadvisor") return out;
  for (const auto& g : globals) {
    const bool defined = std::any_of(c.options.begin(), c.options.end(), [&](const OptionSpec& o) { return o.names == g.names; });
    if (!defined) out.push_back(g);
  }
  return out;
}

std::string join(const std::vector<std::string>& items, const std::string& sep = " ") { return optadvisor::join(items, sep); }

/// Single-quoted for sh, bash and zsh: 'it'\''s'.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

/// $'...' for zsh: newlines kept as \n.
std::string zsh_dollar_quote(const std::string& s) {
  std::string out = "$'";
  for (char ch : s) {
    if (ch == '\\' || ch == '\'') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out + "'";
}

/// Single-quoted for fish: backslash and quote escaped.
std::string fish_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\\' || ch == '\'') out += '\\';
    out += ch;
  }
  return out + "'";
}

std::vector<std::string> all_names(const std::vector<OptionSpec>& options, bool only_with_value) {
  std::vector<std::string> out;
  for (const auto& o : options)
    if (!only_with_value || o.takes_value) out.insert(out.end(), o.names.begin(), o.names.end());
  return out;
}

std::vector<std::string> sub_names(const CommandSpec& c) {
  std::vector<std::string> out;
  for (const auto& [name, description] : c.subcommands) out.push_back(name);
  return out;
}

const std::vector<std::string>& ids_of(const Ids& ids, const std::string& kind) {
  static const std::vector<std::string> none;
  if (kind == "hardware") return ids.hardware;
  if (kind == "model") return ids.model;
  if (kind == "quant") return ids.quant;
  if (kind == "engine") return ids.engine;
  return none;
}

std::string header(const std::string& shell) {
  return fmt::format(
      "# {} completion for optadvisor, generated by 'optadvisor completion {}' (optadvisor {}, data {})\n"
      "# from the program's own options; the ids are those of its catalog. Regenerate it rather than edit it.\n",
      shell, shell, program_version(), data_version());
}

/// The kinds and choices of every option value and positional, keyed "PATH|--option" and "PATH|#".
template <typename Emit>
void for_each_value(const std::vector<CommandSpec>& commands, Emit emit) {
  for (const auto& c : commands) {
    for (const auto& o : c.options)
      if (o.takes_value && !o.kind.empty())
        for (const auto& n : o.names) emit(c.path + "|" + n, o);
    for (const auto& p : c.positionals)
      if (!p.kind.empty()) emit(c.path + "|#", p);
  }
}

/// The associative arrays a bash or zsh script declares (`DECLARE_optadvisor_NAME=(` ... `)`, one entry a line),
/// then one id list per kind (`ID_DECLARE_optadvisor_ids_KIND='...'`).
std::string shell_tables(const std::string& declare, const std::vector<std::pair<std::string, std::string>>& tables,
                         const std::string& id_declare, const Ids& ids) {
  std::string out;
  for (const auto& [name, entries] : tables) out += declare + "_optadvisor_" + name + "=(\n" + entries + ")\n";
  for (const char* kind : {"hardware", "model", "quant", "engine"})
    out += fmt::format("{}_optadvisor_ids_{}={}\n", id_declare, kind, sh_quote(join(ids_of(ids, kind))));
  return out;
}

/// The bash completion function: walks the words before the cursor to the command path, finds the option
/// whose value is being typed and offers its values from the tables the script declares before it.
constexpr const char* kBashFunction = R"BASH(
_optadvisor() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" opt="" cmdpath="optadvisor" w i expect=0
  ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD-1]}"
  # Walk the words before the cursor: subcommand names descend, option values are skipped.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    if ((expect)); then
      expect=0
      [[ $w == "=" ]] && expect=1
      continue
    fi
    case "$w" in
      =) continue ;;
      -*)
        [[ " ${_optadvisor_valopts[$cmdpath]-} " == *" $w "* ]] && expect=1
        continue ;;
    esac
    [[ " ${_optadvisor_subs[$cmdpath]-} " == *" $w "* ]] && cmdpath="$cmdpath $w"
  done
  # The option whose value is being typed: "--opt VALUE", "--opt=VALUE" (bash splits at '=').
  if [[ $cur == "=" ]]; then
    opt="$prev"
    cur=""
  elif [[ $prev == "=" ]] && ((COMP_CWORD > 1)); then
    opt="${COMP_WORDS[COMP_CWORD-2]}"
  elif [[ $prev == -* && " ${_optadvisor_valopts[$cmdpath]-} " == *" $prev "* ]]; then
    opt="$prev"
  fi
  local key="" kind="" words=""
  if [[ -n $opt ]]; then
    key="$cmdpath|$opt"
    [[ -n ${_optadvisor_kind[$key]+x} ]] || key="optadvisor|$opt"
    kind="${_optadvisor_kind[$key]-}"
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${_optadvisor_opts[$cmdpath]-}" -- "$cur"))
    return
  elif [[ -n ${_optadvisor_subs[$cmdpath]-} ]]; then
    COMPREPLY=($(compgen -W "${_optadvisor_subs[$cmdpath]}" -- "$cur"))
    return
  else
    key="$cmdpath|#"
    kind="${_optadvisor_kind[$key]-}"
  fi
  case "$kind" in
    file) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
    dir) COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
    choices) words="${_optadvisor_choices[$key]-}" ;;
    hardware) words="$_optadvisor_ids_hardware" ;;
    model) words="$_optadvisor_ids_model" ;;
    quant) words="$_optadvisor_ids_quant" ;;
    engine) words="$_optadvisor_ids_engine" ;;
    *) return ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _optadvisor optadvisor
)BASH";

std::string bash_script(const std::vector<CommandSpec>& commands, const Ids& ids) {
  const auto globals = global_options(commands);
  std::string subs, opts, valopts, kinds, choices;
  for (const auto& c : commands) {
    if (!c.subcommands.empty()) subs += fmt::format("  [{}]={}\n", sh_quote(c.path), sh_quote(join(sub_names(c))));
    const auto options = with_globals(c, globals);
    opts += fmt::format("  [{}]={}\n", sh_quote(c.path), sh_quote(join(all_names(options, false))));
    valopts += fmt::format("  [{}]={}\n", sh_quote(c.path), sh_quote(join(all_names(options, true))));
  }
  for_each_value(commands, [&](const std::string& key, const OptionSpec& o) {
    kinds += fmt::format("  [{}]={}\n", sh_quote(key), sh_quote(o.kind));
    if (o.kind == "choices") choices += fmt::format("  [{}]={}\n", sh_quote(key), sh_quote(join(o.choices)));
  });
  std::string out = header("bash") + "\n";
  out +=
      shell_tables("declare -gA ", {{"subs", subs}, {"opts", opts}, {"valopts", valopts}, {"kind", kinds}, {"choices", choices}}, "", ids);
  out += kBashFunction;
  return out;
}

/// "name:description" lines for zsh's _describe (a colon in the name is escaped).
std::string describe_lines(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out;
  for (const auto& [name, description] : items) {
    std::string escaped;
    for (char ch : name) escaped += ch == ':' ? std::string("\\:") : std::string(1, ch);
    std::string one_line = description;
    std::replace(one_line.begin(), one_line.end(), '\n', ' ');
    out += (out.empty() ? "" : "\n") + escaped + ":" + one_line;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> option_items(const std::vector<OptionSpec>& options) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& o : options)
    for (const auto& n : o.names) out.emplace_back(n, o.description);
  return out;
}

/// The zsh completion function: the same walk as bash, with descriptions through _describe.
constexpr const char* kZshFunction = R"ZSH(
_optadvisor() {
  local cmdpath=optadvisor w opt= key= kind= cur=$words[CURRENT] prev=$words[CURRENT-1]
  integer i expect=0
  local -a items
  # Walk the words before the cursor: subcommand names descend, option values are skipped.
  for (( i = 2; i < CURRENT; i++ )); do
    w=$words[i]
    if (( expect )); then
      expect=0
      continue
    fi
    case $w in
      --*=*) continue ;;
      -*)
        [[ " ${_optadvisor_valopts[$cmdpath]} " == *" $w "* ]] && expect=1
        continue ;;
    esac
    [[ " ${_optadvisor_subs[$cmdpath]} " == *" $w "* ]] && cmdpath="$cmdpath $w"
  done
  if [[ $cur == --*=* ]]; then
    opt=${cur%%=*}
    compset -P '*='
  elif [[ $prev == -* && " ${_optadvisor_valopts[$cmdpath]} " == *" $prev "* ]]; then
    opt=$prev
  fi
  if [[ -n $opt ]]; then
    key="$cmdpath|$opt"
    (( ${+_optadvisor_kind[$key]} )) || key="optadvisor|$opt"
    kind=${_optadvisor_kind[$key]}
  elif [[ $cur == -* ]]; then
    items=( ${(f)_optadvisor_optdesc[$cmdpath]} )
    _describe -t options option items
    return
  elif (( ${+_optadvisor_subs[$cmdpath]} )); then
    items=( ${(f)_optadvisor_subdesc[$cmdpath]} )
    _describe -t commands command items
    return
  else
    key="$cmdpath|#"
    kind=${_optadvisor_kind[$key]}
  fi
  case $kind in
    file) _files ;;
    dir) _files -/ ;;
    choices) compadd -- ${=_optadvisor_choices[$key]} ;;
    hardware) compadd -- ${=_optadvisor_ids_hardware} ;;
    model) compadd -- ${=_optadvisor_ids_model} ;;
    quant) compadd -- ${=_optadvisor_ids_quant} ;;
    engine) compadd -- ${=_optadvisor_ids_engine} ;;
    *) _message 'value' ;;
  esac
}

_optadvisor "$@"
)ZSH";

std::string zsh_script(const std::vector<CommandSpec>& commands, const Ids& ids) {
  const auto globals = global_options(commands);
  std::string subs, subdesc, optdesc, valopts, kinds, choices;
  for (const auto& c : commands) {
    if (!c.subcommands.empty()) {
      subs += fmt::format("  {} {}\n", sh_quote(c.path), sh_quote(join(sub_names(c))));
      subdesc += fmt::format("  {} {}\n", sh_quote(c.path), zsh_dollar_quote(describe_lines(c.subcommands)));
    }
    const auto options = with_globals(c, globals);
    optdesc += fmt::format("  {} {}\n", sh_quote(c.path), zsh_dollar_quote(describe_lines(option_items(options))));
    valopts += fmt::format("  {} {}\n", sh_quote(c.path), sh_quote(join(all_names(options, true))));
  }
  for_each_value(commands, [&](const std::string& key, const OptionSpec& o) {
    kinds += fmt::format("  {} {}\n", sh_quote(key), sh_quote(o.kind));
    if (o.kind == "choices") choices += fmt::format("  {} {}\n", sh_quote(key), sh_quote(join(o.choices)));
  });
  std::string out = "#compdef optadvisor\n" + header("zsh");
  out +=
      "\ntypeset -gA _optadvisor_subs _optadvisor_subdesc _optadvisor_optdesc _optadvisor_valopts _optadvisor_kind _optadvisor_choices\n";
  out += shell_tables(
      "", {{"subs", subs}, {"subdesc", subdesc}, {"optdesc", optdesc}, {"valopts", valopts}, {"kind", kinds}, {"choices", choices}},
      "typeset -g ", ids);
  out += kZshFunction;
  return out;
}

/// The fish helpers that find the command path before the cursor, and the default of no file completion.
constexpr const char* kFishPathWalk = R"FISH(
# The command path before the cursor ("optadvisor hw list"), option values skipped;
# computed once per command line, as every completion entry asks.
function __optadvisor_path_is
    set -l line (commandline -pc)
    if test "$line" != "$__optadvisor_line"; or not set -q __optadvisor_path
        set -g __optadvisor_line $line
        set -g __optadvisor_path (__optadvisor_walk)
    end
    test "$__optadvisor_path" = "$argv[1]"
end

function __optadvisor_walk
    set -l cmdpath optadvisor
    set -l expect 0
    for w in (commandline -opc)[2..-1]
        if test $expect = 1
            set expect 0
            continue
        end
        switch $w
            case '--*=*'
                continue
            case '-*'
                if contains -- $w (__optadvisor_valopts $cmdpath)
                    set expect 1
                end
                continue
        end
        if contains -- $w (__optadvisor_subs $cmdpath)
            set cmdpath "$cmdpath $w"
        end
    end
    echo $cmdpath
end

complete -c optadvisor -f
)FISH";

std::string fish_script(const std::vector<CommandSpec>& commands, const Ids& ids) {
  const auto globals = global_options(commands);
  std::string out = header("fish");
  // Two lookups the path walk needs, as switch functions.
  out += "\nfunction __optadvisor_subs\n    switch $argv[1]\n";
  for (const auto& c : commands)
    if (!c.subcommands.empty())
      out += fmt::format("        case {}\n            printf '%s\\n' {}\n", fish_quote(c.path), join(sub_names(c)));
  out += "    end\nend\n\nfunction __optadvisor_valopts\n";
  out += "    switch $argv[1]\n";
  for (const auto& c : commands) {
    const auto names = all_names(with_globals(c, globals), true);
    if (!names.empty()) out += fmt::format("        case {}\n            printf '%s\\n' {}\n", fish_quote(c.path), join(names));
  }
  out += "    end\nend\n";
  out += kFishPathWalk;
  auto option_line = [&](const OptionSpec& o, const std::string& condition) {
    std::string line = "complete -c optadvisor";
    if (!condition.empty()) line += " -n " + fish_quote(condition);
    for (const auto& n : o.names) line += n.rfind("--", 0) == 0 ? " -l " + n.substr(2) : " -s " + n.substr(1);
    if (o.takes_value) {
      if (o.kind == "file")
        line += " -r -F";
      else if (o.kind == "dir")
        line += " -r -a '(__fish_complete_directories)'";
      else if (o.kind == "choices")
        line += " -x -a " + fish_quote(join(o.choices));
      else if (!ids_of(ids, o.kind).empty())
        line += " -x -a " + fish_quote(join(ids_of(ids, o.kind)));
      else
        line += " -x";
    }
    return line + " -d " + fish_quote(o.description) + "\n";
  };
  for (const auto& c : commands) {
    const std::string condition = "__optadvisor_path_is " + fish_quote(c.path);
    out += "\n# " + c.path + "\n";
    for (const auto& [name, description] : c.subcommands)
      out += fmt::format("complete -c optadvisor -n {} -a {} -d {}\n", fish_quote(condition), fish_quote(name), fish_quote(description));
    for (const auto& o : with_globals(c, globals)) out += option_line(o, condition);
    for (const auto& p : c.positionals) {
      if (p.kind == "file")
        out += fmt::format("complete -c optadvisor -n {} -F\n", fish_quote(condition));
      else if (!ids_of(ids, p.kind).empty())
        out += fmt::format("complete -c optadvisor -n {} -a {} -d {}\n", fish_quote(condition), fish_quote(join(ids_of(ids, p.kind))),
                           fish_quote(p.description));
    }
  }
  return out;
}

/// roff: a backslash is \e, a leading '.' or "'" is protected, '-' in option names is \-.
std::string roff(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '\\' ? std::string("\\e") : std::string(1, ch);
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

std::string roff_option(const std::string& name) {
  std::string out;
  for (char ch : name) out += ch == '-' ? std::string("\\-") : std::string(1, ch);
  return out;
}

std::string man_options(const std::vector<OptionSpec>& options) {
  std::string out;
  for (const auto& o : options) {
    std::string names;
    for (const auto& n : o.names) names += (names.empty() ? "" : ", ") + ("\\fB" + roff_option(n) + "\\fR");
    if (o.takes_value) {
      const std::string value = o.choices.empty() ? o.value_name : join(o.choices, "|");
      names += " \\fI" + roff(value) + "\\fR";
    }
    out += ".TP\n" + names + "\n" + roff(o.description) + "\n";
  }
  return out;
}

std::string man_page(const std::vector<CommandSpec>& commands) {
  const auto globals = global_options(commands);
  std::string out = fmt::format(".TH OPTADVISOR 1 \"\" \"optadvisor {}\" \"User Commands\"\n", program_version());
  out += ".\\\" Generated by 'optadvisor man' from the program's own options.\n";
  out += ".SH NAME\noptadvisor \\- " + roff(commands.front().description.substr(commands.front().description.find(':') + 2)) + "\n";
  out +=
      ".SH SYNOPSIS\n.B optadvisor\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n.br\n"
      ".B optadvisor\n\\fB\\-\\-hw\\fR \\fIDEVICE\\fR [\\fB\\-\\-goal\\fR \\fIGOAL\\fR] [\\fIADVISOR OPTIONS\\fR]\n";
  out +=
      ".SH DESCRIPTION\n"
      "optadvisor estimates memory, time to first token, decode speed and throughput of a model on a device from a "
      "database of hardware profiles and an analytic performance model, says what limits it, and ranks what to do "
      "about it. Results go to standard output (text, JSON or Markdown); messages go to standard error.\n"
      ".PP\n"
      "\\fB\\-\\-hw auto\\fR detects the local device (nvidia\\-smi, rocm\\-smi, sysctl, /proc) and maps it to a "
      "profile; \\fBoptadvisor hw detect\\fR shows what was found.\n";
  out += ".SH GLOBAL OPTIONS\nThese apply to every command.\n" + man_options(globals);
  out += ".SH COMMANDS\n";
  for (std::size_t i = 1; i < commands.size(); ++i) {
    const auto& c = commands[i];
    out += ".SS \"" + roff(c.path) + (c.subcommands.empty() ? "" : " \\fICOMMAND\\fR") + "\"\n" + roff(c.description) + "\n";
    if (!c.subcommands.empty()) {
      std::string names;
      for (const auto& [name, description] : c.subcommands) names += (names.empty() ? "" : ", ") + name;
      out += ".PP\nCommands: " + roff(names) + ".\n";
    }
    for (const auto& p : c.positionals) out += ".TP\n\\fI" + roff(p.positional) + "\\fR\n" + roff(p.description) + "\n";
    std::vector<OptionSpec> own;
    for (const auto& o : c.options)
      if (std::find(o.names.begin(), o.names.end(), "--help") == o.names.end()) own.push_back(o);
    out += man_options(own);
  }
  // The advisor's options on the main command: the same as `advise`'s.
  out +=
      ".SH ADVISOR OPTIONS\n\\fBoptadvisor \\-\\-hw\\fR \\fIDEVICE\\fR ... runs the advisor without naming it and takes the "
      "options of \\fBoptadvisor advise\\fR above.\n";
  out +=
      ".SH EXIT STATUS\n.TP\n0\nSuccess.\n.TP\n1\nAn unexpected runtime failure.\n.TP\n2\n"
      "Bad usage or bad input: an unknown name, an invalid file or value, a device \\fB\\-\\-hw auto\\fR cannot map.\n"
      ".TP\n3\nA check that was asked for failed: the model does not fit, or a \\fB\\-\\-require\\fR expression does not hold.\n";
  out +=
      ".SH ENVIRONMENT\n.TP\n\\fBNO_COLOR\\fR\nWhen set and not empty, never colour the output (as \\fB\\-\\-no\\-color\\fR).\n"
      ".TP\n\\fBOPTADVISOR_DATA_DIR\\fR\nColon\\-separated overlay directories laid out like data/, applied before "
      "\\fB\\-\\-data\\-dir\\fR.\n"
      ".TP\n\\fBOPTADVISOR_DETECT_FIXTURES\\fR\nA testing aid: \\fB\\-\\-hw auto\\fR reads recorded tool outputs "
      "(nvidia\\-smi.txt, rocm\\-smi.json, sysctl.txt, ioreg.txt, system_profiler.txt, cpuinfo, meminfo) from this "
      "directory instead of running the tools.\n";
  out += ".SH SEE ALSO\nThe documentation in /usr/share/doc/optadvisor/ and the project's docs/ directory.\n";
  return out;
}

Ids catalog_ids(const GlobalOptions& global) {
  const Catalog& catalog = load_catalog(global);
  Ids ids;
  ids.hardware.push_back("auto");
  for (const auto& h : catalog.hardware()) ids.hardware.push_back(h.id);
  for (const auto& m : catalog.models()) ids.model.push_back(m.id);
  for (const auto& f : catalog.quant().formats()) ids.quant.push_back(f.id);
  for (const auto& e : catalog.engines()) {
    ids.engine.push_back(e.id);
    for (const auto& [backend, profile] : e.backends) ids.engine.push_back(e.id + ":" + backend);
  }
  for (auto* list : {&ids.hardware, &ids.model, &ids.quant, &ids.engine}) {
    std::sort(list->begin() + (list == &ids.hardware ? 1 : 0), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return ids;
}

}  // namespace

void register_completion(CLI::App& app, const GlobalOptions& global) {
  auto shell = std::make_shared<std::string>();
  auto* completion = app.add_subcommand("completion", "Print a shell completion script: bash, zsh or fish (docs/packaging.md)");
  completion->add_option("shell", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  completion->callback([shell, &app, &global] {
    std::vector<CommandSpec> commands;
    walk(app, "optadvisor", commands);
    const Ids ids = catalog_ids(global);
    if (*shell == "bash")
      fmt::print("{}", bash_script(commands, ids));
    else if (*shell == "zsh")
      fmt::print("{}", zsh_script(commands, ids));
    else
      fmt::print("{}", fish_script(commands, ids));
  });

  // Hidden: the build runs it to install optadvisor.1.
  auto* man = app.add_subcommand("man", "Print the man page (roff)");
  man->group("");
  man->callback([&app] {
    std::vector<CommandSpec> commands;
    walk(app, "optadvisor", commands);
    fmt::print("{}", man_page(commands));
  });
}

}  // namespace optadvisor::cli
