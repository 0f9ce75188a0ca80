// `taskforce bg …`: managed background work from scripts and hooks. Each
// subcommand builds the protocol's request (`bg.prepare`, `bg.link`, …),
// checks its fields as a server would, and sends it to the repository's
// running server when there is one (its endpoint file, with the token);
// with none it handles the request on the ledger itself, running a
// completion's validations in the command. Either way it prints the
// answer as one JSON object.
#include <chrono>
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/server_call.hpp"
#include "src/control/error.hpp"
#include "src/control/service.hpp"
#include "src/control/wire.hpp"
#include "src/git/repository.hpp"
#include "src/net/endpoint.hpp"
#include "src/protocol/fields.hpp"
#include "src/store/ledger.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

const char* bg_help
  = "usage: taskforce bg SUBCOMMAND [ARGS] [--json]\n\n"
    "Managed background work: tasks with a contract (write roots, locks,\n"
    "dependencies, validations) that a harness dispatches to its own child\n"
    "sessions, kept in the repository's ledger.\n\n"
    "  prepare --title T --agent A (--prompt TEXT | --prompt-file F|-)\n"
    "          [--root PATH]... [--lock NAME]... [--dep TASK]...\n"
    "          [--validation CMD]... [--session S]\n"
    "                         a new task: ready with a dispatch token, or "
    "queued\n"
    "                         (its roots or locks held by another task, "
    "a\n"
    "                         running task of `taskforce run` included)\n"
    "  link TOKEN CHILD_SESSION\n"
    "                         bind the child session to the token's task\n"
    "  start [TASK]           hand out the oldest eligible queued task (or "
    "TASK)\n"
    "  status [TASK]          every task (or one) with its leases\n"
    "  may-write CHILD_SESSION PATH\n"
    "                         may that child write PATH? (exit 1 when not)\n"
    "  complete TASK (--done | --blocked) [--result TEXT | --result-file "
    "F|-]\n"
    "          [--file PATH]...\n"
    "                         the completion gate: claimed files, then the\n"
    "                         validations (exit 1 when not accepted)\n"
    "  continue TASK TEXT...  a continuation token for a blocked or "
    "interrupted\n"
    "                         task (TEXT `-`: standard input)\n"
    "  cancel TASK            cancel a task\n"
    "  reconcile SESSION... | reconcile --none\n"
    "                         the child sessions still alive; linked tasks "
    "of\n"
    "                         any other child are interrupted (--none: all "
    "of\n"
    "                         them)\n\n"
    "Each option that ends in ... may be given more than once. When a\n"
    "server runs for the repository (`taskforce serve --listen`, found\n"
    "through .taskforce/endpoint.json) the request goes to it, so its\n"
    "subscribers see the change; otherwise the command works on the ledger\n"
    "itself, and `complete` runs the validations in this process.\n\n"
    "Output: the answer as one JSON object on standard output (the\n"
    "protocol's answer without \"id\" and \"ok\"), always (--json is\n"
    "accepted and changes nothing). A refusal prints\n"
    "{\"error\":{\"code\":…,\"message\":…}} on standard output and the\n"
    "message on standard error.\n\n"
    "Exit status: 0 done; 1 refused or failed (an unknown task, a used\n"
    "token, a completion not accepted, a write not allowed, the server\n"
    "unreachable); 2 bad usage or a bad field (a missing argument, a root\n"
    "outside the repository, in .git or .taskforce in any case, in a\n"
    "nested repository's .git, or holding a nested repository).\n";

namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

/// The subcommands, each with the operation it sends.
struct subcommand {
  const char* name;
  control::control_op op;
};

constexpr subcommand subcommands[] = {
  {"prepare", control::control_op::bg_prepare},
  {"link", control::control_op::bg_link},
  {"start", control::control_op::bg_start},
  {"status", control::control_op::bg_status},
  {"may-write", control::control_op::bg_may_write},
  {"complete", control::control_op::bg_complete},
  {"continue", control::control_op::bg_continue},
  {"cancel", control::control_op::bg_cancel},
  {"reconcile", control::control_op::bg_reconcile},
};

std::string subcommand_names() {
  std::string out;
  for (const auto& s : subcommands)
    out += (out.empty() ? "" : ", ") + std::string{s.name};
  return out;
}

/// The most a prompt, result or continuation text may hold.
constexpr size_t text_limit = 1024 * 1024;

/// How long a request to a server may take; a completion runs
/// validations, and a server that dies breaks the connection anyway.
constexpr auto server_patience = std::chrono::milliseconds(30000);
constexpr auto completion_patience = std::chrono::hours(24);

std::string read_stdin() {
  return {std::istreambuf_iterator<char>(std::cin),
          std::istreambuf_iterator<char>()};
}

/// The text of FILE (`-`: standard input) for option `option`.
std::string text_file(const std::string& where, const std::string& option,
                      const std::string& file) {
  std::string text;
  if (file == "-") {
    text = read_stdin();
  } else {
    auto got = read_file(file);
    if (!got)
      throw usage_error(where + ": " + option + " " + file
                        + ": cannot read the file");
    text = std::move(*got);
  }
  if (text.size() > text_limit)
    throw usage_error(where + ": " + option + " " + file
                      + ": the text holds at most 1 MiB; this one has "
                      + std::to_string(text.size()) + " bytes");
  return text;
}

/// Refuses positionals beyond `most` and fewer than `least`.
void expect_positionals(const args& a, const std::string& where, size_t least,
                        size_t most, const char* shape) {
  auto n = a.positionals().size();
  if (n < least || n > most)
    throw usage_error(where + " takes " + shape + ", got " + std::to_string(n)
                      + " argument" + (n == 1 ? "" : "s")
                      + " (see taskforce bg --help)");
}

/// The protocol request of `sub` from its arguments.
json request_of(const std::string& sub, const std::vector<std::string>& argv) {
  auto where = "bg " + sub;
  json req{{"id", 1}};
  if (sub == "prepare") {
    args a(argv,
           {"--title", "--agent", "--prompt", "--prompt-file", "--root",
            "--lock", "--dep", "--validation", "--session"},
           {"--json"});
    expect_positionals(a, where, 0, 0, "no positional arguments");
    for (const char* needed : {"--title", "--agent"})
      if (!a.has(needed))
        throw usage_error(where + " needs " + needed);
    if (a.has("--prompt") == a.has("--prompt-file"))
      throw usage_error(where
                        + " needs exactly one of --prompt TEXT and "
                          "--prompt-file FILE");
    req["title"] = a.value("--title");
    req["agent"] = a.value("--agent");
    req["prompt"] = a.has("--prompt") ? a.value("--prompt")
                                      : text_file(where, "--prompt-file",
                                                  a.value("--prompt-file"));
    if (a.has("--session"))
      req["session"] = a.value("--session");
    req["roots"] = a.all("--root");
    req["locks"] = a.all("--lock");
    req["deps"] = a.all("--dep");
    req["validations"] = a.all("--validation");
  } else if (sub == "link" || sub == "may-write") {
    args a(argv, {}, {"--json"});
    bool link = sub == "link";
    expect_positionals(a, where, 2, 2,
                       link ? "TOKEN CHILD_SESSION" : "CHILD_SESSION PATH");
    const auto& p = a.positionals();
    req[link ? "token" : "child_session"] = p[0];
    req[link ? "child_session" : "path"] = p[1];
  } else if (sub == "start" || sub == "status") {
    args a(argv, {}, {"--json"});
    expect_positionals(a, where, 0, 1, "at most one TASK");
    if (!a.positionals().empty())
      req["task"] = a.positionals()[0];
  } else if (sub == "complete") {
    args a(argv, {"--result", "--result-file", "--file"},
           {"--done", "--blocked", "--json"});
    expect_positionals(a, where, 1, 1, "one TASK");
    if (a.flag("--done") == a.flag("--blocked"))
      throw usage_error(where + " needs exactly one of --done and --blocked");
    if (a.has("--result") && a.has("--result-file"))
      throw usage_error(where + " takes --result or --result-file, not both");
    req["task"] = a.positionals()[0];
    req["status"] = a.flag("--done") ? "done" : "blocked";
    if (a.has("--result"))
      req["result"] = a.value("--result");
    else if (a.has("--result-file"))
      req["result"]
        = text_file(where, "--result-file", a.value("--result-file"));
    req["files"] = a.all("--file");
  } else if (sub == "continue") {
    args a(argv, {}, {"--json"});
    const auto& p = a.positionals();
    if (p.size() < 2)
      throw usage_error(where
                        + " takes TASK TEXT... (TEXT `-`: standard "
                          "input)");
    std::string text;
    if (p.size() == 2 && p[1] == "-") {
      text = read_stdin();
    } else {
      for (size_t k = 1; k < p.size(); ++k)
        text += (k > 1 ? " " : "") + p[k];
    }
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
      throw usage_error(where + " needs a continuation TEXT");
    if (text.size() > text_limit)
      throw usage_error(where + ": the text holds at most 1 MiB");
    req["task"] = p[0];
    req["text"] = text;
  } else if (sub == "cancel") {
    args a(argv, {}, {"--json"});
    expect_positionals(a, where, 1, 1, "one TASK");
    req["task"] = a.positionals()[0];
  } else if (sub == "reconcile") {
    args a(argv, {}, {"--none", "--json"});
    const auto& p = a.positionals();
    // An empty list interrupts every linked task: never by accident.
    if (p.empty() && !a.flag("--none"))
      throw usage_error(where
                        + " needs the child sessions still alive, or "
                          "--none when none is (every linked task is "
                          "then interrupted)");
    if (!p.empty() && a.flag("--none"))
      throw usage_error(where + " takes SESSION... or --none, not both");
    req["sessions"] = p;
  }
  return req;
}

/// The option or argument a protocol field comes from, for messages.
const char* argument_of(const std::string& field) {
  static const std::pair<const char*, const char*> names[] = {
    {"\"title\"", "--title"},   {"\"agent\"", "--agent"},
    {"\"prompt\"", "--prompt"}, {"\"session\"", "--session"},
    {"\"roots\"", "--root"},    {"\"locks\"", "--lock"},
    {"\"deps\"", "--dep"},      {"\"validations\"", "--validation"},
    {"\"token\"", "TOKEN"},     {"\"child_session\"", "CHILD_SESSION"},
    {"\"path\"", "PATH"},       {"\"task\"", "TASK"},
    {"\"files\"", "--file"},    {"\"sessions\"", "SESSION"},
  };
  for (const auto& [quoted, arg] : names)
    if (field.find(quoted) != std::string::npos)
      return arg;
  return nullptr;
}

/// One answer, from a server or from the ledger.
struct outcome {
  bool ok = false;
  /// The answer's fields (when ok).
  ordered fields = ordered::object();
  std::string code;
  std::string message;
};

outcome refused(std::string code, std::string message) {
  outcome o;
  o.code = std::move(code);
  o.message = std::move(message);
  return o;
}

/// The request sent to the repository's server; nullopt when none runs.
std::optional<outcome> via_server(const fs::path& top, control::control_op op,
                                  const json& req) {
  auto patience = op == control::control_op::bg_complete
                    ? std::chrono::milliseconds(completion_patience)
                    : server_patience;
  auto answer = ask_server(top, op, req, patience);
  if (!answer)
    return std::nullopt;
  if (!answer->ok)
    return refused(answer->code, answer->message);
  outcome o;
  o.ok = true;
  o.fields = ordered::parse(answer->fields);
  return o;
}

outcome of_reply(const control::service_reply& reply) {
  if (!reply.ok)
    return refused(reply.code, reply.message);
  outcome o;
  o.ok = true;
  o.fields = ordered::parse(reply.fields);
  return o;
}

/// The request handled on the ledger by this process.
outcome directly(const fs::path& top, const config& cfg,
                 const control::control_request& req) {
  {
    // The ledger and the validation logs live under .taskforce/: never
    // untracked changes of the repository.
    auto repo = git::open(top);
    git::ensure_excluded(repo, "/.taskforce/");
  }
  control::bg_service service(top, cfg.control);
  auto reply = service.handle(req, store::wall_clock_ms());
  if (reply.validate) {
    const auto& pending = *reply.validate;
    control::validation_outcome verdict;
    std::string results = "[]";
    try {
      auto report = control::run_validations(pending.commands, pending.options);
      verdict = control::outcome_of(report);
      results = control::validation_results_json(report);
    } catch (const std::exception& e) {
      // The task must not stay in `checking`: a run that could not happen
      // is a failed one.
      verdict.passed = false;
      verdict.reason
        = std::string{"the validations could not run: "} + e.what();
    }
    reply = service.finish(pending, verdict, results, store::wall_clock_ms());
  }
  return of_reply(reply);
}

/// Prints `o` and chooses the exit status.
int report(const std::string& where, control::control_op op, const outcome& o) {
  if (!o.ok) {
    ordered error{{"error", {{"code", o.code}, {"message", o.message}}}};
    std::cout << error.dump(-1, ' ', false, ordered::error_handler_t::replace)
              << std::endl;
    std::cerr << "taskforce: " << where << ": " << o.message << " (" << o.code
              << ")\n";
    return o.code == "bad_request" ? exit_usage : exit_failed;
  }
  std::cout << o.fields.dump(-1, ' ', false, ordered::error_handler_t::replace)
            << std::endl;
  if (op == control::control_op::bg_complete
      && !o.fields.value("accepted", false)) {
    std::cerr << "taskforce: " << where
              << ": not accepted: " << o.fields.value("reason", std::string{})
              << '\n';
    return exit_failed;
  }
  if (op == control::control_op::bg_may_write
      && !o.fields.value("allowed", false)) {
    std::cerr << "taskforce: " << where << ": "
              << o.fields.value("path", std::string{}) << " may not be "
              << "written: " << o.fields.value("reason", std::string{}) << '\n';
    return exit_failed;
  }
  return exit_ok;
}

} // namespace

int run_bg_command(const std::vector<std::string>& argv,
                   const global_options& opts) {
  if (argv.empty())
    throw usage_error("bg needs a subcommand: " + subcommand_names()
                      + " (see taskforce bg --help)");
  const auto& sub = argv[0];
  const subcommand* chosen = nullptr;
  for (const auto& s : subcommands)
    if (sub == s.name)
      chosen = &s;
  if (chosen == nullptr) {
    std::vector<std::string> names;
    for (const auto& s : subcommands)
      names.emplace_back(s.name);
    auto hint = did_you_mean(sub, names);
    throw usage_error(
      "bg: unknown subcommand \"" + sub + "\""
      + (hint.empty() ? " (one of " + subcommand_names() + ")" : hint));
  }
  auto where = "bg " + sub;
  auto req = request_of(sub, {argv.begin() + 1, argv.end()});
  // The fields checked here as a server checks them: a bad one is bad
  // usage whichever way the request goes.
  control::control_request decoded;
  try {
    decoded = control::decode_request(chosen->op, req);
  } catch (const protocol::bad_field& e) {
    std::string message = where + ": " + e.what();
    if (auto arg = argument_of(e.what()))
      message += std::string{" ("} + arg + ")";
    throw usage_error(message);
  }
  fs::path top = repository_of(opts);
  auto cfg = effective_config(opts);
  auto answer = via_server(top, chosen->op, req);
  if (!answer)
    answer = directly(top, cfg, decoded);
  return report(where, chosen->op, *answer);
}

} // namespace taskforce::cli
